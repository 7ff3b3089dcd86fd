// The C ABI of libmlsem_kernels.so: every reference kernel, fused and baseline, as a
// plain function that bench.py (ctypes) and C++ callers can reach without CUDA headers.
// Tensors are contiguous, row-major, on the device. Every function returns 0 on
// success, a CUDA error code, or MLSEM_BAD_ARGUMENT; launches go on `stream`.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* mlsem_stream;

enum { MLSEM_F32 = 0, MLSEM_F16 = 1, MLSEM_BF16 = 2 };
enum { MLSEM_BAD_ARGUMENT = -1 };
enum { MLSEM_ACT_SILU = 0, MLSEM_ACT_GELU_ERF = 1, MLSEM_ACT_GELU_TANH = 2 };

const char* mlsem_error_string(int code);

// y = gelu(x + bias), x [rows, cols], bias [cols]; tanh approximation or exact erf.
int mlsem_bias_gelu_fused(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                          int approximate_tanh, int dtype, mlsem_stream stream);
int mlsem_bias_gelu_baseline(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                             int approximate_tanh, int dtype, mlsem_stream stream);

// y = softmax(x) over the last dim.
int mlsem_softmax_fused(const void* x, void* y, int64_t rows, int64_t cols, int dtype, mlsem_stream stream);
int mlsem_softmax_baseline(const void* x, void* y, int64_t rows, int64_t cols, int dtype, mlsem_stream stream);

// y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim.
int mlsem_layernorm_fused(const void* x, const void* weight, const void* bias, void* y, int64_t rows,
                          int64_t cols, float eps, int dtype, mlsem_stream stream);
int mlsem_layernorm_baseline(const void* x, const void* weight, const void* bias, void* y, int64_t rows,
                             int64_t cols, float eps, int dtype, mlsem_stream stream);

// y = x / sqrt(mean(x^2) + eps) * weight over the last dim.
int mlsem_rmsnorm_fused(const void* x, const void* weight, void* y, int64_t rows, int64_t cols, float eps,
                        int dtype, mlsem_stream stream);
int mlsem_rmsnorm_baseline(const void* x, const void* weight, void* y, int64_t rows, int64_t cols,
                           float eps, int dtype, mlsem_stream stream);

// y = act(gate) * up, gate and up [rows, cols] with row stride ld_in (2*cols when both
// halves of one [rows, 2*cols] projection are passed), y [rows, cols] contiguous.
int mlsem_gated_mlp_fused(const void* gate, const void* up, int64_t ld_in, void* y, int64_t rows,
                          int64_t cols, int act, int dtype, mlsem_stream stream);
int mlsem_gated_mlp_baseline(const void* gate, const void* up, int64_t ld_in, void* y, int64_t rows,
                             int64_t cols, int act, int dtype, mlsem_stream stream);

// Rotary embedding, rotate-half convention (GPT-NeoX, Llama): x, y [tokens, heads, head_dim],
// token t sits at position t % seq_len; cos, sin float32 [seq_len, head_dim / 2].
int mlsem_rope_fused(const void* x, const float* cos, const float* sin, void* y, int64_t tokens,
                     int64_t seq_len, int64_t heads, int64_t head_dim, int dtype, mlsem_stream stream);
int mlsem_rope_baseline(const void* x, const float* cos, const float* sin, void* y, int64_t tokens,
                        int64_t seq_len, int64_t heads, int64_t head_dim, int dtype, mlsem_stream stream);

// losses[r] = logsumexp(logits[r]) - logits[r, targets[r]] (float32); mean_loss[0] = their
// mean over rows whose target is in [0, vocab) (others, e.g. -100, are ignored, loss 0).
int mlsem_cross_entropy_fused(const void* logits, const int64_t* targets, float* losses, float* mean_loss,
                              int64_t rows, int64_t vocab, int dtype, mlsem_stream stream);
int mlsem_cross_entropy_baseline(const void* logits, const int64_t* targets, float* losses,
                                 float* mean_loss, int64_t rows, int64_t vocab, int dtype,
                                 mlsem_stream stream);

// o = softmax(q k^T / sqrt(head_dim) [+ causal mask]) v; q, k, v, o [batch, heads, seq, head_dim],
// fp16 or bf16, head_dim 64 or 128, each pointer 16-byte aligned. config 0 picks the fastest
// kernel for the device (on compute capability 9.0 at head_dim 128, the Hopper kernel); 1..N
// a tile shape of the portable kernel.
int mlsem_attention_fwd_fused(const void* q, const void* k, const void* v, void* o, int64_t batch,
                              int64_t heads, int64_t seq, int64_t head_dim, int causal, int dtype,
                              int config, mlsem_stream stream);
int mlsem_attention_fwd_config_count(void);
int mlsem_attention_fwd_baseline(const void* q, const void* k, const void* v, void* o, int64_t batch,
                                 int64_t heads, int64_t seq, int64_t head_dim, int causal, int dtype,
                                 mlsem_stream stream);

// Lessons. Coalescing: y = 2 * x, float32 [rows, cols], one thread per row (strided
// across the warp) vs consecutive threads on consecutive elements.
int mlsem_lesson_coalescing_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream stream);
int mlsem_lesson_coalescing_baseline(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream stream);
// Vectorized: y = 2 * x, bf16 [n], 2-byte vs 16-byte accesses.
int mlsem_lesson_vectorized_fused(const void* x, void* y, int64_t n, mlsem_stream stream);
int mlsem_lesson_vectorized_baseline(const void* x, void* y, int64_t n, mlsem_stream stream);
// Warp reduce: y[r] = sum(x[r, :]), float32; shared-memory tree vs warp shuffles.
int mlsem_lesson_warp_reduce_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream stream);
int mlsem_lesson_warp_reduce_baseline(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream stream);
// Tiled matmul: c [m, n] = a [m, k] b [k, n], float32; naive vs shared-memory tiles.
int mlsem_lesson_tiled_matmul_fused(const float* a, const float* b, float* c, int64_t m, int64_t n,
                                    int64_t k, mlsem_stream stream);
int mlsem_lesson_tiled_matmul_baseline(const float* a, const float* b, float* c, int64_t m, int64_t n,
                                       int64_t k, mlsem_stream stream);
// Transpose: y [cols, rows] = x [rows, cols]^T, float32; naive vs padded shared-memory tile.
int mlsem_lesson_smem_transpose_fused(const float* x, float* y, int64_t rows, int64_t cols, mlsem_stream stream);
int mlsem_lesson_smem_transpose_baseline(const float* x, float* y, int64_t rows, int64_t cols,
                                         mlsem_stream stream);

// Low-memory dropout, bf16 [n]: y = x * keep / (1 - p), and with dy and dx (both or neither)
// the backward dx = dy * keep / (1 - p) with the same mask. keep: Philox4x32-10 keyed by seed,
// element i from counter offset + i / 4 (common/philox.h). Fused: the mask recomputed in each
// kernel, never stored; baseline: the mask written to `mask` (uint8 [n]) and read back.
int mlsem_lesson_dropout_fused(const void* x, const void* dy, void* y, void* dx, int64_t n, float p, uint64_t seed,
                               uint64_t offset, mlsem_stream stream);
int mlsem_lesson_dropout_baseline(const void* x, const void* dy, uint8_t* mask, void* y, void* dx, int64_t n,
                                  float p, uint64_t seed, uint64_t offset, mlsem_stream stream);
// Grouped GEMM (mixture of experts), bf16: y[rows of e] = x[rows of e] @ w[e] for each expert e,
// x [total_m, k], w [experts, k, n], y [total_m, n]; expert e owns rows offsets[e] .. offsets[e + 1]
// (int64 [experts + 1], 0 .. total_m). Fused: one launch, offsets on the device; baseline: one
// launch per expert, from offsets_host. k and n multiples of 8, at most 1024 experts.
int mlsem_lesson_grouped_gemm_fused(const void* x, const void* w, const int64_t* offsets, const int64_t* offsets_host,
                                    void* y, int64_t experts, int64_t total_m, int64_t k, int64_t n,
                                    mlsem_stream stream);
int mlsem_lesson_grouped_gemm_baseline(const void* x, const void* w, const int64_t* offsets,
                                       const int64_t* offsets_host, void* y, int64_t experts, int64_t total_m,
                                       int64_t k, int64_t n, mlsem_stream stream);
// Row-wise fp8 quantization: x bf16 [rows, cols] -> q e4m3 [rows, cols] (bytes), scale float32
// [rows] with scale = max(amax, 1e-12) / 448 and q = e4m3(x / scale), saturating (x ~ q * scale).
int mlsem_lesson_fp8_quant_fused(const void* x, void* q, float* scale, int64_t rows, int64_t cols, mlsem_stream stream);
int mlsem_lesson_fp8_quant_baseline(const void* x, void* q, float* scale, int64_t rows, int64_t cols,
                                    mlsem_stream stream);

#ifdef __cplusplus
}
#endif
