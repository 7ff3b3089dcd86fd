// Lesson: warp-shuffle reduction. y[r] = sum(x[r, :]) over float32 rows, one block per
// row; the two versions differ only in how the block combines its threads' partial sums.
#include "../common/device.cuh"

namespace mlsem_kernels {
namespace {

constexpr int kThreads = 256;

// Baseline: the classic shared-memory tree. log2(256) = 8 rounds, each a __syncthreads
// for the whole block, with half of the remaining threads idle after every round.
__global__ void smem_tree_kernel(const float* x, float* y, int64_t cols) {
  __shared__ float partial[kThreads];
  const float* row = x + blockIdx.x * cols;
  float acc = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) acc += row[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = partial[0];
}

// Fused (the fix): 16-byte loads, then __shfl_xor_sync inside each warp (registers, no
// barrier), one shared-memory exchange between the 8 warps, one more warp reduction.
template <bool VEC>
__global__ void warp_shuffle_kernel(const float* x, float* y, int64_t cols) {
  constexpr int P = kPack<float>;
  const float* row = x + blockIdx.x * cols;
  float acc = 0.f;
  for (int64_t c = int64_t{threadIdx.x} * P; c < cols; c += int64_t{kThreads} * P) {
    const Pack<float> v = load_pack<VEC>(row, c, cols, 0.f);
#pragma unroll
    for (int j = 0; j < P; ++j) acc += v[j];
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = acc;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_warp_reduce_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream s) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  MLSEM_WITH_VEC(can_vectorize(x, cols, 4),
                 warp_shuffle_kernel<VEC><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_warp_reduce_baseline(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream s) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  smem_tree_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, y, cols);
  MLSEM_CHECK_LAUNCH();
  return 0;
}
