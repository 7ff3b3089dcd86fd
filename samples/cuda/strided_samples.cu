// Strided reads that sample a buffer, beside strided reads that are the kernel's data.
//
// block_tops: each thread reads the last element of its own 1024-element block (as
// cuda-samples' scan reads the tops of its bottom-level scans): lanes are 1024 elements
// apart, but the kernel reads one element in 1024; no layout coalesces those reads, and
// they are a small share of the buffer. column_heads: the same with a 32-element stride.
// aos_x: the x field of 4-float structs: a warp fetches four times the bytes it uses, and
// a structure-of-arrays layout would not (reported). quads: four sibling reads
// x[4*i + 0..3] cover every element: the warp reads each line four times (reported).
// row_per_thread: one thread walks its own 64-element row: reported (and its serial sum).
//
// Expected: CU001 in aos_x, quads and row_per_thread; CU007 in row_per_thread.
#include <cuda_runtime.h>

__global__ void block_tops(unsigned* __restrict__ out, const unsigned* __restrict__ x, unsigned n) {
  unsigned pos = blockIdx.x * blockDim.x + threadIdx.x;
  if (pos < n) out[pos] = x[1023 + 1024 * pos];  // ok: CU001
}

__global__ void column_heads(float* __restrict__ out, const float* __restrict__ x, int n) {
  int pos = blockIdx.x * blockDim.x + threadIdx.x;
  if (pos < n) out[pos] = 2.0f * x[32 * pos];  // ok: CU001
}

__global__ void aos_x(float* __restrict__ out, const float* __restrict__ particles, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * particles[4 * i];  // expect: CU001
}

__global__ void quads(float* __restrict__ out, const float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[4 * i] + x[4 * i + 1] + x[4 * i + 2] + x[4 * i + 3];  // expect: CU001
}

__global__ void row_per_thread(float* __restrict__ out, const float* __restrict__ x, int rows) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float s = 0.0f;
  for (int k = 0; k < 64; ++k) s += x[64 * row + k];  // expect: CU001, CU007
  out[row] = s;
}
