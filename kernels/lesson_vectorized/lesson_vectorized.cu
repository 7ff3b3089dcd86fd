// Lesson: 16-byte vectorized access. y = 2x over n bf16 values, with 2-byte accesses
// (one element per thread per instruction) and with 16-byte ones (8 elements).
#include "../common/device.cuh"

namespace mlsem_kernels {
namespace {

// Baseline: coalesced, but each instruction moves only 64 bytes per warp; reaching
// full bandwidth then needs 8x as many load/store instructions in flight.
__global__ void scalar_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = __float2bfloat16_rn(2.f * __bfloat162float(x[i]));
}

// Fused (the fix): one 16-byte load and store per 8 elements (LDG.E.128 / STG.E.128);
// a tail shorter than 8, or misaligned pointers, take the element-wise path of load_pack.
template <bool VEC>
__global__ void vector_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n) {
  constexpr int P = kPack<__nv_bfloat16>;
  const int64_t full = VEC ? n / P * P : 0;  // 16-byte packs cover [0, full)
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p * P < n; p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * P;
    Pack<__nv_bfloat16> v = i < full ? load_pack<true>(x, i, full, 0.f) : load_pack<false>(x, i, n, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) v.set(j, 2.f * v[j]);
    if (i < full)
      store_pack<true>(y, i, full, v);
    else
      store_pack<false>(y, i, n, v);
  }
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_vectorized_fused(const void* x, void* y, int64_t n, mlsem_stream s) {
  if (n <= 0) return MLSEM_BAD_ARGUMENT;
  const bool vec = can_vectorize(x, 0, 2) && can_vectorize(y, 0, 2);
  const auto* in = static_cast<const __nv_bfloat16*>(x);
  auto* out = static_cast<__nv_bfloat16*>(y);
  MLSEM_WITH_VEC(vec, vector_kernel<VEC><<<elementwise_blocks(ceil_div(n, 8), 256), 256, 0, s>>>(in, out, n));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_vectorized_baseline(const void* x, void* y, int64_t n, mlsem_stream s) {
  if (n <= 0) return MLSEM_BAD_ARGUMENT;
  scalar_kernel<<<elementwise_blocks(n, 256), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(x),
                                                           static_cast<__nv_bfloat16*>(y), n);
  MLSEM_CHECK_LAUNCH();
  return 0;
}
