"""Grouped-query attention done right: K/V heads stay shared through SDPA's enable_gqa.

Models a Llama-3-style attention layer on PyTorch >= 2.5 with the fused pieces:
nn.RMSNorm for the q/k norms (as in Qwen3 and OLMo 2), F.scaled_dot_product_attention
with enable_gqa=True and is_causal, and a KV cache updated with torch.cat. Also a
decode step that broadcasts the single new query with expand, which is not a head
repeat.

Expected findings: none (every line with a pattern-shaped operation carries an ok mark).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GQAttentionFused(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, eps: float = 1e-6):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.q_norm = nn.RMSNorm(self.head_dim, eps=eps)
        self.k_norm = nn.RMSNorm(self.head_dim, eps=eps)

    def forward(self, x: torch.Tensor, cache_k=None, cache_v=None):
        bsz, seqlen, _ = x.shape
        q = self.q_norm(self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)).transpose(1, 2)  # ok: NRM002
        k = self.k_norm(self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)).transpose(1, 2)  # ok: NRM002
        v = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache_k is not None:
            k = torch.cat([cache_k, k], dim=2)
            v = torch.cat([cache_v, v], dim=2)

        out = F.scaled_dot_product_attention(q, k, v, is_causal=cache_k is None, enable_gqa=True)  # ok: ATT001, ATT002
        out = out.transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.wo(out), k, v

    def decode_step(self, x_t: torch.Tensor, cache_k: torch.Tensor, cache_v: torch.Tensor, pos_bias: torch.Tensor):
        """One new token against the cache; the position bias is broadcast over heads."""
        bsz = x_t.shape[0]
        q = self.wq(x_t).view(bsz, 1, self.n_heads, self.head_dim).transpose(1, 2)
        bias = pos_bias[:, None, None, :].expand(bsz, self.n_heads, 1, -1)  # ok: ATT002
        out = F.scaled_dot_product_attention(q, cache_k, cache_v, attn_mask=bias, enable_gqa=True)  # ok: ATT001, ATT002
        return self.wo(out.transpose(1, 2).reshape(bsz, 1, -1))
