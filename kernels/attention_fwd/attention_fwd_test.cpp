// CPU-side tests of the flash attention algorithm and its tile configurations.
#include <gtest/gtest.h>

#include "common/launch.h"
#include "common/reference.h"
#include "tests/random.h"

namespace mlsem_kernels {
namespace {

// The kernel's tile recurrence in float64 equals naive attention, causal or not, with a
// sequence that is no multiple of either tile size and tiles wider than the sequence.
TEST(FlashAttention, TiledRecurrenceEqualsNaive) {
  const size_t d = 16;
  for (size_t seq : {1, 5, 77, 130}) {
    const auto q = testing::random_vector(seq * d, 11, 2.0), k = testing::random_vector(seq * d, 12, 2.0),
               v = testing::random_vector(seq * d, 13);
    for (bool causal : {false, true}) {
      const auto naive = reference::attention(q, k, v, seq, d, causal);
      for (auto [bm, bn] : {std::pair{64ul, 64ul}, {128ul, 64ul}, {128ul, 32ul}, {16ul, 8ul}}) {
        const auto tiled = reference::attention_tiled(q, k, v, seq, d, causal, bm, bn);
        for (size_t i = 0; i < naive.size(); ++i)
          ASSERT_NEAR(tiled[i], naive[i], 1e-12) << "seq " << seq << " causal " << causal << " bm " << bm;
      }
    }
  }
}

TEST(FlashAttention, CausalFirstRowCopiesTheFirstValue) {
  const size_t d = 8, seq = 9;
  const auto q = testing::random_vector(seq * d, 14), k = testing::random_vector(seq * d, 15),
             v = testing::random_vector(seq * d, 16);
  const auto o = reference::attention_tiled(q, k, v, seq, d, true, 4, 4);
  for (size_t c = 0; c < d; ++c) EXPECT_NEAR(o[c], v[c], 1e-15);
}

TEST(AttentionConfig, EveryConfigFitsSharedMemoryAndTheMmaShape) {
  for (const AttentionConfig& c : kAttentionConfigs) {
    EXPECT_EQ(c.block_m() % 16, 0);
    EXPECT_EQ(c.block_n % 16, 0);  // P V consumes keys 16 at a time
    EXPECT_LE(c.smem_bytes(128), 227 * 1024);  // Hopper's per-block limit
  }
  EXPECT_EQ(kAttentionConfigs[default_attention_config(128)].block_m(), 128);
  // Q tile 128x128 plus double-buffered K and V tiles of 64x128, 2 bytes each.
  EXPECT_EQ((AttentionConfig{4, 2, 64}.smem_bytes(128)), (128 + 4 * 64) * 128 * 2);
}

}  // namespace
}  // namespace mlsem_kernels
