// Row softmax written the way it is usually first written, two ways.
//
// softmax_thread_per_row: one thread per row, three passes over the row in global
// memory (max, sum of exp, normalize). Neighbouring threads read addresses C floats
// apart (uncoalesced), each thread folds a whole row serially, and the row is read
// three times.
// softmax_block_per_row: one block per row, coalesced block-stride loops and warp
// shuffles for the reductions, but still three passes over the row.
//
// Expected: CU001 on every row access of the thread-per-row kernel, CU007 on its max
// loop, CU006 on the second pass of both kernels. Not expected: CU001/CU007 in the
// block-per-row kernel, CU003 (inputs are const).
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_thread_per_row(const float* x, float* y, int rows, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float m = -INFINITY;
  for (int i = 0; i < C; ++i) {
    m = fmaxf(m, x[row * C + i]);  // expect: CU001, CU007
  }
  float sum = 0.0f;
  for (int i = 0; i < C; ++i) {
    sum += expf(x[row * C + i] - m);  // expect: CU001, CU006
  }
  for (int i = 0; i < C; ++i) {
    y[row * C + i] = expf(x[row * C + i] - m) / sum;  // expect: CU001
  }
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
  return v;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

// Launched with 32 threads per block: one warp per row.
__global__ void softmax_block_per_row(const float* __restrict__ x, float* __restrict__ y, int C) {
  const float* xr = x + (size_t)blockIdx.x * C;
  float* yr = y + (size_t)blockIdx.x * C;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < C; i += blockDim.x) m = fmaxf(m, xr[i]);  // ok: CU001, CU007
  m = warp_max(m);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) sum += expf(xr[i] - m);  // expect: CU006
  sum = warp_sum(sum);
  for (int i = threadIdx.x; i < C; i += blockDim.x) yr[i] = expf(xr[i] - m) / sum;  // ok: CU001
}
