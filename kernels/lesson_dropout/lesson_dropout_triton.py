"""Low-memory dropout in Triton: the Triton rung of the ladder for lesson_dropout.

The same mask as the CUDA kernel: Triton's Philox4x32-10 (triton.language.random.philox)
on counter (offset + i // 4, 0) under key `seed`, word i % 4 for element i, kept when its
top 24 bits reach the threshold. One program per BLOCK elements draws BLOCK / 4 Philox
blocks and interleaves their four words into element order. The backward is the same
kernel on dy."""
import math

import triton
import triton.language as tl
from triton.language.random import philox


@triton.jit
def _dropout_kernel(x_ptr, y_ptr, n, threshold, scale, seed, offset, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    G: tl.constexpr = BLOCK // 4
    c = pid * G + tl.arange(0, G).to(tl.int64) + offset  # one 128-bit counter per 4 elements
    c0 = (c & 0xFFFFFFFF).to(tl.uint32)
    c1 = (c >> 32).to(tl.uint32)
    zero = tl.zeros_like(c0)
    r0, r1, r2, r3 = philox(seed, c0, c1, zero, zero)
    # tl.join adds a last axis: join(join(r0, r2), join(r1, r3))[g, j, k] is word 2 * j + k of
    # block g, so the flattened order is r0, r1, r2, r3 of each block: element order.
    words = tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), [BLOCK])
    keep = (words >> 8).to(tl.int32) >= threshold
    i = pid * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + i, tl.where(keep, x * scale, 0.0).to(y_ptr.dtype.element_ty), mask=m)


def dropout(x, y, p, seed, offset, dy=None, dx=None, block=2048):
    """y = dropout(x); with dy and dx also the backward dx = dy * mask / (1 - p)."""
    n = x.numel()
    threshold = math.ceil(p * (1 << 24))  # keep when the word's top 24 bits reach it (common/philox.h)
    grid = (triton.cdiv(n, block),)
    for src, dst in ((x, y), (dy, dx)):
        if src is not None:
            _dropout_kernel[grid](src, dst, n, threshold, 1.0 / (1.0 - p), seed, offset, BLOCK=block, num_warps=8)
    return y
