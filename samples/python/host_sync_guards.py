"""Host reads in training loops that do not stall every step, and one that does.

An ImageNet-style training step with a warm-up check on the first step, a periodic
logger, a convergence check that ends the loop, a world size read from the
environment, a benchmark that times steps with torch.cuda.synchronize(), a unit
test asserting on a gradient, and a non-finite-loss abort (DETR, DINO, ConvNeXt style)
whose value is bound to a name, then tested before sys.exit().

Expected findings:
- SYN001 on the per-step accuracy read (`.item()` on every step, in the else branch
  of the periodic logger, so it runs on most steps).
Not expected: SYN001 on the first-step check, the periodic log, the convergence
check, int(os.environ[...]), the timed synchronize(), the test's assertion, the
loss read the abort tests, and the print inside the abort.
"""

import math
import os
import sys
import time

import torch
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, device, log_interval=50, tol=1e-4):
    model.cuda()
    correct = torch.zeros((), device=device)
    for i, (images, labels) in enumerate(loader):
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        logits = model(images)
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
            correct += (logits.argmax(-1) == labels).sum().item()  # expect: SYN001
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
        loss = model(images.to(device), targets.to(device))
        loss_value = loss.item()  # ok: SYN001
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss.item()))  # ok: SYN001
            sys.exit(1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().float().item())  # expect: SYN001
    return losses
