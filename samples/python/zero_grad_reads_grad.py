"""zero_grad(set_to_none=False) in a training loop that reads .grad.

Gradient accumulation by hand: the loop adds a fraction of each gradient into a
running buffer through p.grad, and checks `p.grad is not None`. With set_to_none=True
those reads see None until the next backward, so the change is not a drop-in one.

Expected findings:
- TRN001 on optimizer.zero_grad(set_to_none=False) only below the default
  --min-confidence (the file reads .grad: marked ok, as the golden test runs at the
  default), and without a rewrite.
Not expected: a rewrite for it; TRN001 on p.grad.zero_() (not a zero_grad call).
"""

import torch
import torch.nn.functional as F


def train(model, loader, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    ema = [torch.zeros_like(p) for p in model.parameters()]
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)  # ok: TRN001
        for buf, p in zip(ema, model.parameters()):
            if p.grad is not None:
                buf.mul_(0.9).add_(p.grad, alpha=0.1)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        for p in model.parameters():
            p.grad.zero_()
