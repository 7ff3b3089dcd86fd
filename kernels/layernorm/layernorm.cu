// LayerNorm over the last dim: the row cached in registers (one read, one write), a
// two-read fallback for very long rows, and the unfused baseline.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

// One row per block, the row held in registers, unpacked to floats once. Mean first, then
// the variance as the mean of squared deviations from registers: as exact as a two-pass
// algorithm at the memory cost of one pass. The deviations replace the values for the
// output, (x - mean) * rstd * w + b. (Merging per-thread (count, mean, M2) triples with
// Chan's formula in one reduction measured 30% slower on an H200: a division per shuffle
// round.) In-row columns are ints (cached rows have at most 32,768 columns), and with VEC a
// whole pack is in the row or past it, so padding is tested per pack, not per element in 64
// bits: 503 PTX instructions a thread at 8192 columns instead of 802. With those, the kernel
// was issue-bound on an H200 (ncu: 0.80 instructions issued per cycle per scheduler) at 86%
// of copy bandwidth; without them it runs at 94%.
template <class T, int PPT, bool VEC>
__device__ __forceinline__ void layernorm_row(const T* x, const T* w, const T* b, T* y, int64_t cols, float eps) {
  constexpr int P = kPack<T>;
  const int n = static_cast<int>(cols);
  const T* xr = x + blockIdx.x * cols;
  T* yr = y + blockIdx.x * cols;
  auto col = [](int i) { return (i * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x)) * P; };
  float f[PPT][P];
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
    Pack<T> v;
    if constexpr (VEC)
      v.raw = col(i) < n ? *reinterpret_cast<const uint4*>(xr + col(i)) : make_uint4(0, 0, 0, 0);
    else
      v = load_pack<false>(xr, col(i), n, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) f[i][j] = v[j];
  }
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < PPT; ++i)
#pragma unroll
    for (int j = 0; j < P; ++j) sum += f[i][j];  // padding reads as 0
  const float mean = block_sum(sum) / n;
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
    if (VEC && col(i) >= n) continue;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      f[i][j] = VEC || col(i) + j < n ? f[i][j] - mean : 0.f;
      sq = fmaf(f[i][j], f[i][j], sq);
    }
  }
  const float rstd = rsqrtf(block_sum(sq) / n + eps);
#pragma unroll
  for (int i = 0; i < PPT; ++i) {
    if (col(i) >= n) continue;
    Pack<T> wv, bv, o;
    if constexpr (VEC) {
      wv.raw = *reinterpret_cast<const uint4*>(w + col(i));
      bv.raw = *reinterpret_cast<const uint4*>(b + col(i));
    } else {
      wv = load_pack<false>(w, col(i), n, 0.f);
      bv = load_pack<false>(b, col(i), n, 0.f);
    }
#pragma unroll
    for (int j = 0; j < P; ++j) o.set(j, fmaf(f[i][j] * rstd, wv[j], bv[j]));
    store_pack<VEC>(yr, col(i), n, o);
  }
}

// Up to 4 packs a thread (plan_rows: at most 256 threads), with registers for 5 blocks per SM
// on the aligned path (48: the row takes 32 of them as floats); the compiler otherwise takes
// 51, which the allocation granularity rounds to 4 blocks. 8 packs a thread come with up to
// 512 threads (kMaxThreadsAt8Packs) and no such bound, hence a kernel of their own: folded
// into this template, that instance needs a bound as well, which changed its code. Side by
// side on an H100 with (512, 1): unaligned 4096x16383 bf16 0.238 -> 0.256 ms, float16 0.236 ->
// 0.249 ms, 2048x32767 bf16 0.314 -> 0.319 ms; with (512) also aligned 3000x20000 0.091 ->
// 0.114 ms (101 registers instead of 89).
template <class T, int PPT, bool VEC>
__global__ void __launch_bounds__(256, VEC ? 5 : 4) layernorm_cached(const T* x, const T* w, const T* b, T* y,
                                                                     int64_t cols, float eps) {
  layernorm_row<T, PPT, VEC>(x, w, b, y, cols, eps);
}
template <class T, bool VEC>
__global__ void layernorm_cached_long(const T* x, const T* w, const T* b, T* y, int64_t cols, float eps) {
  layernorm_row<T, 8, VEC>(x, w, b, y, cols, eps);
}

// Very long rows: sum and sum of squares in one read (float32, fine for activations
// whose mean is not huge against their spread), a second read writes.
template <class T, bool VEC>
__global__ void layernorm_streaming(const T* x, const T* w, const T* b, T* y, int64_t cols, float eps) {
  constexpr int P = kPack<T>;
  const T* xr = x + blockIdx.x * cols;
  float sum = 0.f, sq = 0.f;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) {
    const Pack<T> v = load_pack<VEC>(xr, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) { sum += v[j]; sq += v[j] * v[j]; }
  }
  const float mean = block_sum(sum) / cols;
  const float var = fmaxf(block_sum(sq) / cols - mean * mean, 0.f);
  const float rstd = rsqrtf(var + eps);
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{blockDim.x} * P) {
    Pack<T> v = load_pack<VEC>(xr, c, cols, 0.f);
    const Pack<T> wv = load_pack<VEC>(w, c, cols, 0.f), bv = load_pack<VEC>(b, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) v.set(j, (v[j] - mean) * rstd * wv[j] + bv[j]);
    store_pack<VEC>(y + blockIdx.x * cols, c, cols, v);
  }
}

template <class T>
int fused(const T* x, const T* w, const T* b, T* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  const bool vec = can_vectorize(x, cols, sizeof(T)) && can_vectorize(y, cols, sizeof(T)) &&
                   can_vectorize(w, cols, sizeof(T)) && can_vectorize(b, cols, sizeof(T));
  const RowPlan plan = plan_rows(cols, kPack<T>);
  const unsigned grid = static_cast<unsigned>(rows);
  MLSEM_WITH_VEC(vec, {
    if (!cached_launches<layernorm_cached_long<T, VEC>>(plan)) {
      layernorm_streaming<T, VEC><<<grid, 1024, 0, s>>>(x, w, b, y, cols, eps);
    } else {
      switch (plan.packs_per_thread) {
        case 1: layernorm_cached<T, 1, VEC><<<grid, plan.threads, 0, s>>>(x, w, b, y, cols, eps); break;
        case 2: layernorm_cached<T, 2, VEC><<<grid, plan.threads, 0, s>>>(x, w, b, y, cols, eps); break;
        case 4: layernorm_cached<T, 4, VEC><<<grid, plan.threads, 0, s>>>(x, w, b, y, cols, eps); break;
        default: layernorm_cached_long<T, VEC><<<grid, plan.threads, 0, s>>>(x, w, b, y, cols, eps); break;
      }
    }
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written form: mu = x.mean(-1); var = ((x - mu) ** 2).mean(-1);
// (x - mu) / sqrt(var + eps) * w + b.
template <class T>
int baseline(const T* x, const T* w, const T* b, T* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  using namespace eager;
  const int64_t n = rows * cols;
  Scratch scratch(s);
  T *mu, *d, *d2, *var, *ve, *sd, *t1, *t2;
  MLSEM_TRY(scratch.get(&mu, rows));
  MLSEM_TRY(scratch.get(&d, n));
  MLSEM_TRY(scratch.get(&d2, n));
  MLSEM_TRY(scratch.get(&var, rows));
  MLSEM_TRY(scratch.get(&ve, rows));
  MLSEM_TRY(scratch.get(&sd, rows));
  MLSEM_TRY(scratch.get(&t1, n));
  MLSEM_TRY(scratch.get(&t2, n));
  MLSEM_TRY(reduce(Reduce::kMean, x, mu, rows, cols, s));
  MLSEM_TRY(binary(Binary::kSub, x, mu, Bcast::kPerRow, d, rows, cols, s));
  MLSEM_TRY(binary(Binary::kMul, d, d, Bcast::kFull, d2, rows, cols, s));  // (x - mu) ** 2
  MLSEM_TRY(reduce(Reduce::kMean, d2, var, rows, cols, s));
  MLSEM_TRY(unary(Unary::kAddScalar, var, ve, rows, eps, s));
  MLSEM_TRY(unary(Unary::kSqrt, ve, sd, rows, 0.f, s));
  MLSEM_TRY(binary(Binary::kDiv, d, sd, Bcast::kPerRow, t1, rows, cols, s));
  MLSEM_TRY(binary(Binary::kMul, t1, w, Bcast::kTable, t2, rows, cols, s));
  MLSEM_TRY(binary(Binary::kAdd, t2, b, Bcast::kTable, y, rows, cols, s));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_layernorm_fused(const void* x, const void* weight, const void* bias, void* y, int64_t rows,
                                     int64_t cols, float eps, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(x), static_cast<const T*>(weight),
                                     static_cast<const T*>(bias), static_cast<T*>(y), rows, cols, eps, stream));
}

extern "C" int mlsem_layernorm_baseline(const void* x, const void* weight, const void* bias, void* y,
                                        int64_t rows, int64_t cols, float eps, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(x), static_cast<const T*>(weight),
                                        static_cast<const T*>(bias), static_cast<T*>(y), rows, cols, eps, stream));
}
