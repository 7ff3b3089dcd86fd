// Shared-memory tiled matrix product, the lesson_tiled_matmul kernel, also the
// matmuls of the unfused attention baseline. Not tensor cores: it teaches tiling.
#pragma once

#include "device.cuh"

namespace mlsem_kernels {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kTileThreads = 256;

// C[z] (m x n) = alpha * A[z] (m x k) * op(B[z]), op(B) = B (k x n) or B^T (B stored n x k).
// Each block computes a 64x64 tile of C; each of its 256 threads a 4x4 sub-tile held in
// registers, reading A and B from shared memory, where each element loaded from device
// memory is reused 64 times.
template <class T, bool B_TRANSPOSED>
__global__ __launch_bounds__(kTileThreads) void tiled_matmul_kernel(const T* A, const T* B, T* C, int m, int n,
                                                                    int k, int64_t batch_stride_a,
                                                                    int64_t batch_stride_b,
                                                                    int64_t batch_stride_c, float alpha) {
  // +1 column: the transposing stores below would otherwise hit one bank 16 times.
  __shared__ float As[kTileK][kTileM + 1];
  __shared__ float Bs[kTileK][kTileN + 1];
  A += blockIdx.z * batch_stride_a;
  B += blockIdx.z * batch_stride_b;
  C += blockIdx.z * batch_stride_c;
  const int m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kTileK) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int e = threadIdx.x + q * kTileThreads;
      const int row = e / kTileK, kk = e % kTileK;  // 16 consecutive threads read one row of A
      As[kk][row] = m0 + row < m && k0 + kk < k ? to_f(A[int64_t(m0 + row) * k + k0 + kk]) : 0.f;
      if (B_TRANSPOSED) {
        const int col = e / kTileK;
        Bs[kk][col] = n0 + col < n && k0 + kk < k ? to_f(B[int64_t(n0 + col) * k + k0 + kk]) : 0.f;
      } else {
        const int kr = e / kTileN, col = e % kTileN;
        Bs[kr][col] = n0 + col < n && k0 + kr < k ? to_f(B[int64_t(k0 + kr) * n + n0 + col]) : 0.f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;
      if (row < m && col < n) C[int64_t(row) * n + col] = from_f<T>(alpha * acc[i][j]);
    }
}

template <class T, bool B_TRANSPOSED>
cudaError_t tiled_matmul(const T* A, const T* B, T* C, int m, int n, int k, int batch, int64_t sa, int64_t sb,
                         int64_t sc, float alpha, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kTileN)), static_cast<unsigned>(ceil_div(m, kTileM)), batch);
  tiled_matmul_kernel<T, B_TRANSPOSED><<<grid, kTileThreads, 0, stream>>>(A, B, C, m, n, k, sa, sb, sc, alpha);
  return cudaGetLastError();
}

}  // namespace mlsem_kernels
