// Online softmax (Milakov & Gimelshein, 2018): one pass keeps a running maximum and
// rescales the running sum whenever the maximum grows, a second pass writes the
// output. One warp per row, loads coalesced and 16 bytes wide, reductions in
// registers with shuffles.
//
// Expected: nothing. In particular not CU006 (the max and the sum share one pass),
// not CU001, CU007 or CU002.
#include <cuda_runtime.h>

struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__global__ void softmax_online(const float4* __restrict__ x, float4* __restrict__ y, int rows, int C4) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float4* xr = x + (size_t)warp * C4;
  float4* yr = y + (size_t)warp * C4;
  MaxSum acc{-INFINITY, 0.0f};
  for (int i = lane; i < C4; i += 32) {
    float4 v = xr[i];  // ok: CU001, CU006
    float vm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    float m = fmaxf(acc.m, vm);
    acc.s = acc.s * __expf(acc.m - m) + __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
    acc.m = m;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    MaxSum other{__shfl_xor_sync(0xffffffff, acc.m, offset), __shfl_xor_sync(0xffffffff, acc.s, offset)};
    acc = combine(acc, other);
  }
  float inv = 1.0f / acc.s;
  for (int i = lane; i < C4; i += 32) {
    float4 v = xr[i];  // ok: CU001, CU004, CU006
    v.x = __expf(v.x - acc.m) * inv;
    v.y = __expf(v.y - acc.m) * inv;
    v.z = __expf(v.z - acc.m) * inv;
    v.w = __expf(v.w - acc.m) * inv;
    yr[i] = v;  // ok: CU001, CU002
  }
}
