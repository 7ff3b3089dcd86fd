"""A teaching script that trains on whatever accelerator there is, or the CPU.

Not expected: OPT001 at the default --min-confidence on its Adam: the script also runs
without CUDA, where fused=True would have to depend on the device (reported at 0.40).
"""

import torch
import torch.nn.functional as F
from torch import optim

use_accel = torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")


def train(model, loader):
    model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)  # ok: OPT001
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))  # expect: PRC001
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
