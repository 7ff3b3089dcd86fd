"""Host reads in training loops that do not stall every step, and one that does.

An ImageNet-style training step with a warm-up check on the first step, a periodic
logger, a convergence check that ends the loop, a world size read from the
environment, a benchmark that times steps with torch.cuda.synchronize(), a unit
test asserting on a gradient, and a non-finite-loss abort (DETR, DINO, ConvNeXt style)
whose value is bound to a name, then tested before sys.exit(); a GAN-style loop that
prints its statistics on every step by design, multi-scale training that draws an
image size with int(imgsz * 0.5), a validation pass nested under a periodic guard, a
checkpoint written under its own interval, and a read under `if divisible_by(i, eval_every):`
(x-transformers' helper for the interval test).

Expected findings:
- SYN001 on the per-step loss read summed only for the epoch's report.
Not expected: SYN001 on the first-step check, the periodic log, the convergence
check, int(os.environ[...]), the timed synchronize(), the test's assertion, the
loss read the abort tests, the print inside the abort, reads shown only by a per-step
print are reported only below the default --min-confidence (at 0.45; marked ok, as
the golden test runs at the default), and not at all: the Python arithmetic in int(), the nested
validation pass and the checkpoint's .cpu(). Reported only below the default too: reads in a
step that already waits for the GPU on every iteration (the accuracy read beside the
convergence check `if loss.item() < tol`, the read after a non-finite-loss abort, one beside
a barrier), and a read collected into a dict that `accelerator.log` logs on every step.
"""

import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, device, log_interval=50, tol=1e-4):
    model.cuda()
    correct = torch.zeros((), device=device)
    for i, (images, labels) in enumerate(loader):
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        logits = model(images)  # expect: PRC001
        loss = F.cross_entropy(logits, labels)
        if i == 0:
            print("first loss", loss.item())  # ok: SYN001
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        world = int(os.environ["WORLD_SIZE"])  # ok: SYN001
        if i % log_interval == 0:
            print(f"step {i} loss {loss.item():.4f} world {world}")  # ok: SYN001
        else:
            correct += (logits.argmax(-1) == labels).sum().item()  # ok: SYN001
        if loss.item() < tol:  # ok: SYN001
            break
    return correct


def benchmark_steps(model, batch, optimizer, steps=20):
    model.cuda()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()  # ok: SYN001
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def test_grad_is_averaged(model, batch, optimizer):
    for _ in range(3):
        loss = model(batch.cuda()).sum()
        loss.backward()
        optimizer.step()
        assert model.weight.grad.item() == 1.0  # ok: SYN001


def train_with_abort(model, loader, optimizer, device):
    losses = []
    for images, targets in loader:
        loss = model(images.to(device, non_blocking=True), targets.to(device, non_blocking=True))
        loss_value = loss.item()  # ok: SYN001
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss.item()))  # ok: SYN001
            sys.exit(1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().float().item())  # ok: SYN001
    return losses


def train_accumulating(model, loader, optimizer, device):
    """Every step reads the loss back only to sum it for the epoch's report: defer it."""
    total = 0.0
    for images, targets in loader:
        loss = model(images.to(device, non_blocking=True), targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()  # expect: SYN001
    print(f"epoch loss {total / len(loader):.4f}")
    return total


def train_logged(model, loader, optimizer, scaler, accelerator, device):
    """PixArt/diffusers style: the step logs its loss on every step, and an AMP scaler's
    step reads found_inf back anyway."""
    for step, (images, targets) in enumerate(loader):
        loss = model(images.to(device, non_blocking=True), targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        logs = {"loss": accelerator.gather(loss).mean().item()}  # ok: SYN001
        logs.update(lr=optimizer.param_groups[0]["lr"])
        accelerator.log(logs, step=step)


def train_with_barrier(model, loader, optimizer, accelerator, device):
    """A barrier on every step already waits for the GPU: one more read costs nothing."""
    history = []
    for images, targets in loader:
        loss = model(images.to(device, non_blocking=True), targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # ok: SYN001
        accelerator.wait_for_everyone()
    return history


def save_checkpoint(model, path):
    state = {k: v.cpu() for k, v in model.state_dict().items()}  # ok: SYN001
    torch.save(state, path)


def train_gan(netD, netG, loader, optD, optG, device, imgsz=640, eval_every=1000, save_every=500):
    for i, (real, _) in enumerate(loader):
        real = real.to(device)
        size = random.randrange(int(imgsz * 0.5), int(imgsz * 1.5))  # ok: SYN001
        real = F.interpolate(real, size=size)
        errD = netD(real).mean() - netD(netG(real)).mean()
        errD.backward()
        optD.step()
        D_x = netD(real).mean().item()  # ok: SYN001
        errG = -netD(netG(real)).mean()
        errG.backward()
        optG.step()
        print(f"[{i}] Loss_D {errD.item():.4f} Loss_G {errG.item():.4f} D(x) {D_x:.4f}")  # ok: SYN001
        if i % eval_every == 0:
            correct = 0
            for x, y in loader:
                correct += (netD(x.to(device)) > 0).sum().item()  # ok: SYN001
        if i % save_every == 0:
            save_checkpoint(netG, "netG.pt")
        if divisible_by(i, eval_every):
            print(f"validation D(x) {netD(real).mean().item():.4f}")  # ok: SYN001


def divisible_by(num, den):
    return (num % den) == 0
