// Device helpers shared by the two flash-attention kernels (attention_fwd.cu and the
// Hopper kernel in attention_fwd_sm90.cu): the exponent, 16-bit packing, the online
// softmax of one row and the normalized store of one output row.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../common/approx.h"

namespace mlsem_kernels::flash {

// The shared-memory address of a generic pointer, as PTX's .shared instructions take it.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Scores live in the log2 domain (scale * log2(e) folded in), exponentiated with
// fast_exp2 (common/approx.h): one MUFU.EX2.

// Two floats as one register of two 16-bit values, the lower column in the low half.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

// The row layout both kernels share: a score or output tile of 8-column slices, each thread
// holding in slice t elements [t][2h], [t][2h + 1] of its rows lane/4 (h = 0) and lane/4 + 8
// (h = 1), at columns 8t + 2(lane % 4) + {0, 1}: the accumulator layout of mma.sync m16n8
// and of wgmma. The four threads lane/4 share a row.

// One row's online-softmax step over a tile of NT slices of scores starting at key n0, in
// the scaled log2 domain (p = 2^(s * scale * log2 e - m): one FFMA and one MUFU.EX2 per
// score). Masks keys past seq (and, when causal, past the row), turns the scores into
// probabilities in place, updates the running max and this thread's share of the sum, and
// rescales the row's output accumulator by 2^(m_old - m_new).
template <int NT, int DT>
__device__ __forceinline__ void online_softmax_row(float (&s)[NT][4], float (&acc)[DT][4], int h, int row, int n0,
                                                   int seq, bool causal, bool needs_mask, int lane, float scale_log2,
                                                   float& row_max, float& row_sum) {
  float mx = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float x = s[nt][h * 2 + e];
      if (needs_mask) {
        const int col = n0 + nt * 8 + (lane % 4) * 2 + e;
        if (col >= seq || (causal && col > row)) x = -INFINITY;
      }
      s[nt][h * 2 + e] = x;
      mx = fmaxf(mx, x);
    }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(row_max, mx * scale_log2);
  const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with no key yet
  const float alpha = fast_exp2(row_max - base);
  row_max = m_new;
  float sum = 0.f;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float p = fast_exp2(fmaf(s[nt][h * 2 + e], scale_log2, -base));
      s[nt][h * 2 + e] = p;
      sum += p;
    }
  row_sum = row_sum * alpha + sum;  // this thread's columns only
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) {
    acc[dt][h * 2] *= alpha;
    acc[dt][h * 2 + 1] *= alpha;
  }
}

// Normalizes one row of the output accumulator by its sum (over the four threads that share
// the row) and stores it to o[row][0 .. 8 DT) as 16-bit values; rows past seq are skipped.
template <class T, int DT>
__device__ __forceinline__ void store_row(const float (&acc)[DT][4], int h, float row_sum, int lane, int row, int seq,
                                          T* o) {
  float l = row_sum;
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  const float inv = l > 0.f ? 1.f / l : 0.f;
  if (row >= seq) return;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
    *reinterpret_cast<uint32_t*>(o + int64_t(row) * (DT * 8) + dt * 8 + (lane % 4) * 2) =
        pack2<T>(acc[dt][h * 2] * inv, acc[dt][h * 2 + 1] * inv);
}

}  // namespace mlsem_kernels::flash
