// LayerNorm forward over rows of C floats, one block per row.
//
// layernorm_two_pass: a pass for the mean, a second pass over the same row for the
// variance, a third to normalize: the statistics alone read the row twice.
// layernorm_welford: mean and variance in one pass (Welford's update, merged across
// the warp with shuffles), then the normalizing pass.
//
// Expected: CU005 on the variance pass of layernorm_two_pass. Not expected: CU005 or
// CU004 in layernorm_welford (two passes is the minimum without caching the row).
#include <cuda_runtime.h>

#define WARP 32

__device__ float block_sum(float v, float* shared) {
  for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = (threadIdx.x < blockDim.x / WARP) ? shared[lane] : 0.0f;
  if (warp == 0)
    for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}

__global__ void layernorm_two_pass(const float* __restrict__ x, const float* __restrict__ gamma,
                                   const float* __restrict__ beta, float* __restrict__ y, int C, float eps) {
  __shared__ float partial[32];
  __shared__ float mean_s, rstd_s;
  const float* row = x + (size_t)blockIdx.x * C;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) sum += row[i];
  sum = block_sum(sum, partial);
  if (threadIdx.x == 0) mean_s = sum / C;
  __syncthreads();
  float mean = mean_s;
  float var = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    float d = row[i] - mean;  // expect: CU005
    var += d * d;
  }
  var = block_sum(var, partial);
  if (threadIdx.x == 0) rstd_s = rsqrtf(var / C + eps);
  __syncthreads();
  float rstd = rstd_s;
  for (int i = threadIdx.x; i < C; i += blockDim.x)
    y[(size_t)blockIdx.x * C + i] = (row[i] - mean) * rstd * gamma[i] + beta[i];
}

struct Welford {
  float mean, m2, n;
};

__device__ Welford welford_merge(Welford a, Welford b) {
  float n = a.n + b.n;
  if (n == 0.0f) return a;
  float delta = b.mean - a.mean;
  return {a.mean + delta * b.n / n, a.m2 + b.m2 + delta * delta * a.n * b.n / n, n};
}

// Launched with one warp (32 threads) per row.
__global__ void layernorm_welford(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ y, int C, float eps) {
  const float* row = x + (size_t)blockIdx.x * C;
  Welford w{0.0f, 0.0f, 0.0f};
  for (int i = threadIdx.x; i < C; i += WARP) {
    float v = row[i];  // ok: CU005
    w.n += 1.0f;
    float delta = v - w.mean;
    w.mean += delta / w.n;
    w.m2 += delta * (v - w.mean);
  }
  for (int o = WARP / 2; o > 0; o /= 2) {
    Welford other{__shfl_xor_sync(0xffffffff, w.mean, o), __shfl_xor_sync(0xffffffff, w.m2, o),
                  __shfl_xor_sync(0xffffffff, w.n, o)};
    w = welford_merge(w, other);
  }
  float rstd = rsqrtf(w.m2 / C + eps);
  for (int i = threadIdx.x; i < C; i += WARP)
    y[(size_t)blockIdx.x * C + i] = (row[i] - w.mean) * rstd * gamma[i] + beta[i];  // ok: CU004, CU005
}
