"""A transformers modular source: the file `modeling_toy.py` beside it is generated from it.

transformers writes a model once as `modular_<name>.py` and generates `modeling_<name>.py`
from it; the generated file starts with a header naming this file, and it is the one
that runs. Every finding here would appear twice, so mlsem reports it in the generated
file and demotes this copy (`ok` marks; modeling_toy.py has the `expect` marks).

Expected findings: none shown here.
Not expected: FUS001 on ToyMLP, FUS002 on ToyVisionMLP, POS001 in apply_rotary_pos_emb.
"""
import torch
import torch.nn as nn

from transformers.activations import ACT2FN


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)  # ok: POS001
    k_embed = (k * cos) + (rotate_half(k) * sin)  # ok: POS001
    return q_embed, k_embed


class ToyMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # ok: FUS001


class ToyVisionMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.act(hidden_states)  # ok: FUS002
        return self.fc2(hidden_states)


class ToyAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)

    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return nn.functional.scaled_dot_product_attention(q, k, v)


class ToyDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = ToyAttention(config)
        self.mlp = ToyMLP(config)
        self.vision_mlp = ToyVisionMLP(config)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(x, cos, sin)
        return x + self.mlp(x) + self.vision_mlp(x)


__all__ = ["ToyDecoderLayer"]
