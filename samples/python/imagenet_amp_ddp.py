"""The fixed form of samples/python/imagenet_fp32_dp.py: one process per GPU under
DistributedDataParallel, forward and loss under bf16 autocast.

Not expected: TRN003 (DistributedDataParallel is not DataParallel), PRC001 (autocast).
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DistributedDataParallel(torchvision.models.resnet50().cuda(local_rank), device_ids=[local_rank])  # ok: TRN003
    train_set = torchvision.datasets.ImageFolder("/data/imagenet")
    loader = DataLoader(train_set, batch_size=256, sampler=DistributedSampler(train_set), num_workers=8,
                        pin_memory=True, persistent_workers=True)
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(90):
        model.train()
        for images, target in loader:
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                output = model(images)  # ok: PRC001
                loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
