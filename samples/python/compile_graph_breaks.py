"""A GPT pretraining script that compiles its model, with the graph breaks people leave in
code torch.compile traces: a NaN check and a loss read in GPT.forward, a router whose
load-balance check branches on a tensor and logs every call (its warning under that
condition is a rare path, below the default --min-confidence), a count read with int(), a boolean-mask
gather, and a compiled loss helper with a data-dependent while loop, a timer and Python's
random. Each is a break torch._dynamo.explain reports (bench/graph_break_probe.py).

Expected findings: CMP001 on each marked line. Not expected: CMP001 on the shape checks,
`self.training`, the assert, .cpu(), or the periodic read in the training loop (outside
the compiled code).
"""

import logging
import math
import random
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)


class GPTConfig:
    block_size = 1024
    vocab_size = 50304
    n_layer = 12
    n_head = 12
    n_embd = 768
    n_expert = 8
    pad_id = 50256


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if x.dim() == 3 and T > 1:  # ok: CMP001
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Router(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_expert = config.n_expert
        self.imbalanced_calls = 0
        self.gate = nn.Linear(config.n_embd, config.n_expert, bias=False)

    def forward(self, x):
        probs = self.gate(x).softmax(dim=-1)
        top = probs.argmax(dim=-1)
        counts = torch.bincount(top.flatten(), minlength=self.n_expert)
        if counts.max() > 2 * counts.float().mean():  # expect: CMP001
            self.imbalanced_calls += 1
            warnings.warn("router imbalance")  # ok: CMP001
        logger.debug("router load %s", counts)  # expect: CMP001
        return probs, top


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = Router(config)
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        probs, top = self.router(x)
        h = F.gelu(self.c_fc(x))
        return self.c_proj(h) * probs.max(dim=-1, keepdim=True).values


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.last_loss = 0.0
        self.tokens_seen = 0

    def count_tokens(self, idx):
        real = idx[idx != self.config.pad_id]  # expect: CMP001
        self.tokens_seen += int(real.numel())

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} tokens is too long"
        if self.training:  # ok: CMP001
            self.count_tokens(idx)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if torch.isnan(logits).any():  # expect: CMP001
            logits = torch.nan_to_num(logits)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        n_valid = int((targets != -1).sum())  # expect: CMP001
        self.last_loss = loss.item()  # expect: CMP001
        return logits, loss * (targets.numel() / max(n_valid, 1))


@torch.compile
def z_loss(logits, weight):
    z = torch.logsumexp(logits.float(), dim=-1)
    penalty = weight * (z**2).mean()
    while (penalty > 10.0).any():  # expect: CMP001
        penalty = penalty / 2
    jitter = 1.0 + 0.01 * random.random()  # expect: CMP001
    return penalty * jitter


def get_batch(data, config, batch_size, device):
    ix = torch.randint(len(data) - config.block_size, (batch_size,), device=device)
    x = torch.stack([data[i : i + config.block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + config.block_size] for i in ix])
    return x, y


def main():
    device = "cuda"
    config = GPTConfig()
    data = torch.randint(config.vocab_size, (1_000_000,), device=device)
    model = GPT(config).to(device)
    model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    t0 = time.time()
    for step in range(5000):
        x, y = get_batch(data, config, 8, device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits, loss = model(x, y)
            loss = loss + z_loss(logits, 1e-4)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f} ({time.time() - t0:.1f}s)")  # ok: CMP001, SYN001


if __name__ == "__main__":
    main()
