"""One function compiled with @torch.compile, another not.

Expected findings: ACT001 on gelu_eager. Not expected: ACT001 on gelu_compiled, which
torch.compile fuses.
"""

import math

import torch


@torch.compile
def gelu_compiled(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # ok: ACT001


def gelu_eager(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # expect: ACT001
