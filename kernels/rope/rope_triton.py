"""Rotary position embedding (rotate_half form) in Triton: the Triton rung for rope.

x [tokens, heads, dim]; cos and sin float32 [seq, dim / 2]; token t has position t % seq.
One program per block of tokens: the cos/sin row of a token is loaded once and broadcast
over its heads; y[..., :h] = x1 c - x2 s, y[..., h:] = x2 c + x1 s."""
import triton
import triton.language as tl


@triton.jit
def _rope_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, tokens, seq, heads, HALF: tl.constexpr,
                 HEADS_P: tl.constexpr, HALF_P: tl.constexpr, BLOCK_T: tl.constexpr):
    dim = 2 * HALF
    h = tl.arange(0, HEADS_P)
    j = tl.arange(0, HALF_P)
    for i in range(BLOCK_T):
        t = tl.program_id(0).to(tl.int64) * BLOCK_T + i
        if t < tokens:
            pos = t % seq
            jm = j < HALF
            c = tl.load(cos_ptr + pos * HALF + j, mask=jm, other=0.0)
            s = tl.load(sin_ptr + pos * HALF + j, mask=jm, other=0.0)
            m = (h[:, None] < heads) & jm[None, :]
            base = x_ptr + t * heads * dim + h[:, None] * dim + j[None, :]
            x1 = tl.load(base, mask=m, other=0.0).to(tl.float32)
            x2 = tl.load(base + HALF, mask=m, other=0.0).to(tl.float32)
            out = y_ptr + t * heads * dim + h[:, None] * dim + j[None, :]
            ty = y_ptr.dtype.element_ty
            tl.store(out, (x1 * c[None, :] - x2 * s[None, :]).to(ty), mask=m)
            tl.store(out + HALF, (x2 * c[None, :] + x1 * s[None, :]).to(ty), mask=m)


def rope(x, cos, sin, y, seq):
    tokens, heads, dim = x.shape
    if dim % 2:
        raise ValueError("rope_triton: head_dim must be even")
    half = dim // 2
    heads_p, half_p = triton.next_power_of_2(heads), triton.next_power_of_2(half)
    block_t = max(1, 4096 // (heads_p * half_p * 2))
    _rope_kernel[(triton.cdiv(tokens, block_t),)](x, cos, sin, y, tokens, seq, heads, HALF=half, HEADS_P=heads_p,
                                                  HALF_P=half_p, BLOCK_T=block_t, num_warps=4)
    return y
