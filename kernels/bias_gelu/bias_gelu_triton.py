"""bias + GELU in Triton: the Triton rung of the ladder for bias_gelu.

One program per (row block, column block) tile: the bias tile is loaded once and reused
for every row of the tile, so no per-element modulo is needed; math in float32.
tanh form: 0.5 h (1 + tanh(u)) = h * sigmoid(2u), u = sqrt(2/pi) (h + 0.044715 h^3)."""
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_kernel(x_ptr, b_ptr, y_ptr, rows, cols, TANH: tl.constexpr, BLOCK_R: tl.constexpr,
                      BLOCK_C: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    r = pid_r.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < cols
    m = (r[:, None] < rows) & cm[None, :]
    offs = r[:, None] * cols + c[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + c, mask=cm, other=0.0).to(tl.float32)
    h = x + b[None, :]
    if TANH:
        u = 0.7978845608028654 * (h + 0.044715 * h * h * h)
        g = h * tl.sigmoid(2.0 * u)
    else:
        g = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(y_ptr + offs, g.to(y_ptr.dtype.element_ty), mask=m)


def bias_gelu(x, b, y, approximate_tanh):
    """y = gelu(x + b) for x [rows, cols], b [cols]; writes y, returns it."""
    rows, cols = x.shape
    block_c = min(1024, triton.next_power_of_2(cols))
    block_r = max(1, 4096 // block_c)
    grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
    _bias_gelu_kernel[grid](x, b, y, rows, cols, TANH=bool(approximate_tanh), BLOCK_R=block_r, BLOCK_C=block_c,
                            num_warps=8)
    return y
