"""Flash-attention forward in Triton: the Triton rung of the ladder for attention_fwd.

q, k, v, o: [batch, heads, seq, head_dim] contiguous, 16-bit. One program per (query
block, batch * head): scores S = Q K^T on the tensor cores (Triton emits wgmma on
Hopper), the online softmax in float32 with exp2 (log2(e) folded into the scale), then
O += P V. With a causal mask, the key blocks wholly below the diagonal run without masks
and only the diagonal blocks pay for them; keys past the sequence end are masked in the
last block."""
import math

import triton
import triton.language as tl


@triton.jit
def _attn_block(acc, l_i, m_i, q, k_base, v_base, start_m, lo, hi, T, qk_scale,
                offs_m, offs_n, offs_d, MASKED: tl.constexpr, CAUSAL: tl.constexpr, D: tl.constexpr,
                BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        kn = start_n + offs_n
        if MASKED:
            k = tl.load(k_base + kn[None, :] * D + offs_d[:, None], mask=kn[None, :] < T, other=0.0)
        else:
            k = tl.load(k_base + kn[None, :] * D + offs_d[:, None])
        s = tl.dot(q, k) * qk_scale
        if MASKED:
            keep = kn[None, :] < T
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= kn[None, :])
            s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_base + kn[:, None] * D + offs_d[None, :], mask=kn[:, None] < T, other=0.0)
        else:
            v = tl.load(v_base + kn[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    ],
    key=["T", "D", "CAUSAL"],
)
@triton.jit
def _attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, T, sm_scale, D: tl.constexpr, CAUSAL: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * T * D
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    qmask = offs_m[:, None] < T
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :], mask=qmask, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    k_base = k_ptr + base
    v_base = v_ptr + base
    if CAUSAL:
        # key blocks entirely at or below the first query row of this block need no mask
        unmasked_hi = (start_m * BLOCK_M) // BLOCK_N * BLOCK_N
        hi = tl.minimum((start_m + 1) * BLOCK_M, T)
    else:
        unmasked_hi = T // BLOCK_N * BLOCK_N
        hi = T
    acc, l_i, m_i = _attn_block(acc, l_i, m_i, q, k_base, v_base, start_m, 0, unmasked_hi, T, qk_scale,
                                offs_m, offs_n, offs_d, False, CAUSAL, D, BLOCK_N)
    acc, l_i, m_i = _attn_block(acc, l_i, m_i, q, k_base, v_base, start_m, unmasked_hi, hi, T, qk_scale,
                                offs_m, offs_n, offs_d, True, CAUSAL, D, BLOCK_N)
    # rows past T (masked out of the store) may hold 0/0; every real row saw key 0
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], out.to(o_ptr.dtype.element_ty), mask=qmask)


def attention_fwd(q, k, v, o, causal):
    """o = softmax(q k^T / sqrt(d) [+ causal mask]) v; writes o, returns it."""
    b, h, t, d = q.shape
    if d not in (16, 32, 64, 128, 256):
        raise ValueError(f"attention_fwd_triton: head_dim {d} is not a power of two in [16, 256]")
    grid = lambda meta: (triton.cdiv(t, meta["BLOCK_M"]), b * h)  # noqa: E731
    _attn_fwd[grid](q, k, v, o, t, 1.0 / math.sqrt(d), D=d, CAUSAL=bool(causal))
    return o
