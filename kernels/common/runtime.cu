// Host-side runtime helpers of the kernel library.
#include <cstdint>

#include "device.cuh"

namespace mlsem_kernels {

int sm_count() {
  static const int count = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      return 132;
    return n;
  }();
  return count;
}

cudaError_t scratch_alloc(void** ptr, size_t bytes, cudaStream_t stream) {
  static const cudaError_t pool_ready = [] {
    int device = 0;
    cudaMemPool_t pool;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, device);
    uint64_t keep = UINT64_MAX;  // never hand freed blocks back to the driver
    if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    return e;
  }();
  if (pool_ready != cudaSuccess) return pool_ready;
  return cudaMallocAsync(ptr, bytes, stream);
}

cudaError_t scratch_free(void* ptr, cudaStream_t stream) { return cudaFreeAsync(ptr, stream); }

}  // namespace mlsem_kernels

extern "C" const char* mlsem_error_string(int code) {
  if (code == MLSEM_BAD_ARGUMENT) return "bad argument (shape, dtype or alignment not supported)";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
