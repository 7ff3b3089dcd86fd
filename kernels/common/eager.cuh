// The unfused baselines: one kernel per tensor op, each reading its inputs from and
// writing its result to device memory, the way PyTorch eager runs hand-written code.
// Intermediates have the input's dtype, as in eager; math inside one op is float32.
#pragma once

#include "device.cuh"

namespace mlsem_kernels::eager {

enum class Unary { kAddScalar, kMulScalar, kPow3, kTanh, kErf, kExp, kLog, kNeg, kSqrt, kCopy,
                   kSilu, kGeluErf, kGeluTanh, kCausalMask };
enum class Binary { kAdd, kSub, kMul, kDiv };
// How the second operand of a binary op is indexed for element (r, c):
// kFull: b[r, c]; kTable: b[(r / b_div) % b_rows, c] (b_rows 1: a row vector); kPerRow: b[r].
enum class Bcast { kFull, kTable, kPerRow };
enum class Reduce { kSum, kMax, kMean };

__device__ __forceinline__ float apply(Unary op, float x, float a, int64_t r, int64_t c, int64_t cols) {
  switch (op) {
    case Unary::kAddScalar: return x + a;
    case Unary::kMulScalar: return x * a;
    case Unary::kPow3: return x * x * x;
    case Unary::kTanh: return tanhf(x);
    case Unary::kErf: return erff(x);
    case Unary::kExp: return expf(x);
    case Unary::kLog: return logf(x);
    case Unary::kNeg: return -x;
    case Unary::kSqrt: return sqrtf(x);
    case Unary::kCopy: return x;
    case Unary::kSilu: return x / (1.f + expf(-x));
    case Unary::kGeluErf: return 0.5f * x * (1.f + erff(x * 0.70710678f));
    case Unary::kGeluTanh: return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    case Unary::kCausalMask: return c > r % cols ? -INFINITY : x;  // square [.., T, T] scores
  }
  return x;
}

__device__ __forceinline__ float apply(Binary op, float a, float b) {
  switch (op) {
    case Binary::kAdd: return a + b;
    case Binary::kSub: return a - b;
    case Binary::kMul: return a * b;
    case Binary::kDiv: return a / b;
  }
  return a;
}

// y[r, c] = op(x[r * x_ld + c]); contiguous output.
template <class TI, class TO>
__global__ void unary_kernel(Unary op, const TI* x, int64_t x_ld, TO* y, int64_t rows, int64_t cols, float a) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i - r * cols;
    y[i] = from_f<TO>(apply(op, to_f(x[r * x_ld + c]), a, r, c, cols));
  }
}

template <class T>
__global__ void binary_kernel(Binary op, const T* a, const T* b, Bcast mode, int64_t b_div, int64_t b_rows,
                              T* y, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i - r * cols;
    const int64_t bi = mode == Bcast::kFull ? i : mode == Bcast::kPerRow ? r : ((r / b_div) % b_rows) * cols + c;
    y[i] = from_f<T>(apply(op, to_f(a[i]), to_f(b[bi])));
  }
}

// One block per row.
template <class TI, class TO>
__global__ void reduce_kernel(Reduce op, const TI* x, TO* y, int64_t cols) {
  const TI* row = x + blockIdx.x * cols;
  float acc = op == Reduce::kMax ? -INFINITY : 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    acc = op == Reduce::kMax ? fmaxf(acc, to_f(row[c])) : acc + to_f(row[c]);
  acc = op == Reduce::kMax ? block_max(acc) : block_sum(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = from_f<TO>(op == Reduce::kMean ? acc / cols : acc);
}

// y[r] = x[r, index[r]] (torch.gather along the last dim with one index per row).
template <class T>
__global__ void gather_kernel(const T* x, const int64_t* index, T* y, int64_t rows, int64_t cols) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r < rows) {
    const int64_t t = index[r];
    y[r] = t >= 0 && t < cols ? x[r * cols + t] : from_f<T>(0.f);
  }
}

// y[r, :] = cat(a[r, :h], b[r, :h]) with row strides a_ld and b_ld (torch.cat on the last dim).
template <class T>
__global__ void cat_kernel(const T* a, int64_t a_ld, const T* b, int64_t b_ld, T* y, int64_t rows, int64_t h) {
  const int64_t n = rows * 2 * h;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / (2 * h), c = i - r * 2 * h;
    y[i] = c < h ? a[r * a_ld + c] : b[r * b_ld + c - h];
  }
}

constexpr int kThreads = 256;

template <class TI, class TO>
cudaError_t unary(Unary op, const TI* x, int64_t x_ld, TO* y, int64_t rows, int64_t cols, float a, cudaStream_t s) {
  unary_kernel<<<elementwise_blocks(rows * cols, kThreads), kThreads, 0, s>>>(op, x, x_ld, y, rows, cols, a);
  return cudaGetLastError();
}
template <class TI, class TO>
cudaError_t unary(Unary op, const TI* x, TO* y, int64_t n, float a, cudaStream_t s) {
  return unary(op, x, n, y, 1, n, a, s);
}
template <class T>
cudaError_t binary(Binary op, const T* a, const T* b, Bcast mode, T* y, int64_t rows, int64_t cols, cudaStream_t s,
                   int64_t b_div = 1, int64_t b_rows = 1) {
  binary_kernel<<<elementwise_blocks(rows * cols, kThreads), kThreads, 0, s>>>(op, a, b, mode, b_div, b_rows, y, rows, cols);
  return cudaGetLastError();
}
template <class TI, class TO>
cudaError_t reduce(Reduce op, const TI* x, TO* y, int64_t rows, int64_t cols, cudaStream_t s) {
  reduce_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(op, x, y, cols);
  return cudaGetLastError();
}

// Scratch tensors of one baseline call, freed (stream-ordered) when it returns.
class Scratch {
 public:
  explicit Scratch(cudaStream_t s) : stream_(s) {}
  ~Scratch() {
    for (int i = 0; i < count_; ++i) scratch_free(ptrs_[i], stream_);
  }
  template <class T>
  cudaError_t get(T** out, int64_t elems) {
    if (count_ == kMax) return cudaErrorMemoryAllocation;
    void* p = nullptr;
    cudaError_t e = scratch_alloc(&p, static_cast<size_t>(elems) * sizeof(T), stream_);
    if (e != cudaSuccess) return e;
    ptrs_[count_++] = p;
    *out = static_cast<T*>(p);
    return cudaSuccess;
  }

 private:
  cudaStream_t stream_;
  static constexpr int kMax = 16;
  void* ptrs_[kMax] = {};
  int count_ = 0;
};

}  // namespace mlsem_kernels::eager
