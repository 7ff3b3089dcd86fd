// Sum of n floats, the classic sequence of reduction kernels (Harris, "Optimizing
// Parallel Reduction in CUDA"): each block reduces blockDim.x elements into out[block].
//
// reduce_interleaved: if (tid % (2*s) == 0): active threads are scattered across every
// warp, so all warps diverge at every step; and a tree in shared memory down to one.
// reduce_strided_index: index = 2*s*tid: no divergence but a 2-way and wider bank
// conflict on every shared access.
// reduce_sequential: tid < s with s halving: no divergence or conflicts, but the last
// five steps run with fewer than 32 threads and a __syncthreads each.
// reduce_warp_shuffle: grid-stride accumulation in registers, then shuffles; one
// shared slot per warp.
// reduce_atomic_per_element: every thread adds its element to one global counter.
// sort_pairs: a halving loop with a barrier per step that reads s[t + stride], like the
// trees above, but compares and swaps (a sorting network's step): nothing is reduced.
//
// Expected: CU011 on the modulo test; CU016 on the three shared-memory trees; CU009 on
// the 2*s*tid accesses; CU015 on the per-element atomicAdd. Not expected: anything in
// reduce_warp_shuffle (its atomicAdd is one per block, by thread 0).
#include <cuda_runtime.h>

__global__ void reduce_interleaved(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {  // expect: CU016
    if (tid % (2 * s) == 0) {  // expect: CU011
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce_strided_index(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {  // expect: CU016
    int index = 2 * s * tid;
    if (index < blockDim.x) {
      sdata[index] += sdata[index + s];  // expect: CU009
    }
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce_sequential(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {  // expect: CU016
    if (tid < s) sdata[tid] += sdata[tid + s];  // ok: CU009, CU011
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce_warp_shuffle(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float warp_sums[32];
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += in[i];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffff, sum, offset);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if (lane == 0) atomicAdd(out, sum);  // ok: CU015
  }
}

__global__ void reduce_atomic_per_element(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, in[i]);  // expect: CU015
}

// Near misses for CU015, as real code writes them: a warp sum, then every lane but one
// returns before the atomic (ggml's count_equal); one atomic per cooperative-groups tile.
__global__ void reduce_early_return(const float* __restrict__ in, float* __restrict__ out, int n) {
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += in[i];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffff, sum, offset);
  if (threadIdx.x % 32 != 0) {
    return;
  }
  atomicAdd(out, sum);  // ok: CU015
}

// A user's warp-aggregated helper named atomic*: the helper is the fix, not an atomic per thread.
__device__ int atomicAggIncLocal(int* counter) {
  unsigned mask = __activemask();
  int leader = __ffs(mask) - 1;
  int lane = threadIdx.x % 32;
  int res = 0;
  if (lane == leader) res = atomicAdd(counter, __popc(mask));  // ok: CU015
  return __shfl_sync(mask, res, leader) + __popc(mask & ((1u << lane) - 1));
}
__global__ void filter_positive(int* dst, int* count, const int* __restrict__ src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && src[i] > 0) dst[atomicAggIncLocal(count)] = src[i];  // ok: CU015
}

// A helper that takes the address from its caller (cuda-samples' histogram addByte, a
// shared-memory bin per thread's byte): which address it is, the helper cannot tell.
__device__ void add_to_bin(unsigned* hist, unsigned bin) {
  atomicAdd(hist + bin, 1u);  // ok: CU015
}
__global__ void histogram_shared(const unsigned char* __restrict__ data, unsigned* __restrict__ out, int n) {
  __shared__ unsigned bins[256];
  bins[threadIdx.x % 256] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) add_to_bin(bins, data[i]);
  __syncthreads();
  atomicAdd(out + threadIdx.x % 256, bins[threadIdx.x % 256]);
}

__global__ void sort_pairs(float* __restrict__ x) {
  __shared__ float s[512];
  const int t = threadIdx.x;
  s[t] = x[blockIdx.x * 512 + t];
  for (int stride = 256; stride > 0; stride >>= 1) {  // ok: CU016
    __syncthreads();
    if (t < stride) {
      const float a = s[t], b = s[t + stride];
      if (a > b) {
        s[t] = b;
        s[t + stride] = a;
      }
    }
  }
  __syncthreads();
  x[blockIdx.x * 512 + t] = s[t];
}
