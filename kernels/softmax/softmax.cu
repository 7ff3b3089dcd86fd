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

// The (max, sum) of a row split over a cluster, from this block's chunk v: each block
// reduces its chunk, publishes the pair in stat[slot] of its shared memory, and after a
// cluster barrier reads every block's pair through distributed shared memory. Returns the
// merged pair in every thread. With two slots used alternately, one barrier per row is
// enough: a block writes stat[slot] again two rows later, after the next row's barrier,
// which every block reaches only once it has read this row's pairs.
// Makes the packs opaque to the compiler: the 16-bit values are converted to float again
// in the next loop (one ALU op each) rather than kept converted in twice the registers.
template <class T, int PPT>
__device__ __forceinline__ void launder(Pack<T> (&v)[PPT]) {
#pragma unroll
  for (int i = 0; i < PPT; ++i) asm volatile("" : "+r"(v[i].raw.x), "+r"(v[i].raw.y), "+r"(v[i].raw.z), "+r"(v[i].raw.w));
}

template <class T, int PPT>
__device__ __forceinline__ MaxSum cluster_row_stats(Pack<T> (&v)[PPT], float2* stat, int slot) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  cg::cluster_group cluster = cg::this_cluster();
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) m = fmaxf(m, v[i][j]);
  if constexpr (sizeof(T) == 2) launder(v);
  m = block_max(m);
  float s = 0.f;
  if (m != -INFINITY) {
#pragma unroll
    for (int i = 0; i < PPT; ++i)
#pragma unroll
      for (int j = 0; j < P; ++j) s += fast_exp2((v[i][j] - m) * kLog2e);
  }
  if constexpr (sizeof(T) == 2) launder(v);
  s = block_sum(s);
  if (threadIdx.x == 0) stat[slot] = make_float2(m, s);
  cluster.sync();  // every block's pair is published
  MaxSum tot;
  const int lane = threadIdx.x & 31;
  if (lane < (int)cluster.num_blocks()) {
    const float2 p = *cluster.map_shared_rank(&stat[slot], lane);
    tot = {p.x, p.y};
  }
  return warp_merge(tot);
}

template <class T, int PPT, int THREADS, bool VEC>
__device__ __forceinline__ void write_chunk(Pack<T> (&v)[PPT], T* yr, int64_t n, MaxSum tot) {
  constexpr int P = kPack<T>;
  const float inv = 1.f / tot.s;
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
#pragma unroll
    for (int j = 0; j < P; ++j) v[i].set(j, fast_exp2((v[i][j] - tot.m) * kLog2e) * inv);
    store_pack<VEC>(yr, int64_t(i * THREADS + threadIdx.x) * P, n, v[i]);
  }
}

// Long rows, persistent: as many clusters as fit on the GPU at once, each walking rows
// first, first + clusters, ...; each block keeps its chunk of two rows in registers, and
// loads the next row's chunk before the current row's reductions and cluster barrier, so
// those loads are in flight while the block waits.
template <class T, int PPT, int THREADS, bool VEC>
__global__ void __launch_bounds__(THREADS) softmax_cluster_persistent(const T* x, T* y, int64_t rows, int64_t cols, int64_t chunk) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), blocks = cluster.num_blocks();
  const int64_t first = blockIdx.x / blocks, stride = gridDim.x / blocks, c0 = rank * chunk;
  const int64_t n = c0 < cols ? (cols - c0 < chunk ? cols - c0 : chunk) : 0;
  __shared__ float2 stat[2];
  Pack<T> a[PPT], b[PPT];
  auto load = [&](Pack<T>(&v)[PPT], int64_t row) {
    const T* xr = x + row * cols + c0;
#pragma unroll
    for (int i = 0; i < PPT; ++i) v[i] = load_pack<VEC>(xr, int64_t(i * THREADS + threadIdx.x) * P, n, -INFINITY);
  };
  if (first < rows) load(a, first);
  for (int64_t row = first; row < rows; row += 2 * stride) {
    const int64_t r1 = row + stride, r2 = r1 + stride;
    if (r1 < rows) load(b, r1);
    write_chunk<T, PPT, THREADS, VEC>(a, y + row * cols + c0, n, cluster_row_stats<T, PPT>(a, stat, 0));
    if (r1 >= rows) break;
    if (r2 < rows) load(a, r2);
    write_chunk<T, PPT, THREADS, VEC>(b, y + r1 * cols + c0, n, cluster_row_stats<T, PPT>(b, stat, 1));
  }
  cluster.sync();  // no block leaves (freeing its shared memory) while others read it
}

// ---- mbarriers and the bulk copy engine (sm_90) ----
__device__ __forceinline__ void bulk_mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void bulk_mbar_wait(uint32_t bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// `bytes` from global `src` into shared `dst` (both 16-byte aligned, bytes a multiple of
// 16), completing on the mbarrier `bar`, whose arrival expects them.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Long rows, persistent, loads through the bulk copy engine: each block of a cluster keeps
// `stages` of its chunks (rows first, first + clusters, ...) in flight into shared memory,
// one thread issuing one bulk copy per chunk; the block takes a chunk into registers, frees
// the stage for the copy of the row `stages` ahead, and reduces and writes as above. Needs
// 16-byte aligned rows (VEC).
template <class T, int PPT, int THREADS>
__global__ void __launch_bounds__(THREADS) softmax_cluster_bulk(const T* x, T* y, int64_t rows, int64_t cols, int64_t chunk, int stages) {
  namespace cg = cooperative_groups;
  constexpr int P = kPack<T>;
  extern __shared__ __align__(128) unsigned char smem[];  // `stages` chunks, then `stages` mbarriers
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), blocks = cluster.num_blocks();
  const int64_t first = blockIdx.x / blocks, stride = gridDim.x / blocks, c0 = rank * chunk;
  const int64_t n = c0 < cols ? (cols - c0 < chunk ? cols - c0 : chunk) : 0;
  const uint32_t bytes = static_cast<uint32_t>(n * sizeof(T)), stage_bytes = static_cast<uint32_t>(chunk * sizeof(T));
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bars = base + stages * stage_bytes;
  __shared__ float2 stat[2];
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) bulk_mbar_init(bars + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int s = 0; s < stages && first + s * stride < rows; ++s)
      if (bytes) bulk_load(base + s * stage_bytes, x + (first + s * stride) * cols + c0, bytes, bars + 8 * s);
  }
  __syncthreads();  // the barriers are initialized
  int k = 0;
  for (int64_t row = first; row < rows; row += stride, ++k) {
    const int s = k % stages;
    if (bytes) bulk_mbar_wait(bars + 8 * s, (k / stages) & 1);
    const uint4* st = reinterpret_cast<const uint4*>(smem + s * stage_bytes);
    Pack<T> v[PPT];
#pragma unroll
    for (int i = 0; i < PPT; ++i) {
      const int p = i * THREADS + threadIdx.x;
      if (int64_t(p) * P < n) {
        v[i].raw = st[p];
      } else {
#pragma unroll
        for (int j = 0; j < P; ++j) v[i].set(j, -INFINITY);
      }
    }
    __syncthreads();  // every thread has its packs of stage s: refill it
    const int64_t ahead = row + int64_t(stages) * stride;
    if (threadIdx.x == 0 && ahead < rows && bytes) {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      bulk_load(base + s * stage_bytes, x + ahead * cols + c0, bytes, bars + 8 * s);
    }
    write_chunk<T, PPT, THREADS, true>(v, y + row * cols + c0, n, cluster_row_stats<T, PPT>(v, stat, k & 1));
  }
  cluster.sync();  // no block leaves (freeing its shared memory) while others read it
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

// Experiment knobs (environment, read once): MLSEM_KERNELS_SOFTMAX_LONG picks the long-row
// kernel (0 one cluster per row, 1 persistent, 2 persistent with bulk copies);
// MLSEM_KERNELS_SOFTMAX_PPT the packs a thread (4 or 8); MLSEM_KERNELS_SOFTMAX_STAGES the
// bulk kernel's stages; MLSEM_KERNELS_SOFTMAX_GRID the persistent kernels' clusters (0: as
// many as fit at once).
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
struct LongRowKnobs {
  int kind, ppt, stages, grid;
};
const LongRowKnobs& long_row_knobs() {
  static const LongRowKnobs k = [] {
    LongRowKnobs k{env_int("MLSEM_KERNELS_SOFTMAX_LONG", 0), env_int("MLSEM_KERNELS_SOFTMAX_PPT", 8) == 4 ? 4 : 8,
                   env_int("MLSEM_KERNELS_SOFTMAX_STAGES", 3), env_int("MLSEM_KERNELS_SOFTMAX_GRID", 0)};
    if (k.kind == 0) k.ppt = kClusterPacks;
    if (k.stages < 1) k.stages = 1;
    return k;
  }();
  return k;
}

template <class Kernel, class... Args>
cudaError_t launch_clustered(Kernel kernel, int64_t clusters, int cluster, int threads, size_t smem, cudaStream_t s,
                             bool persistent, int grid_override, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
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
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
  }
  if (persistent) {
    int fit = 0;
    cfg.gridDim = dim3(static_cast<unsigned>(cluster));
    const cudaError_t e = cudaOccupancyMaxActiveClusters(&fit, kernel, &cfg);
    if (e != cudaSuccess) return e;
    if (grid_override > 0) fit = grid_override;
    if (fit < 1) return cudaErrorInvalidConfiguration;
    if (clusters > fit) clusters = fit;
  }
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

// The persistent kernels' block sizes: THREADS threads of PPT packs cover a chunk of up to
// THREADS * PPT packs. Returns false when no instantiation covers the plan's chunk.
template <class T, bool VEC>
bool launch_persistent(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan, int ppt, int kind,
                       int stages, int grid, cudaStream_t s, cudaError_t* e) {
  const int t = plan.threads;
  const int C = plan.cluster;
  if (kind == 2 && VEC) {
    const size_t smem = size_t(stages) * plan.chunk * sizeof(T) + 8 * stages;
    if (ppt == 8 && t <= 128)
      *e = launch_clustered(softmax_cluster_bulk<T, 8, 128>, rows, C, 128, smem, s, true, grid, x, y, rows, cols, plan.chunk, stages);
    else if (ppt == 8 && t <= 256)
      *e = launch_clustered(softmax_cluster_bulk<T, 8, 256>, rows, C, 256, smem, s, true, grid, x, y, rows, cols, plan.chunk, stages);
    else if (ppt == 4 && t <= 256)
      *e = launch_clustered(softmax_cluster_bulk<T, 4, 256>, rows, C, 256, smem, s, true, grid, x, y, rows, cols, plan.chunk, stages);
    else
      return false;
    return true;
  }
  if (ppt == 8 && t <= 128)
    *e = launch_clustered(softmax_cluster_persistent<T, 8, 128, VEC>, rows, C, 128, 0, s, true, grid, x, y, rows, cols, plan.chunk);
  else if (ppt == 8 && t <= 256)
    *e = launch_clustered(softmax_cluster_persistent<T, 8, 256, VEC>, rows, C, 256, 0, s, true, grid, x, y, rows, cols, plan.chunk);
  else if (ppt == 4 && t <= 256)
    *e = launch_clustered(softmax_cluster_persistent<T, 4, 256, VEC>, rows, C, 256, 0, s, true, grid, x, y, rows, cols, plan.chunk);
  else
    return false;
  return true;
}

template <class T, bool VEC>
cudaError_t launch_softmax_cluster(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan,
                                   cudaStream_t s) {
  const LongRowKnobs& k = long_row_knobs();
  cudaError_t e = cudaSuccess;
  if (k.kind >= 1 && launch_persistent<T, VEC>(x, y, rows, cols, plan, k.ppt, k.kind, k.stages, k.grid, s, &e)) return e;
  return launch_clustered(softmax_cluster<T, kClusterPacks, VEC>, rows, plan.cluster, plan.threads, 0, s, false, 0, x,
                          y, cols, plan.chunk);
}

// Launches with the preferred cluster size; a GPU that refuses a non-portable cluster gets 8.
template <class T, bool VEC>
cudaError_t softmax_long_rows(const T* x, T* y, int64_t rows, int64_t cols, const SplitPlan& plan, cudaStream_t s) {
  cudaError_t e = launch_softmax_cluster<T, VEC>(x, y, rows, cols, plan, s);
  if (e != cudaSuccess && plan.cluster > kMaxCluster) {
    (void)cudaGetLastError();  // clear the refused launch
    const SplitPlan portable = plan_cached_split(cols, kPack<T>, long_row_knobs().ppt, kMaxThreadsAt8Packs, kMaxCluster);
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
      const SplitPlan split = plan_cached_split(cols, kPack<T>, long_row_knobs().ppt, kMaxThreadsAt8Packs, softmax_cluster_size());
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
