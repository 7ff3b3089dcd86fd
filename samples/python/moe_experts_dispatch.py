"""Mixture-of-experts layers with and without a dispatch to grouped GEMMs (transformers 5.x).

transformers' `@use_experts_implementation` replaces an experts class's forward with the
implementation `config._experts_implementation` names; when none is requested the model
resolves it to "grouped_mm" (all experts in one torch._grouped_mm). The per-expert loop
written in the class runs only with experts_implementation="eager", so its gated unit is
an eager fallback, demoted (an `ok` mark).

Expected findings:
- FUS001 on the gated unit of PlainExperts, the same loop without the decorator: it is
  what users run.
- FUS001 on the dense SwiGLU MLP beside them.
Not expected: FUS001 in DispatchedExperts.forward (the decorated fallback), nor in
the one configured as `@use_experts_implementation(has_bias=True)`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformers.activations import ACT2FN
from transformers.integrations import use_experts_implementation


@use_experts_implementation
class DispatchedExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * config.intermediate_size, config.hidden_size))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, config.hidden_size, config.intermediate_size))
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = self.act_fn(gate) * up  # ok: FUS001
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))
        return final_hidden_states


@use_experts_implementation(has_bias=True)
class BiasedExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * config.intermediate_size, config.hidden_size))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(self.num_experts, 2 * config.intermediate_size))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, config.hidden_size, config.intermediate_size))

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        for expert_idx in range(self.num_experts):
            token_idx, top_k_pos = torch.where(top_k_index == expert_idx)
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx], self.gate_up_proj_bias[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = F.silu(gate) * up  # ok: FUS001
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            final_hidden_states.index_add_(0, token_idx, current_hidden_states * top_k_weights[token_idx, top_k_pos, None])
        return final_hidden_states


class PlainExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * config.intermediate_size, config.hidden_size))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, config.hidden_size, config.intermediate_size))
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        for expert_idx in range(self.num_experts):
            token_idx, top_k_pos = torch.where(top_k_index == expert_idx)
            current_state = hidden_states[token_idx]
            gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = self.act_fn(gate) * up  # expect: FUS001
            current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])
            final_hidden_states.index_add_(0, token_idx, current_hidden_states * top_k_weights[token_idx, top_k_pos, None])
        return final_hidden_states


class DenseMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # expect: FUS001
