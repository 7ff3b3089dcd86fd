"""Grouped-query attention that materializes the shared K/V heads before SDPA.

Models two common ways of widening K/V from n_kv_heads to n_heads before calling
F.scaled_dot_product_attention without enable_gqa: `repeat_interleave` along the head
dimension (Mistral-style ports), and `.repeat` on an inserted axis followed by a
flatten (a Falcon-style port).

Expected findings:
- ATT002 on the two repeat_interleave lines in GQAttention.forward.
- ATT002 on the two `.repeat(...)` lines in MultiQueryAttention.forward.
Not expected: ATT001 (attention already goes through F.scaled_dot_product_attention).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GQAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.q_proj = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.kv_proj = nn.Linear(dim, 2 * n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        q = self.q_proj(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv_proj(x).view(bsz, seqlen, 2, self.n_kv_heads, self.head_dim).unbind(2)
        k = k.transpose(1, 2)
        v = v.transpose(1, 2)

        n_rep = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(n_rep, dim=1)  # expect: ATT002
        v = v.repeat_interleave(n_rep, dim=1)  # expect: ATT002

        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # ok: ATT001
        return self.o_proj(out.transpose(1, 2).reshape(bsz, seqlen, -1))


class MultiQueryAttention(nn.Module):
    """One shared K/V head for all query heads."""

    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.query_key_value = nn.Linear(dim, dim + 2 * self.head_dim, bias=False)
        self.dense = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, dim = x.shape
        fused = self.query_key_value(x)
        q, k, v = fused.split([dim, self.head_dim, self.head_dim], dim=-1)
        q = q.view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, 1, seqlen, self.head_dim)
        v = v.view(bsz, 1, seqlen, self.head_dim)

        k = k[:, :, None].repeat(1, 1, self.n_heads, 1, 1).flatten(1, 2)  # expect: ATT002
        v = v[:, :, None].repeat(1, 1, self.n_heads, 1, 1).flatten(1, 2)  # expect: ATT002

        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # ok: ATT001
        return self.dense(out.transpose(1, 2).reshape(bsz, seqlen, dim))
