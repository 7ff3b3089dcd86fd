// Flash-style attention forward (FlashAttention-2 algorithm) on tensor cores with
// mma.sync m16n8k16, and the unfused baseline that materializes the score matrix.
#include "../common/eager.cuh"
#include "../common/tiled_matmul.cuh"
#include "flash_common.cuh"

namespace mlsem_kernels {

template <class T>
int softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t s);

#ifndef MLSEM_KERNELS_SM90A
#define MLSEM_KERNELS_SM90A 0  // built without the sm_90a objects (kernels/CMakeLists.txt)
#endif

namespace sm90 {  // attention_fwd_sm90.cu: wgmma, head dim 128, compute capability 9.0 only
// AttentionSm90::unsupported when it launched nothing (the copy engine cannot address the
// tensors).
int attention_fwd_sm90(const void* q, const void* k, const void* v, void* o, int64_t bh, int seq, bool causal,
                       bool bf16, cudaStream_t s);
}

namespace {

using flash::pack2;
using flash::smem_addr;

// ---- PTX wrappers -------------------------------------------------------------------

// 16-byte asynchronous copy global -> shared; src_bytes 0 writes zeros (rows past the end).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c (16x8 f32) += a (16x16) * b (16x8).
template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Shared-memory tiles are [rows][D] of 16-bit values, in 16-byte chunks whose index is
// XORed with the row (mod 8): the 8 rows one ldmatrix phase reads then sit in 8
// different bank groups instead of one (rows are 128 or 256 bytes apart).
template <int D>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// rows [row0, row0 + ROWS) of a [seq, D] matrix into a swizzled tile; rows >= seq become 0.
template <int D, int ROWS, int THREADS, class T>
__device__ __forceinline__ void load_tile(T* tile, const T* g, int row0, int seq) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = threadIdx.x; i < ROWS * kChunks; i += THREADS) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < seq;
    cp_async16(tile + swizzle<D>(r, c), g + int64_t(valid ? row0 + r : 0) * D + c * 8, valid);
  }
}

// ---- the kernel ----------------------------------------------------------------------
//
// Grid: (query blocks, batch * heads). Each block owns BM = WARPS * 16 * MT query rows;
// each warp MT tiles of 16 rows. Per key/value tile of BN rows: S = Q K^T on tensor
// cores (fp32 accumulators in registers), the online softmax update in registers
// (running max m and sum l per row, rescaling the output accumulator), then O += P V
// with P converted to 16-bit A fragments straight from the S registers. The next K/V
// tile is fetched by cp.async while this one is computed. Nothing of size seq x seq
// ever reaches memory: Q, K, V are read once per query block, O written once.
template <class T, int D, int WARPS, int MT, int BN>
__global__ void __launch_bounds__(WARPS * 32) flash_fwd_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                             const T* __restrict__ v, T* __restrict__ o, int seq,
                                                             float scale_log2, bool causal) {
  constexpr int BM = WARPS * 16 * MT, THREADS = WARPS * 32, NT = BN / 8, DT = D / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sq = reinterpret_cast<T*>(smem_raw);
  T* sk = sq + BM * D;       // [2][BN][D]
  T* sv = sk + 2 * BN * D;   // [2][BN][D]

  // Causal: the last query blocks have the most keys; start them first.
  const int m_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int m0 = m_block * BM;
  const int64_t head_offset = int64_t(blockIdx.y) * seq * D;
  q += head_offset; k += head_offset; v += head_offset; o += head_offset;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kv_end = causal ? min(seq, m0 + BM) : seq;
  const int n_tiles = (kv_end + BN - 1) / BN;

  load_tile<D, BM, THREADS>(sq, q, m0, seq);
  load_tile<D, BN, THREADS>(sk, k, 0, seq);
  load_tile<D, BN, THREADS>(sv, v, 0, seq);
  cp_async_commit();

  float acc_o[MT][DT][4] = {};
  float row_max[MT][2], row_sum[MT][2];  // rows lane/4 and lane/4 + 8 of each tile
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) { row_max[mt][h] = -INFINITY; row_sum[mt][h] = 0.f; }
  const int warp_row0 = warp * 16 * MT;  // first row of this warp within the block

  for (int j = 0; j < n_tiles; ++j) {
    cp_async_wait_all();
    __syncthreads();  // tile j visible to all; everyone done with tile j - 1's buffers
    if (j + 1 < n_tiles) {
      const int nb = (j + 1) & 1;
      load_tile<D, BN, THREADS>(sk + nb * BN * D, k, (j + 1) * BN, seq);
      load_tile<D, BN, THREADS>(sv + nb * BN * D, v, (j + 1) * BN, seq);
    }
    cp_async_commit();
    const T* tk = sk + (j & 1) * BN * D;
    const T* tv = sv + (j & 1) * BN * D;
    const int n0 = j * BN;

    // S = Q K^T
    float s[MT][NT][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        ldmatrix_x4(qa[mt], sq + swizzle<D>(warp_row0 + mt * 16 + lane % 16, kk * 2 + lane / 16));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, tk + swizzle<D>(np * 16 + (lane / 16) * 8 + lane % 8, kk * 2 + (lane / 8) % 2));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_16816<T>(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma_16816<T>(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    // Online softmax.
    const bool needs_mask = n0 + BN > seq || (causal && n0 + BN - 1 > m0 + warp_row0);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        flash::online_softmax_row(s[mt], acc_o[mt], h, m0 + warp_row0 + mt * 16 + lane / 4 + h * 8, n0, seq, causal,
                                  needs_mask, lane, scale_log2, row_max[mt][h], row_sum[mt][h]);

    // O += P V; the S accumulator layout of two 8-column tiles is the A fragment layout.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        pa[mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, tv + swizzle<D>(kk * 16 + ((lane / 8) % 2) * 8 + lane % 8, dp * 2 + lane / 16));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_16816<T>(acc_o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma_16816<T>(acc_o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

  // Normalize by the row sums (summed over the 4 threads that share a row) and store.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      flash::store_row<T>(acc_o[mt], h, row_sum[mt][h], lane, m0 + warp_row0 + mt * 16 + lane / 4 + h * 8, seq, o);
}

template <class T, int D, int WARPS, int MT, int BN>
int launch(const T* q, const T* k, const T* v, T* o, int64_t bh, int seq, bool causal, cudaStream_t s) {
  constexpr AttentionConfig cfg{WARPS, MT, BN};
  constexpr int BM = WARPS * 16 * MT;
  const int smem = cfg.smem_bytes(D);
  auto kernel = flash_fwd_kernel<T, D, WARPS, MT, BN>;
  MLSEM_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(static_cast<unsigned>(ceil_div(seq, BM)), static_cast<unsigned>(bh));
  const float scale_log2 = 1.44269504f / sqrtf(float(D));
  kernel<<<grid, WARPS * 32, smem, s>>>(q, k, v, o, seq, scale_log2, causal);
  MLSEM_CHECK_LAUNCH();
  return 0;
}

template <class T, int D>
int fused(const T* q, const T* k, const T* v, T* o, int64_t bh, int seq, bool causal, int config, cudaStream_t s) {
  switch (config) {
    case 0: return launch<T, D, 4, 1, 64>(q, k, v, o, bh, seq, causal, s);
    case 1: return launch<T, D, 4, 2, 64>(q, k, v, o, bh, seq, causal, s);
    case 2: return launch<T, D, 4, 2, 32>(q, k, v, o, bh, seq, causal, s);
  }
  return MLSEM_BAD_ARGUMENT;
}

// The hand-written form: att = (q @ k^T) * scale; att.masked_fill(causal mask, -inf);
// softmax(att); att @ v. The seq x seq scores go to memory and back four times.
template <class T>
int baseline(const T* q, const T* k, const T* v, T* o, int64_t bh, int seq, int d, bool causal, cudaStream_t s) {
  using namespace eager;
  const int64_t scores = bh * int64_t(seq) * seq;
  Scratch scratch(s);
  T *raw, *scaled, *masked, *probs;
  MLSEM_TRY(scratch.get(&raw, scores));
  MLSEM_TRY(scratch.get(&scaled, scores));
  MLSEM_TRY(scratch.get(&probs, scores));
  const int64_t sd = int64_t(seq) * d, ss = int64_t(seq) * seq;
  MLSEM_TRY((tiled_matmul<T, true>(q, k, raw, seq, seq, d, static_cast<int>(bh), sd, sd, ss, 1.f, s)));
  MLSEM_TRY(unary(Unary::kMulScalar, static_cast<const T*>(raw), scaled, scores, 1.f / sqrtf(float(d)), s));
  masked = scaled;
  if (causal) {
    MLSEM_TRY(scratch.get(&masked, scores));
    MLSEM_TRY(unary(Unary::kCausalMask, static_cast<const T*>(scaled), int64_t(seq), masked, bh * seq, int64_t(seq), 0.f, s));
  }
  if (int rc = softmax_rows<T>(masked, probs, bh * seq, seq, s)) return rc;
  MLSEM_TRY((tiled_matmul<T, false>(probs, v, o, seq, d, seq, static_cast<int>(bh), ss, sd, sd, 1.f, s)));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

namespace {
bool attention_args_ok(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim, int dtype) {
  return batch > 0 && heads > 0 && seq > 0 && seq < (int64_t{1} << 30) && batch * heads < 65536 &&
         (head_dim == 64 || head_dim == 128) && (dtype == MLSEM_F16 || dtype == MLSEM_BF16);
}
}  // namespace

#if MLSEM_KERNELS_SM90A
namespace {
// The sm_90a kernel runs on compute capability 9.0 alone (Hopper's wgmma has no
// forward-compatible PTX): the current device's capability, asked on each call (an
// attribute read, no synchronization).
bool device_is_sm90() {
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
         minor == 0;
}
}  // namespace
#endif

extern "C" int mlsem_attention_fwd_config_count(void) { return kAttentionConfigCount; }

extern "C" int mlsem_attention_fwd_fused(const void* q, const void* k, const void* v, void* o, int64_t batch,
                                         int64_t heads, int64_t seq, int64_t head_dim, int causal, int dtype,
                                         int config, mlsem_stream stream) {
  if (!attention_args_ok(batch, heads, seq, head_dim, dtype) || config < 0 || config > kAttentionConfigCount)
    return MLSEM_BAD_ARGUMENT;
  // Both kernels move 16-byte chunks (cp.async, the copy engine).
  for (const void* p : {q, k, v, static_cast<const void*>(o)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return MLSEM_BAD_ARGUMENT;
  // config 0: the fastest kernel for this device and head dim (the wgmma kernel on Hopper at
  // head dim 128); 1..N: the portable kernel with kAttentionConfigs[config - 1].
  const int64_t bh = batch * heads;
  const int n = static_cast<int>(seq);
#if MLSEM_KERNELS_SM90A
  if (config == 0 && head_dim == 128 && device_is_sm90()) {
    const int rc = sm90::attention_fwd_sm90(q, k, v, o, bh, n, causal != 0, dtype == MLSEM_BF16, stream);
    if (rc != AttentionSm90::unsupported) return rc;  // else: no tensor maps for these pointers, the portable kernel
  }
#endif

  const int c = config == 0 ? default_attention_config(static_cast<int>(head_dim)) : config - 1;
  auto run = [&](auto tag) -> int {
    using T = decltype(tag);
    const T *tq = static_cast<const T*>(q), *tk = static_cast<const T*>(k), *tv = static_cast<const T*>(v);
    T* to = static_cast<T*>(o);
    return head_dim == 64 ? fused<T, 64>(tq, tk, tv, to, bh, n, causal != 0, c, stream)
                          : fused<T, 128>(tq, tk, tv, to, bh, n, causal != 0, c, stream);
  };
  return dtype == MLSEM_BF16 ? run(__nv_bfloat16{}) : run(__half{});
}

extern "C" int mlsem_attention_fwd_baseline(const void* q, const void* k, const void* v, void* o, int64_t batch,
                                            int64_t heads, int64_t seq, int64_t head_dim, int causal, int dtype,
                                            mlsem_stream stream) {
  if (!attention_args_ok(batch, heads, seq, head_dim, dtype)) return MLSEM_BAD_ARGUMENT;
  const int64_t bh = batch * heads;
  const int n = static_cast<int>(seq), d = static_cast<int>(head_dim);
  if (dtype == MLSEM_BF16)
    return baseline(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                    static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), bh, n, d, causal != 0, stream);
  return baseline(static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v),
                  static_cast<__half*>(o), bh, n, d, causal != 0, stream);
}
