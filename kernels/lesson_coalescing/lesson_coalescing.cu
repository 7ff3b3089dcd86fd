// Lesson: coalesced vs strided row access. Same work (y = 2x over a [rows, cols]
// float32 matrix), two thread-to-data mappings.
#include "../common/device.cuh"

namespace mlsem_kernels {
namespace {

// Baseline: one thread per row, walking along it. At each step the 32 threads of a warp
// touch 32 different rows, cols * 4 bytes apart: 32 memory transactions per instruction
// instead of one 128-byte line.
__global__ void per_row_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = 2.f * x[r * cols + c];
}

// Fused (the fix): consecutive threads take consecutive elements, so a warp reads and
// writes 128 contiguous bytes per instruction.
__global__ void coalesced_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = 2.f * x[i];
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_coalescing_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream s) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  coalesced_kernel<<<elementwise_blocks(rows * cols, 256), 256, 0, s>>>(x, y, rows * cols);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_coalescing_baseline(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream s) {
  if (rows <= 0 || cols <= 0) return MLSEM_BAD_ARGUMENT;
  per_row_kernel<<<static_cast<unsigned>(ceil_div(rows, 256)), 256, 0, s>>>(x, y, rows, cols);
  MLSEM_CHECK_LAUNCH();
  return 0;
}
