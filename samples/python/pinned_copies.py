"""Copies of pinned batches to the GPU, blocking and not.

Expected findings:
- PLC002 on x.to(device) and y.cuda() of the batches of the pinned training loader, and
  on batch["image"].to(device) of the pinned evaluation loader: each waits for the GPU.
Not expected: DAT001 on the loader that has workers but does not pin its batches (below
the default --min-confidence: its workers already load ahead); PLC002 where
non_blocking=True is passed, for the batches of the loader that does not pin, for
.to(dtype), and for a copy outside the loop.
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


def train(model, train_set, val_set, raw_set, optimizer, device):
    train_loader = DataLoader(train_set, batch_size=256, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=512, num_workers=8, pin_memory=True)
    raw_loader = DataLoader(raw_set, batch_size=64, num_workers=2)  # ok: DAT001
    model.to(device)
    for x, y in train_loader:
        x = x.to(device)  # expect: PLC002
        y = y.cuda()  # expect: PLC002
        loss = F.cross_entropy(model(x), y)  # expect: PRC001
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for x, y in raw_loader:
        x, y = x.to(device), y.to(device)  # ok: PLC002
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    for step, (x, y) in enumerate(train_loader):
        x = x.to(device, non_blocking=True)  # ok: PLC002
        y = y.to(torch.long).to(device, non_blocking=True)  # ok: PLC002
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return evaluate(model, val_loader, device)


@torch.no_grad()
def evaluate(model, val_loader, device):
    correct = torch.zeros((), device=device)
    for batch in val_loader:
        images = batch["image"].to(device)  # expect: PLC002
        labels = batch["label"].to(device, non_blocking=True)  # ok: PLC002
        correct += (model(images).argmax(-1) == labels).sum()
    first = next(iter(val_loader))["image"].to(device)  # ok: PLC002
    return correct, first
