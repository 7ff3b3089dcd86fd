"""Mixed-precision attention that upcasts the scores to fp32 around the softmax.

Models code trained in bf16 that keeps the softmax numerically safe by hand:
`scores.float()` before the softmax, `.to(v.dtype)` after, an additive causal mask
kept as a float buffer of 0 / -inf, and a logit soft-cap variant (tanh(s / cap) * cap,
as in Gemma 2) before the mask.

Expected findings:
- ATT001 at `out = probs @ v` in UpcastAttention.forward.
- FUS003 (a hint, below the default threshold) at the soft-cap line: scale, divide, tanh, multiply on the score tensor,
  each intermediate used once (the chain ends on that line).
Not expected: ATT001 in SoftcappedAttention: F.scaled_dot_product_attention has no
soft-cap, so its fix does not apply (FlexAttention's score_mod would).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_bias(seq_len: int) -> torch.Tensor:
    """(seq_len, seq_len) additive mask: 0 on and below the diagonal, -inf above."""
    return torch.triu(torch.full((seq_len, seq_len), float("-inf")), diagonal=1)


class UpcastAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int, max_len: int = 2048):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.register_buffer("mask", causal_bias(max_len), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:t, :t]
        probs = F.softmax(scores.float(), dim=-1).to(v.dtype)
        out = probs @ v  # expect: ATT001
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class SoftcappedAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int, softcap: float = 50.0):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.scaling = self.head_dim**-0.5
        self.softcap = softcap
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)

        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        scores = torch.tanh(scores / self.softcap) * self.softcap  # hint: FUS003
        scores = scores + attention_mask
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v)  # ok: ATT001
        return self.o_proj(out.transpose(1, 2).reshape(b, t, d))
