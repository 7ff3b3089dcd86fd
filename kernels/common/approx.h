// Approximations shared by the kernels (device) and the CPU tests (host).
#pragma once

#include <cmath>

#include "launch.h"

namespace mlsem_kernels {

inline constexpr float kLog2e = 1.4426950408889634f;

// 2^x and 1/x as one MUFU instruction each, subnormal inputs and results flushed to zero
// (.ftz). The forms without .ftz (what __expf and __fdividef become without -ftz=true) wrap
// each MUFU in a range test and two rescaling multiplies on sm_90: in the GELU, SiLU and
// softmax kernels those extra instructions outnumbered the useful ones, and on an H200,
// whose memory leaves fewer instructions per byte than an H100's, they set the time.
MLSEM_HOST_DEVICE inline float fast_exp2(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return std::exp2(x);
#endif
}
MLSEM_HOST_DEVICE inline float fast_rcp(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return 1.f / x;
#endif
}

// The polynomial of Abramowitz & Stegun 7.1.26: erfc(a) = t p(t) exp(-a^2), t = 1 / (1 + 0.3275911 a),
// a >= 0, to 1.5e-7 absolute in exact arithmetic.
MLSEM_HOST_DEVICE inline float as_erfc_poly(float t) {
  return t * fmaf(t, fmaf(t, fmaf(t, fmaf(t, 1.061405429f, -1.453152027f), 1.421413741f), -0.284496736f),
                  0.254829592f);
}

// The exact GELU, 0.5 x (1 + erf(x / sqrt 2)), with erf from as_erfc_poly and the 1/sqrt 2
// folded into its constants: 14 instructions, 2 of them MUFU (the memory-bound GELU kernels
// are otherwise limited by this arithmetic, not by bandwidth).
MLSEM_HOST_DEVICE inline float gelu_erf(float x) {
  const float t = fast_rcp(fmaf(0.3275911f * 0.70710678118f, fabsf(x), 1.f));
  const float e = fast_exp2(x * x * (-0.5f * kLog2e));  // exp(-x^2 / 2)
  const float h = 0.5f * x;
  return fmaf(h, copysignf(fmaf(-as_erfc_poly(t), e, 1.f), x), h);
}

// GELU's tanh form, 0.5 x (1 + tanh(z)) with z = sqrt(2/pi) (x + 0.044715 x^3), evaluated as
// x * sigmoid(2z) = x / (1 + exp(-2z)): one exp and one reciprocal instead of tanh's sequence.
MLSEM_HOST_DEVICE inline float gelu_tanh(float x) {
  constexpr float c = -1.5957691216f * kLog2e;  // -2 sqrt(2/pi), in the log2 domain
  return x * fast_rcp(1.f + fast_exp2(x * fmaf(0.044715f * c, x * x, c)));
}

// SiLU, x * sigmoid(x).
MLSEM_HOST_DEVICE inline float silu(float x) { return x * fast_rcp(1.f + fast_exp2(x * -kLog2e)); }

}  // namespace mlsem_kernels
