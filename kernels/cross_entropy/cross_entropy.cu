// Cross-entropy over a vocabulary: loss = logsumexp(logits) - logits[target], fused into
// one read of the logits, chunk by chunk with the online logsumexp (rows split over a
// thread-block cluster when there are few of them); and the baseline.
#include <cooperative_groups.h>

#include <cstdlib>

#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

constexpr int kLoadsInFlight = 4;  // packs each thread loads before it uses the first

__device__ __forceinline__ MaxSum fold(MaxSum ms, float x) { return merge(ms, {x, 1.f}); }

// A row (or, split over a cluster, one chunk of it) streamed once with the online
// logsumexp: each thread folds its packs into a running (max, sum of exp) pair, the block
// merges the pairs, and the blocks of a cluster merge theirs through distributed shared
// memory; block 0 of the cluster writes the loss. The logits are read exactly once, never
// materialized as probabilities. Rows need not start 16-byte aligned (an odd vocabulary
// such as 50257): the few elements before the first aligned address and after the last
// whole pack are folded one by one, the rest moves in 16-byte loads.
//
// exp through fast_exp2 (one MUFU op, no range fix-up): with exp2f this kernel ran at 86% of
// copy bandwidth on an H200 at 4096x128256, with fast_exp2 at 96% (48 registers; a build
// that let the compiler take 64 ran at 94%).
template <class T>
__global__ void __launch_bounds__(256)
    cross_entropy_kernel(const T* logits, const int64_t* targets, float* losses, int64_t vocab, int64_t chunk) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), blocks = cluster.num_blocks();
  const int64_t rowi = blockIdx.x / blocks, c0 = rank * chunk;
  const T* row = logits + rowi * vocab;
  const int64_t n = c0 < vocab ? (vocab - c0 < chunk ? vocab - c0 : chunk) : 0;
  const T* base = row + c0;
  const int64_t head_bytes = (16 - static_cast<int64_t>(reinterpret_cast<uintptr_t>(base) & 15)) & 15;
  const int64_t head = min(n, head_bytes / static_cast<int64_t>(sizeof(T)));
  const T* body = base + head;
  const int64_t packs = (n - head) / P, body_n = packs * P, tail = n - head - body_n;
  MaxSum ms;
  if (threadIdx.x < head) ms = fold(ms, to_f(base[threadIdx.x]));
  if (threadIdx.x < tail) ms = fold(ms, to_f(body[body_n + threadIdx.x]));
  const int64_t step = int64_t{blockDim.x} * P;
  for (int64_t c = int64_t{threadIdx.x} * P; c < body_n; c += step * kLoadsInFlight) {
    Pack<T> v[kLoadsInFlight];
#pragma unroll
    for (int q = 0; q < kLoadsInFlight; ++q) v[q] = load_pack<true>(body, c + q * step, body_n, -INFINITY);
    MaxSum chunk_ms;
#pragma unroll
    for (int q = 0; q < kLoadsInFlight; ++q)
#pragma unroll
      for (int j = 0; j < P; ++j) chunk_ms.m = fmaxf(chunk_ms.m, v[q][j]);
    if (chunk_ms.m != -INFINITY) {
      const float m_log2 = chunk_ms.m * kLog2e;
#pragma unroll
      for (int q = 0; q < kLoadsInFlight; ++q)
#pragma unroll
        for (int j = 0; j < P; ++j) chunk_ms.s += fast_exp2(fmaf(v[q][j], kLog2e, -m_log2));
      ms = merge(ms, chunk_ms);
    }
  }
  ms = block_merge(ms);
  if (blocks > 1) {
    __shared__ float2 stat;
    if (threadIdx.x == 0) stat = make_float2(ms.m, ms.s);
    cluster.sync();
    const int lane = threadIdx.x & 31;
    MaxSum tot;
    if (lane < (int)blocks) {
      const float2 p = *cluster.map_shared_rank(&stat, lane);
      tot = {p.x, p.y};
    }
    ms = warp_merge(tot);
    cluster.sync();  // no block leaves while others read its shared memory
  }
  if (threadIdx.x == 0 && rank == 0) {
    const int64_t t = targets[rowi];
    losses[rowi] = t >= 0 && t < vocab ? ms.m + logf(ms.s) - to_f(row[t]) : 0.f;
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
  // Fewer rows than SMs leave SMs idle: split each row over a cluster then. Splitting
  // more eagerly measured slower on an H100 at 1024x32000 (0.0414 ms unsplit; 0.0461 and
  // 0.0551 ms split over 2 and 4 blocks a row): each block's fixed cost (the block and
  // cluster merges) outweighs the extra loads in flight. MLSEM_KERNELS_CE_BLOCKS_PER_SM
  // (the target blocks per SM, default 1) overrides it, for experiments.
  static const int64_t blocks_per_sm = [] {
    const char* v = std::getenv("MLSEM_KERNELS_CE_BLOCKS_PER_SM");
    return int64_t{v && *v ? std::atoi(v) : 1};
  }();
  const SplitPlan plan = plan_stream_split(rows, vocab, kPack<T>, blocks_per_sm * sm_count());
  if (rows * plan.cluster >= (int64_t{1} << 31)) return MLSEM_BAD_ARGUMENT;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(rows * plan.cluster));
  cfg.blockDim = dim3(plan.threads);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = plan.cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  MLSEM_TRY(cudaLaunchKernelEx(&cfg, cross_entropy_kernel<T>, logits, targets, losses, vocab, plan.chunk));
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
