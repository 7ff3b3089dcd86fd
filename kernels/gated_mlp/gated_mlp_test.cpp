// CPU-side tests of the gated MLP activations.
#include <gtest/gtest.h>

#include <cmath>

#include "common/reference.h"

namespace mlsem_kernels {
namespace {

TEST(GatedMlp, SiluIsXTimesSigmoid) {
  EXPECT_EQ(reference::silu(0), 0);
  EXPECT_NEAR(reference::silu(1), 1 / (1 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(reference::silu(40), 40, 1e-12);      // gate open
  EXPECT_NEAR(reference::silu(-40), 0, 1e-12);      // gate closed
  EXPECT_LT(reference::silu(-1.2784645), -0.2784); // its minimum, about -0.2785
}

TEST(GatedMlp, GeluErfIsXTimesNormalCdf) {
  for (double x : {-3.0, -0.5, 0.0, 0.7, 2.5})
    EXPECT_NEAR(reference::gelu_erf(x), x * 0.5 * std::erfc(-x / std::sqrt(2.0)), 1e-15) << x;
}

}  // namespace
}  // namespace mlsem_kernels
