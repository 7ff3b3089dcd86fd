// Launch planning shared by the kernels (host side) and the CPU tests: pure C++, no CUDA.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MLSEM_HOST_DEVICE __host__ __device__
#else
#define MLSEM_HOST_DEVICE
#endif

namespace mlsem_kernels {

// A row-wise kernel (softmax, norms) runs one block per row. When the row fits,
// each thread keeps `packs_per_thread` 16-byte packs in registers so the row is
// read from memory once; otherwise it streams the row twice (`cached` false).
struct RowPlan {
  int threads = 0;
  int packs_per_thread = 0;  // 1, 2, 4 or 8 when cached
  bool cached = false;
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Kernels holding 8 packs a thread in registers take 89-167 of them: at most 512 threads a
// block (a 1024-thread block leaves 64 a thread, and its launch fails with "too many
// resources requested").
inline constexpr int kMaxThreadsAt8Packs = 512;

// pack: elements per 16-byte pack (8 for bf16/fp16, 4 for fp32).
inline RowPlan plan_rows(int64_t cols, int pack) {
  const int64_t packs = ceil_div(cols, pack);
  // Prefer 256-thread blocks: enough rows in flight per SM to cover memory latency.
  for (int ppt : {1, 2, 4, 8}) {
    const int64_t threads = round_up(ceil_div(packs, ppt), 32);
    if (threads <= 256) return {static_cast<int>(threads), ppt, true};
  }
  const int64_t threads = round_up(ceil_div(packs, 8), 32);
  if (threads <= kMaxThreadsAt8Packs) return {static_cast<int>(threads), 8, true};
  return {1024, 0, false};
}

// A row split across a thread-block cluster (sm_90): `cluster` blocks share one row, each
// owning `chunk` consecutive columns (a multiple of the pack, so every chunk of an aligned
// row starts 16-byte aligned); they exchange their partial (max, sum) pairs through
// distributed shared memory. 8 is the largest portable cluster size.
struct SplitPlan {
  int cluster = 1;
  int64_t chunk = 0;
  int threads = 0;
};
inline constexpr int kMaxCluster = 8;

// Softmax rows too long to cache in one block: the row is split over a cluster of 8 blocks,
// each caching `ppt` packs per thread in registers, so the row is still read once. Returns
// cluster 0 when even the cluster cannot cache the row (the online two-read kernel then).
inline SplitPlan plan_cached_split(int64_t cols, int pack, int ppt, int max_threads = kMaxThreadsAt8Packs,
                                   int cluster = kMaxCluster) {
  const int64_t chunk = round_up(ceil_div(cols, cluster), pack);
  const int64_t threads = round_up(ceil_div(chunk / pack, ppt), 32);
  if (threads > max_threads) return {0, 0, 0};
  return {cluster, chunk, static_cast<int>(threads < 64 ? 64 : threads)};
}

// Streaming row reductions (cross-entropy): split a row over a cluster only when the rows
// alone give too few blocks to keep enough loads in flight (under `target_blocks`), and
// only while each block keeps at least `min_chunk` columns.
inline SplitPlan plan_stream_split(int64_t rows, int64_t cols, int pack, int64_t target_blocks,
                                   int64_t min_chunk = 4096, int threads = 256) {
  int cluster = 1;
  while (cluster < kMaxCluster && rows * cluster < target_blocks && cols / (2 * cluster) >= min_chunk) cluster *= 2;
  return {cluster, round_up(ceil_div(cols, cluster), pack), threads};
}

// Whether 16-byte accesses are legal: every row starts on a 16-byte boundary.
inline bool can_vectorize(const void* base, int64_t row_stride_elems, int elem_bytes) {
  return reinterpret_cast<uintptr_t>(base) % 16 == 0 && (row_stride_elems * elem_bytes) % 16 == 0;
}

// Division by a divisor fixed at launch, as a multiply-high and a shift (the
// Granlund-Montgomery method, as PyTorch's IntDivider): index math in the hot loops of
// elementwise kernels would otherwise be an emulated 64-bit division per element pack.
// Valid for dividends and divisors in [1, 2^31).
struct FastDiv {
  uint32_t divisor = 1, magic = 0, shift = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  MLSEM_HOST_DEVICE uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = static_cast<uint32_t>((uint64_t{n} * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
  MLSEM_HOST_DEVICE uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }
};
inline constexpr int64_t kFastDivLimit = int64_t{1} << 31;

// Flash attention tile shapes: warps per block, 16-row MMA tiles per warp, keys per tile.
struct AttentionConfig {
  int warps;
  int m_tiles_per_warp;
  int block_n;
  int block_m() const { return warps * 16 * m_tiles_per_warp; }
  // Q tile plus double-buffered K and V tiles, 2-byte elements.
  int smem_bytes(int head_dim) const { return (block_m() + 4 * block_n) * head_dim * 2; }
};

inline constexpr AttentionConfig kAttentionConfigs[] = {
    {4, 1, 64},  // 64 query rows: light on registers
    {4, 2, 64},  // 128 rows: each K/V fragment feeds two MMA tiles
    {4, 2, 32},  // 128 rows, fewer score registers (head_dim 128)
};
inline constexpr int kAttentionConfigCount = 3;

// The Hopper (sm_90a) attention kernel, head dim 128: two consumer warpgroups of 64 query
// rows and one producer warp; K/V tiles of 128 keys in `stages` shared-memory stages, Q
// one tile, each 1024-byte aligned (the 128-byte swizzle atom), then the mbarriers (Q full,
// and per stage full and empty). Tile t uses stage t % stages. The consumers wait for its
// fill of that stage (phase t / stages, seen by parity); the producer, before loading it,
// waits for both consumers' release of tile t - stages (the release phase before it).
struct AttentionSm90 {
  static constexpr int head_dim = 128, block_m = 128, block_n = 128, stages = 3;
  static constexpr int consumers = 256, threads = consumers + 32;
  static constexpr int tile_bytes = block_n * head_dim * 2;
  static constexpr int barrier_offset = (1 + 2 * stages) * tile_bytes;
  static constexpr int smem_bytes = barrier_offset + 8 * (1 + 2 * stages) + 1024;  // + base alignment
  // What the launcher returns, having launched nothing, when the copy engine cannot address
  // the tensors (no cuTensorMapEncodeTiled in the driver, or it refuses the layout).
  static constexpr int unsupported = -1000;
  static_assert(block_m == block_n, "the Q tile takes one K/V tile's space (tile_bytes)");
  MLSEM_HOST_DEVICE static constexpr int stage(int t) { return t % stages; }
  MLSEM_HOST_DEVICE static constexpr int full_parity(int t) { return (t / stages) & 1; }
  // -1: the stage's first use, nothing to wait for.
  MLSEM_HOST_DEVICE static constexpr int empty_parity(int t) { return t < stages ? -1 : (t / stages - 1) & 1; }
};

// The default tile shape (config 0 in the C ABI means "this one"): 128 query rows and
// 64 keys per tile was fastest for head dims 64 and 128 on an H200 (kernels/results).
inline int default_attention_config(int /*head_dim*/) { return 1; }

}  // namespace mlsem_kernels
