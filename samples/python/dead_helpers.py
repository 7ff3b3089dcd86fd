"""Rotary helpers that a model file defines but never calls (transformers 5.x).

Generated transformers files copy `apply_rotary_pos_emb` beside every attention class
and register it with `@use_kernelized_func(apply_rotary_pos_emb)` for hub kernels. A
model whose attention uses relative positions instead (Parakeet, Jamba) keeps the
copy, but nothing calls it: the decorator only registers it. That copy, and the
`rotate_half` only it calls, are dead code, demoted (`ok` marks).

Expected findings:
- POS001 in apply_rope, which the attention below calls.
- POS001 in apply_rotary_emb_public, mentioned nowhere in this file: a module's
  function may be imported by other files, so it is not called dead.
Not expected: POS001 in apply_rotary_pos_emb (named only by the decorator).
"""
import torch
import torch.nn as nn

from transformers.integrations import use_kernelized_func


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)  # ok: POS001
    k_embed = (k * cos) + (rotate_half(k) * sin)  # ok: POS001
    return q_embed, k_embed


def rotate_pairs(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_pairs(q) * sin)  # expect: POS001
    k_embed = (k * cos) + (rotate_pairs(k) * sin)  # expect: POS001
    return q_embed, k_embed


def apply_rotary_emb_public(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_pairs(q) * sin)  # expect: POS001
    k_embed = (k * cos) + (rotate_pairs(k) * sin)  # expect: POS001
    return q_embed, k_embed


@use_kernelized_func(apply_rotary_pos_emb)
class RelPositionAttention(nn.Module):
    """Transformer-XL relative positions: no rotary embedding is applied."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.pos_bias = nn.Parameter(torch.zeros(num_heads, hidden_size // num_heads))

    def forward(self, x, pos):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        return nn.functional.scaled_dot_product_attention(q + self.pos_bias[:, None], k, v)


class RotaryAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k = apply_rope(q, k, cos, sin)
        return nn.functional.scaled_dot_product_attention(q, k, v)
