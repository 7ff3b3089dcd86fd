"""nn.DataParallel where the script does not need it, or says so itself.

Not expected: TRN003 beside DistributedDataParallel in the same script (the fallback when
it is not launched with one process per GPU; below the default --min-confidence), and
where the code beside it already warns that DataParallel is not recommended.
"""

import argparse
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

LOGGER = logging.getLogger(__name__)


def setup(model, args):
    if args.distributed:
        return DistributedDataParallel(model.cuda(args.gpu), device_ids=[args.gpu])
    return nn.DataParallel(model).cuda()  # ok: TRN003


def setup_warned(model):
    if torch.cuda.device_count() > 1:
        LOGGER.warning("DP not recommended, use torch.distributed.run for best DDP multi-GPU results")
        model = torch.nn.DataParallel(model)  # ok: TRN003
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    model = setup(nn.Linear(1024, 1024), args)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in [(torch.randn(64, 1024), torch.randn(64, 1024))]:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
