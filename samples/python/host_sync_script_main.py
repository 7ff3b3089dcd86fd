"""A training script run from `if __name__ == "__main__":` (Tacotron 2 style), whose
validation pass is a helper the training loop calls under a periodic guard.

The module-level code inlines `train`, which inlines `validate`: the validation reads
must keep the guard of their call site there too.

Expected findings:
- SYN001 on the per-step loss read summed only for the epoch's report.
Not expected: SYN001 on the validation pass's reads (it runs every
`iters_per_checkpoint` steps, under `not is_overflow and (iteration % ... == 0)`).
"""

import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def reduce_tensor(tensor, n_gpus):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt / n_gpus


def validate(model, criterion, valset, distributed_run, n_gpus):
    model.eval()
    with torch.no_grad():
        val_loader = DataLoader(valset, num_workers=1, shuffle=False, batch_size=64)
        val_loss = 0.0
        for i, (x, y) in enumerate(val_loader):
            loss = criterion(model(x.cuda()), y.cuda())
            if distributed_run:
                reduced_val_loss = reduce_tensor(loss.data, n_gpus).item()  # ok: SYN001
            else:
                reduced_val_loss = loss.item()  # ok: SYN001
            val_loss += reduced_val_loss
        val_loss = val_loss / (i + 1)
    model.train()
    print("Validation loss {:9f}".format(val_loss))


def train(model, criterion, optimizer, train_loader, valset, hparams):
    model = model.cuda()
    iteration = 0
    is_overflow = False
    for epoch in range(hparams.epochs):
        total = 0.0
        for x, y in train_loader:
            model.zero_grad()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            loss.backward()
            optimizer.step()
            total += loss.item()  # expect: SYN001
            if not is_overflow and (iteration % hparams.iters_per_checkpoint == 0):
                validate(model, criterion, valset, hparams.distributed_run, hparams.n_gpus)
            iteration += 1
        print("epoch", epoch, total)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    hparams = parser.parse_args()
    train(None, None, None, None, None, hparams)
