"""Grouped-query attention: every way K/V heads get copied, and copies that are not GQA.

Models, each the only attention path of its module:
- einops.repeat('b h n d -> b (h r) n d', r=n_rep) before SDPA;
- expand + reshape in the (batch, tokens, heads, dim) layout, transposed after the copy;
- repeat_interleave on the heads axis of the tokens-first layout (dim=2);
- a repeat_kv helper before a hand-written attention: one finding for K and V.

Expected findings:
- ATT002 on the copies of K and V in each of the four classes.
- ATT001 at the product with v in EagerGQA.forward (attention written by hand).
Not expected (near misses, marked ok):
- n_rep = 1: a model whose K/V heads equal its query heads (num_key_value_groups = 1),
  through the same repeat_kv helper, and einops.repeat with r=1;
- relative-position embeddings repeated over the batch for a position-bias product
  (DeBERTa's c2p term): not K/V of the attention.
Below the default --min-confidence: ATT002 where SDPA also gets an attn_mask (MaskedGQA,
nanoVLM's layout): enable_gqa runs only on the flash and math kernels, and flash takes no
arbitrary mask, so the fix could fall back to the math kernel.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import repeat


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class EinopsRepeatGQA(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.head_dim, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.wkv(x).view(b, t, 2, -1, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        k = repeat(k, "b h n d -> b (h r) n d", r=self.n_rep)  # expect: ATT002
        v = repeat(v, "b h n d -> b (h r) n d", r=self.n_rep)  # expect: ATT002
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # ok: ATT001
        return out.transpose(1, 2).reshape(b, t, -1)


class ExpandTokensFirstGQA(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)

    def forward(self, x):
        bs, slen, _ = x.shape
        q = self.wq(x).view(bs, slen, self.n_heads, self.head_dim)
        k = self.wk(x).view(bs, slen, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(bs, slen, self.n_kv_heads, self.head_dim)
        k = k[:, :, :, None, :].expand(bs, slen, self.n_kv_heads, self.n_rep, self.head_dim).reshape(bs, slen, self.n_heads, self.head_dim)  # expect: ATT002
        v = v[:, :, :, None, :].expand(bs, slen, self.n_kv_heads, self.n_rep, self.head_dim).reshape(bs, slen, self.n_heads, self.head_dim)  # expect: ATT002
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)  # ok: ATT001
        return out.transpose(1, 2).reshape(bs, slen, -1)


class InterleaveTokensFirstGQA(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.head_dim, bias=False)

    def forward(self, x):
        bs, slen, _ = x.shape
        q = self.wq(x).view(bs, slen, self.n_heads, self.head_dim)
        k, v = self.wkv(x).view(bs, slen, 2 * self.n_kv_heads, self.head_dim).chunk(2, dim=2)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=2)  # expect: ATT002
        v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=2)  # expect: ATT002
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))  # ok: ATT001
        return out.transpose(1, 2).reshape(bs, slen, -1)


class EagerGQA(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = dim // n_heads
        self.num_key_value_groups = n_heads // n_kv_heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)

    def forward(self, x, attention_mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_key_value_groups)  # expect: ATT002
        v = repeat_kv(v, self.num_key_value_groups)  # expect: ATT002
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + attention_mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v)  # expect: ATT001
        return out.transpose(1, 2).reshape(b, t, -1)


# ---------------------------------------------------------------- near misses


class MultiHeadNoGroups(nn.Module):
    """Full multi-head attention ported from a GQA model: K/V heads equal query heads."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.head_dim = dim // n_heads
        self.num_key_value_groups = 1
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, -1, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        k = repeat_kv(k, self.num_key_value_groups)  # ok: ATT002
        v = repeat_kv(v, self.num_key_value_groups)  # ok: ATT002
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # ok: ATT001
        return out.transpose(1, 2).reshape(b, t, -1)


class EinopsSingleCopy(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (self.n_heads, -1)).transpose(1, 2) for t in (q, k, v))
        k = repeat(k, "b h n d -> b (h r) n d", r=1)  # ok: ATT002
        v = repeat(v, "b h n d -> b (h r) n d", r=1)  # ok: ATT002
        return F.scaled_dot_product_attention(q, k, v)  # ok: ATT001


class RelativePositionBias(nn.Module):
    """DeBERTa's content-to-position term: position keys repeated over the batch."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.pos_key_proj = nn.Linear(dim, dim)

    def forward(self, query_layer, rel_embeddings, relative_pos):
        pos_key_layer = self.pos_key_proj(rel_embeddings).view(-1, self.num_heads, self.head_dim).transpose(0, 1)
        pos_key_layer = pos_key_layer.repeat(query_layer.size(0) // self.num_heads, 1, 1)  # ok: ATT002
        c2p_att = torch.bmm(query_layer, pos_key_layer.transpose(-1, -2))
        return torch.gather(c2p_att, dim=-1, index=relative_pos)


class MaskedGQA(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * n_kv_heads * self.head_dim)

    def forward(self, x, attention_mask):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.n_kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        n_rep = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(n_rep, dim=1)  # hint: ATT002
        v = v.repeat_interleave(n_rep, dim=1)  # hint: ATT002
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
