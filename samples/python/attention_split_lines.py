"""Self-attention spread over many statements, module-based softmax and dropout.

Models the verbose style of some research code: every step on its own line with its
own variable, heads split by separate view/transpose statements, the scale computed
in __init__ as a divisor, the softmax an nn.Softmax module, dropout an nn.Dropout
module, and the final product written as a call spanning several lines.

Expected findings:
- ATT001 on the multi-line `context = torch.matmul(` call (the mark is on its first line).
"""

import math

import torch
from torch import nn


class VerboseSelfAttention(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.1):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.norm_factor = math.sqrt(self.head_size)
        self.query_proj = nn.Linear(hidden_size, hidden_size)
        self.key_proj = nn.Linear(hidden_size, hidden_size)
        self.value_proj = nn.Linear(hidden_size, hidden_size)
        self.output_proj = nn.Linear(hidden_size, hidden_size)
        self.softmax = nn.Softmax(dim=-1)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, hidden_states: torch.Tensor, causal_mask: torch.Tensor) -> torch.Tensor:
        batch, seq_len, hidden = hidden_states.shape

        query_states = self.query_proj(hidden_states)
        key_states = self.key_proj(hidden_states)
        value_states = self.value_proj(hidden_states)

        query_states = query_states.view(batch, seq_len, self.num_heads, self.head_size)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.view(batch, seq_len, self.num_heads, self.head_size)
        key_states = key_states.transpose(1, 2)
        value_states = value_states.view(batch, seq_len, self.num_heads, self.head_size)
        value_states = value_states.transpose(1, 2)

        key_states_t = key_states.transpose(2, 3)
        raw_scores = torch.matmul(query_states, key_states_t)
        scaled_scores = raw_scores / self.norm_factor
        masked_scores = scaled_scores.masked_fill(causal_mask, float("-inf"))
        attention_probs = self.softmax(masked_scores)
        attention_probs = self.attention_dropout(attention_probs)

        context = torch.matmul(  # expect: ATT001
            attention_probs,
            value_states,
        )

        context = context.transpose(1, 2)
        context = context.reshape(batch, seq_len, hidden)
        output = self.output_proj(context)
        return output
