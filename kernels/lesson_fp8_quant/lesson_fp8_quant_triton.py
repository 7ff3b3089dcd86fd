"""Row-wise fp8 (e4m3) quantization in Triton: the Triton rung of the ladder for
lesson_fp8_quant. One program per row; a row of up to 16384 columns is held in registers
(one read), a longer one is read twice (amax, then scale and cast)."""
import triton
import triton.language as tl


@triton.jit
def _fp8_quant_kernel(x_ptr, q_ptr, s_ptr, cols, BLOCK: tl.constexpr, CHUNKS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    xr, qr = x_ptr + row * cols, q_ptr + row * cols
    c = tl.arange(0, BLOCK)
    if CHUNKS == 1:
        m = c < cols
        x = tl.load(xr + c, mask=m, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-12)
        tl.store(s_ptr + row, amax / 448.0)
        q = tl.clamp(x * (448.0 / amax), -448.0, 448.0)
        tl.store(qr + c, q.to(q_ptr.dtype.element_ty), mask=m)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(CHUNKS):
            m = k * BLOCK + c < cols
            acc = tl.maximum(acc, tl.abs(tl.load(xr + k * BLOCK + c, mask=m, other=0.0).to(tl.float32)))
        amax = tl.maximum(tl.max(acc, axis=0), 1e-12)
        tl.store(s_ptr + row, amax / 448.0)
        for k in range(CHUNKS):
            m = k * BLOCK + c < cols
            x = tl.load(xr + k * BLOCK + c, mask=m, other=0.0).to(tl.float32)
            q = tl.clamp(x * (448.0 / amax), -448.0, 448.0)
            tl.store(qr + k * BLOCK + c, q.to(q_ptr.dtype.element_ty), mask=m)


def fp8_quant(x, q, scale):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    chunks = 1
    if block > 16384:
        block, chunks = 8192, triton.cdiv(cols, 8192)
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    _fp8_quant_kernel[(rows,)](x, q, scale, cols, BLOCK=block, CHUNKS=chunks, num_warps=warps)
    return q
