// Flash attention forward for Hopper (sm_90a): both matmuls on warpgroup MMA (wgmma).
// Built for sm_90a only (kernels/CMakeLists.txt); attention_fwd.cu calls it on a
// compute-capability 9.0 device for head dim 128, and keeps its mma.sync kernel for
// every other GPU and head dim.
//
// A block owns 128 query rows: two warpgroups (consumers) of 64 rows each. Per tile of
// 128 keys:
//   S = Q K^T   wgmma m64n128k16, Q and K both read from shared memory (8 k-steps of d);
//   the online softmax in registers (running max and sum per row, O rescaled);
//   O += P V    wgmma m64n128k16 with P as the A operand in registers (the f32
//               accumulator layout of S, packed to 16 bits, is the A fragment layout)
//               and V read from shared memory transposed by the instruction.
// Tiles are stored as the 128-byte swizzle wgmma reads: each 64-column half of a row is
// one 128-byte line, and its 16-byte chunks are XORed with the row (mod 8). The tensor
// memory accelerator (TMA) writes them so: one thread of a producer warp issues every bulk
// copy, and mbarriers say when a stage is full (the copy engine's byte count) and when both
// warpgroups are done with it. K and V have three stages, so tiles load two ahead, and the
// two warpgroups never wait on each other at a block barrier. Each warpgroup waits for its
// O += P V only after issuing the next tile's S = Q K^T, so the two overlap.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/device.cuh"
#include "flash_common.cuh"

namespace mlsem_kernels {
namespace sm90 {
namespace {

using flash::pack2;

// A 64-register wgmma accumulator (m64n128, f32) as its sixteen 8-column slices of four.
__device__ __forceinline__ float (&slices(float (&d)[64]))[16][4] { return reinterpret_cast<float(&)[16][4]>(d); }

using Plan = AttentionSm90;
constexpr int kD = Plan::head_dim, kBM = Plan::block_m, kBN = Plan::block_n, kStages = Plan::stages;
constexpr int kConsumers = Plan::consumers, kThreads = Plan::threads, kTileBytes = Plan::tile_bytes;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MLSEM_SM90A 1
#endif


// ---- mbarriers and the tensor memory accelerator ---------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Wait for the phase of this parity to complete.
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// rows [row, row + rows) of head `head` into a swizzled tile: two boxes of [rows][64]
// columns, one per half. Rows past the sequence arrive as zeros; the barrier counts the
// whole box either way.
__device__ __forceinline__ void tma_tile(uint32_t tile, const CUtensorMap* map, int row, int head, int rows,
                                         uint32_t bar) {
#pragma unroll
  for (int half = 0; half < 2; ++half)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(tile + half * rows * 128),
        "l"(map), "r"(half * 64), "r"(row), "r"(head), "r"(bar)
        : "memory");
}

// A wgmma shared-memory matrix descriptor, 128-byte swizzle. Addresses and offsets are
// encoded in 16-byte units. K-major operands (Q, K) use only the stride between 8-row
// groups (sbo, 1024 bytes); the transposed V operand also steps from one 64-column half
// to the next (lbo).
__device__ __forceinline__ uint64_t descriptor(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
         (uint64_t(1) << 62);
}

#define MLSEM_D64                                                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "  \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define MLSEM_F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define MLSEM_F16(d, i) MLSEM_F4(d, i), MLSEM_F4(d, i + 4), MLSEM_F4(d, i + 8), MLSEM_F4(d, i + 12)
#define MLSEM_F64(d) MLSEM_F16(d, 0), MLSEM_F16(d, 16), MLSEM_F16(d, 32), MLSEM_F16(d, 48)
#define MLSEM_O4(d, i) "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3])
#define MLSEM_O16(d, i) MLSEM_O4(d, i), MLSEM_O4(d, i + 4), MLSEM_O4(d, i + 8), MLSEM_O4(d, i + 12)
#define MLSEM_O64(d) MLSEM_O16(d, 0), MLSEM_O16(d, 16), MLSEM_O16(d, 32), MLSEM_O16(d, 48)

// d (64 x 128, f32) = (accumulate ? d : 0) + A (64 x 16, shared) * B (16 x 128, shared, K-major).
#define MLSEM_WGMMA_SS(TY)                                                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                              \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " MLSEM_D64                    \
               ", %64, %65, p, 1, 1, 0, 0;\n}\n"                                                          \
               : MLSEM_F64(d)                                                                             \
               : "l"(a), "l"(b), "r"(accumulate))
// d (64 x 128, f32) = A (64 x 16, shared) * B (16 x 128, shared, K-major): d is not read.
#define MLSEM_WGMMA_SS_FIRST(TY)                                                                         \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " MLSEM_D64                    \
               ", %64, %65, 0, 1, 1, 0, 0;\n"                                                             \
               : MLSEM_O64(d)                                                                             \
               : "l"(a), "l"(b))
// d (64 x 128, f32) += A (64 x 16, registers) * B (16 x 128, shared, stored N-major: transposed).
#define MLSEM_WGMMA_RS(TY)                                                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                              \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " MLSEM_D64                    \
               ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                            \
               : MLSEM_F64(d)                                                                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate))

template <class T>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
#ifdef MLSEM_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) MLSEM_WGMMA_SS("bf16");
  else MLSEM_WGMMA_SS("f16");
#endif
}
template <class T>
__device__ __forceinline__ void wgmma_ss_first(float (&d)[64], uint64_t a, uint64_t b) {
#ifdef MLSEM_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) MLSEM_WGMMA_SS_FIRST("bf16");
  else MLSEM_WGMMA_SS_FIRST("f16");
#endif
}
template <class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int accumulate) {
#ifdef MLSEM_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) MLSEM_WGMMA_RS("bf16");
  else MLSEM_WGMMA_RS("f16");
#endif
}
__device__ __forceinline__ void wgmma_fence() {
#ifdef MLSEM_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef MLSEM_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait_all() {
#ifdef MLSEM_SM90A
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}
// The accumulators are read and written by the asynchronous MMA: keep the compiler from
// moving register uses across the wait.
__device__ __forceinline__ void fence_regs(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Accumulator layout of a 64 x 128 f32 wgmma result in a warpgroup: warp w holds rows
// 16w .. 16w + 15; element i of a thread is row 16w + lane/4 + 8 * ((i/2) % 2), column
// 8 * (i/4) + 2 * (lane % 4) + i % 2.
template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    flash_fwd_sm90(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                   const __grid_constant__ CUtensorMap tm_v, T* __restrict__ o, int seq, float scale_log2,
                   bool causal) {
#ifdef MLSEM_SM90A
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (flash::smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t sq = base;
  const uint32_t sk = base + kTileBytes;                 // [kStages] tiles
  const uint32_t sv = base + (1 + kStages) * kTileBytes;  // [kStages] tiles
  // Barriers: Q full; K/V stage s full (the copy engine's bytes); stage s empty (one
  // arrival per warpgroup).
  const uint32_t bar_q = base + Plan::barrier_offset;
  const uint32_t bar_full = bar_q + 8, bar_empty = bar_q + 8 * (1 + kStages);

  const int m_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heaviest first
  const int m0 = m_block * kBM;
  const int head = blockIdx.y;
  o += int64_t(head) * seq * kD;

  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int kv_end = causal ? min(seq, m0 + kBM) : seq;
  const int n_tiles = (kv_end + kBN - 1) / kBN;

  // Tile t goes to its stage once both warpgroups have released the stage's previous tile.
  auto load_kv = [&](int t) {
    const int st = Plan::stage(t);
    if (Plan::empty_parity(t) >= 0) mbar_wait(bar_empty + 8 * st, Plan::empty_parity(t));
    mbar_expect_tx(bar_full + 8 * st, 2 * kTileBytes);
    tma_tile(sk + st * kTileBytes, &tm_k, t * kBN, head, kBN, bar_full + 8 * st);
    tma_tile(sv + st * kTileBytes, &tm_v, t * kBN, head, kBN, bar_full + 8 * st);
  };
  if (threadIdx.x == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(bar_full + 8 * st, 1);
      mbar_init(bar_empty + 8 * st, 2);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x >= kConsumers) {  // the producer warp: one thread issues every copy
    if (threadIdx.x == kConsumers) {
      mbar_expect_tx(bar_q, kBM * kD * 2);
      tma_tile(sq, &tm_q, m0, head, kBM, bar_q);
      for (int t = 0; t < n_tiles; ++t) load_kv(t);
    }
    return;
  }

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const int row_in_block = wg * 64 + warp * 16 + lane / 4;  // and + 8
  // This warpgroup's 64 rows of Q: a descriptor per 16-column step.
  const uint32_t q_rows = sq + wg * 64 * 128;

  mbar_wait(bar_q, 0);
  for (int j = 0; j < n_tiles; ++j) {
    const int st = Plan::stage(j);
    mbar_wait(bar_full + 8 * st, Plan::full_parity(j));
    const uint32_t tk = sk + st * kTileBytes, tv = sv + st * kTileBytes;
    const int n0 = j * kBN;

    // S = Q K^T: 8 steps of 16 along d; step kk is 32 bytes into half kk / 4.
    float s[64];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t off = (kk >> 2) * (kBN * 128) + (kk & 3) * 32;
      const uint64_t a = descriptor(q_rows + (kk >> 2) * (kBM * 128) + (kk & 3) * 32, 16, 1024);
      const uint64_t b = descriptor(tk + off, 16, 1024);
      if (kk == 0) wgmma_ss_first<T>(s, a, b);
      else wgmma_ss<T>(s, a, b, 1);
    }
    wgmma_commit();
    wgmma_wait_all();  // S, and the previous tile's O += P V, which ran on meanwhile
    fence_regs(s);
    fence_regs(acc);
    if (j > 0 && threadIdx.x % 128 == 0)  // this warpgroup is done with the previous tile
      mbar_arrive(bar_empty + 8 * Plan::stage(j - 1));

    // Online softmax over this thread's two rows (h = 0: lane/4, h = 1: lane/4 + 8), on the
    // accumulators as 8-column slices (flash_common.cuh).
    const bool needs_mask = n0 + kBN > seq || (causal && n0 + kBN - 1 > m0 + wg * 64 + warp * 16);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      flash::online_softmax_row(slices(s), slices(acc), h, m0 + row_in_block + h * 8, n0, seq, causal, needs_mask,
                                lane, scale_log2, row_max[h], row_sum[h]);

    // O += P V: 8 steps of 16 keys; P's A fragment of step kk is S's 8-column tiles
    // 2kk and 2kk + 1. V is [key][d]: 16 keys are 2048 bytes on, the second 64-column
    // half of d a whole half-tile (kBN lines) on.
    uint32_t pa[kBN / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) pa[kk][r] = pack2<T>(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
      wgmma_rs<T>(acc, pa[kk], descriptor(tv + kk * 16 * 128, kBN * 128, 1024), 1);
    wgmma_commit();  // waited for after the next tile's S = Q K^T is issued, or here after the last
    if (j + 1 == n_tiles) {
      wgmma_wait_all();
      fence_regs(acc);
    }
  }

  // Normalize by the row sums (summed over the 4 threads of a row) and store.
#pragma unroll
  for (int h = 0; h < 2; ++h) flash::store_row<T>(slices(acc), h, row_sum[h], lane, m0 + row_in_block + h * 8, seq, o);
#else
  __trap();  // built for sm_90a only; the host never launches it elsewhere
#endif
}

// A [heads][seq][128] tensor as the copy engine sees it: boxes of [rows][64] columns in the
// 128-byte swizzle, rows past seq read as zeros. Plan::unsupported when it cannot be built.
int make_map(CUtensorMap* map, const void* p, int64_t bh, int seq, int rows, bool bf16) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (!encode) return Plan::unsupported;
  const cuuint64_t dims[3] = {cuuint64_t(kD), cuuint64_t(seq), cuuint64_t(bh)};
  const cuuint64_t strides[2] = {cuuint64_t(kD) * 2, cuuint64_t(seq) * kD * 2};
  const cuuint32_t box[3] = {64, cuuint32_t(rows), 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  const CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3,
                            const_cast<void*>(p), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : Plan::unsupported;
}

template <class T>
int launch(const T* q, const T* k, const T* v, T* o, int64_t bh, int seq, bool causal, cudaStream_t s) {
  constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  CUtensorMap tq, tk, tv;
  if (int rc = make_map(&tq, q, bh, seq, kBM, bf16)) return rc;
  if (int rc = make_map(&tk, k, bh, seq, kBN, bf16)) return rc;
  if (int rc = make_map(&tv, v, bh, seq, kBN, bf16)) return rc;
  auto kernel = flash_fwd_sm90<T>;
  MLSEM_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Plan::smem_bytes));
  const dim3 grid(static_cast<unsigned>(ceil_div(seq, kBM)), static_cast<unsigned>(bh));
  const float scale_log2 = 1.44269504f / sqrtf(float(kD));
  kernel<<<grid, kThreads, Plan::smem_bytes, s>>>(tq, tk, tv, o, seq, scale_log2, causal);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

}  // namespace

int attention_fwd_sm90(const void* q, const void* k, const void* v, void* o, int64_t bh, int seq, bool causal,
                       bool bf16, cudaStream_t s) {
  if (bf16)
    return launch(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                  static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), bh, seq, causal, s);
  return launch(static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v),
                static_cast<__half*>(o), bh, seq, causal, s);
}

}  // namespace sm90
}  // namespace mlsem_kernels
