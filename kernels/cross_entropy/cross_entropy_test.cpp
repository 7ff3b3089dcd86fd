// CPU-side tests of the chunked cross-entropy's mathematics.
#include <gtest/gtest.h>

#include <cmath>

#include "common/launch.h"
#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

TEST(CrossEntropy, IsMinusLogSoftmaxOfTheTarget) {
  const reference::Vec logits{2.0, 1.0, 0.1};
  const double z = std::exp(2.0) + std::exp(1.0) + std::exp(0.1);
  EXPECT_NEAR(reference::cross_entropy(logits, 1), -std::log(std::exp(1.0) / z), 1e-14);
  // Uniform logits over V classes: log V.
  EXPECT_NEAR(reference::cross_entropy(reference::Vec(50257, 3.0), 17), std::log(50257.0), 1e-9);
}

// What the fused kernel computes (online logsumexp over vocabulary chunks, ragged last
// chunk included) equals the unchunked definition.
TEST(CrossEntropy, ChunkedEqualsUnchunked) {
  const auto logits = testing::random_vector(50257, 10, 3.0);
  for (size_t target : {0ul, 12345ul, 50256ul}) {
    const double exact = reference::cross_entropy(logits, target);
    for (size_t chunk : {8, 2048, 8192, 50257, 65536})
      EXPECT_NEAR(reference::cross_entropy_chunked(logits, target, chunk), exact, 1e-10) << chunk;
  }
}

// Few rows are split over a cluster until the blocks fill the GPU; many rows, or a short
// vocabulary, stay one block per row.
TEST(CrossEntropyPlan, SplitsOnlyShortBatches) {
  const int64_t target = 16 * 132;
  EXPECT_EQ(plan_stream_split(1024, 32000, 8, target).cluster, 4);    // 4096 blocks
  EXPECT_EQ(plan_stream_split(4096, 128256, 8, target).cluster, 1);   // enough rows already
  EXPECT_EQ(plan_stream_split(8, 128256, 8, target).cluster, kMaxCluster);
  EXPECT_EQ(plan_stream_split(8, 6000, 8, target).cluster, 1);        // chunks would be too short
  for (int64_t rows : {1, 17, 1024, 5000}) {
    for (int64_t vocab : {1000, 32000, 50257, 128256}) {
      const SplitPlan p = plan_stream_split(rows, vocab, 8, target);
      EXPECT_GE(p.chunk * p.cluster, vocab);
      EXPECT_LT((p.cluster - 1) * p.chunk, vocab);  // no block without columns
      EXPECT_EQ(p.chunk % 8, 0);
    }
  }
}

}  // namespace
}  // namespace mlsem_kernels
