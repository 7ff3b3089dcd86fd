"""A linear probe: the backbone runs frozen under no_grad and only a small head trains.

Not expected: PRC001 (what trains is another, small module; the backbone's fp32 may be
the evaluation protocol).
"""

import torch
import torch.nn.functional as F


def train_linear_probe(model, head, loader, device):
    model.to(device)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01)
    for x, y in loader:
        with torch.no_grad():
            features = model(x.to(device, non_blocking=True))  # ok: PRC001
        loss = F.cross_entropy(head(features), y.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
