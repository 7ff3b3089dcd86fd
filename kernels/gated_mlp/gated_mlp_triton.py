"""act(gate) * up in Triton (SwiGLU: silu, GeGLU: erf GELU): the Triton rung for gated_mlp.

gate and up are the two halves of one [rows, 2 * cols] projection (row stride ld_in), as
x.chunk(2, -1) gives them: read in place, no copy; y is [rows, cols] contiguous."""
import triton
import triton.language as tl


@triton.jit
def _gated_kernel(g_ptr, u_ptr, y_ptr, rows, cols, ld_in, GELU: tl.constexpr, BLOCK_R: tl.constexpr,
                  BLOCK_C: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (r[:, None] < rows) & (c[None, :] < cols)
    g = tl.load(g_ptr + r[:, None] * ld_in + c[None, :], mask=m, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + r[:, None] * ld_in + c[None, :], mask=m, other=0.0).to(tl.float32)
    if GELU:
        a = 0.5 * g * (1.0 + tl.erf(g * 0.7071067811865476))
    else:
        a = g * tl.sigmoid(g)
    tl.store(y_ptr + r[:, None] * cols + c[None, :], (a * u).to(y_ptr.dtype.element_ty), mask=m)


def gated_mlp(g, u, ld_in, y, geglu):
    rows, cols = y.shape
    block_c = min(1024, triton.next_power_of_2(cols))
    block_r = max(1, 4096 // block_c)
    grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
    _gated_kernel[grid](g, u, y, rows, cols, ld_in, GELU=bool(geglu), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    return y
