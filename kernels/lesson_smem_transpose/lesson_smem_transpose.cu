// Lesson: transpose through a padded shared-memory tile. y [cols, rows] = x^T, float32.
#include "../common/device.cuh"

namespace mlsem_kernels {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

// Baseline: reads are coalesced (a warp reads 32 consecutive x elements), writes are
// not: the same warp writes 32 elements `rows` apart, one transaction each.
__global__ void naive_transpose_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t c = blockIdx.x * int64_t{kTile} + threadIdx.x;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t r = blockIdx.y * int64_t{kTile} + i;
    if (r < rows && c < cols) y[c * rows + r] = x[r * cols + c];
  }
}

// Fused (the fix): a 32x32 tile is read coalesced into shared memory, then written out
// coalesced along the other axis. The +1 column of padding puts the column the writes
// read (tile[threadIdx.x][i]) in 32 different banks; without it all 32 share one bank.
__global__ void tiled_transpose_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t r0 = blockIdx.y * int64_t{kTile}, c0 = blockIdx.x * int64_t{kTile};
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass)
    if (r0 + i < rows && c0 + threadIdx.x < cols) tile[i][threadIdx.x] = x[(r0 + i) * cols + c0 + threadIdx.x];
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass)
    if (c0 + i < cols && r0 + threadIdx.x < rows) y[(c0 + i) * rows + r0 + threadIdx.x] = tile[threadIdx.x][i];
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

namespace {
bool transpose_args_ok(int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && ceil_div(rows, kTile) < 65536;
}
dim3 transpose_grid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned>(ceil_div(cols, kTile)), static_cast<unsigned>(ceil_div(rows, kTile)));
}
}  // namespace

extern "C" int mlsem_lesson_smem_transpose_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream s) {
  if (!transpose_args_ok(rows, cols)) return MLSEM_BAD_ARGUMENT;
  tiled_transpose_kernel<<<transpose_grid(rows, cols), dim3(kTile, kRowsPerPass), 0, s>>>(x, y, rows, cols);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

extern "C" int mlsem_lesson_smem_transpose_baseline(const float* x, float* y, int64_t rows, int64_t cols,
                                                    mlsem_stream s) {
  if (!transpose_args_ok(rows, cols)) return MLSEM_BAD_ARGUMENT;
  naive_transpose_kernel<<<transpose_grid(rows, cols), dim3(kTile, kRowsPerPass), 0, s>>>(x, y, rows, cols);
  MLSEM_CHECK_LAUNCH();
  return 0;
}
