"""RMSNorm written out by hand in several spellings, and a near-miss.

Models: division by sqrt(mean(x²) + eps), the norm-based form
`x / (x.norm(2, dim=-1, keepdim=True) * d ** -0.5 + eps)` (eps outside), a Gemma-style
norm with fp32 compute and a `(1 + weight)` scale, a functional rms_norm helper on
the mean of `x * x`, and, as a near-miss, a plain L2 normalization of embeddings.

Expected findings:
- NRM002 on the normalized-output line of SqrtRMSNorm, NormRMSNorm, GemmaRMSNorm and
  rms_norm.
Not expected: NRM002 in l2_normalize (x / ||x||: no 1/sqrt(d), no eps; F.normalize is
its fused form, and it is not an RMS norm).
"""

import torch
import torch.nn as nn


class SqrtRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-8):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        normed = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # expect: NRM002
        return normed * self.scale


class NormRMSNorm(nn.Module):
    """RMS norm via the L2 norm: ||x|| / sqrt(d) is the root mean square."""

    def __init__(self, dim, eps=1e-8):
        super().__init__()
        self.d = dim
        self.eps = eps
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = x.norm(2, dim=-1, keepdim=True) * self.d**-0.5
        return self.g * x / (rms + self.eps)  # expect: NRM002


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x32 = x.float()
        output = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)  # expect: NRM002
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def rms_norm(x, weight, eps=1e-6):
    mean_square = torch.mean(x * x, dim=-1, keepdim=True)
    return x * torch.rsqrt(mean_square + eps) * weight  # expect: NRM002


def l2_normalize(embeddings: torch.Tensor) -> torch.Tensor:
    """Unit-length embeddings for cosine similarity search."""
    return embeddings / embeddings.norm(p=2, dim=-1, keepdim=True)  # ok: NRM002
