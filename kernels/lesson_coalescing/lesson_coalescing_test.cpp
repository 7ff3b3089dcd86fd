// The lesson's claim, computed: memory segments one warp instruction touches.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

namespace {

// 128-byte lines touched by the 32 lanes of a warp loading float32 at these element indices.
template <class Index>
size_t lines_touched(Index index) {
  std::set<int64_t> lines;
  for (int lane = 0; lane < 32; ++lane) lines.insert(index(lane) * 4 / 128);
  return lines.size();
}

TEST(LessonCoalescing, OneThreadPerRowTouches32LinesPerInstruction) {
  const int64_t cols = 4096, step = 5;  // any column step of the per-row loop
  EXPECT_EQ(lines_touched([&](int lane) { return lane * cols + step; }), 32u);
}

TEST(LessonCoalescing, ConsecutiveElementsTouchOneLine) {
  EXPECT_EQ(lines_touched([](int lane) { return 7 * 32 + lane; }), 1u);
}

}  // namespace
