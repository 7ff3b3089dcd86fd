"""GELU computed by formula in the spellings seen in ported code, and activations that are not GELU.

Models: the tanh approximation with the constant written as 0.7978845608 and the cube
as `x * x * x`, a version with `torch.pow` (and the same as a torch.jit.script function,
which TorchScript's GPU fuser already fuses: demoted as `compiled`), a two-line
version with intermediate variables, the exact erf form with 1.4142135623730951, and
near-misses: QuickGELU (x * sigmoid(1.702 x), a different function that F.gelu does
not compute) and F.gelu itself.

Expected findings:
- ACT001 on the formula line of gelu_fast, gelu_pow, TwoLineGELU.forward and erf_gelu.
- FUS003 (a hint, below the default threshold) on QuickGELU: scale, sigmoid and multiply, three kernels on the full tensor.
Not expected: ACT001 on QuickGELU, on F.gelu or on gelu_jit; FUS001 on QuickGELU (one tensor,
no gate).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def gelu_fast(x):
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))  # expect: ACT001


def gelu_pow(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * torch.pow(x, 3))))  # expect: ACT001


@torch.jit.script
def gelu_jit(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * torch.pow(x, 3))))  # ok: ACT001


class TwoLineGELU(nn.Module):
    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))
        return 0.5 * x * (1.0 + inner.tanh())  # expect: ACT001


def erf_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.4142135623730951))  # expect: ACT001


class QuickGELU(nn.Module):
    """The sigmoid approximation used by CLIP; not the same function as GELU."""

    def forward(self, x: torch.Tensor):
        return x * torch.sigmoid(1.702 * x)  # ok: ACT001, FUS001  # hint: FUS003


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act="tanh"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.approximate = act

    def forward(self, x):
        h = self.fc1(x)
        h = F.gelu(h, approximate=self.approximate)  # ok: ACT001  # hint: FUS002
        return self.fc2(h)
