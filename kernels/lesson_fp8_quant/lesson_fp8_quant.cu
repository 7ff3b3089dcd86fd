// Lesson: row-wise fp8 (e4m3) quantization fused with its scale computation. For each row,
// scale = max(amax, 1e-12) / 448 (448: the largest e4m3 value) and q = e4m3(x / scale),
// saturating. The baseline makes two passes over x (the amax reduction, then the scale and
// cast, which reads x again); the fused kernel keeps the row in registers between the two.
#include <cuda_fp8.h>

#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

using bf16 = __nv_bfloat16;
constexpr int P = kPack<bf16>;
constexpr float kE4M3Max = 448.f, kMinAmax = 1e-12f;

// 8 values scaled and cast to 8 e4m3 bytes (the hardware's paired conversion, saturating).
__device__ __forceinline__ uint2 to_e4m3x8(const Pack<bf16>& v, float inv_scale) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const __nv_fp8x2_storage_t two =
        __nv_cvt_float2_to_fp8x2(make_float2(v[2 * j] * inv_scale, v[2 * j + 1] * inv_scale), __NV_SATFINITE, __NV_E4M3);
    w[j] = two;
  }
  return make_uint2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
}

template <bool VEC>
__device__ __forceinline__ void store_e4m3(uint8_t* q, int64_t c, int64_t cols, const Pack<bf16>& v, float inv_scale) {
  if constexpr (VEC) {
    if (c < cols) *reinterpret_cast<uint2*>(q + c) = to_e4m3x8(v, inv_scale);
  } else {
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (c + j < cols) q[c + j] = __nv_cvt_float_to_fp8(v[j] * inv_scale, __NV_SATFINITE, __NV_E4M3);
  }
}

__device__ __forceinline__ float pack_amax(const Pack<bf16>& v, float m) {
#pragma unroll
  for (int j = 0; j < P; ++j) m = fmaxf(m, fabsf(v[j]));
  return m;
}

// Fused: one block per row, the row held in registers (PPT packs per thread): amax over
// the row, then scale and cast from the registers. x is read once.
template <int PPT, bool VEC>
__global__ void quant_cached(const bf16* x, uint8_t* q, float* scale, int64_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  Pack<bf16> v[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) v[i] = load_pack<VEC>(xr, (int64_t(i) * blockDim.x + threadIdx.x) * P, cols, 0.f);
  float m = 0.f;
#pragma unroll
  for (int i = 0; i < PPT; ++i) m = pack_amax(v[i], m);
  const float amax = fmaxf(block_max(m), kMinAmax);
  if (threadIdx.x == 0) scale[blockIdx.x] = amax / kE4M3Max;
  const float inv = kE4M3Max / amax;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
    store_e4m3<VEC>(q + blockIdx.x * cols, (int64_t(i) * blockDim.x + threadIdx.x) * P, cols, v[i], inv);
}

// Rows too long for the registers: both passes in one kernel, the second read mostly from L2.
template <bool VEC>
__global__ void quant_streaming(const bf16* x, uint8_t* q, float* scale, int64_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  float m = 0.f;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) m = pack_amax(load_pack<VEC>(xr, c, cols, 0.f), m);
  const float amax = fmaxf(block_max(m), kMinAmax);
  if (threadIdx.x == 0) scale[blockIdx.x] = amax / kE4M3Max;
  const float inv = kE4M3Max / amax;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P)
    store_e4m3<VEC>(q + blockIdx.x * cols, c, cols, load_pack<VEC>(xr, c, cols, 0.f), inv);
}

// Baseline, pass 1: amax per row into device memory.
template <bool VEC>
__global__ void row_amax_kernel(const bf16* x, float* amax, int64_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  float m = 0.f;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) m = pack_amax(load_pack<VEC>(xr, c, cols, 0.f), m);
  m = block_max(m);
  if (threadIdx.x == 0) amax[blockIdx.x] = m;
}

// Baseline, pass 2: read amax back, write the scale, read x again, scale and cast.
template <bool VEC>
__global__ void scale_cast_kernel(const bf16* x, const float* amax_in, uint8_t* q, float* scale, int64_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  const float amax = fmaxf(amax_in[blockIdx.x], kMinAmax);
  if (threadIdx.x == 0) scale[blockIdx.x] = amax / kE4M3Max;
  const float inv = kE4M3Max / amax;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P)
    store_e4m3<VEC>(q + blockIdx.x * cols, c, cols, load_pack<VEC>(xr, c, cols, 0.f), inv);
}

bool vectorizable(const void* x, const void* q, int64_t cols) {
  return can_vectorize(x, cols, 2) && reinterpret_cast<uintptr_t>(q) % 8 == 0;  // cols % 8 == 0 from the first
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_fp8_quant_fused(const void* x, void* q, float* scale, int64_t rows, int64_t cols,
                                            mlsem_stream s) {
  if (rows <= 0 || cols <= 0 || rows >= (int64_t{1} << 31)) return MLSEM_BAD_ARGUMENT;
  const auto* in = static_cast<const bf16*>(x);
  auto* out = static_cast<uint8_t*>(q);
  const RowPlan plan = plan_rows(cols, P);
  const unsigned grid = static_cast<unsigned>(rows);
  MLSEM_WITH_VEC(vectorizable(x, q, cols), {
    if (!cached_launches<quant_cached<8, VEC>>(plan)) {
      quant_streaming<VEC><<<grid, 1024, 0, s>>>(in, out, scale, cols);
    } else {
      switch (plan.packs_per_thread) {
        case 1: quant_cached<1, VEC><<<grid, plan.threads, 0, s>>>(in, out, scale, cols); break;
        case 2: quant_cached<2, VEC><<<grid, plan.threads, 0, s>>>(in, out, scale, cols); break;
        case 4: quant_cached<4, VEC><<<grid, plan.threads, 0, s>>>(in, out, scale, cols); break;
        default: quant_cached<8, VEC><<<grid, plan.threads, 0, s>>>(in, out, scale, cols); break;
      }
    }
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_fp8_quant_baseline(const void* x, void* q, float* scale, int64_t rows, int64_t cols,
                                               mlsem_stream s) {
  if (rows <= 0 || cols <= 0 || rows >= (int64_t{1} << 31)) return MLSEM_BAD_ARGUMENT;
  const auto* in = static_cast<const bf16*>(x);
  auto* out = static_cast<uint8_t*>(q);
  eager::Scratch scratch(s);
  float* amax = nullptr;
  MLSEM_TRY(scratch.get(&amax, rows));
  const unsigned grid = static_cast<unsigned>(rows);
  MLSEM_WITH_VEC(vectorizable(x, q, cols), {
    row_amax_kernel<VEC><<<grid, 256, 0, s>>>(in, amax, cols);
    MLSEM_CHECK_LAUNCH();
    scale_cast_kernel<VEC><<<grid, 256, 0, s>>>(in, amax, out, scale, cols);
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}
