"""A GPU training loop in fp32 that turns on TF32 for cuDNN convolutions only (already
PyTorch's default): matmuls still run in full fp32 without tensor cores.

Expected findings: PRC001 at the loop's model call.
"""

import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = True


def train(model, loader, optimizer, device="cuda"):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)  # expect: PRC001
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
