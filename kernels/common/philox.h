// Philox4x32-10, the counter-based generator of Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3" (SC 2011), as cuRAND and PyTorch use it: four 32-bit random words
// from a 128-bit counter and a 64-bit key, with no state between calls. Any thread can
// compute the words of any counter, so a kernel can regenerate the same random numbers
// instead of storing them. Host and device (the CPU tests check the published answers).
#pragma once

#include <cstdint>

#include "launch.h"

namespace mlsem_kernels {

struct Philox4 {
  uint32_t v[4];
};

MLSEM_HOST_DEVICE inline void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#ifdef __CUDA_ARCH__
  lo = a * b;
  hi = __umulhi(a, b);
#else
  const uint64_t p = uint64_t{a} * b;
  lo = static_cast<uint32_t>(p);
  hi = static_cast<uint32_t>(p >> 32);
#endif
}

MLSEM_HOST_DEVICE inline Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                               uint32_t k1) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule: Weyl sequence steps
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, c0, hi0, lo0);
    mulhilo32(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return {{c0, c1, c2, c3}};
}

// Dropout's use of it: element i takes word i % 4 of counter (offset + i / 4, 0) under key
// `seed`, and is kept when the word's top 24 bits, a uniform u in [0, 1) in steps of 2^-24,
// reach p: (word >> 8) >= dropout_threshold(p). offset lets successive calls (layers, steps)
// draw fresh numbers from one seed: a call over n elements uses counters offset .. offset + n/4.
MLSEM_HOST_DEVICE inline Philox4 dropout_words(uint64_t seed, uint64_t offset, uint64_t group) {
  const uint64_t c = offset + group;
  return philox4x32_10(static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0, 0, static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32));
}

// ceil(p * 2^24): u >= p exactly when (word >> 8) >= this. p in [0, 1).
inline uint32_t dropout_threshold(double p) {
  const double t = p * 16777216.0;
  const uint32_t floor_t = static_cast<uint32_t>(t);
  return floor_t + (static_cast<double>(floor_t) < t ? 1u : 0u);
}

}  // namespace mlsem_kernels
