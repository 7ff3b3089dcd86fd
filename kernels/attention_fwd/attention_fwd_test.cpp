// CPU-side tests of the flash attention algorithm, its tile configurations, and the Hopper
// kernel's shared-memory plan and stage schedule.
#include <gtest/gtest.h>

#include <array>
#include <random>

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
      for (auto [bm, bn] : {std::pair{64ul, 64ul}, {128ul, 64ul}, {128ul, 32ul}, {128ul, 128ul}, {16ul, 8ul}}) {
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

TEST(AttentionSm90, PlanFitsSharedMemoryAndTheWgmmaShapes) {
  using P = AttentionSm90;
  EXPECT_LE(P::smem_bytes, 227 * 1024);       // Hopper's per-block limit
  EXPECT_EQ(P::block_m, 2 * 64);              // two warpgroups of m64 rows
  EXPECT_EQ(P::consumers, 2 * 128);
  EXPECT_EQ(P::block_n % 16, 0);              // P V consumes keys 16 at a time
  EXPECT_LE(P::block_n, 256);                 // the widest wgmma n
  EXPECT_EQ(P::tile_bytes % 1024, 0);         // every tile starts on a swizzle atom
  EXPECT_EQ(P::barrier_offset % 8, 0);        // mbarriers are 8-byte words
  EXPECT_GE(P::stages, 2);
}

// The producer and two consumer warpgroups run the kernel's protocol against mbarriers that
// behave as the hardware's (a wait on a parity passes while the barrier's current phase has
// the other parity), under many interleavings, with the copy engine completing fills late.
// Every wait must pass only once the phase it means has completed, and every run must end.
TEST(AttentionSm90, StageScheduleWaitsForTheRightPhases) {
  using P = AttentionSm90;
  struct Barrier {
    int arrivals_per_phase, arrived = 0, completed = 0;  // completed phases
    bool passes(int parity) const { return (completed & 1) != parity; }
    void arrive() {
      if (++arrived == arrivals_per_phase) { arrived = 0; ++completed; }
    }
  };
  std::mt19937 rng(7);
  for (int n_tiles = 1; n_tiles <= 11; ++n_tiles)
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<Barrier> full(P::stages, Barrier{1}), empty(P::stages, Barrier{2});
      int loaded = 0;               // tiles the producer has issued
      std::vector<int> in_flight;   // issued fills not yet completed by the copy engine
      std::array<int, 2> next{};    // each consumer's next tile
      std::array<bool, 2> holds{};  // holds its previous tile, released after the next fill wait
      for (int steps = 0; loaded < n_tiles || !in_flight.empty() || next[0] < n_tiles || next[1] < n_tiles;) {
        ASSERT_LT(++steps, 10000) << "deadlock with " << n_tiles << " tiles";
        switch (rng() % 4) {
          case 0: {  // the producer loads tile `loaded` once its stage is free
            if (loaded == n_tiles) break;
            const int t = loaded, st = P::stage(t);
            if (P::empty_parity(t) >= 0) {
              if (!empty[st].passes(P::empty_parity(t))) break;
              // both consumers released tile t - stages, the stage's previous use
              ASSERT_GE(empty[st].completed, t / P::stages) << "tile " << t << " overwrote a stage in use";
            }
            in_flight.push_back(t);
            ++loaded;
            break;
          }
          case 1:  // the copy engine completes a fill
            if (!in_flight.empty()) {
              const size_t i = rng() % in_flight.size();
              full[P::stage(in_flight[i])].arrive();
              in_flight.erase(in_flight.begin() + static_cast<long>(i));
            }
            break;
          default: {  // a consumer waits for its next tile, then releases the one before
            const int c = static_cast<int>(rng() % 2), j = next[c];
            if (j == n_tiles) break;
            const int st = P::stage(j);
            if (!full[st].passes(P::full_parity(j))) break;
            ASSERT_GT(full[st].completed, j / P::stages) << "tile " << j << " read before its fill";
            if (holds[c]) empty[P::stage(j - 1)].arrive();
            holds[c] = true;
            ++next[c];
          }
        }
      }
    }
}

}  // namespace
}  // namespace mlsem_kernels
