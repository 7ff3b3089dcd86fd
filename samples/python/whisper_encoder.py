"""A Whisper-style audio encoder: conv front end over log-mel frames, then transformer blocks.

Models: two Conv1d layers each followed by GELU, sinusoidal positions, LayerNorm that
computes in fp32 through the parent class, and multi-head attention that scales q and
k by d^-0.25 each, transposes k with a permute, and runs the softmax in fp32.

Expected findings:
- ATT001 at `out = (w @ v)...` in MultiHeadAttention.qkv_attention.
- FUS002 (a hint, below the default threshold) on the MLP's nn.Sequential (Linear -> GELU -> Linear), at the layers in
  __init__: that is where the fix goes.
Not expected: NRM001 on LayerNorm (it calls nn.LayerNorm.forward); FUS002 on
`F.gelu(self.conv1(x))` (only demoted: a 1-D convolution, whose epilogue neither
torch.compile nor cuDNN's fused conv+activation takes a GELU into); FUS002 on
`F.gelu(self.conv2(x))`, whose output is not read by another GEMM; FUS002 at the
call of the nn.Sequential.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


def sinusoids(length, channels, max_timescale=10000):
    """Sinusoidal position table, shape (length, channels)."""
    log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class LayerNorm(nn.LayerNorm):
    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.float()).type(x.dtype)  # ok: NRM001


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x: Tensor):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        wv = self.qkv_attention(q, k, v)
        return self.out(wv)

    def qkv_attention(self, q: Tensor, k: Tensor, v: Tensor):
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)

        qk = q @ k
        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        out = (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)  # expect: ATT001
        return out


class ResidualAttentionBlock(nn.Module):
    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.attn = MultiHeadAttention(n_state, n_head)
        self.attn_ln = LayerNorm(n_state)
        n_mlp = n_state * 4
        self.mlp = nn.Sequential(
            nn.Linear(n_state, n_mlp),  # hint: FUS002
            nn.GELU(),  # hint: FUS002
            nn.Linear(n_mlp, n_state),
        )
        self.mlp_ln = LayerNorm(n_state)

    def forward(self, x: Tensor):
        x = x + self.attn(self.attn_ln(x))
        x = x + self.mlp(self.mlp_ln(x))  # ok: FUS002
        return x


class AudioEncoder(nn.Module):
    def __init__(self, n_mels: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))
        self.blocks = nn.ModuleList([ResidualAttentionBlock(n_state, n_head) for _ in range(n_layer)])
        self.ln_post = LayerNorm(n_state)

    def forward(self, x: Tensor):
        """x: (batch, n_mels, n_frames) log-mel spectrogram."""
        x = F.gelu(self.conv1(x))  # ok: FUS002
        x = F.gelu(self.conv2(x))  # ok: FUS002
        x = x.permute(0, 2, 1)
        x = (x + self.positional_embedding).to(x.dtype)
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)
