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
// gather_rows / gather_cols: a benchmark loop that records events times both through one
// kernel pointer (as cuda-samples' transpose does with its eight kernels): alternatives
// kept side by side. scatter_rows / scatter_cols: the same pointer picked by a flag and
// launched once, untimed, is a dispatch, and scatter_cols is reported.
//
// Expected: CU001 in scale_rows_kernel2 and scatter_cols; CU002 in scatter_rows.
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

void scale_rows2(float* out, const float* x, int rows, int C) {
  scale_rows_kernel2<<<dim3((rows + 255) / 256, C), 256>>>(out, x, rows, C);
}

__global__ void gather_rows(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];  // ok: CU002
}

__global__ void gather_cols(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i * n];  // ok: CU001
}

void time_gathers(float* out, const float* in, int n) {
  void (*kernel)(float*, const float*, int);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int k = 0; k < 2; ++k) {
    if (k == 0) kernel = &gather_rows;
    else kernel = &gather_cols;
    cudaEventRecord(start);
    for (int rep = 0; rep < 100; ++rep) kernel<<<(n + 255) / 256, 256>>>(out, in, n);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
  }
}

__global__ void scatter_rows(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];  // expect: CU002
}

__global__ void scatter_cols(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i * n] = in[i];  // expect: CU001
}

void scatter(float* out, const float* in, int n, bool by_column) {
  void (*kernel)(float*, const float*, int) = &scatter_rows;
  if (by_column) kernel = &scatter_cols;
  kernel<<<(n + 255) / 256, 256>>>(out, in, n);
}
