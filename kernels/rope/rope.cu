// Rotary position embedding (rotate-half convention) in one pass, and the baseline.
// y[..., :h] = x1 * cos - x2 * sin, y[..., h:] = x2 * cos + x1 * sin, h = head_dim / 2.
#include "../common/eager.cuh"

namespace mlsem_kernels {
namespace {

// Each thread rotates one pack of pairs (P elements of the first half with the P matching
// elements of the second) for heads_per_thread(VEC) heads of one token: the cos/sin pack of
// that (position, column) is loaded once and reused across the heads, so the tables cost a
// fraction of the cache traffic of x; all the heads' loads are issued before the first
// is used. Memory traffic is x once in, y once out.
// Aligned (VEC): 8 heads a thread in 128 registers, 2 blocks of 256 threads per SM, each
// thread with 16 packs (256 bytes) of x in flight, stores with an L2 evict_first hint (y is
// not read again). The element-wise path keeps 4 heads (with 8 it spills registers).
constexpr int heads_per_thread(bool vec) { return vec ? 8 : 4; }

template <class T, bool VEC>
__global__ void __launch_bounds__(256, 2)
    rope_kernel(const T* x, const float* cosv, const float* sinv, T* y, int64_t tokens, int64_t heads, int64_t head_dim,
                FastDiv packs_per_half, FastDiv head_groups, FastDiv seq_len) {
  constexpr int P = kPack<T>, H = heads_per_thread(VEC);
  const int64_t h = head_dim / 2;
  const int64_t items = tokens * head_groups.divisor * packs_per_half.divisor;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < items; p += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t q = packs_per_half.div(static_cast<uint32_t>(p));  // (token, head group)
    const int64_t c = (p - int64_t{q} * packs_per_half.divisor) * P;
    const uint32_t token = head_groups.div(q);
    const int64_t head0 = int64_t{q - token * head_groups.divisor} * H;
    Pack<T> x1[H], x2[H];
#pragma unroll
    for (int k = 0; k < H; ++k) {
      const int64_t row = int64_t{token} * heads + head0 + k;
      const int64_t limit = head0 + k < heads ? h : 0;
      x1[k] = load_pack<VEC>(x + row * head_dim, c, limit, 0.f);
      x2[k] = load_pack<VEC>(x + row * head_dim + h, c, limit, 0.f);
    }
    const int64_t pos = seq_len.mod(token);
    float cs[P], sn[P];
    if (VEC) {  // the table row segment is 16-byte aligned too: float4 loads
#pragma unroll
      for (int j = 0; j < P; j += 4) {
        const float4 c4 = *reinterpret_cast<const float4*>(cosv + pos * h + c + j);
        const float4 s4 = *reinterpret_cast<const float4*>(sinv + pos * h + c + j);
        cs[j] = c4.x; cs[j + 1] = c4.y; cs[j + 2] = c4.z; cs[j + 3] = c4.w;
        sn[j] = s4.x; sn[j + 1] = s4.y; sn[j + 2] = s4.z; sn[j + 3] = s4.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const bool in = c + j < h;
        cs[j] = in ? cosv[pos * h + c + j] : 0.f;
        sn[j] = in ? sinv[pos * h + c + j] : 0.f;
      }
    }
#pragma unroll
    for (int k = 0; k < H; ++k) {
      if (head0 + k >= heads) break;
      const int64_t row = int64_t{token} * heads + head0 + k;
      Pack<T> o1, o2;
#pragma unroll
      for (int j = 0; j < P; ++j) {
        o1.set(j, x1[k][j] * cs[j] - x2[k][j] * sn[j]);
        o2.set(j, x2[k][j] * cs[j] + x1[k][j] * sn[j]);
      }
      if (VEC) {
        store16_l2<L2Hint::kEvictFirst>(y + row * head_dim + c, o1.raw);
        store16_l2<L2Hint::kEvictFirst>(y + row * head_dim + h + c, o2.raw);
      } else {
        store_pack<VEC>(y + row * head_dim, c, h, o1);
        store_pack<VEC>(y + row * head_dim + h, c, h, o2);
      }
    }
  }
}

template <class T>
int fused(const T* x, const float* cosv, const float* sinv, T* y, int64_t tokens, int64_t seq_len, int64_t heads,
          int64_t head_dim, cudaStream_t s) {
  const int64_t h = head_dim / 2;
  // Both halves of every row must start on 16 bytes for pack loads.
  const bool vec = can_vectorize(x, h, sizeof(T)) && can_vectorize(y, h, sizeof(T)) && h % kPack<T> == 0 &&
                   can_vectorize(cosv, h, sizeof(float)) && can_vectorize(sinv, h, sizeof(float));
  const int64_t groups = ceil_div(heads, heads_per_thread(vec));
  const int64_t items = tokens * groups * ceil_div(h, kPack<T>);
  if (items + 1024 * 1024 >= kFastDivLimit || seq_len >= kFastDivLimit) return MLSEM_BAD_ARGUMENT;
  const int threads = 256, blocks = elementwise_blocks(items, threads, 0);
  const FastDiv packs_per_half(static_cast<uint32_t>(ceil_div(h, kPack<T>))), group_div(static_cast<uint32_t>(groups)),
      seq_div(static_cast<uint32_t>(seq_len));
  MLSEM_WITH_VEC(vec, rope_kernel<T, VEC><<<blocks, threads, 0, s>>>(x, cosv, sinv, y, tokens, heads, head_dim,
                                                                     packs_per_half, group_div, seq_div));
  MLSEM_CHECK_LAUNCH();
  return 0;
}

// The hand-written (Hugging Face) form: x * cos + rotate_half(x) * sin, with
// rotate_half(x) = cat(-x2, x1) and cos, sin tables [seq_len, head_dim] in x's dtype
// (built here from the float half-tables, as the model builds them once).
template <class T>
__global__ void expand_table(const float* half_table, T* table, int64_t seq_len, int64_t h) {
  const int64_t n = seq_len * 2 * h;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t pos = i / (2 * h), c = i % (2 * h);
    table[i] = from_f<T>(half_table[pos * h + (c < h ? c : c - h)]);
  }
}

template <class T>
int baseline(const T* x, const float* cosv, const float* sinv, T* y, int64_t tokens, int64_t seq_len, int64_t heads,
             int64_t head_dim, cudaStream_t s) {
  using namespace eager;
  const int64_t h = head_dim / 2, rows = tokens * heads, n = rows * head_dim;
  Scratch scratch(s);
  T *cos_t, *sin_t, *neg, *rot, *a, *b;
  MLSEM_TRY(scratch.get(&cos_t, seq_len * head_dim));
  MLSEM_TRY(scratch.get(&sin_t, seq_len * head_dim));
  MLSEM_TRY(scratch.get(&neg, rows * h));
  MLSEM_TRY(scratch.get(&rot, n));
  MLSEM_TRY(scratch.get(&a, n));
  MLSEM_TRY(scratch.get(&b, n));
  const int threads = 256, table_blocks = elementwise_blocks(seq_len * head_dim, threads);
  expand_table<T><<<table_blocks, threads, 0, s>>>(cosv, cos_t, seq_len, h);
  expand_table<T><<<table_blocks, threads, 0, s>>>(sinv, sin_t, seq_len, h);
  MLSEM_CHECK_LAUNCH();
  MLSEM_TRY(unary(Unary::kNeg, x + h, head_dim, neg, rows, h, 0.f, s));  // -x2
  cat_kernel<T><<<elementwise_blocks(n, threads), threads, 0, s>>>(neg, h, x, head_dim, rot, rows, h);
  MLSEM_CHECK_LAUNCH();
  // Row r of [tokens * heads, head_dim] uses table row (r / heads) % seq_len.
  MLSEM_TRY(binary(Binary::kMul, x, static_cast<const T*>(cos_t), Bcast::kTable, a, rows, head_dim, s, heads, seq_len));
  MLSEM_TRY(binary(Binary::kMul, static_cast<const T*>(rot), static_cast<const T*>(sin_t), Bcast::kTable, b, rows,
                   head_dim, s, heads, seq_len));
  MLSEM_TRY(binary(Binary::kAdd, static_cast<const T*>(a), static_cast<const T*>(b), Bcast::kFull, y, rows, head_dim, s));
  return 0;
}

}  // namespace
}  // namespace mlsem_kernels

using namespace mlsem_kernels;

extern "C" int mlsem_rope_fused(const void* x, const float* cos, const float* sin, void* y, int64_t tokens,
                                int64_t seq_len, int64_t heads, int64_t head_dim, int dtype, mlsem_stream stream) {
  if (tokens <= 0 || seq_len <= 0 || heads <= 0 || head_dim <= 0 || head_dim % 2) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return fused(static_cast<const T*>(x), cos, sin, static_cast<T*>(y), tokens, seq_len, heads,
                                     head_dim, stream));
}

extern "C" int mlsem_rope_baseline(const void* x, const float* cos, const float* sin, void* y, int64_t tokens,
                                   int64_t seq_len, int64_t heads, int64_t head_dim, int dtype, mlsem_stream stream) {
  if (tokens <= 0 || seq_len <= 0 || heads <= 0 || head_dim <= 0 || head_dim % 2) return MLSEM_BAD_ARGUMENT;
  MLSEM_DISPATCH(dtype, return baseline(static_cast<const T*>(x), cos, sin, static_cast<T*>(y), tokens, seq_len,
                                        heads, head_dim, stream));
}
