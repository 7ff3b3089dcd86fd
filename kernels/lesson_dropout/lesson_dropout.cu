// Lesson: low-memory dropout. The baseline draws a keep-mask, stores it (one byte per
// element) and applies it in a second kernel; the backward reads the stored mask again.
// The fix keys a counter-based generator (Philox4x32-10, common/philox.h) by (seed, offset,
// element index), so the forward computes the mask where it uses it and the backward
// regenerates the same mask: no mask in memory, one kernel each way.
#include "../common/device.cuh"
#include "../common/philox.h"

namespace mlsem_kernels {
namespace {

using bf16 = __nv_bfloat16;
constexpr int P = kPack<bf16>;  // 8 elements per 16-byte pack: two Philox calls

struct Dropout {
  uint32_t threshold;  // keep when (word >> 8) >= threshold
  float scale;         // 1 / (1 - p)
  uint64_t seed, offset;
};

// y = x * keep / (1 - p), keep recomputed from the element index. The same kernel is the
// backward (dx = dy * keep / (1 - p)): with the same seed and offset it draws the same mask.
template <bool VEC>
__global__ void dropout_fused_kernel(const bf16* x, bf16* y, int64_t n, Dropout d) {
  const int64_t full = VEC ? n / P * P : 0;  // 16-byte packs cover [0, full)
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p * P < n; p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * P;
    Pack<bf16> v = i < full ? load_pack<true>(x, i, full, 0.f) : load_pack<false>(x, i, n, 0.f);
    const Philox4 r0 = dropout_words(d.seed, d.offset, uint64_t(i) / 4);
    const Philox4 r1 = dropout_words(d.seed, d.offset, uint64_t(i) / 4 + 1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v.set(j, (r0.v[j] >> 8) >= d.threshold ? v[j] * d.scale : 0.f);
      v.set(4 + j, (r1.v[j] >> 8) >= d.threshold ? v[4 + j] * d.scale : 0.f);
    }
    if (i < full)
      store_pack<true>(y, i, full, v);
    else
      store_pack<false>(y, i, n, v);
  }
}

// Baseline, step 1: the keep-mask, one byte per element, written to device memory (what
// `mask = torch.rand_like(x) >= p` keeps alive from the forward to the backward).
__global__ void make_mask_kernel(uint8_t* mask, int64_t n, Dropout d) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g * 4 < n; g += int64_t{gridDim.x} * blockDim.x) {
    const Philox4 r = dropout_words(d.seed, d.offset, uint64_t(g));
    uchar4 m;
    m.x = (r.v[0] >> 8) >= d.threshold;
    m.y = (r.v[1] >> 8) >= d.threshold;
    m.z = (r.v[2] >> 8) >= d.threshold;
    m.w = (r.v[3] >> 8) >= d.threshold;
    if (g * 4 + 4 <= n) {
      *reinterpret_cast<uchar4*>(mask + g * 4) = m;
    } else {
      const uint8_t b[4] = {m.x, m.y, m.z, m.w};
      for (int j = 0; g * 4 + j < n; ++j) mask[g * 4 + j] = b[j];
    }
  }
}

// Baseline, step 2 (and the backward): y = x * mask / (1 - p), reading the stored mask.
// Vectorized like the fused kernel, so the two differ only in the mask's traffic.
template <bool VEC>
__global__ void apply_mask_kernel(const bf16* x, const uint8_t* mask, bf16* y, int64_t n, float scale) {
  const int64_t full = VEC ? n / P * P : 0;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p * P < n; p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * P;
    Pack<bf16> v = i < full ? load_pack<true>(x, i, full, 0.f) : load_pack<false>(x, i, n, 0.f);
    uint8_t m[P];
    if (i < full) {
      *reinterpret_cast<uint2*>(m) = *reinterpret_cast<const uint2*>(mask + i);
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) m[j] = i + j < n ? mask[i + j] : 0;
    }
#pragma unroll
    for (int j = 0; j < P; ++j) v.set(j, m[j] ? v[j] * scale : 0.f);
    if (i < full)
      store_pack<true>(y, i, full, v);
    else
      store_pack<false>(y, i, n, v);
  }
}

bool params(int64_t n, float p, uint64_t seed, uint64_t offset, Dropout* d) {
  if (n <= 0 || !(p >= 0.f && p < 1.f)) return false;
  *d = {dropout_threshold(p), 1.f / (1.f - p), seed, offset};
  return true;
}

int fused_pass(const void* x, void* y, int64_t n, const Dropout& d, cudaStream_t s) {
  const bool vec = can_vectorize(x, 0, 2) && can_vectorize(y, 0, 2);
  const auto* in = static_cast<const bf16*>(x);
  auto* out = static_cast<bf16*>(y);
  MLSEM_WITH_VEC(vec, dropout_fused_kernel<VEC><<<elementwise_blocks(ceil_div(n, P), 256, 0), 256, 0, s>>>(in, out, n, d));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

int apply_pass(const void* x, const uint8_t* mask, void* y, int64_t n, float scale, cudaStream_t s) {
  const bool vec = can_vectorize(x, 0, 2) && can_vectorize(y, 0, 2) && reinterpret_cast<uintptr_t>(mask) % 8 == 0;
  const auto* in = static_cast<const bf16*>(x);
  auto* out = static_cast<bf16*>(y);
  MLSEM_WITH_VEC(vec, apply_mask_kernel<VEC><<<elementwise_blocks(ceil_div(n, P), 256, 0), 256, 0, s>>>(in, mask, out, n, scale));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_dropout_fused(const void* x, const void* dy, void* y, void* dx, int64_t n, float p,
                                          uint64_t seed, uint64_t offset, mlsem_stream s) {
  Dropout d;
  if (!params(n, p, seed, offset, &d) || !x || !y || (dy == nullptr) != (dx == nullptr)) return MLSEM_BAD_ARGUMENT;
  if (int rc = fused_pass(x, y, n, d, s)) return rc;
  return dy ? fused_pass(dy, dx, n, d, s) : 0;  // the backward: the same mask, regenerated
}

extern "C" int mlsem_lesson_dropout_baseline(const void* x, const void* dy, uint8_t* mask, void* y, void* dx,
                                             int64_t n, float p, uint64_t seed, uint64_t offset, mlsem_stream s) {
  Dropout d;
  if (!params(n, p, seed, offset, &d) || !x || !y || !mask || (dy == nullptr) != (dx == nullptr))
    return MLSEM_BAD_ARGUMENT;
  make_mask_kernel<<<elementwise_blocks(ceil_div(n, 4), 256, 0), 256, 0, s>>>(mask, n, d);
  MLSEM_CHECK_LAUNCH();
  if (int rc = apply_pass(x, mask, y, n, d.scale, s)) return rc;
  return dy ? apply_pass(dy, mask, dx, n, d.scale, s) : 0;  // the backward reads the stored mask
}
