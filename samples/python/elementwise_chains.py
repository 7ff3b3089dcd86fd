"""Chains of pointwise ops that each launch a kernel, and short or shared ones that do not matter.

Models: the Snake periodic activation of neural vocoders, Mish by formula, FiLM
conditioning followed by ReLU across three statements, a bias + GELU + dropout +
residual tail (Megatron-style, unfused), and final-logit soft-capping; near-misses:
a two-op affine rescale and a three-op expression whose intermediate is used twice.

Expected findings:
- FUS003 (a hint, below the default threshold) on the line of the last op of each chain: snake, mish, FiLMBlock (the relu
  line), BiasGeluDropoutAdd, softcap_logits.
Not expected: FUS003 on rescale (two ops) and on sigmoid_grad (sigmoid(x) used twice).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def snake(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """Snake activation: x + sin²(αx) / α."""
    return x + (1.0 / (alpha + 1e-9)) * torch.sin(alpha * x) ** 2  # hint: FUS003


def mish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.tanh(F.softplus(x))  # hint: FUS003


class FiLMBlock(nn.Module):
    """Feature-wise linear modulation of a conv feature map, then ReLU."""

    def __init__(self, channels: int, cond_dim: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.BatchNorm2d(channels, affine=False)
        self.to_gamma_beta = nn.Linear(cond_dim, 2 * channels)

    def forward(self, x, cond):
        gamma, beta = self.to_gamma_beta(cond).chunk(2, dim=-1)
        h = self.norm(self.conv(x))  # expect: LAY001
        h = h * gamma[:, :, None, None]
        h = h + beta[:, :, None, None]
        h = torch.relu(h)  # hint: FUS003
        return h


class BiasGeluDropoutAdd(nn.Module):
    """The tail of a transformer MLP whose bias is kept out of the GEMM."""

    def __init__(self, hidden: int, p: float = 0.1):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.p = p

    def forward(self, h, residual):
        return residual + F.dropout(F.gelu(h + self.bias), p=self.p, training=self.training)  # hint: FUS003


def softcap_logits(logits: torch.Tensor, cap: float = 30.0) -> torch.Tensor:
    return torch.tanh(logits / cap) * cap  # hint: FUS003


def rescale(x: torch.Tensor) -> torch.Tensor:
    """Maps [0, 1] images to [-1, 1]."""
    return x * 2.0 - 1.0  # ok: FUS003


def sigmoid_grad(x: torch.Tensor) -> torch.Tensor:
    """Derivative of the logistic function, s * (1 - s)."""
    s = torch.sigmoid(x)
    return s * (1.0 - s)  # ok: FUS003
