"""nn.DataParallel where CUDA_VISIBLE_DEVICES decides how many GPUs it spans.

Not expected (below the default --min-confidence): TRN003 in train_one, whose script
makes one GPU visible by default (`--gpu_id` defaults to '0', as DeepLabV3+'s main.py
does): DataParallel over one device calls the module directly. The script that lists
two GPUs by default is data_parallel_visible_devices_many.py.
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu_id", type=str, default="0", help="GPU ID")
    return parser.parse_args()


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_one(loader):
    opts = options()
    os.environ["CUDA_VISIBLE_DEVICES"] = opts.gpu_id
    model = nn.DataParallel(nn.Linear(1024, 1000))  # ok: TRN003
    train(model.cuda(), loader)


if __name__ == "__main__":
    train_one([])
