#include "cuda/index.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace mlsem::cuda {

Poly Poly::constant(int64_t c) {
  Poly p;
  p.add_term({}, c);
  return p;
}

Poly Poly::symbol(const std::string& name) {
  Poly p;
  p.add_term({name}, 1);
  return p;
}

void Poly::add_term(const Monomial& m, int64_t c) {
  if (c == 0) return;
  int64_t& slot = terms_[m];
  slot += c;
  if (slot == 0) terms_.erase(m);
}

Poly Poly::operator+(const Poly& o) const {
  Poly r = *this;
  for (const auto& [m, c] : o.terms_) r.add_term(m, c);
  return r;
}

Poly Poly::operator-() const {
  Poly r;
  for (const auto& [m, c] : terms_) r.add_term(m, -c);
  return r;
}

Poly Poly::operator-(const Poly& o) const { return *this + (-o); }

Poly Poly::operator*(const Poly& o) const {
  Poly r;
  for (const auto& [m1, c1] : terms_) {
    for (const auto& [m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      r.add_term(m, c1 * c2);
    }
  }
  return r;
}

std::optional<int64_t> Poly::as_constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

bool Poly::mentions(const std::string& symbol) const {
  for (const auto& [m, c] : terms_)
    if (std::find(m.begin(), m.end(), symbol) != m.end()) return true;
  return false;
}

std::vector<std::string> Poly::symbols() const {
  std::set<std::string> seen;
  for (const auto& [m, c] : terms_) seen.insert(m.begin(), m.end());
  return {seen.begin(), seen.end()};
}

std::optional<Poly> Poly::coefficient(const std::string& symbol) const {
  Poly r;
  for (const auto& [m, c] : terms_) {
    auto n = std::count(m.begin(), m.end(), symbol);
    if (n > 1) return std::nullopt;
    if (n == 0) continue;
    Monomial rest = m;
    rest.erase(std::find(rest.begin(), rest.end(), symbol));
    r.add_term(rest, c);
  }
  return r;
}

Poly Poly::substitute(const std::string& symbol, const Poly& value) const {
  Poly r;
  for (const auto& [m, c] : terms_) {
    Poly term = constant(c);
    for (const auto& s : m) term = term * (s == symbol ? value : Poly::symbol(s));
    r = r + term;
  }
  return r;
}

int64_t Poly::content() const {
  int64_t g = 0;
  for (const auto& [m, c] : terms_) g = std::gcd(g, c < 0 ? -c : c);
  return g;
}

std::optional<Poly> Poly::divide(int64_t d) const {
  if (d == 0) return std::nullopt;
  Poly r;
  for (const auto& [m, c] : terms_) {
    if (c % d != 0) return std::nullopt;
    r.add_term(m, c / d);
  }
  return r;
}

std::string Poly::text() const {
  if (terms_.empty()) return "0";
  // Higher-degree terms first, the constant last: "C*threadIdx.x + i + 1".
  std::vector<std::pair<Monomial, int64_t>> ordered(terms_.begin(), terms_.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  for (const auto& [m, c] : ordered) {
    int64_t mag = c < 0 ? -c : c;
    if (out.empty()) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    std::string factors;
    if (mag != 1 || m.empty()) factors = std::to_string(mag);
    for (const auto& s : m) factors += (factors.empty() ? "" : "*") + s;
    out += factors;
  }
  return out;
}

LaneStride lane_stride(const Poly& byte_offset, int64_t elem_bytes, const char* symbol) {
  LaneStride r;
  auto coeff = byte_offset.coefficient(symbol);
  if (!coeff) return r;
  // The coefficient must not itself vary with the thread (threadIdx.x * threadIdx.y ...).
  for (const auto& s : coeff->symbols())
    if (s.rfind("threadIdx.", 0) == 0) return r;
  r.affine = true;
  if (elem_bytes > 0) r.elements = coeff->divide(elem_bytes);
  if (r.elements) r.constant = r.elements->as_constant();
  return r;
}

int64_t bank_conflict_ways(int64_t word_stride, int64_t elem_bytes) {
  if (word_stride < 0) word_stride = -word_stride;
  if (word_stride == 0) return 1;  // every lane reads the same word: a broadcast
  int64_t words = std::max<int64_t>(1, elem_bytes / 4);
  // 32 banks. Lanes i and j collide when (i - j) * word_stride is a multiple of 32;
  // an access of `words` words per lane is served in `words` phases of 32/words lanes.
  return std::max<int64_t>(1, std::gcd(word_stride, int64_t{32}) / words);
}

int64_t bank_conflict_ways_min(const Poly& word_stride, int64_t elem_bytes) {
  if (auto c = word_stride.as_constant()) return bank_conflict_ways(*c, elem_bytes);
  return bank_conflict_ways(word_stride.content(), elem_bytes);
}

namespace {

// A symbol of the lowering that moves with the thread, the block or a loop: a builtin
// (threadIdx.x), an opaque term ({blockIdx.z % ne2}), a loop iteration (i'), a variable
// assigned in a loop (v~). Anything else is a kernel parameter or a global.
bool index_symbol(const std::string& s) {
  return s.find('.') != std::string::npos || s.starts_with('{') || s.ends_with('\'') || s.ends_with('~') ||
         s.starts_with('@');
}
bool thread_or_block_symbol(const std::string& s) { return s.find('.') != std::string::npos || s.starts_with('{'); }

}  // namespace

bool runtime_strides(const Poly& elements, const Poly& lane) {
  const auto& lane_terms = lane.terms();
  if (lane_terms.size() != 1 || lane_terms.begin()->second != 1 || lane_terms.begin()->first.size() != 1) return false;
  const std::string& lane_param = lane_terms.begin()->first.front();
  if (index_symbol(lane_param)) return false;
  std::set<std::string> strides;
  for (const auto& [monomial, coefficient] : elements.terms()) {
    std::vector<std::string> index, params;
    for (const std::string& s : monomial) (index_symbol(s) ? index : params).push_back(s);
    if (index.empty()) continue;          // a constant offset (lp0*s00)
    if (params.empty()) return false;     // an index walking at unit stride: a real layout
    bool thread_term = std::any_of(index.begin(), index.end(), thread_or_block_symbol);
    bool loop_term = std::any_of(index.begin(), index.end(), [](const std::string& s) { return s.ends_with('\''); });
    if (thread_term && !loop_term) {
      if (params.size() != 1) return false;  // a product of sizes (b*T*C): an outer dimension's extent
      strides.insert(params.front());
    }
  }
  return strides.size() >= 3 && strides.count(lane_param);
}

}  // namespace mlsem::cuda
