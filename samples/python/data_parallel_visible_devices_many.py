"""nn.DataParallel in a script whose CUDA_VISIBLE_DEVICES option lists two GPUs by default.

Expected: TRN003 at the DataParallel call: by default it spans GPUs 0 and 1 from one
process (the `--gpu-ids` option defaults to '0,1').
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main(loader):
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu-ids", type=str, default="0,1", dest="gpu_ids")
    args = parser.parse_args()
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu_ids
    model = nn.DataParallel(nn.Linear(1024, 1000)).cuda()  # expect: TRN003
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main([])
