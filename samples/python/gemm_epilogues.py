"""Linear and convolution outputs fed straight into an activation, and look-alikes.

Models small modules from different domains: a value head with tanh (RL), a gating
branch with sigmoid, a functional MLP on F.linear with nn.functional.silu, the
method form `.relu()` on a Linear output, a GAN discriminator conv with F.relu via
an alias; and near-misses: Linear -> LayerNorm -> GELU, Linear -> softmax, an
activation of the input, and an MLP under @torch.compile (which already fuses).

Expected findings:
- FUS002 (a hint, below the default threshold) on the activation line of functional_mlp, MethodReluMLP and Discriminator:
  an activation between two GEMMs.
- FUS003 (a hint, below the default threshold) on GatedResidual's blend: subtract, multiply, add in a row (torch.lerp).
Not expected: FUS002 on ValueHead (a head: one small vector per state, demoted below
the default threshold), GatedResidual (a sigmoid gate no second GEMM reads), NormedProjection, PolicyHead, input_activation and
compiled_mlp (torch.compile is the rule's own fix).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.functional as nnf


class ValueHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))  # ok: FUS002


class GatedResidual(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(2 * dim, dim)

    def forward(self, x, residual):
        g = torch.sigmoid(self.gate(torch.cat([x, residual], dim=-1)))  # ok: FUS002
        return g * x + (1 - g) * residual  # hint: FUS003


def functional_mlp(x, w1, b1, w2, b2):
    h = nn.functional.silu(F.linear(x, w1, b1))  # hint: FUS002
    return F.linear(h, w2, b2)


class MethodReluMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())  # hint: FUS002


class Discriminator(nn.Module):
    def __init__(self, channels=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 4, stride=2, padding=1)
        self.conv2 = nn.Conv2d(channels, 1, 4, stride=1, padding=0)

    def forward(self, img):
        h = nnf.relu(self.conv1(img))  # hint: FUS002
        return self.conv2(h).flatten(1)


class NormedProjection(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return F.gelu(self.norm(self.proj(x)))  # ok: FUS002


class PolicyHead(nn.Module):
    def __init__(self, dim, n_actions):
        super().__init__()
        self.logits = nn.Linear(dim, n_actions)

    def forward(self, x):
        return F.softmax(self.logits(x), dim=-1)  # ok: FUS002


def input_activation(x, linear: nn.Linear):
    return linear(F.relu(x))  # ok: FUS002


@torch.compile
def compiled_mlp(x, fc1: nn.Linear, fc2: nn.Linear):
    return fc2(F.gelu(fc1(x)))  # ok: FUS002
