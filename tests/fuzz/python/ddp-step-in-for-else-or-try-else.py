import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_accumulating(model, loader, optimizer, accum):
    model = DDP(model)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % accum == 0:
            optimizer.step()


def train_for_else(model, loader, optimizer, accum):
    model = DDP(model)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        for group in optimizer.param_groups:
            pass
        else:
            optimizer.step()


def train_try_else(model, loader, optimizer):
    model = DDP(model)
    for x in loader:
        model(x).sum().backward()
        try:
            pass
        except RuntimeError:
            pass
        else:
            optimizer.step()
