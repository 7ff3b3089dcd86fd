// Lesson: shared-memory tiling. c = a b in float32, naive vs tiled (common/tiled_matmul.cuh).
#include "../common/tiled_matmul.cuh"

namespace mlsem_kernels {
namespace {

// Baseline: one thread per output element, reading a row of a and a column of b from
// device memory: 2k loads per 2k flops, each element of a and b fetched n (or m) times.
__global__ void naive_matmul_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[int64_t(row) * k + i] * b[int64_t(i) * n + col];
  c[int64_t(row) * n + col] = acc;
}

bool dims_ok(int64_t m, int64_t n, int64_t k) {
  return m > 0 && n > 0 && k > 0 && m < (1 << 30) && n < (1 << 30) && k < (1 << 30) && ceil_div(m, 64) < 65536;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_lesson_tiled_matmul_fused(const float* a, const float* b, float* c, int64_t m, int64_t n,
                                               int64_t k, mlsem_stream s) {
  if (!dims_ok(m, n, k)) return MLSEM_BAD_ARGUMENT;
  MLSEM_TRY((tiled_matmul<float, false>(a, b, c, int(m), int(n), int(k), 1, 0, 0, 0, 1.f, s)));
  return 0;
}

extern "C" int mlsem_lesson_tiled_matmul_baseline(const float* a, const float* b, float* c, int64_t m, int64_t n,
                                                  int64_t k, mlsem_stream s) {
  if (!dims_ok(m, n, k)) return MLSEM_BAD_ARGUMENT;
  const dim3 block(32, 8), grid(static_cast<unsigned>(ceil_div(n, 32)), static_cast<unsigned>(ceil_div(m, 8)));
  naive_matmul_kernel<<<grid, block, 0, s>>>(a, b, c, int(m), int(n), int(k));
  MLSEM_CHECK_LAUNCH();
  return 0;
}
