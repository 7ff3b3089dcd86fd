// bias + GELU: y = gelu(x + bias), fused into one pass, and the unfused baseline.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

// GELU's tanh form as x * sigmoid(2z), and the erf form with the A&S erf, both in
// common/approx.h (MUFU exp and reciprocal, no range fix-ups).
__device__ __forceinline__ float gelu(float x, bool tanh_approx) { return tanh_approx ? gelu_tanh(x) : gelu_erf(x); }

constexpr int kUnroll = 4;  // packs per thread per step, all loaded before the first is used

// Each thread handles kUnroll packs of x a step (a block's packs are contiguous, so
// every load is coalesced); the bias row (a few KB) stays in L1/L2.
template <class T, bool TANH, bool VEC>
__global__ void bias_gelu_kernel(const T* x, const T* bias, T* y, int64_t n, int64_t cols, FastDiv packs_per_row) {
  constexpr int P = kPack<T>;
  const int64_t packs = ceil_div(n, P);
  for (int64_t base = blockIdx.x * int64_t{blockDim.x} * kUnroll + threadIdx.x; base < packs;
       base += int64_t{gridDim.x} * blockDim.x * kUnroll) {
    Pack<T> v[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = (base + u * int64_t{blockDim.x}) * P;
      v[u] = load_pack<VEC>(x, i, n, 0.f);
      // VEC: the pack lies inside one row, so its bias is one contiguous pack too.
      if (VEC) b[u] = load_pack<VEC>(bias, int64_t{packs_per_row.mod(static_cast<uint32_t>(i / P))} * P, cols, 0.f);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = (base + u * int64_t{blockDim.x}) * P;
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const float bj = VEC ? b[u][j] : (i + j < n ? to_f(bias[(i + j) % cols]) : 0.f);
        v[u].set(j, gelu(v[u][j] + bj, TANH));
      }
      store_pack<VEC>(y, i, n, v[u]);
    }
  }
}

template <class T>
int fused(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, bool tanh_approx, cudaStream_t s) {
  const int64_t n = rows * cols;
  const bool vec = can_vectorize(x, cols, sizeof(T)) && can_vectorize(y, cols, sizeof(T)) &&
                   can_vectorize(bias, cols, sizeof(T));
  if (ceil_div(n, kPack<T>) + 1024 * kUnroll >= kFastDivLimit) return MLSEM_BAD_ARGUMENT;
  const FastDiv packs_per_row(static_cast<uint32_t>(ceil_div(cols, kPack<T>)));
  const int threads = 256, blocks = elementwise_blocks(ceil_div(n, kPack<T> * kUnroll), threads, 0);
  MLSEM_WITH_VEC(vec, {
    if (tanh_approx)
      bias_gelu_kernel<T, true, VEC><<<blocks, threads, 0, s>>>(x, bias, y, n, cols, packs_per_row);
    else
      bias_gelu_kernel<T, false, VEC><<<blocks, threads, 0, s>>>(x, bias, y, n, cols, packs_per_row);
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written forms, one kernel per op:
//   tanh: h = x + b; 0.5 * h * (1 + tanh(sqrt(2/pi) * (h + 0.044715 * h^3)))  (minGPT NewGELU)
//   erf:  h = x + b; h * 0.5 * (1 + erf(h / sqrt(2)))
template <class T>
int baseline(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, bool tanh_approx, cudaStream_t s) {
  using namespace eager;
  const int64_t n = rows * cols;
  Scratch scratch(s);
  T *h, *t1, *t2;
  MLSEM_TRY(scratch.get(&h, n));
  MLSEM_TRY(scratch.get(&t1, n));
  MLSEM_TRY(scratch.get(&t2, n));
  MLSEM_TRY(binary(Binary::kAdd, x, bias, Bcast::kTable, h, rows, cols, s));
  if (tanh_approx) {
    MLSEM_TRY(unary(Unary::kPow3, h, t1, n, 0.f, s));
    MLSEM_TRY(unary(Unary::kMulScalar, t1, t2, n, 0.044715f, s));
    MLSEM_TRY(binary(Binary::kAdd, h, t2, Bcast::kFull, t1, 1, n, s));
    MLSEM_TRY(unary(Unary::kMulScalar, t1, t2, n, 0.7978845608f, s));
    MLSEM_TRY(unary(Unary::kTanh, t2, t1, n, 0.f, s));
    MLSEM_TRY(unary(Unary::kAddScalar, t1, t2, n, 1.f, s));
    MLSEM_TRY(unary(Unary::kMulScalar, h, t1, n, 0.5f, s));
    MLSEM_TRY(binary(Binary::kMul, t1, t2, Bcast::kFull, y, 1, n, s));
  } else {
    MLSEM_TRY(unary(Unary::kMulScalar, h, t1, n, 0.70710678118f, s));
    MLSEM_TRY(unary(Unary::kErf, t1, t2, n, 0.f, s));
    MLSEM_TRY(unary(Unary::kAddScalar, t2, t1, n, 1.f, s));
    MLSEM_TRY(unary(Unary::kMulScalar, h, t2, n, 0.5f, s));
    MLSEM_TRY(binary(Binary::kMul, t2, t1, Bcast::kFull, y, 1, n, s));
  }
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_bias_gelu_fused(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                                     int approximate_tanh, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(y),
                                     rows, cols, approximate_tanh != 0, stream));
}

extern "C" int mlsem_bias_gelu_baseline(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                                        int approximate_tanh, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(x), static_cast<const T*>(bias),
                                        static_cast<T*>(y), rows, cols, approximate_tanh != 0, stream));
}
