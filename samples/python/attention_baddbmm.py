"""BLOOM-style attention with ALiBi: the position bias enters through torch.baddbmm.

Models: a fused query_key_value projection, heads folded into the batch dimension,
scores computed as `torch.baddbmm(alibi, q, k, beta=1.0, alpha=inv_norm_factor)`
(bias plus scaled product in one call), a boolean mask applied with masked_fill and
the dtype's minimum, an fp32 softmax cast back, dropout and torch.bmm with the values;
plus build_alibi_tensor for the per-head linear biases.

Expected findings: none by default.
Not expected: ATT001 at `context_layer = torch.bmm(attention_probs_reshaped, value_layer)`
is demoted (info, hidden by default): the ALiBi bias is added to 3-D scores and the mask
in their 4-D view, which one attn_mask cannot take as written; FUS003 on the ALiBi position table (two integer ops on a (batch, seq) mask).
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def build_alibi_tensor(attention_mask: torch.Tensor, num_heads: int, dtype: torch.dtype) -> torch.Tensor:
    """ALiBi biases of shape (batch * num_heads, 1, seq_len)."""
    batch_size, seq_length = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]  # ok: FUS003
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


class BloomAttention(nn.Module):
    def __init__(self, hidden_size=1024, n_head=16, attention_dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_heads = n_head
        self.head_dim = hidden_size // n_head
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.beta = 1.0
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size, bias=True)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.attention_dropout = nn.Dropout(attention_dropout)

    def _split_heads(self, fused_qkv):
        batch_size, seq_length, _ = fused_qkv.shape
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
        return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]

    def forward(self, hidden_states, alibi, attention_mask):
        batch_size, q_length, _ = hidden_states.shape
        fused_qkv = self.query_key_value(hidden_states)
        query_layer, key_layer, value_layer = self._split_heads(fused_qkv)

        query_layer = query_layer.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
        key_layer = key_layer.permute(0, 2, 3, 1).reshape(batch_size * self.num_heads, self.head_dim, q_length)
        value_layer = value_layer.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)

        matmul_result = torch.baddbmm(
            alibi,
            query_layer,
            key_layer,
            beta=self.beta,
            alpha=self.inv_norm_factor,
        )
        attention_scores = matmul_result.view(batch_size, self.num_heads, q_length, -1)

        input_dtype = attention_scores.dtype
        attn_weights = torch.masked_fill(attention_scores, attention_mask, torch.finfo(input_dtype).min)
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(input_dtype)
        attention_probs = self.attention_dropout(attention_probs)

        attention_probs_reshaped = attention_probs.view(batch_size * self.num_heads, q_length, -1)
        context_layer = torch.bmm(attention_probs_reshaped, value_layer)  # ok: ATT001

        context_layer = context_layer.view(batch_size, self.num_heads, q_length, self.head_dim)
        context_layer = context_layer.permute(0, 2, 1, 3).reshape(batch_size, q_length, self.hidden_size)
        return self.dense(context_layer)
