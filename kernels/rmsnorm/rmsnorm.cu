// RMSNorm over the last dim: aligned rows read twice through L2 (rmsnorm_twice), unaligned
// rows cached in registers (one read, one write), a streaming kernel for very long rows, and
// the unfused baseline.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

// Rows not aligned to 16 bytes, cached in registers (one read, one write); aligned cached
// rows take rmsnorm_twice.
template <class T, int PPT>
__device__ __forceinline__ void rmsnorm_row(const T* x, const T* w, T* y, int64_t cols, float eps) {
  constexpr int P = kPack<T>;
  const T* xr = x + blockIdx.x * cols;
  Pack<T> v[PPT];
#pragma unroll
  for (int i = 0; i < PPT; ++i) v[i] = load_pack<false>(xr, (int64_t(i) * blockDim.x + threadIdx.x) * P, cols, 0.f);
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) sq += v[i][j] * v[i][j];
  const float rrms = rsqrtf(block_sum(sq) / cols + eps);
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
    const int64_t c = (int64_t(i) * blockDim.x + threadIdx.x) * P;
    const Pack<T> wv = load_pack<false>(w, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) v[i].set(j, v[i][j] * rrms * wv[j]);
    store_pack<false>(y + blockIdx.x * cols, c, cols, v[i]);
  }
}
template <class T, int PPT>
__global__ void rmsnorm_cached(const T* x, const T* w, T* y, int64_t cols, float eps) {
  rmsnorm_row<T, PPT>(x, w, y, cols, eps);
}
// 8 packs a thread of a 16-bit type, with a bound of its own: 123 registers instead of 161, so
// 256 threads take two blocks per SM and up to 512 launch (before, rows past 384 threads
// streamed). Side by side with the unbounded kernel, bf16 unless named (H100 / H200, ms):
// 4096x12289 0.229 -> 0.194 / 0.210 -> 0.170, 4096x16383 0.349 -> 0.287 / 0.309 -> 0.249,
// float16 0.343 -> 0.290 / 0.304 -> 0.251, 4096x24575 0.517 -> 0.506 / 0.464 -> 0.456,
// 2048x32767 (streamed before) 0.393 -> 0.348 / 0.347 -> 0.315.
template <class T>
__global__ void __launch_bounds__(kMaxThreadsAt8Packs) rmsnorm_cached_long(const T* x, const T* w, T* y, int64_t cols,
                                                                         float eps) {
  rmsnorm_row<T, 8>(x, w, y, cols, eps);
}
// The kernel that holds 8 packs a thread: float32 rows keep the unbounded one (106 registers;
// the same bound made 4096x8191 0.101 -> 0.106 ms on an H100).
template <class T>
constexpr auto rmsnorm_cached8() {
  if constexpr (sizeof(T) == 2) return rmsnorm_cached_long<T>;
  else return rmsnorm_cached<T, 8>;
}

// Aligned rows that fit the cached plan: the row is read twice, the second time from L2. The
// first read (kept in L2 by an evict_last hint) only feeds the sum of squares, so its values die
// at once; after the block reduction each thread reads its packs again (evict_first: their last
// use), scales and stores them. DRAM still sees one read and one write. On an H200 at
// 16384x8192 bf16 this ran at 96% of copy bandwidth against 94% for the row held in registers
// through the reduction (an aligned kernel since removed; within 1% from 44 to 64 registers,
// 4 or 5 blocks per SM, the weight loaded ahead of the reduction or after it), 88-95% for the
// same two reads in more rounds per thread, and 90-94% without the hints.
template <class T, int PPT>
__global__ void rmsnorm_twice(const T* x, const T* w, T* y, int64_t cols, float eps) {
  constexpr int P = kPack<T>;
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  const int64_t step = int64_t{blockDim.x} * P;
  // Each loop runs once for a row of the plan's size up to 4 packs a thread (twice for 8,
  // which keeps 56 registers), all of a round's loads
  // issued before the first is used. (Unrolled by hand instead of written as loops, the kernel
  // took 69 to 78 registers and a block fewer per SM.)
  float sq = 0.f;
  for (int64_t c0 = int64_t{threadIdx.x} * P; c0 < cols; c0 += step * PPT) {
    Pack<T> v[PPT];
#pragma unroll
    for (int u = 0; u < PPT; ++u) {
      const int64_t c = c0 + u * step;
      v[u].raw = c < cols ? load16_l2<L2Hint::kEvictLast>(xr + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < PPT; ++u)
#pragma unroll
      for (int j = 0; j < P; ++j) sq = fmaf(v[u][j], v[u][j], sq);
  }
  const float rrms = rsqrtf(block_sum(sq) / cols + eps);
  for (int64_t c0 = int64_t{threadIdx.x} * P; c0 < cols; c0 += step * PPT) {
    Pack<T> v[PPT], wv[PPT];
#pragma unroll
    for (int u = 0; u < PPT; ++u) {
      const int64_t c = c0 + u * step;
      if (c < cols) {
        v[u].raw = load16_l2<L2Hint::kEvictFirst>(xr + c);
        wv[u].raw = *reinterpret_cast<const uint4*>(w + c);
      }
    }
#pragma unroll
    for (int u = 0; u < PPT; ++u) {
      const int64_t c = c0 + u * step;
#pragma unroll
      for (int j = 0; j < P; ++j) v[u].set(j, v[u][j] * rrms * wv[u][j]);
      store_pack<true>(yr, c, cols, v[u]);
    }
  }
}

template <class T, bool VEC>
__global__ void rmsnorm_streaming(const T* x, const T* w, T* y, int64_t cols, float eps) {
  constexpr int P = kPack<T>;
  const T* xr = x + blockIdx.x * cols;
  float sq = 0.f;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) {
    const Pack<T> v = load_pack<VEC>(xr, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) sq += v[j] * v[j];
  }
  const float rrms = rsqrtf(block_sum(sq) / cols + eps);
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) {
    Pack<T> v = load_pack<VEC>(xr, c, cols, 0.f);
    const Pack<T> wv = load_pack<VEC>(w, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) v.set(j, v[j] * rrms * wv[j]);
    store_pack<VEC>(y + blockIdx.x * cols, c, cols, v);
  }
}

template <class T>
int fused(const T* x, const T* w, T* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  const bool vec = can_vectorize(x, cols, sizeof(T)) && can_vectorize(y, cols, sizeof(T)) &&
                   can_vectorize(w, cols, sizeof(T));
  const RowPlan plan = plan_rows(cols, kPack<T>);
  const unsigned grid = static_cast<unsigned>(rows);
  if (vec) {  // aligned: two reads through L2 when the plan caches the row, else streaming
    if (!plan.cached) {
      rmsnorm_streaming<T, true><<<grid, 1024, 0, s>>>(x, w, y, cols, eps);
    } else {
      switch (plan.packs_per_thread) {
        case 1: rmsnorm_twice<T, 1><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
        case 2: rmsnorm_twice<T, 2><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
        default: rmsnorm_twice<T, 4><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;  // 8: two rounds
      }
    }
  } else if (!cached_launches<rmsnorm_cached8<T>()>(plan)) {
    rmsnorm_streaming<T, false><<<grid, 1024, 0, s>>>(x, w, y, cols, eps);
  } else {
    switch (plan.packs_per_thread) {
      case 1: rmsnorm_cached<T, 1><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
      case 2: rmsnorm_cached<T, 2><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
      case 4: rmsnorm_cached<T, 4><<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
      default: rmsnorm_cached8<T>()<<<grid, plan.threads, 0, s>>>(x, w, y, cols, eps); break;
    }
  }
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written (Llama) form: x * rsqrt(x.pow(2).mean(-1) + eps) * w, one kernel per op
// (the eager code's float32 upcast is left out: intermediates stay in x's dtype).
template <class T>
int baseline(const T* x, const T* w, T* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  using namespace eager;
  const int64_t n = rows * cols;
  Scratch scratch(s);
  T *x2, *ms, *mse, *sd, *t1;
  MLSEM_TRY(scratch.get(&x2, n));
  MLSEM_TRY(scratch.get(&ms, rows));
  MLSEM_TRY(scratch.get(&mse, rows));
  MLSEM_TRY(scratch.get(&sd, rows));
  MLSEM_TRY(scratch.get(&t1, n));
  MLSEM_TRY(binary(Binary::kMul, x, x, Bcast::kFull, x2, rows, cols, s));
  MLSEM_TRY(reduce(Reduce::kMean, x2, ms, rows, cols, s));
  MLSEM_TRY(unary(Unary::kAddScalar, ms, mse, rows, eps, s));
  MLSEM_TRY(unary(Unary::kSqrt, mse, sd, rows, 0.f, s));
  MLSEM_TRY(binary(Binary::kDiv, x, sd, Bcast::kPerRow, t1, rows, cols, s));
  MLSEM_TRY(binary(Binary::kMul, t1, w, Bcast::kTable, y, rows, cols, s));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_rmsnorm_fused(const void* x, const void* weight, void* y, int64_t rows, int64_t cols,
                                   float eps, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(y),
                                     rows, cols, eps, stream));
}

extern "C" int mlsem_rmsnorm_baseline(const void* x, const void* weight, void* y, int64_t rows, int64_t cols,
                                      float eps, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(x), static_cast<const T*>(weight),
                                        static_cast<T*>(y), rows, cols, eps, stream));
}
