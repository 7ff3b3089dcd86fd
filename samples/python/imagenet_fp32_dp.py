"""An ImageNet-style training script that runs in fp32 on nn.DataParallel.

Expected findings:
- TRN003 on nn.DataParallel over every visible GPU (once per function), also beside
  logging that says nothing about DataParallel, and over device_ids that start with one
  id and add more (`[0] + extra_ids`, `[*ids]`).
- PRC001 at the first model call of the training loop: nothing in the file chooses a
  reduced-precision format.
Not expected: TRN003 on DataParallel with one device id (by keyword or position); the fixed form is
samples/python/imagenet_amp_ddp.py.
"""

import argparse
import logging

import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader


def wrap_logged(model, args):
    # Logging that does not warn about DataParallel leaves the finding as it is.
    logging.info("logits dtype %s, distributed_eval=%s", args.dtype, args.distributed_eval)
    return torch.nn.DataParallel(model)  # expect: TRN003


def wrap_more(model, extra_ids):
    # One id and then more: every GPU in the list.
    return nn.DataParallel(model, device_ids=[0] + extra_ids)  # expect: TRN003


def wrap_splat(model, ids):
    return nn.DataParallel(model, device_ids=[*ids])  # expect: TRN003


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/data/imagenet")
    args = parser.parse_args()
    model = torchvision.models.resnet50()
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model).cuda()  # expect: TRN003
    else:
        model = nn.DataParallel(model, device_ids=[0]).cuda()  # ok: TRN003
        model = nn.DataParallel(model, [0,])  # ok: TRN003
    train_set = torchvision.datasets.ImageFolder(args.data)
    loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=8, pin_memory=True)
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(90):
        model.train()
        for images, target in loader:
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            output = model(images)  # expect: PRC001
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
