// Tiling reorders the k-loop into 16-wide blocks and the output into 64x64 tiles, with
// zero-filled edges; in exact arithmetic that is the same product, for ragged sizes too.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/random.h"

namespace {

std::vector<double> naive(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k) {
  std::vector<double> c(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) c[size_t(i) * n + j] += a[size_t(i) * k + p] * b[size_t(p) * n + j];
  return c;
}

// The kernel's loop structure: tiles of C, k blocks staged (zero-padded) in "shared memory".
std::vector<double> tiled(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k) {
  constexpr int TM = 64, TN = 64, TK = 16;
  std::vector<double> c(size_t(m) * n, 0.0);
  for (int m0 = 0; m0 < m; m0 += TM)
    for (int n0 = 0; n0 < n; n0 += TN) {
      std::vector<double> acc(TM * TN, 0.0);
      for (int k0 = 0; k0 < k; k0 += TK) {
        double as[TK][TM], bs[TK][TN];
        for (int kk = 0; kk < TK; ++kk) {
          for (int r = 0; r < TM; ++r) as[kk][r] = m0 + r < m && k0 + kk < k ? a[size_t(m0 + r) * k + k0 + kk] : 0;
          for (int col = 0; col < TN; ++col) bs[kk][col] = n0 + col < n && k0 + kk < k ? b[size_t(k0 + kk) * n + n0 + col] : 0;
        }
        for (int kk = 0; kk < TK; ++kk)
          for (int r = 0; r < TM; ++r)
            for (int col = 0; col < TN; ++col) acc[r * TN + col] += as[kk][r] * bs[kk][col];
      }
      for (int r = 0; r < TM && m0 + r < m; ++r)
        for (int col = 0; col < TN && n0 + col < n; ++col) c[size_t(m0 + r) * n + n0 + col] = acc[r * TN + col];
    }
  return c;
}

TEST(LessonTiledMatmul, TiledEqualsNaiveOnRaggedSizes) {
  const int m = 70, n = 129, k = 33;
  const auto a = mlsem_kernels::testing::random_vector(size_t(m) * k, 21);
  const auto b = mlsem_kernels::testing::random_vector(size_t(k) * n, 22);
  const auto want = naive(a, b, m, n, k), got = tiled(a, b, m, n, k);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << i;
}

// Why it is faster: loads from device memory per multiply-add.
TEST(LessonTiledMatmul, TilingCutsLoadsPerMultiplyAddBy64x) {
  const double naive_loads_per_fma = 2.0;  // one element of a and one of b per product
  const double tiled_loads_per_fma = (64.0 * 16 + 16 * 64) / (64.0 * 64 * 16);
  EXPECT_DOUBLE_EQ(naive_loads_per_fma / tiled_loads_per_fma, 64.0);
}

}  // namespace
