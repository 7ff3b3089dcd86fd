// CPU-side tests of the softmax kernel's mathematics and launch plan.
#include <gtest/gtest.h>

#include "common/launch.h"
#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

TEST(SoftmaxReference, RowsArePositiveAndSumToOne) {
  const auto x = testing::random_vector(3001, 1, 4.0);
  const auto y = reference::softmax(x);
  double sum = 0;
  for (double v : y) {
    EXPECT_GT(v, 0.0);
    sum += v;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(SoftmaxReference, LargeLogitsDoNotOverflow) {
  const auto y = reference::softmax({1000.0, 1000.0, -1000.0});
  EXPECT_NEAR(y[0], 0.5, 1e-15);
  EXPECT_NEAR(y[2], 0.0, 1e-300);
}

// The online recurrence (what softmax_online and the per-thread merge compute) gives the
// two-pass max and sum for any chunking, including chunks that hold only -inf padding.
TEST(SoftmaxOnline, EqualsTwoPassForAnyChunking) {
  auto x = testing::random_vector(1000, 2, 10.0);
  const auto exact = reference::max_sum(x, 0, x.size());
  for (size_t chunk : {1, 7, 8, 64, 999, 1000, 4096}) {
    const auto online = reference::online_max_sum(x, chunk);
    EXPECT_EQ(online.m, exact.m) << chunk;
    EXPECT_NEAR(online.s / exact.s, 1.0, 1e-12) << chunk;
  }
  x.insert(x.begin(), 16, -reference::kInf);  // a leading all-padding chunk
  const auto padded = reference::online_max_sum(x, 16);
  EXPECT_EQ(padded.m, exact.m);
  EXPECT_NEAR(padded.s / exact.s, 1.0, 1e-12);
}

TEST(RowPlan, CoversTheRowWithWarpMultiples) {
  for (int pack : {4, 8}) {
    for (int64_t cols : {1, 7, 8, 255, 1024, 3001, 8192, 32768, 65536, 65537, 131072}) {
      const RowPlan plan = plan_rows(cols, pack);
      EXPECT_EQ(plan.threads % 32, 0) << cols;
      EXPECT_GE(plan.threads, 32);
      EXPECT_LE(plan.threads, 1024);
      if (plan.cached) {
        EXPECT_GE(int64_t{plan.threads} * plan.packs_per_thread * pack, cols) << cols;
        EXPECT_TRUE(plan.packs_per_thread == 1 || plan.packs_per_thread == 2 || plan.packs_per_thread == 4 ||
                    plan.packs_per_thread == 8);
      }
    }
  }
}

TEST(RowPlan, CachesRowsUpTo8192PacksAndStreamsLonger) {
  // bf16: 8 elements a pack; 1024 threads x 8 packs x 8 = 65536 columns fit in registers.
  EXPECT_TRUE(plan_rows(65536, 8).cached);
  EXPECT_FALSE(plan_rows(65537, 8).cached);
  // LLM hidden sizes stay at 256-thread blocks (several rows resident per SM).
  const RowPlan p = plan_rows(8192, 8);
  EXPECT_EQ(p.threads, 256);
  EXPECT_EQ(p.packs_per_thread, 4);
}

}  // namespace
}  // namespace mlsem_kernels
