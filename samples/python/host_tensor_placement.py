"""Tensors created on the host and copied to the GPU in code that runs every step.

Expected findings:
- PLC001 on factories without device= followed by .cuda() or .to(device/tensor), in a
  module's forward, in a training loop, and in a generation loop.
Not expected: PLC001 where the factory passes device=, where .to() only converts the
dtype or moves to the CPU, on host data (a list) that must be copied anyway, in
__init__ (runs once), on a loop of a function that is not a step loop, on an empty
tensor (a copy of no elements does not wait), on a lazy `if attn is None:` buffer built
once inside a generation loop, in an epoch loop around the training loop, in a
branch that runs only for an empty tensor (the else of `if x.size(0) > 0`), right after
a blocking copy of host data (the queue is already empty), and on a copy that passes
non_blocking=True, and on a tensor built from a value read back in the same expression
(`fill_(next_word.item())`) (below the default --min-confidence, with the reason).
A second factory copied in the same function (and branch) is a related location of the
first; factories on the two sides of an if/else are two findings.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalModel(nn.Module):
    def __init__(self, dim, max_len=512):
        super().__init__()
        self.emb = nn.Embedding(max_len, dim)
        self.proj = nn.Linear(dim, dim)
        table = torch.arange(max_len).cuda()  # ok: PLC001
        self.register_buffer("positions", table)

    def forward(self, x, mask=None):
        positions = torch.arange(x.shape[1]).cuda()  # expect: PLC001
        bias = torch.zeros(x.shape[0], x.shape[1]).to(x)  # expect: PLC001
        causal = torch.ones(x.shape[1], x.shape[1]).tril().bool().to(x.device)  # expect: PLC001
        direct = torch.zeros(x.shape[0], x.shape[1], device=x.device)  # ok: PLC001
        half = torch.arange(x.shape[1]).to(torch.float16)  # ok: PLC001
        back = torch.zeros(3).to("cpu")  # ok: PLC001
        ids = torch.tensor([1, 2, 3]).to(x.device)  # ok: PLC001
        h = self.proj(x + self.emb(positions)) + bias.unsqueeze(-1) + direct.unsqueeze(-1)
        h = h.masked_fill(~causal[:, :1].unsqueeze(0), 0.0)
        return h, half, back, ids


def train(model, loader, optimizer, device):
    model.to(device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        noise = torch.randn(x.shape).to(device)  # expect: PLC001
        loss = F.mse_loss(model(x + noise)[0].mean(-1), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


@torch.no_grad()
def generate(model, tokens, steps):
    attn = None
    for _ in range(steps):
        logits = model(tokens)[0][:, -1]
        logits[logits != logits] = torch.tensor(-math.inf).to(logits)  # expect: PLC001
        finished = torch.empty(0).to(tokens)  # ok: PLC001
        if attn is None:
            attn = torch.empty(tokens.shape[0], steps).to(logits)  # ok: PLC001
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    return tokens, finished, attn


def fit(model, loader, optimizer, device, epochs):
    for epoch in range(epochs):
        train(model, loader, optimizer, device)
        preview = torch.randn(8, 20).to(device)  # ok: PLC001
    return preview


def build_tables(n, device):
    tables = []
    for i in range(n):
        tables.append(torch.arange(i + 1).to(device))  # ok: PLC001
    return tables


class LabelledHead(nn.Module):
    # The loss of a batch whose labels are all ignored falls back to a zero created on
    # the host: that branch runs only for such a degenerate batch.
    def forward(self, logits, labels):
        index = (labels >= 0).nonzero()
        if index.size(0) > 0:
            loss = F.cross_entropy(logits[index.view(-1)], labels[index.view(-1)])
        else:
            loss = torch.tensor(0).to(logits)  # ok: PLC001
        if labels.numel() == 0:
            loss = torch.zeros(1).to(logits)  # ok: PLC001
        weight = torch.ones(logits.shape[-1]).to(logits)  # expect: PLC001
        return loss * weight.mean()


@torch.no_grad()
def evaluate_rerank(model, feats_cpu, sims, k, device):
    # The features live on the host: their blocking copy waits for the GPU, and the mask
    # copied right after it waits on nothing.
    scores = []
    for i, row in enumerate(sims):
        feats = feats_cpu[i].repeat(k, 1, 1).to(device)
        mask = torch.ones(feats.shape[:-1], dtype=torch.long).to(device)  # ok: PLC001
        scores.append(model(feats, mask))
    return scores


def decode(model, tokens, steps):
    # Copied with non_blocking=True: nothing waits for the GPU; two factories of one
    # step are one finding.
    for _ in range(steps):
        pos = torch.arange(tokens.shape[1]).to(tokens.device, non_blocking=True)  # ok: PLC001
        step = torch.full((1,), tokens.shape[1]).to(tokens.device)  # expect: PLC001
        scale = torch.ones(1).to(tokens.device)  # expect: PLC001
        tokens = torch.cat([tokens, model(tokens, pos, step * scale).argmax(-1, keepdim=True)], dim=1)
    return tokens


def greedy_decode(model, memory, start, eos, max_len, device):
    # The token is read back for the end-of-sequence test anyway; the tensor built from
    # that number waits on nothing.
    ys = torch.full((1, 1), start, dtype=torch.long, device=device)
    for _ in range(max_len):
        next_word = model(memory, ys)[:, -1].argmax(-1)
        ys = torch.cat([ys, torch.empty(1, 1).long().fill_(next_word.item()).to(device)], dim=1)  # ok: PLC001
        if next_word == eos:
            break
    return ys


class TimeSampler(nn.Module):
    # Both branches copy a host tensor; they are two findings, not one: a project that
    # never takes one branch (a flag it never sets) must not hide the other.
    def __init__(self, logit_normal=True):
        super().__init__()
        self.logit_normal = logit_normal

    def forward(self, x):
        if self.logit_normal:
            t = torch.sigmoid(torch.randn((x.size(0),)).to(x.device))  # expect: PLC001
        else:
            t = torch.rand((x.size(0),)).to(x.device)  # expect: PLC001
        return x * t.view(-1, *([1] * (x.dim() - 1)))
