// The counter-based generator behind low-memory dropout: Philox4x32-10 against the
// Random123 known answers, the keep rate it gives, and the property the lesson rests on:
// an element's keep bit is a function of (seed, offset, index) alone, so the backward
// regenerates exactly the forward's mask from 16 bytes of state.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/philox.h"

namespace {

using mlsem_kernels::dropout_threshold;
using mlsem_kernels::dropout_words;
using mlsem_kernels::philox4x32_10;

// Known-answer vectors of Random123 (tests/kat_vectors): counter, key, output.
TEST(LessonDropout, PhiloxMatchesTheRandom123KnownAnswers) {
  struct Kat {
    uint32_t c[4], k[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& t : kats) {
    const auto r = philox4x32_10(t.c[0], t.c[1], t.c[2], t.c[3], t.k[0], t.k[1]);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(r.v[j], t.out[j]) << j;
  }
}

TEST(LessonDropout, ThresholdIsTheSmallest24BitValueAtOrAboveP) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);     // p = 0 keeps every element
  EXPECT_EQ(dropout_threshold(0.5), 1u << 23);
  EXPECT_EQ(dropout_threshold(0.1), 1677722u);  // ceil(0.1 * 2^24 = 1677721.6)
  // u = t / 2^24 >= p exactly when t >= threshold
  const double p = 0.1;
  const uint32_t t = dropout_threshold(p);
  EXPECT_GE(t / 16777216.0, p);
  EXPECT_LT((t - 1) / 16777216.0, p);
}

bool keep(uint64_t seed, uint64_t offset, uint64_t i, uint32_t threshold) {
  return (dropout_words(seed, offset, i / 4).v[i % 4] >> 8) >= threshold;
}

TEST(LessonDropout, KeepRateIsOneMinusP) {
  const int64_t n = 1 << 20;
  for (double p : {0.1, 0.5}) {
    const uint32_t t = dropout_threshold(p);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) kept += keep(1234, 0, i, t);
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(double(kept), n * (1 - p), 5 * sigma) << p;
  }
}

// The fused kernel computes element i's bit inside whichever thread loads element i; the
// backward may be launched with another grid. Any order, any partition: the same mask.
TEST(LessonDropout, TheMaskDependsOnlyOnSeedOffsetAndIndex) {
  const int64_t n = 10007;
  const uint32_t t = dropout_threshold(0.1);
  std::vector<char> forward(n), backward(n);
  for (int64_t i = 0; i < n; ++i) forward[i] = keep(42, 96, i, t);
  for (int64_t i = n - 1; i >= 0; i -= 3) backward[i] = keep(42, 96, i, t);  // strided, reversed
  for (int64_t i = n - 2; i >= 0; i -= 3) backward[i] = keep(42, 96, i, t);
  for (int64_t i = n - 3; i >= 0; i -= 3) backward[i] = keep(42, 96, i, t);
  EXPECT_EQ(forward, backward);
}

// A new step (or layer) advances the offset past the counters the last call used; its mask
// is then independent: two masks agree on about p^2 + (1-p)^2 of the elements, not all.
TEST(LessonDropout, ANewOffsetDrawsAFreshMask) {
  const int64_t n = 1 << 18;
  const double p = 0.5;
  const uint32_t t = dropout_threshold(p);
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += keep(7, 0, i, t) == keep(7, n / 4, i, t);
  EXPECT_NEAR(double(same) / n, p * p + (1 - p) * (1 - p), 0.01);
  int64_t same_seed = 0;
  for (int64_t i = 0; i < n; ++i) same_seed += keep(7, 0, i, t) == keep(8, 0, i, t);
  EXPECT_NEAR(double(same_seed) / n, 0.5, 0.01);
}

}  // namespace
