// The CUDA prelude: what a .cu file needs from the toolkit to be parsed when no
// toolkit is installed (or `--cuda-path none`). It is force-included before the file;
// the toolkit's header names (cuda_runtime.h, cuda_fp16.h, ...) are then served as
// empty files. Declarations only: mlsem never compiles or runs the code, it needs
// the names, types and sizes (float4 is 16 bytes, __half2 is 4) to be right.
#pragma once

namespace mlsem::cuda {

// Header names the prelude stands in for.
inline constexpr const char* kPreludeHeaders[] = {
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "cuda_fp16.h", "cuda_bf16.h",
    "device_launch_parameters.h", "device_functions.h", "vector_types.h",
    "math_constants.h", "cublas_v2.h", "cublas.h", "cublasLt.h", "cuda_fp8.h",
    "curand_kernel.h", "crt/host_defines.h"};

inline constexpr const char* kPrelude = R"prelude(
#define __MLSEM_PRELUDE__ 1
#define __CUDACC__ 1
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_INF __builtin_huge_val()
#define INFINITY __builtin_huge_valf()
#define NAN __builtin_nanf("")
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define M_PI 3.14159265358979323846
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUDA_R_32F 0
#define CUDA_R_16F 2
#define CUDA_R_16BF 14
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_GEMM_DEFAULT -1

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

struct __align__(8) uint2 { unsigned int x, y; };
struct uint3 { unsigned int x, y, z; };
struct __align__(16) uint4 { unsigned int x, y, z, w; };
struct __align__(8) int2 { int x, y; };
struct int3 { int x, y, z; };
struct __align__(16) int4 { int x, y, z, w; };
struct __align__(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __align__(16) float4 { float x, y, z, w; };
struct __align__(16) double2 { double x, y; };
struct __align__(4) char4 { signed char x, y, z, w; };
struct __align__(4) uchar4 { unsigned char x, y, z, w; };
struct __align__(2) __half { unsigned short __x; };
struct __align__(4) __half2 { __half x, y; };
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
struct __align__(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// threadIdx & co.: clang reads them as MS properties on builtin variables, as with
// the toolkit, so the frontend sees the same AST in both modes.
#define __MLSEM_BUILTIN_VAR(Type, Reg)                                                  \
  struct Type {                                                                         \
    __declspec(property(get = __get_x)) unsigned int x;                                 \
    __declspec(property(get = __get_y)) unsigned int y;                                 \
    __declspec(property(get = __get_z)) unsigned int z;                                 \
    static inline __device__ unsigned int __get_x() { return __nvvm_read_ptx_sreg_##Reg##_x(); } \
    static inline __device__ unsigned int __get_y() { return __nvvm_read_ptx_sreg_##Reg##_y(); } \
    static inline __device__ unsigned int __get_z() { return __nvvm_read_ptx_sreg_##Reg##_z(); } \
    __device__ operator dim3() const { return dim3(x, y, z); }                          \
  };
__MLSEM_BUILTIN_VAR(__mlsem_threadIdx_t, tid)
__MLSEM_BUILTIN_VAR(__mlsem_blockIdx_t, ctaid)
__MLSEM_BUILTIN_VAR(__mlsem_blockDim_t, ntid)
__MLSEM_BUILTIN_VAR(__mlsem_gridDim_t, nctaid)
extern const __device__ __mlsem_threadIdx_t threadIdx;
extern const __device__ __mlsem_blockIdx_t blockIdx;
extern const __device__ __mlsem_blockDim_t blockDim;
extern const __device__ __mlsem_gridDim_t gridDim;
extern const __device__ int warpSize;

typedef int cudaError_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum { cudaSuccess = 0 };
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed };
extern "C" {
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = 0);
int cudaConfigureCall(dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = 0);
__host__ cudaError_t cudaMalloc(void** p, size_t bytes);
__host__ cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned flags = 1);
__host__ cudaError_t cudaMallocHost(void** p, size_t bytes);
__host__ cudaError_t cudaFree(void* p);
__host__ cudaError_t cudaFreeHost(void* p);
__host__ cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
__host__ cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0);
__host__ cudaError_t cudaMemset(void* p, int v, size_t bytes);
__host__ cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t s = 0);
__host__ cudaError_t cudaDeviceSynchronize();
__host__ cudaError_t cudaSetDevice(int device);
__host__ cudaError_t cudaStreamSynchronize(cudaStream_t s);
__host__ cudaError_t cudaStreamCreate(cudaStream_t* s);
__host__ cudaError_t cudaEventCreate(cudaEvent_t* e);
__host__ cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
__host__ cudaError_t cudaEventSynchronize(cudaEvent_t e);
__host__ cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b);
__host__ cudaError_t cudaGetLastError();
__host__ cudaError_t cudaPeekAtLastError();
__host__ const char* cudaGetErrorString(cudaError_t e);
__host__ cudaError_t cudaLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shmem = 0, cudaStream_t s = 0);
__host__ cudaError_t cudaLaunchCooperativeKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shmem = 0,
                                                 cudaStream_t s = 0);
__host__ cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
__host__ cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph);
__host__ cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
__host__ cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
__host__ cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* f, int block, size_t shmem);
__host__ __device__ int printf(const char*, ...);
__host__ void exit(int);
__host__ void* malloc(size_t);
__host__ void free(void*);
}

__device__ void __syncthreads();
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence();
__device__ void __threadfence_block();
#define __MLSEM_SHFL(T)                                                                   \
  __device__ T __shfl_sync(unsigned mask, T v, int src, int width = 32);                  \
  __device__ T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32);            \
  __device__ T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32);          \
  __device__ T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32);
__MLSEM_SHFL(int) __MLSEM_SHFL(unsigned) __MLSEM_SHFL(float) __MLSEM_SHFL(double)
__MLSEM_SHFL(long long) __MLSEM_SHFL(__half) __MLSEM_SHFL(__half2) __MLSEM_SHFL(__nv_bfloat16)
__device__ unsigned __ballot_sync(unsigned mask, int pred);
__device__ int __all_sync(unsigned mask, int pred);
__device__ int __any_sync(unsigned mask, int pred);
__device__ float __reduce_add_sync(unsigned mask, float v);
__device__ unsigned __activemask();
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __ffs(int);

#define __MLSEM_ATOMIC(T)                          \
  __device__ T atomicAdd(T* p, T v);                \
  __device__ T atomicSub(T* p, T v);                \
  __device__ T atomicExch(T* p, T v);               \
  __device__ T atomicMax(T* p, T v);                \
  __device__ T atomicMin(T* p, T v);
__MLSEM_ATOMIC(int) __MLSEM_ATOMIC(unsigned) __MLSEM_ATOMIC(unsigned long long)
__device__ float atomicAdd(float* p, float v);
__device__ double atomicAdd(double* p, double v);
__device__ __half2 atomicAdd(__half2* p, __half2 v);
__device__ float atomicExch(float* p, float v);
__device__ int atomicCAS(int* p, int cmp, int v);
__device__ unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v);
__device__ unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v);
__device__ int atomicAnd(int* p, int v);
__device__ int atomicOr(int* p, int v);

#define __MLSEM_MATH1(fn) __host__ __device__ float fn##f(float); __host__ __device__ double fn(double);
__MLSEM_MATH1(exp) __MLSEM_MATH1(exp2) __MLSEM_MATH1(log) __MLSEM_MATH1(log2) __MLSEM_MATH1(sqrt)
__MLSEM_MATH1(tanh) __MLSEM_MATH1(erf) __MLSEM_MATH1(fabs) __MLSEM_MATH1(sin) __MLSEM_MATH1(cos)
__MLSEM_MATH1(floor) __MLSEM_MATH1(ceil) __MLSEM_MATH1(round) __MLSEM_MATH1(cbrt) __MLSEM_MATH1(log1p)
__MLSEM_MATH1(expm1) __MLSEM_MATH1(rsqrt) __MLSEM_MATH1(trunc) __MLSEM_MATH1(sinh) __MLSEM_MATH1(cosh)
__host__ __device__ float powf(float, float);
__host__ __device__ double pow(double, double);
__host__ __device__ float fmaxf(float, float);
__host__ __device__ float fminf(float, float);
__host__ __device__ double fmax(double, double);
__host__ __device__ double fmin(double, double);
__host__ __device__ float fmaf(float, float, float);
__host__ __device__ double fma(double, double, double);
__host__ __device__ float copysignf(float, float);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __fdividef(float, float);
__device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float);
__device__ float __saturatef(float);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__host__ __device__ int abs(int);
__host__ __device__ int max(int, int);
__host__ __device__ int min(int, int);
__host__ __device__ unsigned max(unsigned, unsigned);
__host__ __device__ unsigned min(unsigned, unsigned);
__host__ __device__ long long max(long long, long long);
__host__ __device__ long long min(long long, long long);
__host__ __device__ float max(float, float);
__host__ __device__ float min(float, float);
__host__ __device__ double max(double, double);
__host__ __device__ double min(double, double);
__host__ __device__ bool isinf(float);
__host__ __device__ bool isnan(float);

template <typename T> __device__ T __ldg(const T* p);
template <typename T> __device__ T __ldcs(const T* p);
template <typename T> __device__ T __ldcg(const T* p);
template <typename T> __device__ void __stcs(T* p, T v);
template <typename T> __device__ void __stcg(T* p, T v);

__host__ __device__ float2 make_float2(float, float);
__host__ __device__ float3 make_float3(float, float, float);
__host__ __device__ float4 make_float4(float, float, float, float);
__host__ __device__ int2 make_int2(int, int);
__host__ __device__ int4 make_int4(int, int, int, int);
__host__ __device__ uint3 make_uint3(unsigned, unsigned, unsigned);

__host__ __device__ float __half2float(__half);
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ float __low2float(__half2);
__host__ __device__ float __high2float(__half2);
__device__ __half __hadd(__half, __half);
__device__ __half __hmul(__half, __half);
__device__ __half __hsub(__half, __half);
__device__ __half2 __hadd2(__half2, __half2);
__device__ __half2 __hmul2(__half2, __half2);
__device__ __half2 __hfma2(__half2, __half2, __half2);
__device__ __half hexp(__half);
__device__ __half2 h2exp(__half2);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ float2 __bfloat1622float2(__nv_bfloat162);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(float, float);
__device__ __half operator+(const __half&, const __half&);
__device__ __half operator-(const __half&, const __half&);
__device__ __half operator*(const __half&, const __half&);
__device__ __half operator/(const __half&, const __half&);
__device__ __half2 operator+(const __half2&, const __half2&);
__device__ __half2 operator*(const __half2&, const __half2&);
__device__ __nv_bfloat16 operator+(const __nv_bfloat16&, const __nv_bfloat16&);
__device__ __nv_bfloat16 operator*(const __nv_bfloat16&, const __nv_bfloat16&);

typedef struct cublasContext* cublasHandle_t;
typedef int cublasStatus_t;
typedef int cublasOperation_t;
typedef int cudaDataType;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;
cublasStatus_t cublasCreate(cublasHandle_t* h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb,
                           const float* beta, float* C, int ldc);
cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const __half* alpha, const __half* A, int lda, const __half* B, int ldb,
                           const __half* beta, __half* C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long sA, const float* B, int ldb, long long sB,
                                         const float* beta, float* C, int ldc, long long sC, int batch);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B,
                            cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);
)prelude";


// Toolkit mode: what nvcc's own headers give every .cu file and Clang's CUDA wrapper
// (__clang_cuda_runtime_wrapper.h) does not, measured on CUDA 13 with Clang 22: nvcc's
// identification macros, host+device min/max, the C headers nvcc's crt headers
// include (so host code finds isfinite, clock, memcpy), and the cache-hint stores of
// sm_32_intrinsics.h, which Clang leaves out with that header (declared only: nothing
// is code-generated). Parsed once, in the shared toolkit preamble.
inline constexpr const char* kNvccCompat = R"compat(#ifndef __NVCC__
#define __NVCC__ 1
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
#endif

// nvcc's crt/math_functions.hpp makes min and max host+device; Clang's are device only.
#define __MLSEM_MINMAX(T1, T2, R) \
  __host__ inline R max(T1 a, T2 b) { return a > b ? a : b; } \
  __host__ inline R min(T1 a, T2 b) { return a < b ? a : b; }
__MLSEM_MINMAX(int, int, int)
__MLSEM_MINMAX(unsigned int, unsigned int, unsigned int)
__MLSEM_MINMAX(int, unsigned int, unsigned int)
__MLSEM_MINMAX(unsigned int, int, unsigned int)
__MLSEM_MINMAX(long, long, long)
__MLSEM_MINMAX(unsigned long, unsigned long, unsigned long)
__MLSEM_MINMAX(long long, long long, long long)
__MLSEM_MINMAX(unsigned long long, unsigned long long, unsigned long long)
__MLSEM_MINMAX(long long, unsigned long long, unsigned long long)
__MLSEM_MINMAX(unsigned long long, long long, unsigned long long)
__MLSEM_MINMAX(float, float, float)
__MLSEM_MINMAX(double, double, double)
__MLSEM_MINMAX(float, double, double)
__MLSEM_MINMAX(double, float, double)
#undef __MLSEM_MINMAX

// nvcc's crt/common_functions.h and math_functions.h include these C headers, and
// libstdc++'s math.h brings std::isfinite & co. into the global namespace for host code.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Cache-hint stores (sm_32_intrinsics.h), which Clang's wrapper leaves out with that
// header: declared only, since nothing is code-generated.
#define __MLSEM_STORES(T) \
  __device__ void __stcs(T* p, T v); __device__ void __stcg(T* p, T v); \
  __device__ void __stwb(T* p, T v); __device__ void __stwt(T* p, T v);
__MLSEM_STORES(char) __MLSEM_STORES(signed char) __MLSEM_STORES(short) __MLSEM_STORES(int)
__MLSEM_STORES(long) __MLSEM_STORES(long long) __MLSEM_STORES(unsigned char)
__MLSEM_STORES(unsigned short) __MLSEM_STORES(unsigned int) __MLSEM_STORES(unsigned long)
__MLSEM_STORES(unsigned long long) __MLSEM_STORES(float) __MLSEM_STORES(double)
__MLSEM_STORES(char2) __MLSEM_STORES(char4) __MLSEM_STORES(short2) __MLSEM_STORES(short4)
__MLSEM_STORES(int2) __MLSEM_STORES(int4) __MLSEM_STORES(longlong2) __MLSEM_STORES(uchar2)
__MLSEM_STORES(uchar4) __MLSEM_STORES(ushort2) __MLSEM_STORES(ushort4) __MLSEM_STORES(uint2)
__MLSEM_STORES(uint4) __MLSEM_STORES(ulonglong2) __MLSEM_STORES(float2) __MLSEM_STORES(float4)
__MLSEM_STORES(double2)
#undef __MLSEM_STORES

// curand_kernel.h's precomputed skip-ahead tables: XORWOW's (curand_precalc.h: four arrays
// of 32 x 800 numbers, 1.4 MB of initializers that Clang checks one by one in every file
// including curand_kernel.h: about 1.4 G instructions, two thirds of such a file's parse)
// and MRG32k3a's (curand_mrg32k3a.h, 12 arrays of 3 x 3 matrices, about 80 M). Only the
// bodies of curand's header functions use them, and those bodies are skipped: the arrays
// are declared here with the headers' types and macros, and the headers' include guards
// keep them from being read.
#if __has_include(<curand_precalc.h>) && !defined(CURAND_XORWOW_PRECALCULATED_H_)
#define CURAND_XORWOW_PRECALCULATED_H_
#define PRECALC_NUM_MATRICES (32)
#define PRECALC_BLOCK_SIZE (2)
#define PRECALC_BLOCK_MASK ((1<<PRECALC_BLOCK_SIZE)-1)
#define XORWOW_SEQUENCE_SPACING (67)
static __device__ unsigned int precalc_xorwow_matrix[32][800];
static unsigned int precalc_xorwow_matrix_host[32][800];
static __device__ unsigned int precalc_xorwow_offset_matrix[32][800];
static unsigned int precalc_xorwow_offset_matrix_host[32][800];
#endif
#if __has_include(<curand_mrg32k3a.h>) && !defined(CURAND_MRG32K3A_MATRICES_H_)
#define CURAND_MRG32K3A_MATRICES_H_
#define __MLSEM_MRG32K3A(name, n) \
  static __device__ unsigned int name[n][3][3]; static unsigned int name##Host[n][3][3];
__MLSEM_MRG32K3A(mrg32k3aM1, 64) __MLSEM_MRG32K3A(mrg32k3aM2, 64)
__MLSEM_MRG32K3A(mrg32k3aM1SubSeq, 56) __MLSEM_MRG32K3A(mrg32k3aM2SubSeq, 56)
__MLSEM_MRG32K3A(mrg32k3aM1Seq, 64) __MLSEM_MRG32K3A(mrg32k3aM2Seq, 64)
#undef __MLSEM_MRG32K3A
#endif
)compat";

}  // namespace mlsem::cuda
