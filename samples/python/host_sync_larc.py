"""Self-supervised pretraining (SwAV, SimCLR style) with apex's LARC around SGD.

LARC's step() tests each parameter's weight and gradient norms on the host
(`if param_norm != 0 and grad_norm != 0`), so every optimizer step already waits for the
GPU once per parameter: deferring the meter's loss read removes no wait.

Not expected: SYN001 on `losses.update(loss.item(), ...)` at the default --min-confidence
(reported below it, naming the step's own waits).
"""

import torch
from apex.parallel.LARC import LARC


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n


def train(model, loader, base_lr=4.8):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=1e-6)
    optimizer = LARC(optimizer=optimizer, trust_coefficient=0.001, clip=False)
    losses = AverageMeter()
    for it, inputs in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(inputs.cuda(non_blocking=True)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), inputs.size(0))  # ok: SYN001
    return losses.sum / max(losses.count, 1)
