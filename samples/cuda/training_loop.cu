// A hand-written training step driven from the host, as in small CUDA-only projects
// (llm.c-style): forward, backward and update kernels launched once per step.
//
// train_blocking: calls cudaDeviceSynchronize after every step and copies the loss
// back with a blocking cudaMemcpy every step, so the CPU waits for the GPU each
// iteration and cannot queue the next step's launches.
// train_async: keeps the loss on the device, reads it back once every 100 steps with
// an async copy on the stream and synchronizes once after the loop.
//
// Expected: CU014 on the per-step cudaMemcpy and cudaDeviceSynchronize. Not expected:
// CU014 on the final synchronization or the initial copy.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void forward_loss(const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ loss,
                             int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(loss, w[i] * x[i]);  // expect: CU015
}

__global__ void sgd_update(float* __restrict__ w, const float* __restrict__ grad, float lr, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= lr * grad[i];  // expect: CU002
}

void train_blocking(float* d_w, const float* d_x, const float* d_grad, float* d_loss, int n, int steps) {
  float h_loss = 0.0f;
  for (int step = 0; step < steps; ++step) {
    cudaMemset(d_loss, 0, sizeof(float));
    forward_loss<<<(n + 255) / 256, 256>>>(d_w, d_x, d_loss, n);
    sgd_update<<<(n + 255) / 256, 256>>>(d_w, d_grad, 0.01f, n);
    cudaMemcpy(&h_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost);  // expect: CU014
    cudaDeviceSynchronize();  // expect: CU014
    printf("step %d loss %f\n", step, h_loss);
  }
}

void train_async(float* d_w, const float* d_x, const float* d_grad, float* d_loss, float* h_loss_pinned, int n,
                 int steps, cudaStream_t stream) {
  float h_init = 0.0f;
  cudaMemcpy(d_loss, &h_init, sizeof(float), cudaMemcpyHostToDevice);  // ok: CU014
  for (int step = 0; step < steps; ++step) {
    forward_loss<<<(n + 255) / 256, 256, 0, stream>>>(d_w, d_x, d_loss, n);
    sgd_update<<<(n + 255) / 256, 256, 0, stream>>>(d_w, d_grad, 0.01f, n);
    if (step % 100 == 0)
      cudaMemcpyAsync(h_loss_pinned, d_loss, sizeof(float), cudaMemcpyDeviceToHost, stream);
  }
  cudaStreamSynchronize(stream);  // ok: CU014
}
