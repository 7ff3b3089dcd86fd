"""Attention whose dropout is the project's own layer, as in apple/ml-cvnets.

cvnets defines `Dropout(nn.Dropout)` in cvnets/layers/dropout.py and its attention calls
it between the softmax and the product with v. A layer of the project named Dropout drops
like torch's, so the attention is still recognised. Its key-padding mask is written over
several lines: too long for mlsem to spell in the fix, it still goes into attn_mask, and
the fix says so rather than the finding being demoted.

Expected findings:
- ATT001 at `out = torch.matmul(attn, value)`, its fix passing the layer's `p` and asking
  to fold the masking of the padding line into attn_mask.
"""

from typing import Optional

import torch
from torch import nn

from mylib.layers.dropout import Dropout


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, attn_dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = Dropout(p=attn_dropout)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor, key_padding_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        b, s, _ = x.shape
        qkv = self.qkv_proj(x).reshape(b, s, 3, self.num_heads, -1).transpose(1, 3)
        query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        query = query * self.scaling
        attn = torch.matmul(query, key.transpose(-1, -2))
        if key_padding_mask is not None:
            attn = attn.masked_fill(
                key_padding_mask.unsqueeze(1)
                .unsqueeze(2)
                .to(torch.bool),  # [N, T] --> [N, 1, 1, T]
                float("-inf"),
            )
        attn = self.softmax(attn)
        attn = self.attn_dropout(attn)
        out = torch.matmul(attn, value)  # expect: ATT001
        return self.out_proj(out.transpose(1, 2).reshape(b, s, -1))
