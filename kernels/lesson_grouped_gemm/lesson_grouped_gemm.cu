// Lesson: a grouped GEMM for mixture-of-experts. Tokens routed to E experts sit sorted by
// expert in x [total_m, k]; expert e owns rows offsets[e] .. offsets[e+1] and multiplies them
// by its weight w[e] [k, n] into y. The baseline launches one GEMM per expert, the way a
// Python loop over experts does: E launches, each of a few row tiles, most of the GPU idle
// in each. The grouped kernel is one launch over the tiles of all experts: a block finds
// its expert and row tile from the offsets on the device (no host synchronization to read
// the group sizes). Both run the same tile code: bf16 tensor cores (mma.sync m16n8k16),
// 128x128x32 tiles, a 3-stage cp.async pipeline, float32 accumulation.
#include <cub/block/block_scan.cuh>

#include "../common/device.cuh"
#include "grouped_gemm.h"

namespace mlsem_kernels {
namespace {

using bf16 = __nv_bfloat16;
using namespace grouped_gemm;
constexpr int STAGES = 3, THREADS = 256;
constexpr int kMaxExperts = 4 * THREADS;
constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;                        // elements
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * int(sizeof(bf16));  // 48 KiB

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
// 16-byte asynchronous copy global -> shared; invalid copies write zeros.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
// c (16x8 f32) += a (16x16 bf16) * b (16x8 bf16).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One 128x128 tile of c [m, n] = a [m, k] b [k, n]: rows m0.., columns n0.. . 8 warps in a
// 2x4 grid, each 64x32 of the tile (4x4 mma tiles of 16x8).
__device__ __forceinline__ void gemm_tile(const bf16* a, const bf16* b, bf16* c, int m, int k, int n, int m0, int n0,
                                          bf16* smem) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  float acc[4][4][4] = {};
  const int ktiles = static_cast<int>(ceil_div(k, BK));
  auto load = [&](int stage, int kt) {
    bf16* sa = smem + stage * (A_STAGE + B_STAGE);
    bf16* sb = sa + A_STAGE;
    const int k0 = kt * BK;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int e = tid + q * THREADS;  // 512 chunks of 16 bytes in each tile
      const int ar = e >> 2, ac = e & 3;
      const bool av = m0 + ar < m && k0 + ac * 8 < k;
      cp_async16(sa + a_off(ar, ac), a + (av ? int64_t(m0 + ar) * k + k0 + ac * 8 : 0), av);
      const int br = e >> 4, bc = e & 15;
      const bool bv = k0 + br < k && n0 + bc * 8 < n;
      cp_async16(sb + b_off(br, bc), b + (bv ? int64_t(k0 + br) * n + n0 + bc * 8 : 0), bv);
    }
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load(s, s);
    cp_async_commit();  // empty groups keep the count uniform
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // tile kt has landed
    __syncthreads();              // and every warp is done with the stage refilled next
    if (kt + STAGES - 1 < ktiles) load((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
    cp_async_commit();
    const bf16* sa = smem + (kt % STAGES) * (A_STAGE + B_STAGE);
    const bf16* sb = sa + A_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t af[4][4], bfr[2][4];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) ldmatrix_x4(af[mt], sa + a_off(wm + mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int np = 0; np < 2; ++np)
        ldmatrix_x4_trans(bfr[np], sb + b_off(kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7), (wn >> 3) + np * 2 + (lane >> 4)));
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          mma_bf16(acc[mt][2 * np], af[mt], bfr[np][0], bfr[np][1]);
          mma_bf16(acc[mt][2 * np + 1], af[mt], bfr[np][2], bfr[np][3]);
        }
    }
  }
  cp_async_wait<0>();
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int row = m0 + wm + mt * 16 + (lane >> 2), col = n0 + wn + nt * 8 + (lane & 3) * 2;
      if (col >= n) continue;  // n % 8 == 0: col + 1 < n too
      if (row < m)
        *reinterpret_cast<__nv_bfloat162*>(c + int64_t(row) * n + col) = __floats2bfloat162_rn(acc[mt][nt][0], acc[mt][nt][1]);
      if (row + 8 < m)
        *reinterpret_cast<__nv_bfloat162*>(c + int64_t(row + 8) * n + col) = __floats2bfloat162_rn(acc[mt][nt][2], acc[mt][nt][3]);
    }
}

// The grouped kernel: blockIdx.x a column tile, blockIdx.y a row tile counted over all
// experts (expert e has ceil(m_e / 128) of them). The block scans the experts' tile counts
// to find its expert; blocks past the last tile (the grid is sized by an upper bound,
// ceil(total_m / 128) + experts, since the sizes live on the device) return at once.
__global__ __launch_bounds__(THREADS) void grouped_gemm_kernel(const bf16* x, const bf16* w, const int64_t* offsets, bf16* y,
                                                               int experts, int64_t total_m, int k, int n) {
  extern __shared__ uint4 smem_raw[];
  using Scan = cub::BlockScan<int, THREADS>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int found_expert, found_tile;
  int tiles[4], start[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int e = threadIdx.x * 4 + j;
    tiles[j] = 0;
    if (e < experts) tiles[j] = expert_tiles(offsets, e, total_m);
  }
  Scan(scan_storage).ExclusiveSum(tiles, start);
  if (threadIdx.x == 0) found_expert = -1;
  __syncthreads();
  const int tile = static_cast<int>(blockIdx.y);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (tile >= start[j] && tile < start[j] + tiles[j]) {
      found_expert = threadIdx.x * 4 + j;
      found_tile = tile - start[j];
    }
  __syncthreads();
  const int e = found_expert;
  if (e < 0) return;
  int64_t lo, hi;
  expert_rows(offsets, e, total_m, &lo, &hi);
  gemm_tile(x + lo * k, w + int64_t(e) * k * n, y + lo * n, static_cast<int>(hi - lo), k, n, found_tile * BM,
            blockIdx.x * BN, reinterpret_cast<bf16*>(smem_raw));
}

// The baseline's kernel: one expert's GEMM, [m, k] x [k, n].
__global__ __launch_bounds__(THREADS) void expert_gemm_kernel(const bf16* a, const bf16* b, bf16* c, int m, int k, int n) {
  extern __shared__ uint4 smem_raw[];
  gemm_tile(a, b, c, m, k, n, blockIdx.y * BM, blockIdx.x * BN, reinterpret_cast<bf16*>(smem_raw));
}

bool args_ok(const void* x, const void* w, const void* y, int64_t experts, int64_t total_m, int64_t k, int64_t n) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return experts >= 1 && experts <= kMaxExperts && total_m >= 0 && total_m < (int64_t{1} << 31) && k > 0 && n > 0 &&
         k % 8 == 0 && n % 8 == 0 && k < (int64_t{1} << 31) && n < (int64_t{1} << 31) && aligned(x) && aligned(w) &&
         aligned(y) && row_tile_bound(total_m, experts) < 65536;
}

template <class Kernel>
cudaError_t allow_smem(Kernel kernel) {
  static const cudaError_t done = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  return done;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_grouped_gemm_fused(const void* x, const void* w, const int64_t* offsets,
                                               const int64_t* /*offsets_host*/, void* y, int64_t experts,
                                               int64_t total_m, int64_t k, int64_t n, mlsem_stream s) {
  if (!args_ok(x, w, y, experts, total_m, k, n) || !offsets) return MLSEM_BAD_ARGUMENT;
  if (total_m == 0) return 0;
  MLSEM_TRY(allow_smem(grouped_gemm_kernel));
  const dim3 grid(static_cast<unsigned>(ceil_div(n, BN)), static_cast<unsigned>(row_tile_bound(total_m, experts)));
  grouped_gemm_kernel<<<grid, THREADS, SMEM_BYTES, s>>>(static_cast<const bf16*>(x), static_cast<const bf16*>(w), offsets,
                                                        static_cast<bf16*>(y), int(experts), total_m, int(k), int(n));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_grouped_gemm_baseline(const void* x, const void* w, const int64_t* /*offsets*/,
                                                  const int64_t* offsets_host, void* y, int64_t experts,
                                                  int64_t total_m, int64_t k, int64_t n, mlsem_stream s) {
  if (!args_ok(x, w, y, experts, total_m, k, n) || !offsets_host || offsets_host[0] != 0 || offsets_host[experts] != total_m)
    return MLSEM_BAD_ARGUMENT;
  for (int64_t e = 0; e < experts; ++e)
    if (offsets_host[e + 1] < offsets_host[e]) return MLSEM_BAD_ARGUMENT;
  MLSEM_TRY(allow_smem(expert_gemm_kernel));
  const auto* xa = static_cast<const bf16*>(x);
  const auto* wb = static_cast<const bf16*>(w);
  auto* yc = static_cast<bf16*>(y);
  for (int64_t e = 0; e < experts; ++e) {  // one launch per expert, as a loop over experts does
    const int64_t lo = offsets_host[e], m = offsets_host[e + 1] - lo;
    if (m == 0) continue;
    const dim3 grid(static_cast<unsigned>(ceil_div(n, BN)), static_cast<unsigned>(ceil_div(m, BM)));
    expert_gemm_kernel<<<grid, THREADS, SMEM_BYTES, s>>>(xa + lo * k, wb + e * k * n, yc + lo * n, int(m), int(k), int(n));
    MLSEM_CHECK_LAUNCH();
  }
  return 0;
}
