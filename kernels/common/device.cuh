// Device helpers shared by the kernels: dtype conversion, 16-byte packs, warp and
// block reductions, dispatch over the dtype codes of the C ABI, error checks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "approx.h"
#include "launch.h"
#include "mlsem_kernels.h"

namespace mlsem_kernels {

// Return the CUDA error from the enclosing C ABI function instead of aborting the caller.
#define MLSEM_TRY(expr)                                  \
  do {                                                   \
    cudaError_t mlsem_err_ = (expr);                     \
    if (mlsem_err_ != cudaSuccess) return (int)mlsem_err_; \
  } while (0)
#define MLSEM_CHECK_LAUNCH() MLSEM_TRY(cudaGetLastError())

// Runs BODY with `T` bound to the element type of a dtype code.
#define MLSEM_DISPATCH(dtype, ...)               \
  switch (dtype) {                               \
    case MLSEM_F32: { using T = float; __VA_ARGS__; break; } \
    case MLSEM_F16: { using T = __half; __VA_ARGS__; break; } \
    case MLSEM_BF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
    default: return MLSEM_BAD_ARGUMENT;          \
  }

template <class T> __device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T from_f(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }

// Elements per 16-byte pack.
template <class T> constexpr int kPack = 16 / sizeof(T);

// 16 bytes of T kept packed in 4 registers (half the registers of floats for 16-bit
// types, which keeps more rows resident per SM); elements convert to float on access.
template <class T>
struct Pack {
  uint4 raw;
  __device__ __forceinline__ float operator[](int j) const { return to_f(reinterpret_cast<const T*>(&raw)[j]); }
  __device__ __forceinline__ void set(int j, float v) { reinterpret_cast<T*>(&raw)[j] = from_f<T>(v); }
};

// Loads the pack at `col` of a row. VEC (row 16-byte aligned, cols a multiple of the
// pack): one predicated 16-byte load, so a thread's loads can all be in flight at once;
// otherwise element by element. Positions past the end of the row read as `fill`.
// (Evict-first cache hints, ld/st.global.cs, on these accesses measured up to 10% slower
// on an H200 for the row and elementwise kernels, and were dropped.)
template <bool VEC, class T>
__device__ __forceinline__ Pack<T> load_pack(const T* row, int64_t col, int64_t cols, float fill) {
  Pack<T> p;
  if constexpr (VEC) {
    const bool in = col < cols;
    p.raw = in ? *reinterpret_cast<const uint4*>(row + col) : make_uint4(0, 0, 0, 0);
    if (!in)
#pragma unroll
      for (int j = 0; j < kPack<T>; ++j) p.set(j, fill);
  } else {
#pragma unroll
    for (int j = 0; j < kPack<T>; ++j) reinterpret_cast<T*>(&p.raw)[j] = col + j < cols ? row[col + j] : from_f<T>(fill);
  }
  return p;
}

// Stores the pack at `col` of a row: VEC, one 16-byte store when the pack is in the row;
// otherwise element by element, up to the end of the row. The pack is tested in the caller's
// index type (Idx: int64_t, or int for in-row columns), so that a caller which has tested it
// already (layernorm's int columns) compiles to no second test; elements are tested in 64 bits.
template <bool VEC, class T, class Idx>
__device__ __forceinline__ void store_pack(T* row, Idx col, Idx cols, const Pack<T>& p) {
  if constexpr (VEC) {
    if (col < cols) *reinterpret_cast<uint4*>(row + col) = p.raw;
  } else {
#pragma unroll
    for (int j = 0; j < kPack<T>; ++j)
      if (int64_t{col} + j < int64_t{cols}) row[int64_t{col} + j] = reinterpret_cast<const T*>(&p.raw)[j];
  }
}

// 16-byte accesses with an L2 eviction priority: kEvictLast keeps a line in L2 for a second
// read soon after (the row kernels that read a row twice), kEvictFirst marks its last use.
enum class L2Hint { kEvictLast, kEvictFirst };
template <L2Hint H>
__device__ __forceinline__ uint64_t l2_policy() {
  uint64_t policy;
  if constexpr (H == L2Hint::kEvictLast)
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  else
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
template <L2Hint H>
__device__ __forceinline__ uint4 load16_l2(const void* p) {
  uint4 v;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(l2_policy<H>()));
  return v;
}
template <L2Hint H>
__device__ __forceinline__ void store16_l2(void* p, uint4 v) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w), "l"(l2_policy<H>())
               : "memory");
}

// The most threads a block of Kernel can have, its registers and shared memory counted
// (cudaFuncGetAttributes), asked once per kernel. The kernels that hold 8 packs a thread
// take up to 167 registers, so some of them cannot launch even the 512 threads a plan
// allows; their callers then take the streaming path. Asked at run time rather than stated
// as __launch_bounds__(kMaxThreadsAt8Packs) on every such kernel: the bound (at most 128
// registers, no spills with nvcc 13.0) changes their code, and side by side on an H100 (bf16
// unless named) it sped some up and slowed others: unaligned 4096x16383 rmsnorm 0.348 ->
// 0.287 ms and softmax 0.398 -> 0.348 ms, but the softmax cluster kernel at 1024x131072
// 0.234 -> 0.259 ms (122 registers instead of 94, a block fewer per SM), softmax 2048x32767
// 0.372 -> 0.404 ms (the bounded 512-thread kernel instead of the cluster one), layernorm
// 4096x16383 0.238 -> 0.255 ms (128 registers either way), float32 rmsnorm 4096x8191 0.101
// -> 0.106 ms and lesson_fp8_quant 4096x16384 0.073 -> 0.076 ms. Only the unaligned 16-bit
// rmsnorm and softmax kernels carry it (rmsnorm_cached_long, softmax_cached_long): for them
// this returns the bound, 512.
template <auto Kernel>
int max_block_threads() {
  static const int n = [] {
    cudaFuncAttributes a{};
    return cudaFuncGetAttributes(&a, Kernel) == cudaSuccess ? a.maxThreadsPerBlock : 0;
  }();
  return n;
}

// Whether a row plan keeps the row in registers with Kernel8, its 8-packs-a-thread kernel:
// cached, and at 8 packs a thread no more threads than Kernel8's registers allow.
template <auto Kernel8>
bool cached_launches(const RowPlan& plan) {
  return plan.cached && (plan.packs_per_thread < 8 || plan.threads <= max_block_threads<Kernel8>());
}

// Launches KERNEL<..., VEC> with VEC a compile-time copy of the runtime flag.
#define MLSEM_WITH_VEC(vec, ...)           \
  if (vec) {                               \
    constexpr bool VEC = true;             \
    __VA_ARGS__;                           \
  } else {                                 \
    constexpr bool VEC = false;            \
    __VA_ARGS__;                           \
  }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block, returned to every thread. blockDim.x is a multiple of 32.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.f;
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? partial[lane] : -INFINITY;
  return warp_max(v);
}

// Online softmax state: running max m and sum s of exp(x - m). Merging two states
// rescales the one with the smaller max (Milakov & Gimelshein 2018).
struct MaxSum {
  float m = -INFINITY;
  float s = 0.f;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return a;
  return {m, a.s * fast_exp2((a.m - m) * kLog2e) + b.s * fast_exp2((b.m - m) * kLog2e)};
}
__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = merge(v, {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
  return v;
}
__device__ __forceinline__ MaxSum block_merge(MaxSum v) {
  __shared__ float pm[32], ps[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_merge(v);
  __syncthreads();
  if (lane == 0) { pm[warp] = v.m; ps[warp] = v.s; }
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? MaxSum{pm[lane], ps[lane]} : MaxSum{};
  return warp_merge(v);
}

// Multiprocessors of the current device (read once).
int sm_count();

// Grid size for grid-stride elementwise kernels: enough blocks to fill the GPU `waves`
// times (blocks per SM), or, with waves 0, one block per chunk of work with no grid-stride
// reuse. The fused memory-bound kernels use 0: a cap of 8 blocks per SM measured 1-11%
// slower on an H100 at 16384x8192 (bias_gelu tanh 0.2051 against 0.1842 ms), since a
// reused block issues its next loads only after its stores while fresh blocks overlap them.
inline int elementwise_blocks(int64_t work_items, int threads, int waves = 8) {
  const int64_t needed = ceil_div(work_items, threads);
  const int64_t cap = waves > 0 ? int64_t{sm_count()} * waves : (int64_t{1} << 31) - 1;
  return static_cast<int>(needed < 1 ? 1 : (needed < cap ? needed : cap));
}

// Device scratch memory for the baselines' intermediate tensors, from the stream-ordered
// pool (kept cached, like PyTorch's allocator, so allocation stays out of the timings).
cudaError_t scratch_alloc(void** ptr, size_t bytes, cudaStream_t stream);
cudaError_t scratch_free(void* ptr, cudaStream_t stream);

}  // namespace mlsem_kernels
