// The grouped GEMM's bookkeeping, with the kernel's own functions (grouped_gemm.h): the
// swizzled shared-memory layout is a bijection with no bank conflicts in an ldmatrix
// phase, and the one-launch schedule gives every expert's row tiles exactly one block.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "lesson_grouped_gemm/grouped_gemm.h"

namespace {

namespace gg = mlsem_kernels::grouped_gemm;

TEST(LessonGroupedGemm, SwizzledTilesAreBijectiveAndConflictFree) {
  struct Layout {
    int rows, chunks;
    int (*off)(int, int);
  };
  for (const Layout& l : {Layout{gg::BM, gg::BK / 8, gg::a_off}, Layout{gg::BK, gg::BN / 8, gg::b_off}}) {
    std::set<int> seen;
    for (int r = 0; r < l.rows; ++r)
      for (int c = 0; c < l.chunks; ++c) {
        const int o = l.off(r, c);
        EXPECT_EQ(o % 8, 0);  // 16-byte aligned for cp.async and ldmatrix
        EXPECT_TRUE(seen.insert(o).second) << r << "," << c;
        EXPECT_LT(o, l.rows * l.chunks * 8);
      }
    // One ldmatrix phase: 8 consecutive rows at one chunk column; each 16-byte read must
    // land in its own group of 4 banks (byte address / 16 mod 8).
    for (int r0 = 0; r0 < l.rows; r0 += 8)
      for (int c = 0; c < l.chunks; ++c) {
        std::set<int> groups;
        for (int r = r0; r < r0 + 8; ++r) groups.insert((l.off(r, c) * 2 / 16) % 8);
        EXPECT_EQ(groups.size(), 8u) << "rows " << r0 << " chunk " << c;
      }
  }
}

// The block of row tile y scans the experts' tile counts (exclusive prefix sums) and takes
// the expert whose range holds y, as grouped_gemm_kernel does.
std::map<int, std::pair<int, int>> schedule(const std::vector<int64_t>& offsets, int64_t total_m) {
  const int experts = int(offsets.size()) - 1;
  std::vector<int> start(experts + 1, 0);
  for (int e = 0; e < experts; ++e) start[e + 1] = start[e] + gg::expert_tiles(offsets.data(), e, total_m);
  std::map<int, std::pair<int, int>> blocks;  // y -> (expert, tile within the expert)
  for (int64_t y = 0; y < gg::row_tile_bound(total_m, experts); ++y)
    for (int e = 0; e < experts; ++e)
      if (y >= start[e] && y < start[e + 1]) blocks[int(y)] = {e, int(y) - start[e]};
  return blocks;
}

TEST(LessonGroupedGemm, EveryRowTileOfEveryExpertGetsOneBlock) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 50; ++trial) {
    const int experts = 1 + int(gen() % 130);
    std::vector<int64_t> offsets(experts + 1, 0);
    for (int e = 0; e < experts; ++e) offsets[e + 1] = offsets[e] + (gen() % 4 == 0 ? 0 : gen() % 700);  // empty experts too
    const int64_t total_m = offsets.back();
    const auto blocks = schedule(offsets, total_m);
    std::set<std::pair<int, int>> covered;
    for (const auto& [y, et] : blocks) EXPECT_TRUE(covered.insert(et).second);
    int64_t rows_covered = 0;
    for (int e = 0; e < experts; ++e) {
      const int64_t m = offsets[e + 1] - offsets[e];
      for (int t = 0; t * gg::BM < m; ++t) {
        EXPECT_TRUE(covered.contains({e, t})) << "expert " << e << " tile " << t;
        rows_covered += std::min<int64_t>(gg::BM, m - t * gg::BM);
      }
    }
    EXPECT_EQ(rows_covered, total_m);
    EXPECT_EQ(covered.size(), blocks.size());  // no block computes a tile twice or outside an expert
  }
}

TEST(LessonGroupedGemm, BadOffsetsAreClampedNotFollowed) {
  const std::vector<int64_t> offsets = {0, 300, 200, 900};  // decreasing, and past total_m = 500
  int64_t lo, hi;
  gg::expert_rows(offsets.data(), 1, 500, &lo, &hi);
  EXPECT_EQ(hi - lo, 0);
  gg::expert_rows(offsets.data(), 2, 500, &lo, &hi);
  EXPECT_EQ(lo, 200);
  EXPECT_EQ(hi, 500);
}

}  // namespace
