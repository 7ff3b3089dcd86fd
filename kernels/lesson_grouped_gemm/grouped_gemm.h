// The grouped GEMM's tile geometry and scheduling arithmetic, shared by the kernel and
// the CPU tests: the shared-memory swizzle and the tiles each expert owns.
#pragma once

#include <cstdint>

#include "../common/launch.h"

namespace mlsem_kernels::grouped_gemm {

constexpr int BM = 128, BN = 128, BK = 32;

// Shared-memory offsets (elements) of 16-byte chunk c of row r, XOR-swizzled so that the 8
// rows one ldmatrix phase reads fall in 8 different 16-byte bank groups. A tile rows are
// 64 bytes (two rows per 128-byte bank cycle), B tile rows 256 bytes.
MLSEM_HOST_DEVICE inline int a_off(int r, int c) { return r * BK + ((c ^ ((r >> 1) & 3)) << 3); }
MLSEM_HOST_DEVICE inline int b_off(int r, int c) { return r * BN + ((c ^ (r & 7)) << 3); }

// Expert e's rows, clamped to [0, total_m] and to a non-negative count (offsets the
// caller got wrong cost rows, never memory safety).
MLSEM_HOST_DEVICE inline void expert_rows(const int64_t* offsets, int e, int64_t total_m, int64_t* lo, int64_t* hi) {
  const int64_t a = offsets[e] < 0 ? 0 : (offsets[e] > total_m ? total_m : offsets[e]);
  const int64_t b = offsets[e + 1] < a ? a : (offsets[e + 1] > total_m ? total_m : offsets[e + 1]);
  *lo = a;
  *hi = b;
}
MLSEM_HOST_DEVICE inline int expert_tiles(const int64_t* offsets, int e, int64_t total_m) {
  int64_t lo, hi;
  expert_rows(offsets, e, total_m, &lo, &hi);
  return static_cast<int>((hi - lo + BM - 1) / BM);
}

// Row tiles the grouped launch provides for: every expert's last tile may be partial, so
// at most ceil(total_m / BM) + experts, whatever the split.
inline int64_t row_tile_bound(int64_t total_m, int64_t experts) { return ceil_div(total_m, BM) + experts; }

}  // namespace mlsem_kernels::grouped_gemm
