// CPU-side tests of the LayerNorm kernel's mathematics.
#include <gtest/gtest.h>

#include <cmath>

#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

TEST(LayerNormReference, OutputHasMeanZeroAndVarianceOne) {
  const size_t n = 4097;
  const auto x = testing::random_vector(n, 3, 3.0, 5.0);
  const auto y = reference::layernorm(x, reference::Vec(n, 1.0), reference::Vec(n, 0.0), 0.0);
  double mean = 0, var = 0;
  for (double v : y) mean += v;
  mean /= n;
  for (double v : y) var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 1e-12);
  EXPECT_NEAR(var / n, 1.0, 1e-12);
}

TEST(LayerNormReference, AppliesWeightAndBiasPerColumn) {
  const reference::Vec x{1, 2, 3, 4};
  const auto plain = reference::layernorm(x, {1, 1, 1, 1}, {0, 0, 0, 0}, 1e-5);
  const auto affine = reference::layernorm(x, {2, 2, 2, 2}, {1, 0, 0, -1}, 1e-5);
  EXPECT_NEAR(affine[0], 2 * plain[0] + 1, 1e-12);
  EXPECT_NEAR(affine[3], 2 * plain[3] - 1, 1e-12);
}

// The kernel's variance is the mean of squared deviations from the mean, not
// E[x^2] - E[x]^2, which cancels catastrophically when the mean dwarfs the spread.
TEST(LayerNormReference, LargeMeanDoesNotCancelTheVariance) {
  const size_t n = 3001;
  const auto x = testing::random_vector(n, 4, 0.01, 1000.0);
  const auto y = reference::layernorm(x, reference::Vec(n, 1.0), reference::Vec(n, 0.0), 0.0);
  double ms = 0;
  for (double v : y) ms += v * v;
  EXPECT_NEAR(ms / n, 1.0, 1e-9);
  // The same data in float32 by the shortcut formula loses the variance entirely.
  float sum = 0.f, sumsq = 0.f;
  for (double v : x) { sum += float(v); sumsq += float(v) * float(v); }
  const float shortcut = sumsq / n - (sum / n) * (sum / n);
  EXPECT_GT(std::abs(shortcut - 1e-4f), 1e-4f);  // true variance 1e-4
}

}  // namespace
}  // namespace mlsem_kernels
