"""Grouped-query attention that SDPA's enable_gqa cannot take, or that never copies.

A timm-style model file: its registered configurations never set num_kv_heads, so
`num_kv_heads or num_heads` leaves one group and the copy never runs.

Expected findings: none by default.
Not expected (near misses, marked ok):
- K/V copies in an attention with sinks: the scores also feed a logsumexp, which SDPA
  does not return (the model declares `_supports_sdpa = False`);
- the same model's hand-written attention (ATT001): demoted for the same reason;
- K/V copies of the ViT below, whose configurations never group K/V heads.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def register_model(fn):
    return fn


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class SinkAttention(nn.Module):
    def __init__(self, dim, heads, kv_groups):
        super().__init__()
        self.num_key_value_groups = kv_groups
        self.sinks = nn.Parameter(torch.zeros(heads))

    def forward(self, query, key, value, attention_mask, scaling):
        key_states = repeat_kv(key, self.num_key_value_groups)  # ok: ATT002
        value_states = repeat_kv(value, self.num_key_value_groups)  # ok: ATT002
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        attn_weights = attn_weights + attention_mask
        lse = torch.logsumexp(attn_weights, dim=-1)
        sink_scale = (lse - self.sinks.view(1, -1, 1)).sigmoid()
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)  # ok: ATT001
        return attn_output * sink_scale.unsqueeze(-1)


class ViTAttention(nn.Module):
    def __init__(self, dim, num_heads, num_kv_heads=None):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads or num_heads
        self.num_kv_groups = num_heads // self.num_kv_heads
        self.head_dim = dim // num_heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, self.num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(dim, self.num_kv_heads * self.head_dim)

    def forward(self, x):
        B, N, C = x.shape
        q = self.q_proj(x).view(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, N, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, N, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if self.num_kv_groups > 1:
            k = k.repeat_interleave(self.num_kv_groups, dim=1)  # ok: ATT002
            v = v.repeat_interleave(self.num_kv_groups, dim=1)  # ok: ATT002
        x = F.scaled_dot_product_attention(q, k, v)
        return x.transpose(1, 2).reshape(B, N, C)


@register_model
def vit_small(pretrained=False, **kwargs):
    return ViTAttention(dim=384, num_heads=6, **kwargs)
