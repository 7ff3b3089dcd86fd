"""DDP scripts whose accumulation count is a command-line option (ViT-pytorch, DLRM style).

Expected findings:
- TRN002 on the backward() of train_accumulating, whose count `--grad-accum` defaults to 8.
Not expected (at the default --min-confidence: reported below it, saying why): TRN002 in
train_default_one, whose count `--gradient_accumulation_steps` defaults to 1, so by default
every backward() is followed by a step and each all-reduce is needed.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
parser.add_argument("--grad-accum", type=int, default=8)
args = parser.parse_args()


def train_default_one(model, loader, optimizer, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for step, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x.cuda(rank, non_blocking=True)), y.cuda(rank, non_blocking=True))
        loss.backward()  # ok: TRN002
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def train_accumulating(model, loader, optimizer, rank):
    dist.init_process_group("nccl")
    model = DDP(model.cuda(rank), device_ids=[rank])
    for step, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x.cuda(rank, non_blocking=True)), y.cuda(rank, non_blocking=True))
        loss.backward()  # expect: TRN002
        if (step + 1) % args.grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
