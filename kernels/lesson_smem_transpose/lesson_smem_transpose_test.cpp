// Shared-memory bank conflicts of the transpose tile's column read, with and without
// the +1 padding: banks are 4-byte words modulo 32.
#include <gtest/gtest.h>

#include <set>

namespace {

// Distinct banks hit when the 32 lanes of a warp read tile[lane][i] from a float tile
// whose rows are `row_words` words long. 32 distinct banks: one pass; 1: 32 serialized.
size_t banks_hit(int row_words, int column) {
  std::set<int> banks;
  for (int lane = 0; lane < 32; ++lane) banks.insert((lane * row_words + column) % 32);
  return banks.size();
}

TEST(LessonSmemTranspose, UnpaddedColumnReadHitsOneBank) { EXPECT_EQ(banks_hit(32, 5), 1u); }

TEST(LessonSmemTranspose, PaddedColumnReadHitsAll32Banks) {
  for (int column = 0; column < 32; ++column) EXPECT_EQ(banks_hit(33, column), 32u) << column;
}

}  // namespace
