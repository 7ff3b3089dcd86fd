"""Training loop for the GPT in gpt_nanogpt.py: gradient accumulation, AMP, periodic eval.

Models a nanoGPT-style train.py refactored into functions: random batches from a
memory-mapped token file, a cosine learning-rate schedule, estimate_loss() under
torch.no_grad, gradient accumulation with torch.autocast and a GradScaler, logging
guarded by `iter_num % log_interval == 0`, and a token counter updated every step.

Expected findings:
- OPT001 at the AdamW built without fused=True (a preview rule).
- SYN001 at `tokens_seen += (Y != -1).sum().item()`: a sync on every micro-step.
Not expected: SYN001 in estimate_loss (evaluation, no backward) and on the guarded
logging line; LOS001 (F.cross_entropy is used inside the model).
"""

import math
import os
import time

import numpy as np
import torch

from gpt_nanogpt import GPT, GPTConfig

batch_size = 12
block_size = 1024
gradient_accumulation_steps = 40
max_iters = 600000
eval_interval = 2000
eval_iters = 200
log_interval = 10
learning_rate = 6e-4
min_lr = 6e-5
warmup_iters = 2000
lr_decay_iters = 600000
device = "cuda"
data_dir = os.path.join("data", "openwebtext")


def get_batch(split):
    data = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


@torch.no_grad()
def estimate_loss(model, ctx):
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()  # ok: SYN001
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def main():
    model = GPT(GPTConfig(block_size=block_size)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)  # expect: OPT001
    scaler = torch.amp.GradScaler("cuda")
    ctx = torch.autocast(device_type="cuda", dtype=torch.bfloat16)

    X, Y = get_batch("train")
    t0 = time.time()
    tokens_seen = 0
    for iter_num in range(max_iters):
        for param_group in optimizer.param_groups:
            param_group["lr"] = get_lr(iter_num)

        if iter_num % eval_interval == 0:
            losses = estimate_loss(model, ctx)
            print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            tokens_seen += (Y != -1).sum().item()  # expect: SYN001
            X, Y = get_batch("train")
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if iter_num % log_interval == 0:
            lossf = loss.item() * gradient_accumulation_steps  # ok: SYN001
            print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, tokens {tokens_seen}")


if __name__ == "__main__":
    main()
