// CPU-side tests of the softmax kernel's mathematics and launch plan.
#include <gtest/gtest.h>

#include <algorithm>

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
      if (plan.cached && plan.packs_per_thread == 8) {
        EXPECT_LE(plan.threads, kMaxThreadsAt8Packs) << cols;
      }
      if (plan.cached) {
        EXPECT_GE(int64_t{plan.threads} * plan.packs_per_thread * pack, cols) << cols;
        EXPECT_TRUE(plan.packs_per_thread == 1 || plan.packs_per_thread == 2 || plan.packs_per_thread == 4 ||
                    plan.packs_per_thread == 8);
      }
    }
  }
}

TEST(RowPlan, CachesRowsUpTo4096PacksAndStreamsLonger) {
  // bf16: 8 elements a pack; 512 threads x 8 packs x 8 = 32768 columns fit in registers (8
  // packs a thread at 1024 threads would not launch).
  EXPECT_TRUE(plan_rows(32768, 8).cached);
  EXPECT_FALSE(plan_rows(32769, 8).cached);
  EXPECT_FALSE(plan_rows(65536, 8).cached);
  EXPECT_FALSE(plan_rows(20001, 4).cached);  // float32: 16384 columns
  // LLM hidden sizes stay at 256-thread blocks (several rows resident per SM).
  const RowPlan p = plan_rows(8192, 8);
  EXPECT_EQ(p.threads, 256);
  EXPECT_EQ(p.packs_per_thread, 4);
}

TEST(SplitPlan, ClusterChunksCoverLongRowsAlignedAndCached) {
  int too_long = 0;
  for (int cluster : {8, 16}) {
  for (int pack : {4, 8}) {
    for (int64_t cols : {65537, 100003, 131072, 262144}) {
      const SplitPlan p = plan_cached_split(cols, pack, 8, kMaxThreadsAt8Packs, cluster);  // as softmax.cu plans
      // What the cluster's registers hold: cluster x 512 threads x 8 packs x pack columns
      // (131072 float32 columns in 8 blocks: 262144 of them do not fit).
      if (cols > int64_t{cluster} * kMaxThreadsAt8Packs * 8 * pack) {
        ++too_long;
        EXPECT_EQ(p.cluster, 0) << cols;  // the online kernel
        continue;
      }
      ASSERT_EQ(p.cluster, cluster) << cols;
      EXPECT_EQ(p.chunk % pack, 0) << cols;  // every chunk of an aligned row starts aligned
      EXPECT_GE(p.chunk * p.cluster, cols) << cols;
      EXPECT_LT((p.cluster - 1) * p.chunk, cols) << cols;  // the last block has columns
      EXPECT_EQ(p.threads % 32, 0);
      EXPECT_GE(int64_t{p.threads} * 8 * pack, p.chunk) << cols;  // the chunk fits the registers
      EXPECT_LE(p.threads, kMaxThreadsAt8Packs);
    }
  }
  }
  EXPECT_EQ(too_long, 1);  // only 262144 float32 columns in 8 blocks
  // 1024 x 131072 bf16 in clusters of 16: blocks of 128 threads, 8192 columns each.
  const SplitPlan p = plan_cached_split(131072, 8, 8, kMaxThreadsAt8Packs, 16);
  EXPECT_EQ(p.chunk, 8192);
  EXPECT_EQ(p.threads, 128);
  // Rows past 8 blocks x 512 threads x 8 packs stream instead.
  EXPECT_EQ(plan_cached_split(int64_t{8} * 512 * 8 * 8 + 64, 8, 8).cluster, 0);
}

TEST(SplitPlan, MergingPerChunkPairsEqualsTheWholeRow) {
  // What the cluster does: each block's (max, sum) over its chunk, merged across blocks.
  const auto x = testing::random_vector(131072 + 5, 3, 6.0);
  const SplitPlan p = plan_cached_split(static_cast<int64_t>(x.size()), 8, 8);
  reference::MaxSum all = reference::online_max_sum(x, x.size());
  reference::MaxSum merged;
  for (int r = 0; r < p.cluster; ++r) {
    const size_t b = std::min(x.size(), static_cast<size_t>(r * p.chunk));
    merged = reference::merge(merged, reference::max_sum(x, b, std::min(x.size(), b + p.chunk)));
  }
  EXPECT_EQ(merged.m, all.m);
  EXPECT_NEAR(merged.s / all.s, 1.0, 1e-12);
}

}  // namespace
}  // namespace mlsem_kernels
