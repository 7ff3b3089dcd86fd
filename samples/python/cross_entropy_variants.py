"""Cross-entropy composed from log-softmax by hand, and the library form.

Models the losses found in training code: log_softmax + gather of the target
log-probabilities, nll_loss on log(softmax(...)), label smoothing as
-(smoothed_one_hot * log_probs).sum(-1), a masked token-level LM loss, and the
fused F.cross_entropy with label_smoothing and ignore_index. Also log_softmax used
for something other than a loss (returning log-probabilities for beam search).

Expected findings:
- LOS001 on the composed-loss line of gather_nll, log_of_softmax_nll,
  label_smoothed_loss and masked_lm_loss.
Not expected: LOS001 on F.cross_entropy, nor on beam_log_probs (no target, no loss).
"""

import torch
import torch.nn.functional as F


def gather_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    log_probs = F.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(dim=-1, index=targets.unsqueeze(-1)).squeeze(-1)  # expect: LOS001
    return nll.mean()


def log_of_softmax_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    probs = torch.softmax(logits, dim=1)
    return F.nll_loss(torch.log(probs), targets)  # expect: LOS001


def label_smoothed_loss(logits: torch.Tensor, targets: torch.Tensor, smoothing: float = 0.1) -> torch.Tensor:
    n_classes = logits.size(-1)
    log_probs = logits.log_softmax(dim=-1)
    with torch.no_grad():
        true_dist = torch.full_like(log_probs, smoothing / (n_classes - 1))
        true_dist.scatter_(1, targets.unsqueeze(1), 1.0 - smoothing)
    return torch.mean(torch.sum(-true_dist * log_probs, dim=-1))  # expect: LOS001


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Token-level loss averaged over the positions where loss_mask is 1."""
    logprobs = F.log_softmax(logits.float(), dim=-1)
    one_hot = F.one_hot(labels, num_classes=logits.size(-1)).to(logprobs.dtype)
    token_loss = -(one_hot * logprobs).sum(dim=-1)  # expect: LOS001
    return (token_loss * loss_mask).sum() / loss_mask.sum()


def fused_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, targets, label_smoothing=0.1, ignore_index=-100)  # ok: LOS001


@torch.no_grad()
def beam_log_probs(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-token log-probabilities, summed into beam scores by the caller."""
    return F.log_softmax(logits / temperature, dim=-1)  # ok: LOS001
