"""A ViT compiled with torch.compile whose traced code has no graph break: control flow on
shapes, dims and flags (guards, not breaks), asserts on tensors (traced), .cpu() and NumPy
(traced since torch 2.1), reads and prints under `if not torch.compiler.is_compiling()`,
after `if torch.compiler.is_compiling(): return`, in a @torch.compiler.disable helper, in
raise statements and except handlers, and a debug print behind a switch (below the default
--min-confidence). The file turns on capture_scalar_outputs, so an .item() is traced too.
A module that is never compiled may read values freely. The fixed form of a data-dependent
branch is torch.where.

Expected findings: none. Not expected: CMP001 anywhere.
"""

import numpy as np
import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F

torch._dynamo.config.capture_scalar_outputs = True


@torch.compiler.disable
def log_stats(name, x):
    print(name, x.float().mean().item(), x.abs().max().item())  # ok: CMP001


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, dim=768):
        super().__init__()
        self.img_size = img_size
        self.proj = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        if x.shape[-1] != self.img_size or x.size(-2) != self.img_size:  # ok: CMP001
            x = F.interpolate(x, size=(self.img_size, self.img_size), mode="bilinear")
        if x.dim() == 3:  # ok: CMP001
            x = x.unsqueeze(0)
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim=768, heads=12):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if mask is not None and N > 1:  # ok: CMP001
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(B, N, C))


class ViTBlock(nn.Module):
    def __init__(self, dim=768, debug=False):
        super().__init__()
        self.debug = debug
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        if self.debug:
            print("block out", x.shape)  # ok: CMP001
        if not torch.compiler.is_compiling():
            if torch.isnan(x).any():  # ok: CMP001
                log_stats("nan in block", x)
        return x


class ViT(nn.Module):
    def __init__(self, depth=12, dim=768, num_classes=1000):
        super().__init__()
        self.patch_embed = PatchEmbed(dim=dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.blocks = nn.ModuleList([ViTBlock(dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x, labels=None):
        if x.ndim != 4:
            raise ValueError(f"expected NCHW images, got {x.shape} with mean {x.mean().item()}")  # ok: CMP001
        x = self.calibrate(self.patch_embed(x))
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.norm(x)[:, 0])
        assert (logits.abs() < 1e4).all(), "logits blew up"  # ok: CMP001
        logits = torch.where(torch.isfinite(logits), logits, torch.zeros_like(logits))  # ok: CMP001
        if self.training and labels is not None:  # ok: CMP001
            return F.cross_entropy(logits, labels)
        if torch.compiler.is_compiling():
            return logits
        print("eager logits", logits.float().mean().item())  # ok: CMP001
        return logits

    def calibrate(self, x):
        try:
            scale = x.std()
        except RuntimeError:
            print("calibration failed", x.sum().item())  # ok: CMP001
            scale = torch.ones(())
        return x / scale


@torch.compile(mode="max-autotune")
def normalize(x):
    host = x.cpu()  # ok: CMP001
    arr = host.numpy()  # ok: CMP001
    mean = np.mean(arr)  # ok: CMP001
    n = x.sum().item()  # ok: CMP001
    return (x - mean) / (x.std() + 1e-6) * (n / (n + 1))


class Probe(nn.Module):
    """Never compiled: its reads cost a sync, not a graph break."""

    def forward(self, x):
        if x.sum() > 0:  # ok: CMP001
            print(x.max().item())  # ok: CMP001
        return x


model = torch.compile(ViT())
probe = Probe()
