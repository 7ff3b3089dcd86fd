"""log_softmax products and gathers that are not a hard-label loss F.cross_entropy improves.

Models what training code does with log-probabilities besides a hard-label loss:
DINO/iBOT-style self-distillation (a sum of the teacher's probabilities times the
student's log-softmax), a soft-label loss on smoothed or mixed labels handed in by
the data pipeline, per-token sequence log-probabilities returned for an RL or DPO
step (log_softmax + gather + squeeze, no reduction), and an adaptive-softmax head
that stores each cluster's gathered log-probabilities in an output table. In eager
PyTorch F.cross_entropy is itself log_softmax + nll_loss, and with probability
targets it is the same log_softmax·target sum: nothing to gain.

Also the forms that stay reported: a one-hot table built with scatter_, the picked
log-probabilities of a gather reduced into a loss after a cast, and log(softmax(x))
times soft targets, which underflows to -inf where log_softmax does not.

Expected findings: LOS001 on scatter_one_hot_loss, gather_nll_cast and
SwAVStyleLoss; none on the soft-target and per-token functions (ok marks).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class DINOLoss(nn.Module):
    def __init__(self, out_dim: int, teacher_temp: float = 0.04, student_temp: float = 0.1):
        super().__init__()
        self.teacher_temp = teacher_temp
        self.student_temp = student_temp
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, student_output, teacher_output):
        student_out = (student_output / self.student_temp).chunk(2)
        teacher_out = F.softmax((teacher_output - self.center) / self.teacher_temp, dim=-1).detach().chunk(2)
        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)  # ok: LOS001
                total_loss += loss.mean()
                n_loss_terms += 1
        return total_loss / n_loss_terms


def soft_label_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy against smoothed or mixup labels produced by the data pipeline."""
    return -torch.mean(torch.sum(F.log_softmax(logits, dim=1) * target, dim=1))  # ok: LOS001


def masked_patch_distillation(student_patch, teacher_patch, mask):
    loss = torch.sum(-teacher_patch * F.log_softmax(student_patch, dim=-1), dim=-1)  # ok: LOS001
    return (loss * mask).sum() / mask.sum().clamp(min=1.0)


def logits_to_logprobs(logits: torch.Tensor, sequences: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-token log-probabilities of the sampled sequences, for the PPO ratio."""
    return torch.gather(
        F.log_softmax(logits / temperature, dim=-1),  # ok: LOS001
        2,
        sequences.unsqueeze(-1),
    ).squeeze(-1)


def get_logp(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(-1)).squeeze(-1)  # ok: LOS001


class AdaptiveHead(nn.Module):
    """Two-cluster adaptive softmax: each target's log-probability goes into `out`."""

    def __init__(self, dim: int, head_size: int, tail_size: int):
        super().__init__()
        self.head = nn.Linear(dim, head_size + 1)
        self.tail = nn.Linear(dim, tail_size)
        self.head_size = head_size

    def forward(self, hidden, target):
        out = hidden.new_zeros(target.size(0))
        head_logprob = F.log_softmax(self.head(hidden), dim=1)
        in_head = target < self.head_size
        out[in_head] = head_logprob[in_head].gather(1, target[in_head, None]).squeeze(1)  # ok: LOS001
        tail_logprob = F.log_softmax(self.tail(hidden[~in_head]), dim=1)
        tail_target = target[~in_head] - self.head_size
        out[~in_head] = head_logprob[~in_head, -1] + tail_logprob.gather(1, tail_target[:, None]).squeeze(1)  # ok: LOS001
        return out


def scatter_one_hot_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    log_probs = F.log_softmax(logits, dim=-1)
    one_hot = torch.zeros_like(log_probs).scatter_(1, targets.unsqueeze(1), 1.0)
    return -(one_hot * log_probs).sum(dim=-1).mean()  # expect: LOS001


def gather_nll_cast(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    lsm = torch.log_softmax(logits, dim=-1)
    nll = -torch.gather(lsm, 1, targets.view(-1, 1)).view(-1)  # expect: LOS001
    return nll.float().mean()


class SwAVStyleLoss(nn.Module):
    def __init__(self, temperature: float = 0.1):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)
        self.temperature = temperature

    def forward(self, scores, assignments):
        return -torch.mean(torch.sum(assignments * torch.log(self.softmax(scores / self.temperature)), dim=1))  # expect: LOS001
