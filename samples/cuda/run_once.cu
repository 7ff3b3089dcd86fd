// A demonstration program in the style of the CUDA samples: main shows an API feature
// around kernels it launches once, on data whose size the command line sets. A kernel
// whose every launch the file shows runs a fixed number of times per program run (from
// main, or from functions main calls, outside any loop) costs the same whatever its
// accesses are worth per step: its findings are demoted (`context: cold`, hidden by
// default). A divergent barrier is a bug however often it runs, and is still reported.
// The same kernel launched each step of a loop, from a function a loop calls, from a
// function handed its buffers (a launcher other programs may call every step), or from a
// callback a library calls, is reported.
//
// Expected: CU002 in scale_step, scale_iteration, scale_handed and scale_frame; CU010 in
// once_guarded.
#include <cuda_runtime.h>

#include <cstdlib>

__global__ void scale_once(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // ok: CU002
}

__global__ void scale_setup(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // ok: CU002
}

__global__ void once_guarded(unsigned* out, const unsigned* in, unsigned count) {
  __shared__ unsigned data[256];
  data[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  if (threadIdx.x < count) {
    __syncthreads();  // expect: CU010
    data[threadIdx.x] += 1;
  }
  if (threadIdx.x == 0) out[blockIdx.x] = data[0];
}

__global__ void scale_step(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

__global__ void scale_iteration(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

__global__ void scale_handed(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

__global__ void scale_frame(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];  // expect: CU002
}

static float *d_a, *d_b, *d_c;
static int elements;

// Allocates what it launches on: a step of the demonstration, run once.
void setup_demo(int n) {
  float *x, *y, *z;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));
  cudaMalloc((void**)&z, n * sizeof(float));
  scale_setup<<<(n + 255) / 256, 256>>>(x, y, z, n);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
}

void iteration() { scale_iteration<<<(elements + 255) / 256, 256>>>(d_a, d_b, d_c, elements); }

// Handed its buffers: a library-style launcher, whatever this program does with it.
void launch_scale(const float* a, const float* b, float* c, int n) {
  scale_handed<<<(n + 255) / 256, 256>>>(a, b, c, n);
}

// Drawn by the window system, once per frame.
void render_frame(int frame) { scale_frame<<<(elements + 255) / 256, 256>>>(d_a, d_b, d_c, elements + frame * 0); }
void window_on_frame(void (*draw)(int));  // the windowing library's registration call

int main(int argc, char** argv) {
  elements = argc > 1 ? atoi(argv[1]) : 1 << 24;
  int iterations = argc > 2 ? atoi(argv[2]) : 10;
  cudaMalloc((void**)&d_a, elements * sizeof(float));
  cudaMalloc((void**)&d_b, elements * sizeof(float));
  cudaMalloc((void**)&d_c, elements * sizeof(float));
  unsigned *d_out, *d_in;
  cudaMalloc((void**)&d_out, elements * sizeof(unsigned));
  cudaMalloc((void**)&d_in, elements * sizeof(unsigned));

  scale_once<<<(elements + 255) / 256, 256>>>(d_a, d_b, d_c, elements);
  setup_demo(elements);
  once_guarded<<<elements / 256, 256>>>(d_out, d_in, (unsigned)iterations);
  launch_scale(d_a, d_b, d_c, elements);
  window_on_frame(render_frame);

  for (int step = 0; step < iterations; ++step) {
    scale_step<<<(elements + 255) / 256, 256>>>(d_a, d_b, d_c, elements);
    iteration();
  }
  cudaDeviceSynchronize();
  return 0;
}
