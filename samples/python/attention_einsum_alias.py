"""Perceiver-style cross-attention written with `from torch import einsum` and einops.

Models: latents attending to a long input array; heads split and merged with einops
`rearrange`, scores by `einsum('b i d, b j d -> b i j', q, k) * self.scale`, a
boolean padding mask applied with masked_fill(~mask, -finfo.max), softmax as a
method, and the weighted sum by a second einsum; the feed-forward is GEGLU.

Expected findings:
- ATT001 at `out = einsum('b i j, b j d -> b i d', attn, v)`.
- FUS001 at `return x * F.gelu(gates)` in GEGLU.
Not expected: FUS002 on the GEGLU: its GELU input is one half of a chunked Linear
output, and FUS001 already covers the gate.
"""

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from torch import einsum, nn


class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)  # expect: FUS001  # ok: FUS002


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult * 2), GEGLU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = context_dim if context_dim is not None else query_dim
        self.scale = dim_head**-0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias=False)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, context=None, mask=None):
        h = self.heads
        q = self.to_q(x)
        context = x if context is None else context
        k, v = self.to_kv(context).chunk(2, dim=-1)

        q = rearrange(q, "b n (h d) -> (b h) n d", h=h)
        k = rearrange(k, "b n (h d) -> (b h) n d", h=h)
        v = rearrange(v, "b n (h d) -> (b h) n d", h=h)

        sim = einsum("b i d, b j d -> b i j", q, k) * self.scale

        if mask is not None:
            mask = rearrange(mask, "b ... -> b (...)")
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = repeat(mask, "b j -> (b h) () j", h=h)
            sim = sim.masked_fill(~mask, max_neg_value)

        attn = sim.softmax(dim=-1)
        out = einsum("b i j, b j d -> b i d", attn, v)  # expect: ATT001
        out = rearrange(out, "(b h) n d -> b n (h d)", h=h)
        return self.to_out(out)


class PerceiverBlock(nn.Module):
    def __init__(self, latent_dim, input_dim, heads=1):
        super().__init__()
        self.norm_latents = nn.LayerNorm(latent_dim)
        self.norm_context = nn.LayerNorm(input_dim)
        self.cross_attn = CrossAttention(latent_dim, input_dim, heads=heads)
        self.norm_ff = nn.LayerNorm(latent_dim)
        self.ff = FeedForward(latent_dim)

    def forward(self, latents, data, mask=None):
        latents = latents + self.cross_attn(self.norm_latents(latents), self.norm_context(data), mask=mask)
        return latents + self.ff(self.norm_ff(latents))
