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
__global__ void softmax_cached(const T* x, T* y, int64_t cols) {
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

// The same split, leaner per block: exp(x - block max) computed once per element and kept
// in float registers for the output (one MUFU op per element instead of two; the output is
// e * 2^(block max - row max) / sum), max and sum taken as trees rather than one dependent
// chain, the block size a compile-time THREADS, and the second cluster barrier, which only
// keeps each block's shared memory alive until the others have read it, split: arrive
// after the reads, wait after the stores. 95 registers at 8 bf16 packs (the first kernel 94).
// Taken only where it was measured to win (launch_softmax_cluster).
template <class T>
__device__ __forceinline__ float pack_max(const Pack<T>& p) {
  float m[kPack<T>];
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) m[j] = p[j];
#pragma unroll
  for (int w = kPack<T> / 2; w > 0; w /= 2)
#pragma unroll
    for (int j = 0; j < w; ++j) m[j] = fmaxf(m[j], m[j + w]);
  return m[0];
}
template <int N>
__device__ __forceinline__ float tree_sum(float (&a)[N]) {
#pragma unroll
  for (int w = N / 2; w > 0; w /= 2)
#pragma unroll
    for (int j = 0; j < w; ++j) a[j] += a[j + w];
  return a[0];
}

template <class T, int PPT, int THREADS, bool VEC>
__global__ void __launch_bounds__(THREADS) softmax_cluster_kept(const T* x, T* y, int64_t cols, int64_t chunk) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  static_assert((PPT & (PPT - 1)) == 0 && (P & (P - 1)) == 0, "trees over powers of two");
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), blocks = cluster.num_blocks();
  const int64_t row = blockIdx.x / blocks, c0 = rank * chunk;
  const int64_t n = c0 < cols ? (cols - c0 < chunk ? cols - c0 : chunk) : 0;  // this block's columns
  const T* xr = x + row * cols + c0;
  T* yr = y + row * cols + c0;
  Pack<T> v[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) v[i] = load_pack<VEC>(xr, int64_t(i * THREADS + threadIdx.x) * P, n, -INFINITY);
  float pm[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) pm[i] = pack_max(v[i]);
#pragma unroll
  for (int w = PPT / 2; w > 0; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i) pm[i] = fmaxf(pm[i], pm[i + w]);
  const float m = block_max(pm[0]);
  const float ml = m == -INFINITY ? 0.f : m * kLog2e;  // a chunk of padding alone: every exp is 0
  float e[PPT][P], ps[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
#pragma unroll
    for (int j = 0; j < P; ++j) e[i][j] = fast_exp2(fmaf(v[i][j], kLog2e, -ml));  // padding holds -inf: 0
    float t[P];
#pragma unroll
    for (int j = 0; j < P; ++j) t[j] = e[i][j];
    ps[i] = tree_sum(t);
  }
  const float s = block_sum(tree_sum(ps));
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
  // This block is done reading the others' shared memory; it waits for them to be done
  // with its own only before it leaves.
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  const float scale = fast_exp2((m - tot.m) * kLog2e) / tot.s;  // 0 for a chunk of padding alone
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
#pragma unroll
    for (int j = 0; j < P; ++j) v[i].set(j, e[i][j] * scale);
    store_pack<VEC>(yr, int64_t(i * THREADS + threadIdx.x) * P, n, v[i]);
  }
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
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

template <class T>
cudaError_t launch_clustered(void (*kernel)(const T*, T*, int64_t, int64_t), int64_t rows, int cluster, int threads,
                             cudaStream_t s, const T* x, T* y, int64_t cols, int64_t chunk) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(rows * cluster));
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cluster > kMaxCluster) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return e;
  }
  return cudaLaunchKernelEx(&cfg, kernel, x, y, cols, chunk);
}

// Whether long rows take the lean cluster kernel: only with MLSEM_KERNELS_SOFTMAX_LONG=1
// (environment, read once; an experiment, off by default: it won on an H200 and lost on an H100).
bool softmax_lean_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("MLSEM_KERNELS_SOFTMAX_LONG");
    return v && *v && std::atoi(v) == 1;
  }();
  return allowed;
}

// The lean kernel, where asked for, only for 16-bit rows split over 16 blocks of 128 threads
// (bf16 columns in (98304, 131072]). At 1024x131072 bf16 it took 0.2012-0.2017 ms against
// 0.2057-0.2079 for the first kernel on an H200, but 0.2404-0.2413 against 0.2358-0.2367 on
// an H100 (1024x131071, unaligned: 0.7146 against 0.7190 ms on the H200, 0.9036 against
// 0.8517 on the H100); with 256-thread blocks it lost on the H200 too (256x262144: 0.1380
// against 0.1303 ms; 4 packs a thread at 1024x131072: 0.2146-0.2159).
template <class T, bool VEC>
cudaError_t launch_softmax_cluster(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan,
                                   cudaStream_t s) {
  if constexpr (sizeof(T) == 2) {
    if (plan.cluster == 16 && plan.threads == 128 && softmax_lean_allowed())
      return launch_clustered(softmax_cluster_kept<T, kClusterPacks, 128, VEC>, rows, plan.cluster, 128, s, x, y,
                              cols, plan.chunk);
  }
  return launch_clustered(softmax_cluster<T, kClusterPacks, VEC>, rows, plan.cluster, plan.threads, s, x, y, cols,
                          plan.chunk);
}

// Launches with the preferred cluster size; a GPU that refuses a non-portable cluster gets 8.
template <class T, bool VEC>
cudaError_t softmax_long_rows(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan, cudaStream_t s) {
  cudaError_t e = launch_softmax_cluster<T, VEC>(x, y, rows, cols, plan, s);
  if (e != cudaSuccess && plan.cluster > kMaxCluster) {
    (void)cudaGetLastError();  // clear the refused launch
    const SplitPlan portable = plan_cached_split(cols, kPack<T>, kClusterPacks, kMaxThreadsAt8Packs, kMaxCluster);
    if (portable.cluster > 0) e = launch_softmax_cluster<T, VEC>(x, y, rows, cols, portable, s);
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
    if (!cached_launches<softmax_cached<T, 8, VEC>>(plan)) {
      const SplitPlan split = plan_cached_split(cols, kPack<T>, kClusterPacks, kMaxThreadsAt8Packs, softmax_cluster_size());
      if (split.cluster > 1 && rows * split.cluster < (int64_t{1} << 31) &&
          split.threads <= max_block_threads<softmax_cluster<T, kClusterPacks, VEC>>()) {
        MLSEM_TRY((softmax_long_rows<T, VEC>(x, y, rows, cols, split, s)));
      } else {
        softmax_online<T, VEC><<<grid, 1024, 0, s>>>(x, y, cols);
      }
    } else {
      switch (plan.packs_per_thread) {
        case 1: softmax_cached<T, 1, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        case 2: softmax_cached<T, 2, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        case 4: softmax_cached<T, 4, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
        default: softmax_cached<T, 8, VEC><<<grid, plan.threads, 0, s>>>(x, y, cols); break;
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
