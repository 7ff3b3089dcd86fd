"""Encoder-decoder multi-head attention built on a module-level `attention` function.

Models the textbook Transformer layout: a free function
`attention(query, key, value, mask=None, dropout_p=0.0)` computing scaled
dot-product attention with an optional masked_fill(mask == 0, -1e9) and returning
both the output and the weights, used by a MultiHeadedAttention module for self- and
cross-attention, plus a subsequent_mask helper.

Expected findings:
- ATT001 at the `return torch.matmul(p_attn, value), p_attn` line of `attention`
  (once, however many call sites inline it).
"""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def subsequent_mask(size):
    """1 where position i may attend to position j (j <= i)."""
    attn_shape = (1, size, size)
    upper = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return upper == 0


def attention(query, key, value, mask=None, dropout_p=0.0, training=False):
    """Scaled dot-product attention; returns (output, attention weights)."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout_p > 0.0:
        p_attn = F.dropout(p_attn, p=dropout_p, training=training)
    return torch.matmul(p_attn, value), p_attn  # expect: ATT001


def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = dropout

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        nbatches = query.size(0)
        query = self.linears[0](query).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        key = self.linears[1](key).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        value = self.linears[2](value).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)

        x, self.attn = attention(query, key, value, mask=mask, dropout_p=self.dropout, training=self.training)

        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[3](x)


class DecoderLayer(nn.Module):
    """Masked self-attention, then attention over the encoder memory."""

    def __init__(self, size, heads, dropout):
        super().__init__()
        self.self_attn = MultiHeadedAttention(heads, size, dropout)
        self.src_attn = MultiHeadedAttention(heads, size, dropout)
        self.norm1 = nn.LayerNorm(size)
        self.norm2 = nn.LayerNorm(size)

    def forward(self, x, memory, src_mask, tgt_mask):
        y = self.norm1(x)
        x = x + self.self_attn(y, y, y, tgt_mask)
        y = self.norm2(x)
        return x + self.src_attn(y, memory, memory, src_mask)
