"""A training script that compiles its model: Inductor already fuses the hand-written
norm, activation and gated unit, so the fusion rules' findings are demoted (context kind
`compiled`). Hand-written attention is still reported: the compiler does not turn every
spelling of it into a flash kernel. A function decorated with @torch.compile is compiled
by itself, in a file that compiles nothing else (compiled_decorator.py).

Expected findings: ATT001 on the attention. Not expected: NRM002, ACT001, FUS001.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # ok: NRM002
        return self.weight * x


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm = RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.gate = nn.Linear(dim, 4 * dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).split(c, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # expect: ATT001
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + y
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))  # ok: FUS001


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # ok: ACT001


model = torch.compile(nn.Sequential(Block(256, 4), Block(256, 4)).cuda())
