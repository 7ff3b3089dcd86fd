"""Host-device synchronizations in and around training loops.

Models the ways a training loop stalls the GPU by reading a tensor on the host
every step (`.item()`, `.cpu().numpy()`, `float(loss)`, `.item()` in the loop's own
condition), and the ways it does not: a read guarded to run every N steps, a read
once per epoch after the inner loop, a validation loop under torch.no_grad nested in
the epoch loop, `.tolist()` on a NumPy array already on the host, and a
preprocessing loop with no backward or optimizer step.

Expected findings:
- SYN001 on each unguarded per-step read inside a loop that calls backward() or
  optimizer.step(): the `.cpu().numpy()` metric (only collected for the epoch's
  accuracy); also in a loop whose step is a loss scaler given the
  optimizer (`loss_scaler(loss, optimizer, ...)`, timm's NativeScaler as DeiT, MAE and
  Swin use it), which runs backward() and step() inside the call.
Not expected: SYN001 on the isfinite check that aborts training (its value decides
whether this step goes on), history.append(loss.item()) in that step (only below the
default --min-confidence: the check already waits for the GPU), `loss_value = float(loss)`
that the `while` condition tests on every step (only below the default: the loop needs the
value on the host to decide whether to go on), the guarded log line, the per-epoch mean, the validation
loop, the NumPy `.tolist()`, build_vocab, and loops whose scaler calls are not a training
step: a scaler without an optimizer (score_batches), a learning-rate scaler given the
optimizer, and a scaler given only `optimizer=` (scale_lr).
"""

from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F


def train(model, loader, val_loader, optimizer, epochs, log_every=100, device="cuda"):
    step = 0
    history = []
    for epoch in range(epochs):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for batch in loader:
            inputs = batch["input"].to(device, non_blocking=True)
            targets = batch["target"].to(device, non_blocking=True)
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets)
            if not torch.isfinite(loss).item():  # ok: SYN001
                raise FloatingPointError(f"non-finite loss at step {step}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.detach()
            history.append(loss.item())  # ok: SYN001
            if step % log_every == 0:
                print(f"step {step} loss {loss.item():.4f} grad_norm {grad_norm.item():.3f}")  # ok: SYN001
            step += 1
        print(f"epoch {epoch}: mean loss {(epoch_loss / len(loader)).item():.4f}")  # ok: SYN001

        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                x, y = x.to(device), y.to(device)
                val_loss += F.cross_entropy(model(x), y).item()  # ok: SYN001
        print(f"epoch {epoch}: val loss {val_loss / len(val_loader):.4f}")
    return history


def train_with_accuracy(model, loader, optimizer, device="cuda"):
    all_preds, all_labels = [], []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        preds = logits.argmax(dim=-1).cpu().numpy()  # expect: SYN001
        all_preds.extend(preds.tolist())  # ok: SYN001
        all_labels.append(y)
    labels = torch.cat(all_labels).cpu().numpy()  # ok: SYN001
    return float(np.mean(np.array(all_preds) == labels))


def train_until(model, batches, optimizer, target_loss=0.01, max_steps=100_000):
    """Regression fit that stops once the loss reaches target_loss."""
    loss_value = float("inf")
    steps = 0
    while loss_value > target_loss and steps < max_steps:
        x, y = next(batches)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_value = float(loss)  # ok: SYN001
        steps += 1
    return steps


def build_vocab(token_tensors, min_count=5):
    """Token frequencies over a tokenized corpus (CPU tensors, no training)."""
    counts = Counter()
    for tokens in token_tensors:
        counts.update(tokens.tolist())  # ok: SYN001
    return [tok for tok, c in counts.most_common() if c >= min_count]


def train_one_epoch_scaler(model, criterion, loader, optimizer, loss_scaler, device="cuda"):
    model.train()
    for samples, targets in loader:
        samples = samples.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(samples), targets)
        optimizer.zero_grad()
        loss_scaler(loss, optimizer, parameters=model.parameters())
        torch.cuda.synchronize()  # expect: SYN001


def score_batches(model, loader, score_scaler, device="cuda"):
    scores = []
    for x in loader:
        s = score_scaler(model(x.to(device)))
        scores.append(s.sum().item())  # ok: SYN001
    return scores


def scale_lr(model, loader, optimizer, lr_scaler, grad_scaler, device="cuda"):
    norms = []
    with torch.no_grad():
        for it, x in enumerate(loader):
            lr_scaler(optimizer, it)
            grad_scaler(optimizer=optimizer)
            norms.append(model(x.to(device)).norm().item())  # ok: SYN001
    return norms
