"""Gradient accumulation under DDP done right: the micro-batches before the last run their
backward() under model.no_sync(), and a nanoGPT-style loop that sets
require_backward_grad_sync itself.

Not expected: TRN002 anywhere (the file says no_sync: it chooses when to all-reduce).
"""

import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, accum_steps, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % accum_steps == 0
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)) / accum_steps  # expect: PRC001
            loss.backward()  # ok: TRN002
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_flag(model, loader, optimizer, accum_steps, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        model.require_backward_grad_sync = (i + 1) % accum_steps == 0
        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)) / accum_steps
        loss.backward()  # ok: TRN002
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
