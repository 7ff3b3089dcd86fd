// Per-row int8 quantization of activations with mean-centering (one block per row):
// q = round((x - mean) * 127 / absmax(x - mean)).
//
// quantize_three_pass: reads the row from global memory three times (mean, absmax,
// quantize).
// quantize_cached: each thread loads its (at most 8) elements of the row into registers
// once; the three passes run over the registers.
//
// Expected: CU004 on the second pass of quantize_three_pass. Not expected: CU004 in
// quantize_cached.
#include <cuda_runtime.h>

__device__ float block_reduce_sum(float v);
__device__ float block_reduce_max(float v);

__global__ void quantize_three_pass(const float* __restrict__ x, signed char* __restrict__ q,
                                    float* __restrict__ scales, int C) {
  const float* row = x + (size_t)blockIdx.x * C;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) sum += row[i];
  float mean = block_reduce_sum(sum) / C;
  float amax = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) amax = fmaxf(amax, fabsf(row[i] - mean));  // expect: CU004
  amax = block_reduce_max(amax);
  float scale = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    q[(size_t)blockIdx.x * C + i] = (signed char)__float2int_rn((row[i] - mean) * scale);
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
}

#define PER_THREAD 8

__global__ void quantize_cached(const float* __restrict__ x, signed char* __restrict__ q,
                                float* __restrict__ scales, int C) {
  const float* row = x + (size_t)blockIdx.x * C;
  float v[PER_THREAD];
  float sum = 0.0f;
  for (int k = 0; k < PER_THREAD; ++k) {
    int i = threadIdx.x + k * blockDim.x;
    v[k] = i < C ? row[i] : 0.0f;  // ok: CU004
    sum += v[k];
  }
  float mean = block_reduce_sum(sum) / C;
  float amax = 0.0f;
  for (int k = 0; k < PER_THREAD; ++k) amax = fmaxf(amax, fabsf(v[k] - mean));  // ok: CU004
  amax = block_reduce_max(amax);
  float scale = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int k = 0; k < PER_THREAD; ++k) {
    int i = threadIdx.x + k * blockDim.x;
    if (i < C) q[(size_t)blockIdx.x * C + i] = (signed char)__float2int_rn((v[k] - mean) * scale);
  }
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
}
