"""Products with a sigmoid or an activation that are not gated linear units, and GLUs in the
spellings real models use.

Models: a Llama MLP whose activation comes from the configuration (ACT2FN), MoE experts whose
gate and up halves are chunks of one fused projection, and near-misses: an attention output
gate sigmoid(Linear(x)) * attn (an output gate, not a GLU), a shared-expert scalar gate from
Linear(H -> 1), an LSTM cell (sigmoid/tanh cell gates), adaLN modulation
x * (1 + scale) + shift, and a SiLU projection multiplied by a padding mask.

Expected findings:
- FUS001 on the product line of ConfigGatedMLP and FusedExperts.
- FUS003 (a hint, below the default threshold) (preview) on the LSTM cell update and the adaLN modulation: pointwise chains.
Not expected: FUS001 on GatedAttentionOutput, SharedExpertGate, LSTMCell, AdaLNModulation
and MaskedSiLUEmbedder: they gate with something other than a second projection of the
same input at the same width.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT2FN = {"silu": nn.SiLU, "gelu": nn.GELU}


class ConfigGatedMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # expect: FUS001


class FusedExperts(nn.Module):
    def __init__(self, n_experts: int, dim: int, hidden: int):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.empty(n_experts, 2 * hidden, dim))
        self.down_proj = nn.Parameter(torch.empty(n_experts, dim, hidden))

    def forward(self, x, expert: int):
        gate, up = F.linear(x, self.gate_up_proj[expert]).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_proj[expert])  # expect: FUS001


class GatedAttentionOutput(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Linear(dim, dim)

    def forward(self, x, attn_output):
        return attn_output * torch.sigmoid(self.gate(x))  # ok: FUS001


class SharedExpertGate(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.shared_expert = nn.Linear(dim, dim)
        self.shared_expert_gate = nn.Linear(dim, 1, bias=False)

    def forward(self, x):
        out = self.shared_expert(x)
        return F.sigmoid(self.shared_expert_gate(x)) * out  # ok: FUS001


class LSTMCell(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ih = nn.Linear(dim, 4 * dim)
        self.hh = nn.Linear(dim, 4 * dim)

    def forward(self, x, h, c):
        i, f, g, o = (self.ih(x) + self.hh(h)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # ok: FUS001  # hint: FUS003
        h = torch.sigmoid(o) * torch.tanh(c)  # ok: FUS001
        return h, c


class AdaLNModulation(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.ada = nn.Linear(dim, 2 * dim)

    def forward(self, x, cond):
        shift, scale = self.ada(F.silu(cond)).chunk(2, dim=-1)
        return self.norm(x) * (1 + scale) + shift  # ok: FUS001  # hint: FUS003


class MaskedSiLUEmbedder(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x, padding_mask):
        h = F.silu(self.linear(x))  # ok: FUS002
        return h * padding_mask[..., None]  # ok: FUS001
