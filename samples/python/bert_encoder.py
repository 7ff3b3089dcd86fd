"""A BERT-style bidirectional encoder, written the way early PyTorch ports were.

Models: a LayerNorm class computing (x - mean) / sqrt(var + eps) by hand, GELU by the
erf formula, self-attention with scores divided by sqrt(head size) and a padding mask
added to the scores (the extended mask holds 0 or -10000), and a pooler with tanh.

Expected findings:
- NRM001 in BertLayerNorm.forward, on the line computing the normalized x.
- ACT001 in gelu(): 0.5 * x * (1 + erf(x / sqrt(2))).
- ATT001 at `context_layer = torch.matmul(attention_probs, value_layer)`.
- FUS002 (a hint, below the default threshold) on the intermediate layer's activation (a configured ACT2FN module between the
  intermediate and output Linear layers, seen where BertLayer inlines both).
Not expected: FUS002 at the pooler's `self.activation(pooled_output)` (dense -> tanh
on the first token only: one vector per sequence, cold code).
"""

import math

import torch
from torch import nn


def gelu(x):
    """Exact GELU, as in the original BERT release."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))  # expect: ACT001


ACT2FN = {"gelu": gelu, "relu": torch.relu}


class BertLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12):
        """A layernorm module in the TF style (epsilon inside the square root)."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.variance_epsilon)  # expect: NRM001
        return self.weight * x + self.bias


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=768, num_attention_heads=12, dropout_prob=0.1):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))

        # Raw scores between every pair of tokens.
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        # The mask is 0 for tokens to attend to and -10000.0 for padding.
        attention_scores = attention_scores + attention_mask

        attention_probs = nn.Softmax(dim=-1)(attention_scores)
        attention_probs = self.dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)  # expect: ATT001
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(*new_context_layer_shape)


class BertIntermediate(nn.Module):
    def __init__(self, hidden_size=768, intermediate_size=3072, hidden_act="gelu"):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = ACT2FN[hidden_act]

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        return self.intermediate_act_fn(hidden_states)  # hint: FUS002


class BertOutput(nn.Module):
    def __init__(self, intermediate_size=3072, hidden_size=768, dropout_prob=0.1):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.LayerNorm = BertLayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, hidden_size=768):
        super().__init__()
        self.attention = BertSelfAttention(hidden_size)
        self.attention_output = BertOutput(hidden_size, hidden_size)
        self.intermediate = BertIntermediate(hidden_size)
        self.output = BertOutput()

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention_output(self.attention(hidden_states, attention_mask), hidden_states)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class BertPooler(nn.Module):
    def __init__(self, hidden_size=768):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        return self.activation(pooled_output)  # ok: FUS002


class BertEncoder(nn.Module):
    def __init__(self, num_layers=12, hidden_size=768):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(hidden_size) for _ in range(num_layers)])
        self.pooler = BertPooler(hidden_size)

    def forward(self, hidden_states, attention_mask):
        # (batch, seq) 1/0 mask -> (batch, 1, 1, seq) additive mask.
        extended_attention_mask = attention_mask[:, None, None, :].to(dtype=hidden_states.dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, extended_attention_mask)
        return hidden_states, self.pooler(hidden_states)
