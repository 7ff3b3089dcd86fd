// Versions of one kernel kept side by side for comparison, as benchmark files do
// (llm.c's dev/cuda/*.cu hold kernel1 .. kernelN of one operation; samples keep a
// naive version beside the good one). A finding in a superseded version is not worth
// acting on: it is demoted (info, `context: comparison ...`, hidden by default;
// --show-demoted shows it, --keep-context comparison reports it as usual). The latest
// version is reported as any kernel.
//
// scale_rows_kernel1: one thread per row, strided across the warp (CU001), kept as the
// baseline; fill_kernel: launched only by its launcher, so part of that variant.
// scale_rows_kernel2: the latest version, still strided (threadIdx.x walks rows).
// transpose_naive: named as the naive version.
//
// Expected: CU001 in scale_rows_kernel2 only.
#include <cuda_runtime.h>

__global__ void fill_kernel(float* out, int rows, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < rows) out[row * C] = 0.0f;  // ok: CU001
}

__global__ void scale_rows_kernel1(float* __restrict__ out, const float* __restrict__ x, int rows, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  for (int i = 0; i < C; ++i) out[row * C + i] = 2.0f * x[row * C + i];  // ok: CU001
}

__global__ void scale_rows_kernel2(float* __restrict__ out, const float* __restrict__ x, int rows, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y;
  if (row < rows) out[row * C + i] = 2.0f * x[row * C + i];  // expect: CU001
}

__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];  // ok: CU001
}

void scale_rows1(float* out, const float* x, int rows, int C) {
  fill_kernel<<<(rows + 255) / 256, 256>>>(out, rows, C);
  scale_rows_kernel1<<<(rows + 255) / 256, 256>>>(out, x, rows, C);
}

void scale_rows2(float* 