// CPU-side tests of the chunked cross-entropy's mathematics.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace mlsem_kernels
