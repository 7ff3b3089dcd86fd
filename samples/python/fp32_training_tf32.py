"""GPU training loops in fp32, one file per choice: this one turns on TF32 for its
matmuls, so fp32 is a deliberate choice with tensor cores on.

Not expected: PRC001 (below the default --min-confidence: TF32 is on for matmuls).
samples/python/fp32_training_cudnn_tf32.py turns TF32 on for convolutions only, which
does not count.
"""

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = True


def train(model, loader, optimizer, device="cuda"):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)  # ok: PRC001
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
