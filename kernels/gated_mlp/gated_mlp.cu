// Gated MLP activations: SwiGLU y = silu(gate) * up, GeGLU y = gelu(gate) * up, in one
// pass (two reads, one write), and the unfused baseline.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

template <int ACT>
__device__ __forceinline__ float activate(float g) {
  switch (ACT) {
    case MLSEM_ACT_SILU: return silu(g);
    case MLSEM_ACT_GELU_TANH: return gelu_tanh(g);
    default: return gelu_erf(g);
  }
}

constexpr int kUnroll = 4;  // packs per thread per step, all loaded before the first is used

// gate and up rows have stride ld (they may be the two halves of one projection).
template <class T, int ACT, bool VEC>
__global__ void gated_kernel(const T* gate, const T* up, int64_t ld, T* y, int64_t rows, int64_t cols,
                             FastDiv packs_per_row) {
  constexpr int P = kPack<T>;
  const int64_t packs = rows * packs_per_row.divisor;
  for (int64_t base = blockIdx.x * int64_t{blockDim.x} * kUnroll + threadIdx.x; base < packs;
       base += int64_t{gridDim.x} * blockDim.x * kUnroll) {
    Pack<T> g[kUnroll], u[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = base + k * int64_t{blockDim.x};
      const int64_t r = packs_per_row.div(static_cast<uint32_t>(p)), c = (p - r * packs_per_row.divisor) * P;
      const int64_t limit = p < packs ? cols : 0;  // past the last row: nothing to load
      g[k] = load_pack<VEC>(gate + r * ld, c, limit, 0.f);
      u[k] = load_pack<VEC>(up + r * ld, c, limit, 0.f);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = base + k * int64_t{blockDim.x};
      const int64_t r = packs_per_row.div(static_cast<uint32_t>(p)), c = (p - r * packs_per_row.divisor) * P;
#pragma unroll
      for (int j = 0; j < P; ++j) g[k].set(j, activate<ACT>(g[k][j]) * u[k][j]);
      store_pack<VEC>(y + r * cols, c, p < packs ? cols : 0, g[k]);
    }
  }
}

template <class T>
int fused(const T* gate, const T* up, int64_t ld, T* y, int64_t rows, int64_t cols, int act, cudaStream_t s) {
  const bool vec = can_vectorize(gate, ld, sizeof(T)) && can_vectorize(up, ld, sizeof(T)) &&
                   can_vectorize(y, cols, sizeof(T)) && cols % kPack<T> == 0;
  const int64_t packs = rows * ceil_div(cols, kPack<T>);
  if (packs + 1024 * kUnroll >= kFastDivLimit) return MLSEM_BAD_ARGUMENT;
  const int threads = 256, blocks = elementwise_blocks(ceil_div(packs, kUnroll), threads, 0);
  const FastDiv packs_per_row(static_cast<uint32_t>(ceil_div(cols, kPack<T>)));
  MLSEM_WITH_VEC(vec, {
    switch (act) {
      case MLSEM_ACT_SILU:
        gated_kernel<T, MLSEM_ACT_SILU, VEC><<<blocks, threads, 0, s>>>(gate, up, ld, y, rows, cols, packs_per_row);
        break;
      case MLSEM_ACT_GELU_TANH:
        gated_kernel<T, MLSEM_ACT_GELU_TANH, VEC><<<blocks, threads, 0, s>>>(gate, up, ld, y, rows, cols, packs_per_row);
        break;
      default:
        gated_kernel<T, MLSEM_ACT_GELU_ERF, VEC><<<blocks, threads, 0, s>>>(gate, up, ld, y, rows, cols, packs_per_row);
        break;
    }
  });
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written form: F.silu(gate) * up (or F.gelu): the activation kernel writes its
// result to memory, the multiply reads it back. Strided halves are copied out first, as
// .contiguous() would; with separate tensors (ld == cols) that copy is skipped.
template <class T>
int baseline(const T* gate, const T* up, int64_t ld, T* y, int64_t rows, int64_t cols, int act, cudaStream_t s) {
  using namespace eager;
  const int64_t n = rows * cols;
  Scratch scratch(s);
  T *a, *u = const_cast<T*>(up);
  MLSEM_TRY(scratch.get(&a, n));
  const Unary op = act == MLSEM_ACT_SILU ? Unary::kSilu : act == MLSEM_ACT_GELU_TANH ? Unary::kGeluTanh : Unary::kGeluErf;
  MLSEM_TRY(unary(op, gate, ld, a, rows, cols, 0.f, s));
  if (ld != cols) {
    MLSEM_TRY(scratch.get(&u, n));
    MLSEM_TRY(unary(Unary::kCopy, up, ld, u, rows, cols, 0.f, s));
  }
  MLSEM_TRY(binary(Binary::kMul, a, static_cast<const T*>(u), Bcast::kFull, y, rows, cols, s));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_gated_mlp_fused(const void* gate, const void* up, int64_t ld_in, void* y, int64_t rows,
                                     int64_t cols, int act, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0 || ld_in < cols || act < 0 || act > 2) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(gate), static_cast<const T*>(up), ld_in,
                                     static_cast<T*>(y), rows, cols, act, stream));
}

extern "C" int mlsem_gated_mlp_baseline(const void* gate, const void* up, int64_t ld_in, void* y, int64_t rows,
                                        int64_t cols, int act, int dtype, mlsem_stream stream) {
  if (rows <= 0 || cols <= 0 || ld_in < cols || act < 0 || act > 2) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(gate), static_cast<const T*>(up), ld_in,
                                        static_cast<T*>(y), rows, cols, act, stream));
}
