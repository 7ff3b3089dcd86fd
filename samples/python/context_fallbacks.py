"""Eager fallbacks beside a fused attention path (timm, transformers 5.x).

The hand-written attention here runs only when SDPA or flash-attention cannot: the
eager entry of an attention dispatch, the else branch of `if self.fused_attn`, a helper
called only from such a branch, and repeat_kv reached only from the eager entry. mlsem
demotes these to info below the default threshold (docs/PATTERNS.md, "Context"), so
the lines are `ok` marks; the same attention with no fused path beside it
(PlainAttention) is still reported.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

ALL_ATTENTION_FUNCTIONS = {}


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)  # ok: ATT002


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling  # ok: ATT001
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)  # ok: ATT001
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = config.head_dim**-0.5
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size // 4)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size // 4)

    def forward(self, hidden_states, attention_mask):
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        return attention_interface(self, q, k, v, attention_mask, scaling=self.scaling)


class TimmAttention(nn.Module):
    def __init__(self, dim, num_heads=8, attn_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)
        self.fused_attn = True

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)  # ok: ATT001
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v  # ok: ATT001
        return x.transpose(1, 2).reshape(B, N, C)


class HelperFallbackAttention(nn.Module):
    """The manual path lives in a helper called only from the fallback branch."""

    def __init__(self, dim, num_heads=8, use_sdpa=True):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.use_sdpa = use_sdpa

    def _manual(self, q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # ok: ATT001
        return scores.softmax(dim=-1) @ v  # ok: ATT001

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        if not self.use_sdpa:
            out = self._manual(q, k, v)
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        return out.transpose(1, 2).reshape(B, N, C)


class PlainAttention(nn.Module):
    """Near miss: the same attention with no fused path beside it is the path users run."""

    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.use_bias = True

    def forward(self, x, bias=None):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale  # expect: ATT001
        if self.use_bias:
            attn = attn + bias
        attn = attn.softmax(dim=-1)
        x = attn @ v  # expect: ATT001
        return x.transpose(1, 2).reshape(B, N, C)
