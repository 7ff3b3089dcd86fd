// Kernels whose every launch in the file reads only buffers the file cudaMallocs with a
// size it fixes: a merge of a fixed count of partial histograms (as cuda-samples'
// mergeHistogram256Kernel), and an introductory vector add over 50,000 floats whose
// count is a local never written after its declaration. Each moves well under 4 MiB a
// launch, so its strided or scalar accesses cost microseconds: the findings are demoted
// (`context: cold`, hidden by default). A divergent barrier is a bug at any size, and is
// still reported. The same add launched over a runtime count, or over a local that
// command-line parsing overwrites, or beside a buffer of unknown size, is reported. main
// launches them every step of a loop, so the run-once context (run_once.cu) does not apply.
//
// Expected: CU002 in add_runtime, add_overwritten and add_with_input; CU010 in
// merge_partials_guarded.
#include <cuda_runtime.h>

#include <cstdlib>

#define BINS 256
#define MERGE_THREADS 256
static const unsigned PARTIALS = 240;
static unsigned* d_partials;

__global__ void merge_partials(unsigned* hist, const unsigned* partials, unsigned count) {
  unsigned sum = 0;
  for (unsigned i = threadIdx.x; i < count; i += MERGE_THREADS)
    sum += partials[blockIdx.x + i * BINS];  // ok: CU001
  __shared__ unsigned data[MERGE_THREADS];
  data[threadIdx.x] = sum;
  for (unsigned stride = MERGE_THREADS / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    if (threadIdx.x < stride) data[threadIdx.x] += data[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) hist[blockIdx.x] = data[0];
}

__global__ void merge_partials_guarded(unsigned* hist, const unsigned* partials, unsigned count) {
  unsigned sum = 0;
  for (unsigned i = threadIdx.x; i < count; i += MERGE_THREADS) sum += partials[blockIdx.x + i * BINS];  // ok: CU001
  __shared__ unsigned data[MERGE_THREADS];
  data[threadIdx.x] = sum;
  if (threadIdx.x < count) {
    __syncthreads();  // expect: CU010
    data[threadIdx.x] += 1;
  }
  if (threadIdx.x == 0) hist[blockIdx.x] = data[0];
}

void init_partials() { cudaMalloc((void**)&d_partials, PARTIALS * BINS * sizeof(unsigned)); }

void merge(unsigned* d_hist) {
  merge_partials<<<BINS, MERGE_THREADS>>>(d_hist, d_partials, PARTIALS);
  merge_partials_guarded<<<BINS, MERGE_THREADS>>>(d_hist, d_partials, PARTIALS);
}

__global__ void add_small(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // ok: CU002
}

__global__ void add_runtime(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

__global__ void add_overwritten(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

__global__ void add_with_input(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

int main(int argc, char** argv) {
  int elements = 50000;
  size_t bytes = elements * sizeof(float);
  float *d_a, *d_b, *d_c;
  cudaMalloc((void**)&d_a, bytes);
  cudaMalloc((void**)&d_b, bytes);
  cudaMalloc((void**)&d_c, bytes);
  int threads = 256;
  int blocks = (elements + threads - 1) / threads;

  int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
  float *d_x, *d_y, *d_z;
  cudaMalloc((void**)&d_x, n * sizeof(float));
  cudaMalloc((void**)&d_y, n * sizeof(float));
  cudaMalloc((void**)&d_z, n * sizeof(float));

  int count = 1024;
  if (argc > 2) count = atoi(argv[2]);
  float *d_p, *d_q, *d_r;
  cudaMalloc((void**)&d_p, count * sizeof(float));
  cudaMalloc((void**)&d_q, count * sizeof(float));
  cudaMalloc((void**)&d_r, count * sizeof(float));

  float* d_input = (float*)argv[0];  // a buffer this file does not allocate
  // Every step launches them all: only the size of their data can make them cold.
  int steps = argc > 3 ? atoi(argv[3]) : 100;
  for (int step = 0; step < steps; ++step) {
    add_small<<<blocks, threads>>>(d_a, d_b, d_c, elements);
    add_runtime<<<(n + 255) / 256, 256>>>(d_x, d_y, d_z, n);
    add_overwritten<<<(count + 255) / 256, 256>>>(d_p, d_q, d_r, count);
    add_with_input<<<blocks, threads>>>(d_a, d_input, d_c, elements);
  }
  return 0;
}
