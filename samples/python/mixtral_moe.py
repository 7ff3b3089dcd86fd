"""A sparse mixture-of-experts layer (Mixtral-style) with SwiGLU experts.

Models: a router Linear, softmax over experts and top-2 selection with
renormalization, a loop over experts that gathers the tokens routed to each with
torch.where on a one-hot mask, experts computing `w2(silu(w1(x)) * w3(x))`, and the
weighted results scattered back with index_add_; plus the load-balancing auxiliary
loss.

Expected findings:
- FUS001 at the expert's SwiGLU line.
Not expected: ATT001 on the router softmax (routing, not attention) and SYN001 on the
expert loop (no backward or optimizer step: not a training loop, and no host read).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim: int, ffn_dim: int):
        super().__init__()
        self.w1 = nn.Linear(dim, ffn_dim, bias=False)
        self.w2 = nn.Linear(ffn_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn_dim, bias=False)

    def forward(self, hidden_states):
        current_hidden_states = F.silu(self.w1(hidden_states)) * self.w3(hidden_states)  # expect: FUS001  # ok: FUS002
        return self.w2(current_hidden_states)


class SparseMoeBlock(nn.Module):
    def __init__(self, dim: int, ffn_dim: int, num_experts: int = 8, top_k: int = 2):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, ffn_dim) for _ in range(num_experts)])

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)  # ok: ATT001
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = self.experts[expert_idx](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))  # ok: SYN001

        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def load_balancing_loss(router_logits: torch.Tensor, num_experts: int, top_k: int = 2) -> torch.Tensor:
    """Switch-Transformer auxiliary loss: fraction of tokens times mean router probability."""
    routing_weights = F.softmax(router_logits, dim=-1)  # ok: ATT001
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts
