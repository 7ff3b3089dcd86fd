// Pointer parameters and what they promise the compiler.
//
// axpy_plain: x is only read but declared `float*` without const or __restrict__:
// the compiler must assume y may alias x and cannot use the read-only data path or
// keep x's values in registers across the store.
// axpy_const_restrict: the same kernel with `const float* __restrict__ x`.
// accumulate_rows: `out` is read and written (no promise to make), `w` is read through
// a row pointer and never written.
//
// Expected: CU003 on x of axpy_plain and w of accumulate_rows. Not expected: CU003 on
// y or out (they are written) or in axpy_const_restrict.
#include <cuda_runtime.h>

__global__ void axpy_plain(int n, float a,
                           float* x,  // expect: CU003
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
                                float* w,  // expect: CU003
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
