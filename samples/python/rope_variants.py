"""Rotary position embeddings by hand in the complex and the interleaved (GPT-J) layouts.

Models: Meta's original complex-number RoPE (`view_as_complex` of the paired dims,
multiplied by a precomputed `freqs_cis`, then `view_as_real(...).flatten(3)`), the
interleaved GPT-J layout on even/odd strided slices stacked back together, and a
layer that calls flash-attn's fused rotary kernel instead.

Expected findings:
- POS001 on the `xq_out` and `xk_out` lines of apply_rotary_emb_complex.
- POS001 on the stack line of apply_rotary_interleaved.
- POS001 in apply_rotary_interleaved_fp32 (interleaved rotate_half, stack + flatten, on
  fp32 upcasts), apply_rotary_flipped (cat(x2, -x1)) and apply_rotary_chunks (the 2x2
  rotation on chunks).
Not expected: POS001 in mix_halves (no rotation), in FusedRotaryAttention (flash_attn.layers.rotary), and on the
frequency table helpers (they build tables; they do not rotate activations). POS001 in
cmul (and where it is inlined, in filter_spectrum) falls below the default
--min-confidence: the same 2x2 products, but a complex multiply of two general tensors
(FFT-domain filtering) in a function named for it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn.layers.rotary import apply_rotary_emb


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))  # ok: POS001
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb_complex(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)  # expect: POS001
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)  # expect: POS001
    return xq_out.type_as(xq), xk_out.type_as(xk)


def sincos_table(seq_len: int, rotary_dim: int, base: float = 10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim))  # ok: POS001
    angles = torch.einsum("i,j->ij", torch.arange(seq_len, dtype=torch.float32), inv_freq)
    return torch.sin(angles), torch.cos(angles)


def apply_rotary_interleaved(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """GPT-J layout: dims (0, 1), (2, 3), ... are the rotated pairs."""
    sin = sin[None, :, None, :]
    cos = cos[None, :, None, :]
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)  # expect: POS001


class FusedRotaryAttention(nn.Module):
    """Same rotation through flash-attn's Triton kernel."""

    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)
        q = apply_rotary_emb(q, cos, sin, interleaved=False)  # ok: POS001
        k = apply_rotary_emb(k, cos, sin, interleaved=False)  # ok: POS001
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.out(out.transpose(1, 2).reshape(b, t, d))


def rotate_half_interleaved(x: torch.Tensor) -> torch.Tensor:
    """Pairs (0, 1), (2, 3), ... rotated: stack((-x2, x1), -1).flatten(-2)."""
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_interleaved_fp32(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """GLM/Cohere layout, computed in fp32."""
    return (q.float() * cos) + (rotate_half_interleaved(q).float() * sin)  # expect: POS001


def rotate_half_flipped(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rotary_flipped(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The sign sits in the sin table's convention: cat(x2, -x1)."""
    return q * cos + rotate_half_flipped(q) * sin  # expect: POS001


def apply_rotary_chunks(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The 2x2 rotation on the two halves of the head dim."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # expect: POS001


def mix_halves(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Not a rotation: the halves are scaled and concatenated, nothing is negated or crossed."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * a, x2 * b), dim=-1)  # ok: POS001


def apply_rotary_interleaved_to_halves(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """DeepSeek's layout: interleaved pairs rotated, written back as two halves."""
    q1, q2 = q[..., 0::2], q[..., 1::2]
    return torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)  # expect: POS001


def cmul(t1: torch.Tensor, t2: torch.Tensor) -> torch.Tensor:
    """Complex multiply of two N x C x H x W x 2 spectra (KAIR's FFT deconvolution)."""
    real1, imag1 = t1[..., 0], t1[..., 1]
    real2, imag2 = t2[..., 0], t2[..., 1]
    return torch.stack([real1 * real2 - imag1 * imag2, real1 * imag2 + imag1 * real2], dim=-1)  # hint: POS001


def filter_spectrum(image_fft: torch.Tensor, kernel_fft: torch.Tensor) -> torch.Tensor:
    return cmul(image_fft, kernel_fft) * 0.5
