// The butterfly (xor) shuffle reduction, simulated: after log2(32) rounds every lane
// holds the warp's total, with no shared memory and no barrier.
#include <gtest/gtest.h>

#include <array>

namespace {

std::array<double, 32> butterfly_sum(std::array<double, 32> lanes, int* rounds) {
  *rounds = 0;
  for (int offset = 16; offset > 0; offset >>= 1, ++*rounds) {
    std::array<double, 32> next;
    for (int lane = 0; lane < 32; ++lane) next[lane] = lanes[lane] + lanes[lane ^ offset];  // __shfl_xor_sync
    lanes = next;
  }
  return lanes;
}

TEST(LessonWarpReduce, EveryLaneEndsWithTheTotal) {
  std::array<double, 32> lanes;
  for (int i = 0; i < 32; ++i) lanes[i] = i * i - 3.5;
  double total = 0;
  for (double v : lanes) total += v;
  int rounds = 0;
  for (double v : butterfly_sum(lanes, &rounds)) EXPECT_DOUBLE_EQ(v, total);
  EXPECT_EQ(rounds, 5);  // against 8 barrier rounds of a 256-thread shared-memory tree
}

}  // namespace
