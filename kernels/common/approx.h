// Approximations shared by the kernels (device) and the CPU tests (host).
#pragma once

#include <cmath>

#include "launch.h"

namespace mlsem_kernels {

// erf(x) to 1.5e-7 absolute in exact arithmetic (Abramowitz & Stegun 7.1.26; about 5e-7 in float32): one reciprocal, one exp and
// a few FMAs, against erff's longer branchy sequence. Memory-bound GELU kernels are
// otherwise limited by this arithmetic, not by bandwidth.
MLSEM_HOST_DEVICE inline float fast_erf(float x) {
  const float a = fabsf(x);
#ifdef __CUDA_ARCH__
  const float t = __fdividef(1.f, fmaf(0.3275911f, a, 1.f));
  const float e = __expf(-a * a);
#else
  const float t = 1.f / std::fma(0.3275911f, a, 1.f);
  const float e = std::exp(-a * a);
#endif
  const float poly = t * fmaf(t, fmaf(t, fmaf(t, fmaf(t, 1.061405429f, -1.453152027f), 1.421413741f), -0.284496736f),
                              0.254829592f);
  return copysignf(1.f - poly * e, x);
}

}  // namespace mlsem_kernels
