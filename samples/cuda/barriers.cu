// Barriers that not every thread of the block reaches.
//
// normalize_rows_early_exit: threads past the end of the data return before the
// block's __syncthreads(): the barrier waits for threads that have left.
// block_scan_guarded_barrier: the __syncthreads() sits inside `if (tid < n)`.
// block_scan_uniform: the guard covers the work only; every thread reaches each barrier.
// token_loop_uniform_trips: each thread starts at its own column and stops at the same
// distance from it (as RWKV's token loop does): every thread runs the same iterations.
//
// Expected: CU010 on the barrier after the early return and on the guarded barrier.
// Not expected: CU010 in block_scan_uniform or token_loop_uniform_trips.
#include <cuda_runtime.h>

__global__ void normalize_rows_early_exit(float* __restrict__ x, const float* __restrict__ scale, int n) {
  __shared__ float s_scale;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (threadIdx.x == 0) s_scale = scale[blockIdx.x];
  __syncthreads();  // expect: CU010
  x[i] *= s_scale;
}

__global__ void block_scan_guarded_barrier(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int buf[1024];
  int tid = threadIdx.x;
  if (tid < n) {
    buf[tid] = in[tid];
    for (int offset = 1; offset < blockDim.x; offset *= 2) {
      int v = tid >= offset ? buf[tid - offset] : 0;
      __syncthreads();  // expect: CU010
      buf[tid] += v;
      __syncthreads();  // expect: CU010
    }
    out[tid] = buf[tid];
  }
}

__global__ void block_scan_uniform(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int buf[1024];
  int tid = threadIdx.x;
  buf[tid] = tid < n ? in[tid] : 0;
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int v = tid >= offset ? buf[tid - offset] : 0;
    __syncthreads();  // ok: CU010
    buf[tid] += v;
    __syncthreads();  // ok: CU010
  }
  if (tid < n) out[tid] = buf[tid];
}

__global__ void token_loop_uniform_trips(const float* __restrict__ k, float* __restrict__ out, int T, int C) {
  __shared__ float buf[256];
  int tid = threadIdx.x;
  float acc = 0.0f;
  for (int t = blockIdx.x * C + tid; t < blockIdx.x * C + T * C + tid; t += C) {
    __syncthreads();  // ok: CU010
    buf[tid] = k[t];
    __syncthreads();  // ok: CU010
    acc += buf[255 - tid];
  }
  out[blockIdx.x * C + tid] = acc;
}
