// CPU-side tests of the shared launch helpers.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/launch.h"

namespace mlsem_kernels {
namespace {

TEST(FastDiv, MatchesIntegerDivision) {
  for (uint32_t d : {1u, 2u, 3u, 7u, 16u, 17u, 376u, 1000u, 6288u, 65535u, 1u << 20, (1u << 31) - 1}) {
    const FastDiv f(d);
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 123456789u, (1u << 31) - 1}) {
      if (n >= (1u << 31)) continue;
      EXPECT_EQ(f.div(n), n / d) << n << " / " << d;
      EXPECT_EQ(f.mod(n), n % d) << n << " % " << d;
    }
  }
}

TEST(Vectorize, NeedsAlignedRowsOf16Bytes) {
  alignas(16) static char buffer[64];
  EXPECT_TRUE(can_vectorize(buffer, 8, 2));        // 8 bf16 = 16 bytes a row
  EXPECT_FALSE(can_vectorize(buffer, 3001, 2));    // rows start misaligned
  EXPECT_FALSE(can_vectorize(buffer + 2, 8, 2));   // base misaligned
  EXPECT_TRUE(can_vectorize(buffer, 4, 4));        // 4 floats
}

}  // namespace
}  // namespace mlsem_kernels
