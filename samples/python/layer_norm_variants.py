"""LayerNorm written out by hand in the spellings found in the wild, and look-alikes that are not LayerNorm.

Models: a pre-norm block whose LayerNorm uses `x.var(unbiased=False)`, a norm using
the standard deviation with eps outside (`/ (std + eps)`, as in the Annotated
Transformer), a functional version on torch.* calls with the variance taken as the
mean of squares of the centered input and an affine step on the same line, and two
standardizations that are not layer norms: feature-wise over the batch dimension and
one global normalization of a 1-D advantage vector in an RL update, and a per-row
z-score of rewards (GRPO's group normalization, OpenRLHF).

Expected findings:
- NRM001 in VarLayerNorm.forward and layer_norm_fn, on the line computing the normalized
  output.
Not expected: NRM001 in StdLayerNorm.forward at the default --min-confidence (F.layer_norm
would change its numbers: reported below it, saying so), standardize_features (dim 0, across samples),
normalize_advantages (all elements of a vector) and group_normalize_rewards (over the last
dim, but a z-score with no learned scale of a few rewards per prompt): F.layer_norm is not
their fix.
Nor FUS003 there: only the subtract and the divide run on the full tensor (the eps
add is on the reduced statistics).
"""

import torch
import torch.nn as nn


class VarLayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        x_hat = (x - mean) / torch.sqrt(var + self.eps)  # expect: NRM001
        return self.gamma * x_hat + self.beta


class StdLayerNorm(nn.Module):
    """Layer norm with eps added to the standard deviation."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2  # ok: NRM001


def layer_norm_fn(x, weight, bias, eps=1e-5):
    centered = x - torch.mean(x, dim=-1, keepdim=True)
    variance = torch.mean(centered * centered, dim=-1, keepdim=True)
    return centered * torch.rsqrt(variance + eps) * weight + bias  # expect: NRM001


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = VarLayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return x + self.fn(self.norm(x))


def standardize_features(x: torch.Tensor) -> torch.Tensor:
    """Zero-mean, unit-variance features across the batch (dim 0)."""
    return (x - x.mean(dim=0, keepdim=True)) / (x.std(dim=0, keepdim=True) + 1e-8)  # ok: NRM001, FUS003


def normalize_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """PPO advantage normalization over the whole rollout."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)  # ok: NRM001, FUS003


def group_normalize_rewards(rewards: torch.Tensor) -> torch.Tensor:
    """GRPO: each prompt's sampled rewards as z-scores within the prompt's group."""
    return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)  # ok: NRM001, FUS003
