// C = A·B for row-major float matrices (M×K times K×N).
//
// matmul_untiled: one thread per output element, the dot product read straight from
// global memory: every element of A is loaded N times and every element of B M times.
// matmul_tiled: 32×32 tiles staged in shared memory (each global element loaded once
// per tile), the inner product read from shared memory.
//
// Expected: CU008 on the untiled kernel's accumulation and on attention_scores; CU001 and
// CU007 on row_dot (a row per thread). Not expected: CU008 or CU009 in the tiled kernel
// (tile rows are read along threadIdx.x, columns broadcast), CU008 in row_dot.
#include <cuda_runtime.h>

__global__ void matmul_untiled(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];  // expect: CU008
    }
    C[row * N + col] = acc;
  }
}

#define TILE 32

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                             int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(t + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];  // ok: CU008, CU009
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// attention_scores: one q·k score per thread, its query row and its key row read from
// the qkv buffer element by element (llm.c's attention_query_key_kernel1): neighbouring
// threads re-read the same rows, a matrix product without tiling. row_dot: one row of x
// times the same row of y per thread: no row is shared, not a matrix product.
__global__ void attention_scores(float* __restrict__ att, const float* __restrict__ qkv, int T, int C, int hs) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= T * T) return;
  const int t2 = idx % T, t = idx / T;
  const float* q = qkv + t * 3 * C;
  const float* k = qkv + t2 * 3 * C + C;
  float val = 0.0f;
  for (int i = 0; i < hs; i++) val += q[i] * k[i];  // expect: CU008
  att[idx] = val;
}

__global__ void row_dot(float* __restrict__ out, const float* __restrict__ x, const float* __restrict__ y, int C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int i = 0; i < C; i++) s += x[row * C + i] * y[row * C + i];  // ok: CU008  // expect: CU001, CU007
  out[row] = s;
}
