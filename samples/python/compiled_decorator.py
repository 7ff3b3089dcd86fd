"""Functions compiled with @torch.compile, others not. A decorator call
(`@torch.compile(mode=...)`) compiles its function only, not the whole file; a compiled
function nested in another is named as the IR names it (make_gelu.inner).

Expected findings: ACT001 on gelu_eager and on the top-level inner. Not expected: ACT001
on gelu_compiled, gelu_tuned or make_gelu's inner, which torch.compile fuses.
"""

import math

import torch


@torch.compile
def gelu_compiled(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # ok: ACT001


@torch.compile(mode="max-autotune")
def gelu_tuned(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # ok: ACT001


def gelu_eager(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # expect: ACT001


def make_gelu():
    @torch.compile
    def inner(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # ok: ACT001

    return inner


def inner(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # expect: ACT001
