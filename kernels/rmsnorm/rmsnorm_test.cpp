// CPU-side tests of the RMSNorm kernel's mathematics.
#include <gtest/gtest.h>

#include <cmath>

#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

TEST(RmsNormReference, OutputHasUnitRootMeanSquare) {
  const size_t n = 3001;
  const auto y = reference::rmsnorm(testing::random_vector(n, 5, 7.0, 2.0), reference::Vec(n, 1.0), 0.0);
  double ms = 0;
  for (double v : y) ms += v * v;
  EXPECT_NEAR(std::sqrt(ms / n), 1.0, 1e-12);
}

TEST(RmsNormReference, IsScaleInvariantButNotShiftInvariant) {
  const auto x = testing::random_vector(64, 6);
  reference::Vec scaled = x, shifted = x;
  for (double& v : scaled) v *= 37.5;
  for (double& v : shifted) v += 1.0;
  const reference::Vec w(64, 1.0);
  const auto y = reference::rmsnorm(x, w, 0.0), ys = reference::rmsnorm(scaled, w, 0.0),
             yt = reference::rmsnorm(shifted, w, 0.0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], ys[i], 1e-12);
  double diff = 0;
  for (size_t i = 0; i < x.size(); ++i) diff += std::abs(y[i] - yt[i]);
  EXPECT_GT(diff, 1.0);  // unlike LayerNorm, the mean is not removed
}

}  // namespace
}  // namespace mlsem_kernels
