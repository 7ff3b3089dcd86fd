"""Per-step reads in steps that wait for the GPU anyway, and reads that are not reads.

A step that prints `loss.item()` on every iteration (the script's chosen output), or that
indexes with a boolean mask (`x[mask]`, whose result's size the host must learn), waits
for the GPU on every step whatever else it does: deferring one more `.item()` there
removes no wait, so such reads fall below the default confidence. A running mean shown
in a progress bar's text (`pbar.desc = ...`) is that output too. `m.cpu().parameters()`
moves a module's weights to the host to send them, which is not a value read back.

Expected findings:
- SYN001 on `epoch_loss += loss.item()` in a step that copies its batch with
  non_blocking=True and shows nothing per step (train_quiet), in a step whose mask is
  written to, not read (masked_fill by assignment, no sync: train_masked_fill), and on
  `float(x.item())` once, after an early `continue` on the periodic steps themselves
  (train_skips_periodic_steps: the read runs on all the others), and on the inner read of
  a float() of arithmetic (`float(scale.factor * loss.item())`).
Not expected: SYN001 in train_prints_each_step (the print reads every step), in
train_masked_loss (boolean-mask indexing syncs every step), in train_blocking_copy (the
batch copy without non_blocking=True waits for the GPU), in train_timed (an explicit
synchronize every step, itself reported), in train_progress_bar (the running mean only reaches the bar's
text), after an early `return` or `continue` unless the step logs (train_step, inlined
into train_steps; train_early_continue), under a name bound to a
periodic test (`is_metric_step`), in an evaluation pass a helper runs under a periodic
guard of the step (evaluate, inlined into train_with_periodic_eval), and on the module
moved for RPC. `float(x.item())` is one
finding, not two.
"""

import torch
import torch.nn.functional as F

torch.set_float32_matmul_precision("high")


def train_quiet(model, loader, optimizer, device="cuda"):
    epoch_loss = 0.0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()  # expect: SYN001
    return epoch_loss


def train_prints_each_step(model, loader, optimizer, device="cuda"):
    epoch_loss = 0.0
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        epoch_loss += loss.item()  # ok: SYN001
        loss.backward()
        optimizer.step()
        print("step {}: loss {:.4f}".format(i, loss.item()))  # ok: SYN001
    return epoch_loss


def train_masked_loss(model, loader, optimizer, device="cuda"):
    l1 = 0.0
    for x, target, mask in loader:
        x, target, mask = x.to(device), target.to(device), mask.to(device)
        pred = model(x)
        loss = F.l1_loss(pred[mask], target[mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        l1 += loss.item()  # ok: SYN001
    return l1


def train_masked_fill(model, loader, optimizer, device="cuda"):
    total = 0.0
    for x, target, mask in loader:
        x = x.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        mask = mask.to(device, non_blocking=True)
        pred = model(x)
        pred[mask] = 0.0
        loss = F.mse_loss(pred, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()  # expect: SYN001
    return total


def train_progress_bar(model, pbar, optimizer, device="cuda"):
    tloss = 0.0
    for i, (x, y) in pbar:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tloss = (tloss * i + loss.item()) / (i + 1)  # ok: SYN001
        pbar.desc = f"{tloss:>12.3g}"


def run_trainer(model, loader, optimizer, param_server, device="cuda"):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grads = [p.grad for p in model.cpu().parameters()]  # ok: SYN001
        param_server.update(grads)
        model.to(device)
        optimizer.step()


def train_blocking_copy(model, loader, optimizer, device="cuda"):
    # The blocking copy waits for the previous step's kernels anyway.
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()  # ok: SYN001
    return total


def train_timed(model, loader, optimizer, device="cuda"):
    total = 0.0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()  # expect: SYN001
        total += loss.item()  # ok: SYN001
    return total


def train_step(model, batch, optimizer, step, log_every=10):
    x, y = batch
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    should_log = step % log_every == 0
    if not should_log:
        return
    print(float(loss.item()))  # ok: SYN001


def train_steps(model, loader, optimizer, device="cuda"):
    for step, (x, y) in enumerate(loader):
        batch = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        train_step(model, batch, optimizer, step)


def train_early_continue(model, loader, optimizer, log_every=10, device="cuda"):
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % log_every != 0:
            continue
        print(float(loss.item()))  # ok: SYN001


def train_metric_steps(model, loader, optimizer, metric_every=50, device="cuda"):
    meter = []
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        is_metric_step = i % metric_every == 0
        if is_metric_step:
            meter.append(loss.item())  # ok: SYN001
        lr = float(optimizer.param_groups[0]["lr"].item())  # expect: SYN001
    return meter, lr


def evaluate(model, val_loader, device="cuda"):
    preds = []
    with torch.no_grad():
        for x, _ in val_loader:
            preds.append(model(x.to(device, non_blocking=True)).argmax(-1).cpu().numpy())  # ok: SYN001
    return preds


def train_with_periodic_eval(model, loader, val_loader, optimizer, eval_every=500, device="cuda"):
    # The evaluation pass inlined from evaluate() runs under the periodic guard at its
    # call site, not on every step.
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % eval_every == 0:
            evaluate(model, val_loader, device)


def train_skips_periodic_steps(model, loader, optimizer, scale, device="cuda"):
    # Leaving out every 100th step keeps the read on all the others.
    total = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            continue
        total += loss.item()  # expect: SYN001
        total += float(scale.factor * loss.item())  # expect: SYN001
    return total
