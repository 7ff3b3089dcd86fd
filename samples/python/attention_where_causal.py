"""A decoder-only block whose causal mask is built inline with torch.tril and applied by torch.where.

Models: a character-level transformer as written in tutorials, where each forward
builds `torch.tril(torch.ones(T, T, dtype=torch.bool))`, keeps allowed scores with
`torch.where(causal, scores, float('-inf'))`, scales with `* head_dim ** -0.5`
applied to the product, and finishes with torch.softmax and a matmul; a second
module does the same with a sliding window (band) mask.

Expected findings:
- ATT001 at `out = torch.matmul(probs, v)` in CausalHead.forward.
- ATT001 at `return probs @ v` in SlidingWindowHead.forward.
- FUS002 (a hint, below the default threshold) at the feed-forward's `F.relu(self.fc(x))`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalHead(nn.Module):
    """One head of causal self-attention."""

    def __init__(self, n_embd, head_size, dropout=0.1):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        v = self.value(x)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        scores = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        scores = torch.where(causal, scores, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        probs = self.dropout(probs)
        out = torch.matmul(probs, v)  # expect: ATT001
        return out


class SlidingWindowHead(nn.Module):
    """Causal attention restricted to the last `window` positions."""

    def __init__(self, n_embd, head_size, window=256):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * head_size, bias=False)
        self.window = window

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        idx = torch.arange(T, device=x.device)
        band = (idx[None, :] <= idx[:, None]) & (idx[:, None] - idx[None, :] < self.window)
        scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
        scores = torch.where(band, scores, torch.finfo(scores.dtype).min)
        probs = scores.softmax(-1)
        return probs @ v  # expect: ATT001


class FeedForward(nn.Module):
    def __init__(self, n_embd, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = F.relu(self.fc(x))  # hint: FUS002
        return self.dropout(self.proj(x))


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, num_heads, dropout=0.1):
        super().__init__()
        head_size = n_embd // num_heads
        self.heads = nn.ModuleList([CausalHead(n_embd, head_size, dropout) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.proj(out)
