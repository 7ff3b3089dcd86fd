// A forward pass written as llm.c writes it: each kernel behind a small host function
// (gemm_forward, gelu_forward, residual_forward), and the forward pass a sequence of
// calls of them. The launch sequence is seen through the calls.
//
// forward: cuBLAS GEMM in gemm_forward, then gelu_forward re-reading its output; then
// residual_forward after layernorm_forward, whose last launch wrote what it reads.
// dispatch: a switch (kernel_num) over two variants: a choice, not a sequence.
// pick_forward: a launch under a branch, so no call of it is taken for one launch.
// copy_steps: a device-to-device copy inside checkCudaErrors in a launching loop.
//
// Expected: CU013 on the gelu_forward call (the GEMM's epilogue could apply it), CU012 on
// the residual_forward call (and inside layernorm_forward, on its second launch). Not
// expected: CU012/CU013 in dispatch or after pick_forward, CU014 in copy_steps (a
// device-to-device copy does not wait for the host).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), __LINE__)
static void check(cudaError_t result, int line) {
  if (result != cudaSuccess) __builtin_trap();
  (void)line;
}

__global__ void gelu_kernel(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * in[i] * (1.0f + tanhf(0.79788456f * in[i]));  // expect: CU002
}

__global__ void residual_kernel(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];  // expect: CU002
}

__global__ void row_stats_kernel(float* mean, const float* x, int C) {
  __shared__ float part[256];
  float s = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[blockIdx.x * C + i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {  // expect: CU016
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) mean[blockIdx.x] = part[0] / C;
}

__global__ void center_kernel(float* out, const float* x, const float* mean, int C) {
  for (int i = threadIdx.x; i < C; i += blockDim.x) out[blockIdx.x * C + i] = x[blockIdx.x * C + i] - mean[blockIdx.x];  // expect: CU002
}

void gemm_forward(cublasHandle_t h, float* out, const float* in, const float* w, int rows, int cols, int k) {
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, k, &one, w, cols, in, k, &zero, out, cols);
}

void gelu_forward(float* out, const float* in, int n) {
  gelu_kernel<<<(n + 255) / 256, 256>>>(out, in, n);
}

void residual_forward(float* out, const float* a, const float* b, int n) {
  residual_kernel<<<(n + 255) / 256, 256>>>(out, a, b, n);
}

// Two launches: its first reads x, its last writes out.
void layernorm_forward(float* out, float* mean, const float* x, int rows, int C) {
  row_stats_kernel<<<rows, 256>>>(mean, x, C);
  center_kernel<<<rows, 256>>>(out, x, mean, C);  // expect: CU012
}

void forward(cublasHandle_t h, float* act, float* hid, float* ln, float* mean, float* out, const float* w, int rows,
             int C) {
  gemm_forward(h, hid, act, w, rows, C, C);
  gelu_forward(hid, hid, rows * C);  // expect: CU013
  layernorm_forward(ln, mean, hid, rows, C);
  residual_forward(out, ln, act, rows * C);  // expect: CU012
}

void dispatch(int kernel_num, float* out, const float* in, int n) {
  switch (kernel_num) {
    case 1:
      gelu_forward(out, in, n);
      break;
    case 2:
      residual_forward(out, in, in, n);  // ok: CU012
      break;
  }
}

void pick_forward(bool fused, float* out, const float* in, int n) {
  if (fused) gelu_kernel<<<(n + 255) / 256, 256>>>(out, in, n);
  else residual_kernel<<<(n + 255) / 256, 256>>>(out, in, in, n);
}

void after_pick(cublasHandle_t h, float* a, float* b, const float* w, int n) {
  gemm_forward(h, a, b, w, n, n, n);
  pick_forward(true, b, a, n * n);  // ok: CU013
}

void copy_steps(float* a, float* b, int n, int steps) {
  for (int s = 0; s < steps; ++s) {
    gelu_forward(b, a, n);
    checkCudaErrors(cudaMemcpy(a + (n - n / 2), b + (n - n / 2), (n / 2) * sizeof(float), cudaMemcpyDeviceToDevice));  // ok: CU014
  }
}
