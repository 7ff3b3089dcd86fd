// float64 CPU references of the kernels' mathematics, and float64 models of their
// algorithms (online softmax, chunked cross-entropy, the flash
// attention tile recurrence), for the CPU-side tests: the algorithm each kernel runs
// must compute the same function as the textbook definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace mlsem_kernels::reference {

using Vec = std::vector<double>;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline Vec softmax(const Vec& x) {
  const double m = *std::max_element(x.begin(), x.end());
  Vec y(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += y[i] = std::exp(x[i] - m);
  for (double& v : y) v /= s;
  return y;
}

// The online recurrence: a running (max, sum of exp) over chunks, merged as the kernels
// merge per-thread and per-warp states.
struct MaxSum {
  double m = -kInf, s = 0;
};
inline MaxSum merge(MaxSum a, MaxSum b) {
  const double m = std::max(a.m, b.m);
  if (m == -kInf) return a;
  return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
}
inline MaxSum max_sum(const Vec& x, size_t begin, size_t end) {
  MaxSum r;
  for (size_t i = begin; i < end; ++i) r.m = std::max(r.m, x[i]);
  for (size_t i = begin; i < end && r.m != -kInf; ++i) r.s += std::exp(x[i] - r.m);
  return r;
}
inline MaxSum online_max_sum(const Vec& x, size_t chunk) {
  MaxSum r;
  for (size_t b = 0; b < x.size(); b += chunk) r = merge(r, max_sum(x, b, std::min(x.size(), b + chunk)));
  return r;
}

inline Vec layernorm(const Vec& x, const Vec& w, const Vec& b, double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  return y;
}

inline Vec rmsnorm(const Vec& x, const Vec& w, double eps) {
  double ms = 0;
  for (double v : x) ms += v * v;
  ms /= x.size();
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(ms + eps) * w[i];
  return y;
}

inline double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double silu(double x) { return x / (1 + std::exp(-x)); }

// Rotate-half RoPE of one head vector at position pos with base 10000.
inline Vec rope(const Vec& x, double pos) {
  const size_t h = x.size() / 2;
  Vec y(x.size());
  for (size_t i = 0; i < h; ++i) {
    const double angle = pos / std::pow(10000.0, double(i) / h);
    const double c = std::cos(angle), s = std::sin(angle);
    y[i] = x[i] * c - x[i + h] * s;
    y[i + h] = x[i + h] * c + x[i] * s;
  }
  return y;
}

inline double cross_entropy(const Vec& logits, size_t target) { return -std::log(softmax(logits)[target]); }
// The fused kernel's form: logsumexp from the online recurrence over vocabulary chunks.
inline double cross_entropy_chunked(const Vec& logits, size_t target, size_t chunk) {
  const MaxSum ms = online_max_sum(logits, chunk);
  return ms.m + std::log(ms.s) - logits[target];
}

// Attention of one head: q, k, v [seq][d], row-major.
inline Vec attention(const Vec& q, const Vec& k, const Vec& v, size_t seq, size_t d, bool causal) {
  Vec o(seq * d, 0.0);
  for (size_t i = 0; i < seq; ++i) {
    Vec scores;
    const size_t keys = causal ? i + 1 : seq;
    for (size_t j = 0; j < keys; ++j) {
      double dot = 0;
      for (size_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      scores.push_back(dot / std::sqrt(double(d)));
    }
    const Vec p = softmax(scores);
    for (size_t j = 0; j < keys; ++j)
      for (size_t c = 0; c < d; ++c) o[i * d + c] += p[j] * v[j * d + c];
  }
  return o;
}

// The flash kernel's recurrence: query blocks of bm rows, key tiles of bn keys; per tile a
// running max m, running sum l and an unnormalized output rescaled by exp(m_old - m_new);
// tiles past the causal diagonal skipped, masked entries -inf; normalized once at the end.
inline Vec attention_tiled(const Vec& q, const Vec& k, const Vec& v, size_t seq, size_t d, bool causal, size_t bm,
                           size_t bn) {
  Vec o(seq * d, 0.0);
  const double scale = 1 / std::sqrt(double(d));
  for (size_t m0 = 0; m0 < seq; m0 += bm) {
    const size_t kv_end = causal ? std::min(seq, m0 + bm) : seq;
    for (size_t i = m0; i < std::min(seq, m0 + bm); ++i) {
      double m = -kInf, l = 0;
      Vec acc(d, 0.0);
      for (size_t n0 = 0; n0 < kv_end; n0 += bn) {
        Vec s(bn, -kInf);
        double mx = -kInf;
        for (size_t j = n0; j < n0 + bn; ++j) {
          if (j >= seq || (causal && j > i)) continue;
          double dot = 0;
          for (size_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
          s[j - n0] = dot * scale;
          mx = std::max(mx, s[j - n0]);
        }
        const double m_new = std::max(m, mx);
        const double base = m_new == -kInf ? 0 : m_new;
        const double alpha = std::exp(m - base);
        l *= alpha;
        for (double& a : acc) a *= alpha;
        for (size_t j = n0; j < std::min(seq, n0 + bn); ++j) {
          const double p = std::exp(s[j - n0] - base);
          l += p;
          for (size_t c = 0; c < d; ++c) acc[c] += p * v[j * d + c];
        }
        m = m_new;
      }
      for (size_t c = 0; c < d; ++c) o[i * d + c] = acc[c] / l;
    }
  }
  return o;
}

}  // namespace mlsem_kernels::reference
