"""Norms in the numeric variants of current LLM and vision code, and look-alikes.

Models: RMSNorm as in Llama (fp32, cast back to the input dtype, then the weight), as in
OLMo 2 (the weight applied in fp32, then cast back), as in Gemma 4 (the root as
`pow(ms, -0.5)`), a per-token mean/variance normalization without affine (LayerNorm
without weight or bias), a LayerNorm through `torch.var_mean`, one with the unbiased
`x.var()`, and near-misses: a cosine-similarity L2 normalization with eps, a channel-first
LayerNorm2d (statistics over dim 1), and a focal-weighted log-softmax product.

Expected findings:
- NRM002 on the normalized-output line of LlamaStyleRMSNorm, Olmo2StyleRMSNorm and
  PowRMSNorm (each with its own message: Llama's weight-after-downcast form is flagged as
  differing from F.rms_norm in the last bit, OLMo 2's as the same numbers).
- NRM001 in TokenStandardize (no affine) and VarMeanLayerNorm.
- FUS003 (a hint, below the default threshold) (preview) on LayerNorm2d's normalization and the focal weights: pointwise chains.
Not expected: NRM001 in UnbiasedLayerNorm at the default --min-confidence (reported below
it, saying that F.layer_norm changes the results slightly); NRM002 on l2_normalize_eps (x / (||x|| + eps), no 1/sqrt(d): F.normalize);
NRM001 on LayerNorm2d (over channels, dim 1: F.layer_norm needs a permute); LOS001 on
focal_weighted (log-probabilities times computed weights is not cross-entropy).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LlamaStyleRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        return self.weight * hidden_states.to(input_dtype)


class Olmo2StyleRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        return (self.weight * hidden_states).to(input_dtype)


class PowRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        mean_squared = x32.pow(2).mean(-1, keepdim=True) + self.eps
        normed = x32 * torch.pow(mean_squared, -0.5)  # expect: NRM002
        return (normed * self.weight.float()).type_as(x)


def l2_normalize_eps(embeds: torch.Tensor) -> torch.Tensor:
    return embeds / (torch.linalg.norm(embeds, dim=-1, keepdim=True) + 1e-6)  # ok: NRM002


class TokenStandardize(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        centered = x - mean
        rms = (centered.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt()
        return centered / rms  # expect: NRM001


class VarMeanLayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias  # expect: NRM001


class UnbiasedLayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias  # ok: NRM001


class LayerNorm2d(nn.Module):
    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        s, u = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
        x = (x - u) * torch.rsqrt(s + self.eps)  # ok: NRM001  # hint: FUS003
        return x * self.weight[:, None, None] + self.bias[:, None, None]


def focal_weighted(logits: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    log_probs = F.log_softmax(logits, dim=-1)
    weights = torch.pow(1 - log_probs.exp(), gamma)  # hint: FUS003
    return log_probs * weights  # ok: LOS001
