// Cross-entropy over a vocabulary: loss = logsumexp(logits) - logits[target], fused into
// one read of the logits, chunk by chunk with the online logsumexp; and the baseline.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

constexpr int kLoadsInFlight = 4;  // packs each thread loads before it uses the first

// One block per row. The row is streamed in chunks of blockDim * P * 4 elements; each
// thread folds its packs into a running (max, sum of exp) pair, and the block merges
// the pairs at the end. The logits are read exactly once, never materialized as probabilities.
template <class T, bool VEC>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* targets, float* losses, int64_t vocab) {
  constexpr int P = kPack<T>;
  const T* row = logits + blockIdx.x * vocab;
  MaxSum ms;
  const int64_t step = int64_t{blockDim.x} * P;
  for (int64_t c0 = int64_t{threadIdx.x} * P; c0 < vocab; c0 += step * kLoadsInFlight) {
    Pack<T> v[kLoadsInFlight];
#pragma unroll
    for (int q = 0; q < kLoadsInFlight; ++q) v[q] = load_pack<VEC>(row, c0 + q * step, vocab, -INFINITY);
    MaxSum chunk;
#pragma unroll
    for (int q = 0; q < kLoadsInFlight; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) chunk.m = fmaxf(chunk.m, v[q][j]);
    if (chunk.m != -INFINITY) {
      const float m_log2 = chunk.m * 1.44269504f;
#pragma unroll
      for (int q = 0; q < kLoadsInFlight; ++q)
#pragma unroll
        for (int j = 0; j < P; ++j) chunk.s += exp2f(fmaf(v[q][j], 1.44269504f, -m_log2));
      ms = merge(ms, chunk);
    }
  }
  ms = block_merge(ms);
  if (threadIdx.x == 0) {
    const int64_t t = targets[blockIdx.x];
    losses[blockIdx.x] = t >= 0 && t < vocab ? ms.m + logf(ms.s) - to_f(row[t]) : 0.f;
  }
}

// mean over rows with a valid target, in a fixed order (deterministic).
__global__ void mean_loss_kernel(const float* losses, const int64_t* targets, float* mean, int64_t rows, int64_t vocab) {
  float sum = 0.f, count = 0.f;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const bool valid = targets[r] >= 0 && targets[r] < vocab;
    sum += valid ? losses[r] : 0.f;
    count += valid ? 1.f : 0.f;
  }
  sum = block_sum(sum);
  count = block_sum(count);
  if (threadIdx.x == 0) *mean = count > 0.f ? sum / count : NAN;
}

template <class T>
int fused(const T* logits, const int64_t* targets, float* losses, float* mean, int64_t rows, int64_t vocab,
          cudaStream_t s) {
  const bool vec = can_vectorize(logits, vocab, sizeof(T));
  MLSEM_WITH_VEC(vec, cross_entropy_kernel<T, VEC><<<static_cast<unsigned>(rows), 256, 0, s>>>(logits, targets,
                                                                                              losses, vocab));
  MLSEM_CHECK_LAUNCH();
  mean_loss_kernel<<<1, 1024, 0, s>>>(losses, targets, mean, rows, vocab);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written form, one kernel per op: lp = log(softmax(logits.float()));
// -lp.gather(1, t).mean(), with softmax written out as max, sub, exp, sum, div.

template <class T>
int baseline(const T* logits, const int64_t* targets, float* losses, float* mean, int64_t rows, int64_t vocab,
             cudaStream_t s) {
  using namespace eager;
  const int64_t n = rows * vocab;
  Scratch scratch(s);
  float *xf, *m, *d, *e, *sum, *p, *lp, *picked;
  MLSEM_TRY(scratch.get(&xf, n));
  MLSEM_TRY(scratch.get(&m, rows));
  MLSEM_TRY(scratch.get(&d, n));
  MLSEM_TRY(scratch.get(&e, n));
  MLSEM_TRY(scratch.get(&sum, rows));
  MLSEM_TRY(scratch.get(&p, n));
  MLSEM_TRY(scratch.get(&lp, n));
  MLSEM_TRY(scratch.get(&picked, rows));
  MLSEM_TRY(unary(Unary::kCopy, logits, xf, n, 0.f, s));  // .float()
  MLSEM_TRY(reduce(Reduce::kMax, static_cast<const float*>(xf), m, rows, vocab, s));
  MLSEM_TRY(binary(Binary::kSub, static_cast<const float*>(xf), static_cast<const float*>(m), Bcast::kPerRow, d, rows, vocab, s));
  MLSEM_TRY(unary(Unary::kExp, static_cast<const float*>(d), e, n, 0.f, s));
  MLSEM_TRY(reduce(Reduce::kSum, static_cast<const float*>(e), sum, rows, vocab, s));
  MLSEM_TRY(binary(Binary::kDiv, static_cast<const float*>(e), static_cast<const float*>(sum), Bcast::kPerRow, p, rows, vocab, s));
  MLSEM_TRY(unary(Unary::kLog, static_cast<const float*>(p), lp, n, 0.f, s));
  gather_kernel<float><<<static_cast<unsigned>(ceil_div(rows, 256)), 256, 0, s>>>(lp, targets, picked, rows, vocab);
  MLSEM_CHECK_LAUNCH();
  MLSEM_TRY(unary(Unary::kNeg, static_cast<const float*>(picked), losses, rows, 0.f, s));
  mean_loss_kernel<<<1, 1024, 0, s>>>(losses, targets, mean, rows, vocab);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_cross_entropy_fused(const void* logits, const int64_t* targets, float* losses, float* mean_loss,
                                         int64_t rows, int64_t vocab, int dtype, mlsem_stream stream) {
  if (rows <= 0 || vocab <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(logits), targets, losses, mean_loss, rows, vocab, stream));
}

extern "C" int mlsem_cross_entropy_baseline(const void* logits, const int64_t* targets, float* losses,
                                            float* mean_loss, int64_t rows, int64_t vocab, int dtype,
                                            mlsem_stream stream) {
  if (rows <= 0 || vocab <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(logits), targets, losses, mean_loss, rows, vocab, stream));
}
