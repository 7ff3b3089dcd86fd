// CPU-side tests of the rotary embedding's mathematics.
#include <gtest/gtest.h>

#include <cmath>

#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

double dot(const reference::Vec& a, const reference::Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(Rope, PreservesNormAndIsIdentityAtPositionZero) {
  const auto x = testing::random_vector(128, 7);
  const auto y = reference::rope(x, 1234);
  EXPECT_NEAR(dot(y, y), dot(x, x), 1e-9);
  const auto y0 = reference::rope(x, 0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y0[i], x[i]);
}

// The point of RoPE: q.k after rotation depends only on the distance between positions.
TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
  const auto q = testing::random_vector(64, 8), k = testing::random_vector(64, 9);
  const double near = dot(reference::rope(q, 10), reference::rope(k, 3));
  const double far = dot(reference::rope(q, 1010), reference::rope(k, 1003));
  EXPECT_NEAR(near, far, 1e-9);
  EXPECT_GT(std::abs(near - dot(reference::rope(q, 10), reference::rope(k, 4))), 1e-6);
}

}  // namespace
}  // namespace mlsem_kernels
