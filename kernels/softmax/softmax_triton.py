"""Softmax over the last dim in Triton: the Triton rung of the ladder for softmax.

Rows that fit (up to 16384 columns) are held whole in registers: one read, one write.
Longer rows loop over chunks with the online (max, sum) recurrence, then a second loop
writes the output; the second read of a row mostly hits L2, since only a few rows per SM
are in flight."""
import triton
import triton.language as tl

MAX_CACHED = 16384


@triton.jit
def _softmax_row(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + row * cols + c, mask=m, other=-float("inf")).to(tl.float32)
    mx = tl.max(x, axis=0)
    e = tl.exp(x - mx)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * cols + c, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _softmax_online(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    c = tl.arange(0, BLOCK)
    m_i = tl.full([BLOCK], -float("inf"), tl.float32)
    s_i = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        msk = start + c < cols
        x = tl.load(x_ptr + base + start + c, mask=msk, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        # lanes still at -inf keep a zero sum (avoid inf - inf)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m_i - m_new))
        s_i = s_i * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m_i = m_new
    mx = tl.max(m_i, axis=0)
    total = tl.sum(s_i * tl.exp(m_i - mx), axis=0)
    inv = 1.0 / total
    for start in range(0, cols, BLOCK):
        msk = start + c < cols
        x = tl.load(x_ptr + base + start + c, mask=msk, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + base + start + c, (tl.exp(x - mx) * inv).to(y_ptr.dtype.element_ty), mask=msk)


def softmax(x, y):
    """y = softmax(x, -1) for a contiguous 2-D x; writes y, returns it."""
    rows, cols = x.shape
    if cols <= MAX_CACHED:
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        _softmax_row[(rows,)](x, y, cols, BLOCK=block, num_warps=warps)
    else:
        _softmax_online[(rows,)](x, y, cols, BLOCK=4096, num_warps=8)
    return y
