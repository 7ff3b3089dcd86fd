// Any .cu file leaked its AST, Sema and preprocessor until ea47907 (the Clang driver's
// -disable-free): fuzz_cuda's LeakSanitizer found it on its first input. Replayed by
// FuzzReplay under the sanitizer build, which CI runs.
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
