"""A GPU training loop whose backward goes through a wrapper optimizer that manages the
precision (`optimizer.backward(loss)`, as fairseq's FP16Optimizer).

Not expected: PRC001 (the wrapper chooses the number format, perhaps in another file).
"""

import torch
import torch.nn.functional as F


def train_step(model, batches, optimizer, device):
    model.train()
    for x, y in batches:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))  # ok: PRC001
        optimizer.backward(loss)
        optimizer.step()
