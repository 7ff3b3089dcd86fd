"""Gated linear units (SwiGLU, GeGLU, sigmoid-gated) written as separate ops.

Models: a SwiGLU MLP with a fused up/gate projection split by chunk, a GeGLU where
the gate is the first half, a sigmoid-gated unit spelled sigmoid(a) * a * b (SiLU by
hand, then the gate), a gated unit through `nn.functional.silu`, and near-misses: a
plain SiLU MLP (no gate) and a GLU via F.glu, which is already one kernel.

Expected findings:
- FUS001 on the gate product line of SwiGLUPacked, GeGLUFirstHalf, SigmoidGatedMLP and
  gated_silu.
Not expected: FUS001 on SiLUMLP (activation without a gate) and on F.glu; FUS002 on
the lines whose product FUS001 covers (see llama.py).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SwiGLUPacked(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w12 = nn.Linear(dim, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x1, x2 = self.w12(x).chunk(2, dim=-1)
        hidden = F.silu(x1) * x2  # expect: FUS001
        return self.w3(hidden)


class GeGLUFirstHalf(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.proj_in = nn.Linear(dim, 2 * hidden)
        self.proj_out = nn.Linear(hidden, dim)

    def forward(self, x):
        gate, value = self.proj_in(x).chunk(2, dim=-1)
        return self.proj_out(F.gelu(gate) * value)  # expect: FUS001


class SigmoidGatedMLP(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        a = self.gate_proj(x)
        b = self.up_proj(x)
        return self.down_proj(torch.sigmoid(a) * a * b)  # expect: FUS001  # ok: FUS002


def gated_silu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return nn.functional.silu(gate) * up  # expect: FUS001


class SiLUMLP(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = F.silu(self.fc1(x))  # ok: FUS001  # hint: FUS002
        return self.fc2(h)


class GLUBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, kernel_size=1)

    def forward(self, x):
        return F.glu(self.conv(x), dim=1)  # ok: FUS001, FUS002
