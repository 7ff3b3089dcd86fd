"""The scripts of ddp_accumulation_options.py with apex's DistributedDataParallel, which has no
no_sync() (nor require_backward_grad_sync): the fix does not exist there.

Not expected: TRN002.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from apex.parallel import DistributedDataParallel as DDP

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
        loss.backward()  # ok: TRN002
        if (step + 1) % args.grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
