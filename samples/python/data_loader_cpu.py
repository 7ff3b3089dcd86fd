"""A CPU-only fit (nothing is placed on a GPU): worker settings matter less, nothing reported.

Not expected: DAT001 on the loader below.
"""

import torch.nn.functional as F
from torch.utils.data import DataLoader


def fit(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=32, shuffle=True)  # ok: DAT001
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
