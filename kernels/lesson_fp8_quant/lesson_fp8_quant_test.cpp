// Why the scale is per row, in float64 with an exact model of e4m3 (1 sign, 4 exponent
// bits with bias 7, 3 mantissa bits, subnormals down to 2^-9, largest finite 448): each
// row scaled by its own amax / 448 keeps every row within e4m3's relative precision, while
// one scale for the whole tensor flushes the small rows towards zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/random.h"

namespace {

// Round to the nearest e4m3 value (ties to even), saturating at +-448.
double e4m3(double v) {
  const double a = std::fabs(v);
  if (a >= 448) return std::copysign(448.0, v);
  const int exp = a < std::ldexp(1.0, -6) ? -6 : int(std::floor(std::log2(a)));  // subnormals share 2^-6's step
  const double step = std::ldexp(1.0, exp - 3);
  return std::copysign(std::nearbyint(a / step) * step, v);
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double e = 0, r = 0;
  for (size_t i = 0; i < got.size(); ++i) e += (got[i] - want[i]) * (got[i] - want[i]), r += want[i] * want[i];
  return std::sqrt(e / r);
}

TEST(LessonFp8Quant, E4M3ModelHasTheFormatsGrid) {
  EXPECT_EQ(e4m3(448), 448);
  EXPECT_EQ(e4m3(1000), 448);        // saturating, as the kernel's __NV_SATFINITE
  EXPECT_EQ(e4m3(1.0625), 1.0);      // halfway between 1 and 1.125: ties to even
  EXPECT_EQ(e4m3(1.07), 1.125);
  EXPECT_EQ(e4m3(std::ldexp(1.0, -9)), std::ldexp(1.0, -9));  // the smallest subnormal
  EXPECT_EQ(e4m3(std::ldexp(1.0, -11)), 0.0);
}

// x ~ q * scale, the dequantized row, with the kernel's scale max(amax, 1e-12) / 448.
std::vector<double> roundtrip(const std::vector<double>& row, double scale) {
  std::vector<double> out;
  for (double v : row) out.push_back(e4m3(v / scale) * scale);
  return out;
}

TEST(LessonFp8Quant, RowScalesKeepSmallRowsThatOneTensorScaleLoses) {
  const int cols = 4096;
  std::vector<std::vector<double>> rows;
  for (double magnitude : {1.0, 1e-3, 1e-5}) {  // e.g. activations of tokens of very different norms
    auto r = mlsem_kernels::testing::random_vector(cols, 17, magnitude);
    rows.push_back(r);
  }
  double tensor_amax = 0;
  for (const auto& r : rows)
    for (double v : r) tensor_amax = std::max(tensor_amax, std::fabs(v));
  for (const auto& r : rows) {
    double amax = 0;
    for (double v : r) amax = std::max(amax, std::fabs(v));
    const double row_err = rel_l2(roundtrip(r, std::max(amax, 1e-12) / 448), r);
    const double tensor_err = rel_l2(roundtrip(r, tensor_amax / 448), r);
    EXPECT_LT(row_err, 0.04);  // 3 mantissa bits: about 2^-4 / sqrt(3) for normals
    if (amax < 1e-4 * tensor_amax) {  // below e4m3's normal range under the tensor's scale
      EXPECT_GT(tensor_err, 0.3);
      EXPECT_GT(tensor_err, 10 * row_err);
    }
  }
}

// The row's largest element maps to 448 exactly: the whole e4m3 range is used.
TEST(LessonFp8Quant, TheAmaxElementLandsOnTheLargestValue) {
  const auto r = mlsem_kernels::testing::random_vector(3001, 3, 2.5);
  double amax = 0;
  for (double v : r) amax = std::max(amax, std::fabs(v));
  const double scale = amax / 448;
  int at_max = 0;
  for (double v : r) at_max += std::fabs(e4m3(v / scale)) == 448;
  EXPECT_GE(at_max, 1);
}

}  // namespace
