"""Debugging switches in a training script: left on, and behind a flag.

Expected findings:
- DBG001 on torch.autograd.set_detect_anomaly(True), the detect_anomaly() context around
  the step, torch.cuda.set_sync_debug_mode("warn") and CUDA_LAUNCH_BLOCKING=1 set from
  code, each run unconditionally.
Not expected: DBG001 where the switch is under `if args.debug:`, where its value comes
from a flag, where it is turned off, inside a `try`, and in a function named debug_*.
"""

import argparse
import os

import torch
import torch.nn.functional as F

os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # expect: DBG001
torch.autograd.set_detect_anomaly(True)  # expect: DBG001
torch.cuda.set_sync_debug_mode("warn")  # expect: DBG001


def debug_step(model, x):
    with torch.autograd.detect_anomaly():  # ok: DBG001
        model(x).sum().backward()


def train(model, loader, optimizer, args):
    torch.autograd.set_detect_anomaly(args.detect_anomaly)  # ok: DBG001
    torch.cuda.set_sync_debug_mode(0)  # ok: DBG001
    if args.debug:
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # ok: DBG001
        torch.autograd.set_detect_anomaly(True)  # ok: DBG001
    try:
        torch.cuda.set_sync_debug_mode("error")  # ok: DBG001
    except RuntimeError:
        pass
    model.cuda()
    for x, y in loader:
        with torch.autograd.detect_anomaly():  # expect: DBG001
            loss = F.cross_entropy(model(x.cuda()), y.cuda())  # expect: PRC001
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true")
