"""Building blocks of a latent-diffusion UNet: residual blocks and spatial self-attention.

Models: GroupNorm normalization, swish written as x * sigmoid(x), a sinusoidal
timestep embedding, a residual block with a timestep projection, and the spatial
self-attention block whose scores are `torch.einsum('bid,bjd->bij', q, k) * scale`.

Expected findings:
- ATT001 at the second einsum (weights · v) in SpatialSelfAttention.forward.
- FUS003 (a hint, below the default threshold) at the residual block's `h = self.dropout(h)`: sigmoid, multiply (the swish)
  and dropout run as three kernels over the full feature map.
Not expected:
- FUS001 on `x * torch.sigmoid(x)`: swish of one tensor, no gate and value pair.
- FUS003 on the timestep frequencies: a chain on a tiny arange-built table.
- FUS002 in the residual block: its convolutions feed GroupNorm or a residual add,
  and a swish before a conv is not an epilogue of it.
- FUS002 on the time-embedding nn.Sequential (Linear -> SiLU -> Linear): it runs on
  one embedding vector per sample (cold code), so its confidence stays below the
  default threshold.
"""

import math

import torch
import torch.nn as nn


def Normalize(in_channels, num_groups=32):
    return nn.GroupNorm(num_groups=num_groups, num_channels=in_channels, eps=1e-6, affine=True)


def nonlinearity(x):
    # swish
    return x * torch.sigmoid(x)  # ok: FUS001


def timestep_embedding(timesteps, dim, max_period=10000):
    """Sinusoidal embedding of integer diffusion timesteps, shape (N, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=timesteps.device) / half)  # ok: FUS003
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResnetBlock(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels=512, dropout=0.0):
        super().__init__()
        self.norm1 = Normalize(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.temb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = Normalize(out_channels)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if in_channels != out_channels:
            self.nin_shortcut = nn.Conv2d(in_channels, out_channels, kernel_size=1)
        else:
            self.nin_shortcut = nn.Identity()

    def forward(self, x, temb):
        h = self.norm1(x)
        h = nonlinearity(h)  # ok: FUS002
        h = self.conv1(h)
        h = h + self.temb_proj(nonlinearity(temb))[:, :, None, None]
        h = self.norm2(h)
        h = nonlinearity(h)
        h = self.dropout(h)  # hint: FUS003
        h = self.conv2(h)
        return self.nin_shortcut(x) + h


class SpatialSelfAttention(nn.Module):
    """Single-head self-attention over the h*w positions of a feature map."""

    def __init__(self, in_channels):
        super().__init__()
        self.norm = Normalize(in_channels)
        self.q = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.k = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.v = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.proj_out = nn.Conv2d(in_channels, in_channels, kernel_size=1)

    def forward(self, x):
        h_ = self.norm(x)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)

        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1)  # b, hw, c
        k = k.reshape(b, c, h * w).permute(0, 2, 1)
        v = v.reshape(b, c, h * w).permute(0, 2, 1)

        scale = int(c) ** (-0.5)
        w_ = torch.einsum("bid,bjd->bij", q, k) * scale
        w_ = torch.nn.functional.softmax(w_, dim=2)
        h_ = torch.einsum("bij,bjd->bid", w_, v)  # expect: ATT001

        h_ = h_.permute(0, 2, 1).reshape(b, c, h, w)
        return x + self.proj_out(h_)


class MidBlock(nn.Module):
    """The UNet bottleneck: resnet, attention, resnet."""

    def __init__(self, channels, temb_channels):
        super().__init__()
        self.block_1 = ResnetBlock(channels, channels, temb_channels)
        self.attn_1 = SpatialSelfAttention(channels)
        self.block_2 = ResnetBlock(channels, channels, temb_channels)
        self.time_embed = nn.Sequential(
            nn.Linear(channels, temb_channels),  # ok: FUS002
            nn.SiLU(),  # ok: FUS002
            nn.Linear(temb_channels, temb_channels),
        )

    def forward(self, x, timesteps):
        temb = self.time_embed(timestep_embedding(timesteps, x.shape[1]))  # ok: FUS002
        h = self.block_1(x, temb)
        h = self.attn_1(h)
        return self.block_2(h, temb)
