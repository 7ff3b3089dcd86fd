"""Attention in a static method that takes its dropout layer as an argument (the
"Attention is all you need" tutorials' MultiHeadAttentionBlock.attention).

Expected findings:
- ATT001 at the product with v: the in-place masked_fill_ under `if mask is not None`, the
  `.softmax(dim=-1)` method and the dropout layer passed in as `dropout` are the same
  attention, and the fix reads the layer's p (`dropout.p if dropout.training else 0.0`).
Not expected: a helper that calls a function named like dropout with more than the tensor
(`drop_path(x, 0.1, training)`, stochastic depth) is no dropout on probabilities.
"""

import math

import torch.nn as nn


class MultiHeadAttentionBlock(nn.Module):
    def __init__(self, d_model, h, dropout):
        super().__init__()
        self.h = h
        self.d_k = d_model // h
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, d_model, bias=False)
        self.w_v = nn.Linear(d_model, d_model, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def attention(query, key, value, mask, dropout: nn.Dropout):
        d_k = query.shape[-1]
        attention_scores = (query @ key.transpose(-2, -1)) / math.sqrt(d_k)
        if mask is not None:
            attention_scores.masked_fill_(mask == 0, -1e9)
        attention_scores = attention_scores.softmax(dim=-1)
        if dropout is not None:
            attention_scores = dropout(attention_scores)
        return attention_scores @ value  # expect: ATT001

    def forward(self, q, k, v, mask):
        b, t, _ = q.shape
        query = self.w_q(q).view(b, t, self.h, self.d_k).transpose(1, 2)
        key = self.w_k(k).view(b, t, self.h, self.d_k).transpose(1, 2)
        value = self.w_v(v).view(b, t, self.h, self.d_k).transpose(1, 2)
        x = MultiHeadAttentionBlock.attention(query, key, value, mask, self.dropout)
        return self.w_o(x.transpose(1, 2).contiguous().view(b, t, self.h * self.d_k))


def mix(x, scores, drop_path, training):
    weights = scores.softmax(dim=-1)
    return drop_path(weights, 0.1, training) @ x  # ok: ATT001
