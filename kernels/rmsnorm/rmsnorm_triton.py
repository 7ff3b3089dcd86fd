"""RMSNorm (Llama form) in Triton: the Triton rung of the ladder for rmsnorm.

One program per row, the row held in registers: one read, one write; float32 math."""
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + row * cols + c, mask=m, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + c, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def rmsnorm(x, w, y, eps):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    if block > 65536:
        raise ValueError(f"rmsnorm_triton: rows of {cols} columns do not fit one program")
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    _rmsnorm_kernel[(rows,)](x, w, y, cols, eps, BLOCK=block, num_warps=warps)
    return y
