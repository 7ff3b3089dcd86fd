// CPU-side tests of the bias + GELU kernel's mathematics.
#include <gtest/gtest.h>

#include <cmath>

#include "common/approx.h"
#include "common/reference.h"

namespace mlsem_kernels {
namespace {

// The fused kernel evaluates the tanh form as x * sigmoid(2z): the same function.
TEST(BiasGelu, SigmoidFormEqualsTanhForm) {
  for (double x = -8; x <= 8; x += 0.01) {
    const double z2 = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    EXPECT_NEAR(x / (1 + std::exp(-z2)), reference::gelu_tanh(x), 1e-14) << x;
  }
}

// The algebra of the forms the kernels evaluate (erf constants folded, the tanh form as a
// sigmoid, SiLU with a reciprocal), against float64: within a few float32 rounding steps. On
// the host fast_exp2/fast_rcp are std::exp2 and 1/x; the device's ex2/rcp.approx results are
// checked against float64 by bench.py on the GPU.
TEST(BiasGelu, KernelFormsMatchFloat64) {
  double erf_worst = 0, tanh_worst = 0, silu_worst = 0;
  for (float x = -8.f; x <= 8.f; x += 0.001f) {
    const double xd = x;
    erf_worst = std::max(erf_worst, std::abs(gelu_erf(x) - reference::gelu_erf(xd)));
    tanh_worst = std::max(tanh_worst, std::abs(gelu_tanh(x) - reference::gelu_tanh(xd)));
    silu_worst = std::max(silu_worst, std::abs(silu(x) - reference::silu(xd)));
  }
  EXPECT_LT(erf_worst, 1e-6);
  EXPECT_LT(tanh_worst, 2e-6);
  EXPECT_LT(silu_worst, 2e-6);
  // Far tails: exp overflows to inf and the reciprocal to 0, or exp underflows to 0.
  EXPECT_EQ(gelu_erf(-30.f), 0.f);
  EXPECT_EQ(gelu_erf(30.f), 30.f);
  EXPECT_EQ(gelu_tanh(-30.f), 0.f);
  EXPECT_EQ(gelu_tanh(30.f), 30.f);
  EXPECT_EQ(silu(-200.f), 0.f);
  EXPECT_EQ(silu(200.f), 200.f);
}

// The two GELUs are different functions (users must not get one for the other), though
// close: at most about 5e-4 apart.
TEST(BiasGelu, TanhApproximationIsCloseToErfButNotEqual) {
  double worst = 0;
  for (double x = -6; x <= 6; x += 0.001) worst = std::max(worst, std::abs(reference::gelu_tanh(x) - reference::gelu_erf(x)));
  EXPECT_GT(worst, 1e-5);
  EXPECT_LT(worst, 1e-3);
}

}  // namespace
}  // namespace mlsem_kernels
