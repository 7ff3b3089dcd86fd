// Pointer parameters and what they promise the compiler.
//
// `const T* __restrict__` pays where the kernel reads the same elements more than once:
// threads or blocks sharing them (served by the read-only cache), or one thread reading
// an element again (without the promise, reloaded after every store). A buffer read once
// per element gains nothing measurable.
//
// scale_rows: every row's block reads the same w[i]; x is read once per element.
// gather_twice: reads x[i] twice around a store to y, which may alias it.
// axpy_plain: x is only read, without const, but once per element.
// axpy_const_restrict: the same kernel with `const float* __restrict__ x`.
// accumulate_rows: `out` is read and written (no promise to make); `w` is read through
// a row pointer, once per element.
// column_sum: each thread sums a column, the inner loop stepping its own index
// (flat_idx += features, apex's bias backward): every element is read once.
// norm_cleanup: only block 0 reads `partial` (apex's l2norm cleanup): no other block
// shares it.
//
// Expected: CU003 on w of scale_rows and x of gather_twice. Not expected: CU003 on
// buffers read once per element, on written ones, or on const __restrict__ ones.
#include <cuda_runtime.h>

__global__ void scale_rows(float* __restrict__ out,
                           float* x,  // ok: CU003
                           float* w,  // expect: CU003
                           int C) {
  const int row = blockIdx.x;
  for (int i = threadIdx.x; i < C; i += blockDim.x) out[row * C + i] = x[row * C + i] * w[i];  // expect: CU002
}

__global__ void gather_twice(float* x,  // expect: CU003
                             float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = x[i];  // expect: CU002
  y[i + n] = x[i] * x[i];
}

__global__ void axpy_plain(int n, float a,
                           float* x,  // ok: CU003
                           float* y) {  // ok: CU003
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];  // expect: CU002
}

__global__ void axpy_const_restrict(int n, float a, const float* __restrict__ x,
                                    float* __restrict__ y) {  // ok: CU003
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];  // expect: CU002
}

__global__ void accumulate_rows(float* out,  // ok: CU003
                                float* w,  // ok: CU003
                                int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = out[c];
  for (int r = 0; r < rows; ++r) {
    const float* wr = w + (size_t)r * cols;
    acc += wr[c];
  }
  out[c] = acc;
}

__global__ void column_sum(float* dY,  // ok: CU003
                           int features, int n, float* __restrict__ db) {
  const int f = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int nidx = 0; nidx < n; nidx += 4) {
    long flat_idx = (long)nidx * features + f;
    for (int u = 0; u < 4; u++) {
      s += dY[flat_idx];
      flat_idx += features;
    }
  }
  db[f] = s;
}

__global__ void norm_cleanup(float* partial,  // ok: CU003
                             float* __restrict__ per_tensor, float* __restrict__ ret, int chunks) {
  if (blockIdx.x == 0) {
    if (threadIdx.x < 320) ret[threadIdx.x] = partial[threadIdx.x];
  }
  if (threadIdx.x == 0) ret[512 + blockIdx.x] = per_tensor[blockIdx.x * chunks];
}
