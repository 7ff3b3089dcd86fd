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
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    for step, (images, labels) in enumerate(loader):
        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(images)
        loss = F.cross_entropy(logits.float(), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main([])
