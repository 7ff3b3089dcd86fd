// Memory instructions a warp issues to move n bf16 elements, scalar vs 16-byte accesses.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/launch.h"

namespace {

int64_t warp_instructions(int64_t n, int bytes_per_access) {
  const int64_t elems_per_access = bytes_per_access / 2;  // bf16
  return mlsem_kernels::ceil_div(mlsem_kernels::ceil_div(n, elems_per_access), 32);
}

TEST(LessonVectorized, SixteenByteAccessesNeedAnEighthOfTheInstructions) {
  const int64_t n = int64_t{1} << 24;
  EXPECT_EQ(warp_instructions(n, 2), 8 * warp_instructions(n, 16));
  // A ragged tail still needs its own (partial) access.
  EXPECT_EQ(warp_instructions(n + 3, 16), warp_instructions(n, 16) + 1);
}

}  // namespace
