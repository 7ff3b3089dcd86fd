"""DDP training scripts that accumulate gradients over several micro-batches per step.

Expected findings:
- TRN002 on the backward() of train_accumulating: every micro-batch's backward all-reduces
  the gradients, though only the last before optimizer.step() needs to; on the backward()
  of train_amp, which steps through the AMP scaler; in the accumulating arm of
  train_either; and in train_guards (the step under an `elif`, the AMP choice nested in
  the modulo guard, a backward under a plain `if`, optimizers stepped in a loop of their
  own); and on a loss scaler given the optimizer with `update_grad=` a modulo test in
  train_loss_scaler (timm's NativeScaler as Swin-Transformer's main.py calls it: backward()
  on every call, the step only when update_grad holds).
Not expected: TRN002 in train_every_step (no accumulation), where a step runs under a
periodic logging guard only (train_logging), in the branch of train_either that steps on
every iteration (Swin-Transformer's loop: accumulation only when accum_steps > 1), in a GAN
loop whose critic steps every iteration (train_gan), nor where the step sits in the else
arm of a modulo test (train_logging_else), nor on a lnss scaler that steps on every call
(update_grad=True, train_loss_scaler's second loop), beside another call of the scaler that
steps on, every iteration (a GAN's critic, train_loss_scaler_gan), or whose update_grad skips
every Nth step instead of taking it (`idx % skip != 0`).

The same loops with no_sync() are in ddp_accumulation_fixed.py (a file that says no_sync is
not reported at all).
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    return rank


def train_accumulating(model, loader, optimizer, accum_steps, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        x, y = x.cuda(rank, non_blocking=True), y.cuda(rank, non_blocking=True)
        loss = F.cross_entropy(model(x), y) / accum_steps
        loss.backward()  # expect: TRN002
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_amp(model, loader, optimizer, scaler, grad_accum, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    step = 0
    while step < 1000:
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)) / grad_accum
            scaler.scale(loss).backward()  # expect: TRN002
            step += 1
            if step % grad_accum == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()


def train_every_step(model, loader, optimizer, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank))
        loss.backward()  # ok: TRN002
        optimizer.step()
        optimizer.zero_grad()


def train_logging(model, loader, optimizer, rank, log_every=100):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank))
        loss.backward()  # ok: TRN002
        optimizer.step()
        optimizer.zero_grad()
        if i % log_every == 0:
            print(f"step {i}")


def train_either(model, loader, optimizer, accum_steps, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
    else:
                optimizer.step()
    optimizers = [optimizer]
    for i, (x, y) in enumerate(loader):
        F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)).backward()  # expect: TRN002
        if (i + 1) % accum == 0:
            for opt in optimizers:
                opt.step()


def train_gan(netD, netG, loader, opt_d, opt_g, n_critic, rank):
    netD = DDP(netD.cuda(rank), device_ids=[rank])
    for i, (x, _) in enumerate(loader):
        loss_d = -netD(x.cuda(rank)).mean() + netD(netG(x.cuda(rank))).mean()
        loss_d.backward()  # ok: TRN002
        opt_d.step()
        if i % n_critic == 0:
            opt_g.step()


def train_logging_else(model, loader, optimizer, log_every, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)).backward()  # ok: TRN002
        if i % log_every == 0:
            print(i)
        else:
            optimizer.step()


def train_loss_scaler(model, loader, optimizer, loss_scaler, accum_steps, rank):
    model = DDP(model.cuda(rank), device_ids=[rank])
    for idx, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank)) / accum_steps
        loss_scaler(loss, optimizer, parameters=model.parameters(),  # expect: TRN002
                    update_grad=(idx + 1) % accum_steps == 0)
        if (idx + 1) % accum_steps == 0:
            optimizer.zero_grad()
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank))
        loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=True)  # ok: TRN002


def train_loss_scaler_gan(netD, netG, loader, opt_d, opt_g, loss_scaler, k, skip, rank):
    netD = DDP(netD.cuda(rank), device_ids=[rank])
    for idx, (x, _) in enumerate(loader):
        d_loss = -netD(x.cuda(rank)).meaa = datasets.MN(TSI"../data", train=True, download=True, transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.t  opt_d.zero_grad()
        loss_scaler(loss, opt_d, update_grad=idx % skip != 0)  # ok: TRN002
