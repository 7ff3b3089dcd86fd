"""Softmax and matmul uses that are not hand-written attention, and must not be flagged.

Models: a classifier returning class probabilities, a mixture-of-experts router
(softmax then top-k), an attention-map visualization that stops at the
probabilities, linear (efficient) attention that normalizes q and k separately, a
plain projection matmul, and a temperature-scaled knowledge-distillation loss on
softmax outputs (KL divergence, not a cross-entropy with hard labels).

Expected findings: none for ATT001 or LOS001; each near-miss line carries an ok mark.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dim: int, num_classes: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, features):
        return self.head(self.norm(features.mean(dim=1)))

    @torch.no_grad()
    def predict_proba(self, features):
        logits = self.forward(features)
        return F.softmax(logits, dim=-1)  # ok: ATT001


class TopKRouter(nn.Module):
    """Routes each token to its top-k experts, Mixtral-style."""

    def __init__(self, dim: int, num_experts: int, top_k: int = 2):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.top_k = top_k

    def forward(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=-1, dtype=torch.float)  # ok: ATT001
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        return routing_weights.to(hidden_states.dtype), selected_experts


@torch.no_grad()
def attention_map(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Attention probabilities for plotting; the values are never needed."""
    scale = q.shape[-1] ** -0.5
    return (q @ k.transpose(-2, -1) * scale).softmax(dim=-1)  # ok: ATT001


class LinearAttention(nn.Module):
    """Efficient attention: softmax over q's features and k's positions, then k^T v first."""

    def __init__(self, dim: int, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q = q.softmax(dim=-1)
        k = k.softmax(dim=-2)
        context = k.transpose(-2, -1) @ v
        out = q @ context  # ok: ATT001
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


def project(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x @ weight.T  # ok: ATT001


def distillation_loss(student_logits, teacher_logits, temperature: float = 2.0):
    """Hinton et al. soft-target loss: KL(teacher || student) at temperature T."""
    soft_targets = F.softmax(teacher_logits / temperature, dim=-1)
    student_log_probs = F.log_softmax(student_logits / temperature, dim=-1)
    return F.kl_div(student_log_probs, soft_targets, reduction="batchmean") * temperature**2  # ok: LOS001
