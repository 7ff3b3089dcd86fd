// Softmax over the last dim: one pass over memory (row cached in registers; rows too long
// for one block split over a thread-block cluster), an online two-read fallback for rows
// too long for that, and the unfused baseline.
#include <cooperative_groups.h>

#include <cstdlib>

#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

// One block per row; each thread holds PPT packs of its row in registers, so the row is
// read once and written once: max, then exp and sum, then scale, all from registers.
// exp(x - max) is 2^(x log2e - max log2e): one FMA and one MUFU op (fast_exp2). Rows of at
// most 32 values a thread keep the exps in float registers for the output (one MUFU op per
// element); longer ones recompute them, registers being worth more there than a MUFU op.
// (Merging per-thread (max, sum) pairs in a single reduction measured 10% slower on an
// H200: the merge's exps sit on the critical path of every shuffle round.)
template <class T, int PPT, bool VEC>
__device__ __forceinline__ void softmax_row(const T* x, T* y, int64_t cols) {
  constexpr int P = kPack<T>;
  constexpr bool kKeepExps = PPT * P <= 32;
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  Pack<T> v[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) v[i] = load_pack<VEC>(xr, (int64_t(i) * blockDim.x + threadIdx.x) * P, cols, -INFINITY);
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) m = fmaxf(m, v[i][j]);
  const float ml = block_max(m) * kLog2e;
  float e[kKeepExps ? PPT : 1][P], s = 0.f;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const float ej = fast_exp2(fmaf(v[i][j], kLog2e, -ml));  // padding holds -inf: 2^-inf = 0
      if constexpr (kKeepExps) e[i][j] = ej;
      s += ej;
    }
  const float inv = 1.f / block_sum(s);
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
#pragma unroll
    for (int j = 0; j < P; ++j)
      v[i].set(j, (kKeepExps ? e[kKeepExps ? i : 0][j] : fast_exp2(fmaf(v[i][j], kLog2e, -ml))) * inv);
    store_pack<VEC>(yr, (int64_t(i) * blockDim.x + threadIdx.x) * P, cols, v[i]);
  }
}
template <class T, int PPT, bool VEC>
__global__ void softmax_cached(const T* x, T* y, int64_t cols) {
  softmax_row<T, PPT, VEC>(x, y, cols);
}
// Unaligned rows of a 16-bit type at 8 packs a thread, with a bound of its own: 127 registers
// instead of 167, so 256 threads take two blocks per SM. Side by side with the unbounded
// kernel, bf16 unless named (H100 / H200, ms): 4096x12289 0.283 -> 0.237 / 0.256 -> 0.210,
// 4096x16383 0.398 -> 0.346 / 0.348 -> 0.300, float16 0.399 -> 0.347 / 0.350 -> 0.300;
// 4096x20479 and 4096x24575 (320 and 384 threads, one block per SM either way) unchanged.
// Aligned rows and float32 keep the unbounded kernel (with the bound the aligned cluster
// kernel took 122 registers instead of 94 and ran 11% slower at 1024x131072).
template <class T>
__global__ void __launch_bounds__(kMaxThreadsAt8Packs) softmax_cached_long(const T* x, T* y, int64_t cols) {
  softmax_row<T, 8, false>(x, y, cols);
}
// Past 384 threads the cluster kernel is faster than the bounded one, and those rows keep it,
// as when the unbounded kernel's 167 registers allowed no more (on an H100 at 2048x32767,
// 512 threads: 0.372 ms against 0.404). The bound (512) stays above this limit.
constexpr int kSoftmaxLongMaxThreads = 384;
// The kernel that holds 8 packs a thread.
template <class T, bool VEC>
constexpr auto softmax_cached8() {
  if constexpr (sizeof(T) == 2 && !VEC) return softmax_cached_long<T>;
  else return softmax_cached<T, 8, VEC>;
}

// Rows too long for registers: the online recurrence finds max and sum in one read
// (rescaling the running sum when the max grows), a second read writes the output.
template <class T, bool VEC>
__global__ void softmax_online(const T* x, T* y, int64_t cols) {
  constexpr int P = kPack<T>, U = 4;  // U packs in flight per thread
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  const int64_t step = int64_t{blockDim.x} * P;
  MaxSum ms;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += step * U) {
    Pack<T> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = load_pack<VEC>(xr, c + u * step, cols, -INFINITY);
    MaxSum chunk;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < P; ++j) chunk.m = fmaxf(chunk.m, v[u][j]);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < P; ++j) chunk.s += fast_exp2((v[u][j] - chunk.m) * kLog2e);
    ms = merge(ms, chunk);
  }
  ms = block_merge(ms);
  const float inv = 1.f / ms.s;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += step * U) {
    Pack<T> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = load_pack<VEC>(xr, c + u * step, cols, -INFINITY);
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int j = 0; j < P; ++j) v[u].set(j, fast_exp2((v[u][j] - ms.m) * kLog2e) * inv);
      store_pack<VEC>(yr, c + u * step, cols, v[u]);
    }
  }
}

// Long rows: a cluster of kMaxCluster blocks per row, each caching its chunk in registers.
// Each block reduces its chunk to (max, sum of exp), publishes the pair in its shared
// memory, and after a cluster barrier reads all the cluster's pairs through distributed
// shared memory; it then writes its chunk from registers. One read, one write, and
// rows * 8 blocks to spread over the SMs.
template <class T, int PPT, bool VEC>
__global__ void softmax_cluster(const T* x, T* y, int64_t cols, int64_t chunk) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), blocks = cluster.num_blocks();
  const int64_t row = blockIdx.x / blocks, c0 = rank * chunk;
  const int64_t n = c0 < cols ? (cols - c0 < chunk ? cols - c0 : chunk) : 0;  // this block's columns
  const T* xr = x + row * cols + c0;
  T* yr = y + row * cols + c0;
  Pack<T> v[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) v[i] = load_pack<VEC>(xr, (int64_t(i) * blockDim.x + threadIdx.x) * P, n, -INFINITY);
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) m = fmaxf(m, v[i][j]);
  m = block_max(m);
  float s = 0.f;
  if (m != -INFINITY) {
#pragma unroll
    for (int i = 0; i < PPT; ++i)
#pragma unroll
      for (int j = 0; j < P; ++j) s += fast_exp2((v[i][j] - m) * kLog2e);
  }
  s = block_sum(s);
  __shared__ float2 stat;
  if (threadIdx.x == 0) stat = make_float2(m, s);
  cluster.sync();  // every block's pair is published
  const int lane = threadIdx.x & 31;
  MaxSum tot;
  if (lane < (int)blocks) {
    const float2 p = *cluster.map_shared_rank(&stat, lane);
    tot = {p.x, p.y};
  }
  tot = warp_merge(tot);
  cluster.sync();  // no block leaves (freeing its shared memory) while others read it
  const float inv = 1.f / tot.s;
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
#pragma unroll
    for (int j = 0; j < P; ++j) v[i].set(j, fast_exp2((v[i][j] - tot.m) * kLog2e) * inv);
    store_pack<VEC>(yr, (int64_t(i) * blockDim.x + threadIdx.x) * P, n, v[i]);
  }
}

constexpr int kClusterPacks = 8;  // packs per thread in the cluster kernel

// Blocks per row of the cluster kernel: 16 (a non-portable cluster size that Hopper
// allows). On an H100 at 1024x131072 bf16, clusters of 4, 8 and 16 blocks ran in 0.306,
// 0.283 and 0.256 ms: smaller blocks keep more of them resident per SM. The environment
// variable MLSEM_KERNELS_SOFTMAX_CLUSTER (2, 4, 8 or 16; 1 for the online two-read kernel)
// overrides it, for experiments.
int softmax_cluster_size() {
  static const int size = [] {
    const char* v = std::getenv("MLSEM_KERNELS_SOFTMAX_CLUSTER");
    const int n = v && *v ? std::atoi(v) : 16;
    return n == 1 || n == 2 || n == 4 || n == 8 ? n : 16;  // 1: the online two-read kernel
  }();
  return size;
}

template <class T, bool VEC>
cudaError_t launch_softmax_cluster(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan,
                                   cudaStream_t s) {
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
  if (plan.cluster > kMaxCluster) {
    const cudaError_t e = cudaFuncSetAttribute(softmax_cluster<T, kClusterPacks, VEC>,
                                               cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return e;
  }
  return cudaLaunchKernelEx(&cfg, softmax_cluster<T, kClusterPacks, VEC>, x, y, cols, plan.chunk);
}

// The most threads a block of the cluster kernel may have: 8 packs a thread, within what
// its registers allow (the unaligned kernels allow fewer; cudaFuncGetAttributes, once).
template <class T, bool VEC>
int cluster_max_threads() {
  return std::min(kMaxThreadsAt8Packs, max_block_threads<softmax_cluster<T, kClusterPacks, VEC>>());
}

// Launches with the preferred cluster size; a GPU that refuses a non-portable cluster gets 8,
// planned within the same thread limit (the online kernel when 8 blocks cannot cache the row).
template <class T, bool VEC>
cudaError_t softmax_long_rows(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan, cudaStream_t s) {
  cudaError_t e = launch_softmax_cluster<T, VEC>(x, y, rows, cols, plan, s);
  if (e != cudaSuccess && plan.cluster > kMaxCluster) {
    (void)cudaGetLastError();  // clear the refused launch
    const SplitPlan portable = plan_cached_split(cols, kPack<T>, kClusterPacks, cluster_max_threads<T, VEC>(), kMaxCluster);
    if (portable.cluster > 0) return launch_softmax_cluster<T, VEC>(x, y, rows, cols, portable, s);
    softmax_online<T, VEC><<<static_cast<unsigned>(rows), 1024, 0, s>>>(x, y, cols);
    e = cudaGetLastError();
  }
  return e;
}

}  // namespace

// Shared with the attention baseline (its row softmax over the scores).
template <class T>
int softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t s) {
  const bool vec = can_vectorize(x, cols, sizeof(T)) && can_vectorize(y, cols, sizeof(T));
  const RowPlan plan = plan_rows(cols, kPack<T>);
  const unsigned grid = static_cast<unsigned>(rows);
  MLSEM_WITH_VEC(vec, {
    if (!cached_launches<softmax_cached8<T, VEC>()>(plan) || (sizeof(T) == 2 && !VEC && plan.packs_per_thread == 8 &&
                                                              plan.threads > kSoftmaxLongMaxThreads)) {
      const SplitPlan split =
          plan_cached_split(cols, kPack<T>, kClusterPacks, cluster_max_threads<T, VEC>(), softmax_cluster_size());
      if (split.cluster > 1 && rows * split.cluster < (int64_t{1} << 31)) {
        MLSEM_TRY((softmax_long_rows<T, VEC>(x, y, rows, cols, split, s)));
      } else {
        softmax_online<T, VEC><<<grid, 1024, 0, s>>>(x, y, cols);
      }
    } else {
      switch (plan.packs_per_thread) {
        case 1: softmax_cached<T, 1, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        case 2: softmax_cached<T, 2, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        case 4: softmax_cached<T, 4, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        default:
          if constexpr (sizeof(T) == 2 && !VEC) softmax_cached_long<T><<<grid, plan.threads, 0, s>>>(x, y, cols);
          else softmax_cached<T, 8, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols);
          break;
      }
    }
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}
template int softmax_rows<__half>(const __half*, __half*, int64_t, int64_t, cudaStream_t);
template int softmax_rows<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t, cudaStream_t);

namespace {

// The hand-written form: m = x.max(-1); e = exp(x - m); e / e.sum(-1).
template <class T>
int baseline(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t s) {
  using namespace eager;
  Scratch scratch(s);
  T *m, *d, *e, *sum;
  MLSEM_TRY(scratch.get(&m, rows));
  MLSEM_TRY(scratch.get(&d, rows * cols));
  MLSEM_TRY(scratch.get(&e, rows * cols));
  MLSEM_TRY(scratch.get(&sum, rows));
  MLSEM_TRY(reduce(Reduce::kMax, x, m, rows, cols, s));
  MLSEM_TRY(binary(Binary::kSub, x, m, Bcast::kPerRow, d, rows, cols, s));
  MLSEM_TRY(unary(Unary::kExp, d, e, rows * cols, 0.f, s));
  MLSEM_TRY(reduce(Reduce::kSum, e, sum, rows, cols, s));
  MLSEM_TRY(binary(Binary::kDiv, e, sum, Bcast::kPerRow, y, rows, cols, s));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_softmax_fused(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                   mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return softmax_rows(static_cast<const T*>(x), static_cast<T*>(y), rows, cols, stream));
}

extern "C" int mlsem_softmax_baseline(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                      mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(x), static_cast<T*>(y), rows, cols, stream));
}
