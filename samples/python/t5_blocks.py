"""T5 encoder pieces: the scale-only RMS LayerNorm, relative-bias attention, gated FFN.

Models: T5's "LayerNorm" that only rescales (variance of x in fp32, no mean
subtraction, no bias), unscaled attention scores plus a learned relative position
bias, an fp32 softmax cast back, F.dropout on the weights, a ReLU feed-forward and
the gated-GELU feed-forward of T5 v1.1.

Expected findings:
- NRM002 in T5LayerNorm.forward, the line multiplying by rsqrt(variance + eps).
- ATT001 at `attn_output = torch.matmul(attn_weights, value_states)`: the position
  bias is an additive float mask, which F.scaled_dot_product_attention accepts.
- FUS002 (a hint, below the default threshold) at `hidden_states = self.act(hidden_states)` in T5DenseActDense (wi -> ReLU).
- FUS001 at the gated-GELU product in T5DenseGatedActDense, and no FUS002 on its
  wi_0 -> GELU line: the fused gate FUS001 proposes absorbs that epilogue too.
"""

import torch
import torch.nn.functional as F
from torch import nn


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        """Scale-only layer norm: no bias and no mean subtraction."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        # Variance in fp32 even for half-precision inputs.
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    def __init__(self, d_model=512, n_heads=8, d_kv=64, dropout_rate=0.1, num_buckets=32):
        super().__init__()
        self.n_heads = n_heads
        self.key_value_proj_dim = d_kv
        self.inner_dim = n_heads * d_kv
        self.dropout = dropout_rate
        self.q = nn.Linear(d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, d_model, bias=False)
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def shape(self, states, batch_size):
        return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

    def forward(self, hidden_states, position_bias):
        batch_size = hidden_states.shape[0]
        query_states = self.shape(self.q(hidden_states), batch_size)
        key_states = self.shape(self.k(hidden_states), batch_size)
        value_states = self.shape(self.v(hidden_states), batch_size)

        # T5 folds the 1/sqrt(d) scale into the initialization of q.
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = F.dropout(attn_weights, p=self.dropout, training=self.training)

        attn_output = torch.matmul(attn_weights, value_states)  # expect: ATT001
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        return self.o(attn_output)


class T5DenseActDense(nn.Module):
    def __init__(self, d_model=512, d_ff=2048, dropout_rate=0.1):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout_rate)
        self.act = nn.ReLU()

    def forward(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = self.act(hidden_states)  # hint: FUS002
        hidden_states = self.dropout(hidden_states)
        return self.wo(hidden_states)


class T5DenseGatedActDense(nn.Module):
    def __init__(self, d_model=512, d_ff=1024, dropout_rate=0.1):
        super().__init__()
        self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout_rate)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))  # ok: FUS002
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear  # expect: FUS001
        hidden_states = self.dropout(hidden_states)
        return self.wo(hidden_states)


class T5LayerFF(nn.Module):
    def __init__(self, d_model=512, gated=True, dropout_rate=0.1):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(d_model) if gated else T5DenseActDense(d_model)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        return hidden_states + self.dropout(forwarded_states)
