"""Attention written every way it is written in real models, and what only looks like it.

Models, one class per spelling, each the only attention path of its module:
- a method chain: q.matmul(k.transpose(-2, -1)).mul(scale).softmax(dim=-1).matmul(v);
- `.div(sqrt(d))` with F.dropout(p=..., training=...) wrapping the probabilities;
- scores built into a preallocated buffer: torch.baddbmm(torch.empty(...), q, kᵀ, beta=0, alpha=scale);
- einsum in the (batch, tokens, heads, dim) layout with its own subscripts, for both products;
- einsum with the keys first ('bhjd,bhid->bhij'), the softmax still over the keys;
- channel-first (b, c, hw) projections from 1x1 convolutions: bmm(qᵀ, k) and v @ pᵀ;
- fused QKV split with unbind after reshape+permute, with chunk + einops.rearrange,
  and with split.

Expected findings:
- ATT001 at the product with v in each of the nine classes above.
Not expected (near misses, marked ok):
- channel attention (XCiT/DaViT): kᵀ·v sums over tokens, the softmax runs over channels;
- a class-attention pooling head: one query per image attends over the tokens;
- a softmax over the query axis (each key's weights over queries) before the product with v;
- linear attention: softmax of q and of k separately, kᵀ·v first;
- sigmoid attention and a sum-normalized score matrix: no softmax;
- a Nystrom approximation's kernel_1 · pinv(kernel_2): the other operand is not values;
  and its landmarks' kernel_3 · v, a piece of the approximation SDPA does not replace
  (demoted: hidden by default);
- a categorical mean: softmax over bins times a table of bin centers.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


class ChainAttention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        out = q.matmul(k.transpose(-2, -1)).mul(self.scale).softmax(dim=-1).matmul(v)  # expect: ATT001
        return self.proj(out.transpose(1, 2).reshape(B, N, C))


class DivDropoutAttention(nn.Module):
    def __init__(self, dim, heads=8, attn_drop=0.1):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.attn_drop = attn_drop
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)).div(math.sqrt(self.head_dim))
        probs = F.dropout(F.softmax(scores, dim=-1), p=self.attn_drop, training=self.training)
        out = torch.matmul(probs, v)  # expect: ATT001
        return out.transpose(1, 2).reshape(B, T, C)


class PreallocatedScores(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale_attn = self.head_dim**-0.5
        self.c_attn = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        bsz, seq_len, dim = x.shape
        q, k, v = self.c_attn(x).split(dim, dim=2)
        q = q.view(bsz, seq_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, seq_len, self.head_dim)
        k = k.view(bsz, seq_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, seq_len, self.head_dim)
        v = v.view(bsz, seq_len, self.heads, self.head_dim).transpose(1, 2).reshape(bsz * self.heads, seq_len, self.head_dim)
        attn_weights = torch.empty(bsz * self.heads, seq_len, seq_len, dtype=q.dtype, device=q.device)
        attn_weights = torch.baddbmm(attn_weights, q, k.transpose(-1, -2), beta=0, alpha=self.scale_attn)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.bmm(attn_weights, v)  # expect: ATT001


class TokensFirstEinsum(nn.Module):
    """(batch, tokens, heads, dim) throughout: no transpose before the products."""

    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).view(b, n, 3, self.heads, self.head_dim).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        probs = scores.softmax(dim=-1)
        out = torch.einsum("bhqk,bkhd->bqhd", probs, v)  # expect: ATT001
        return out.reshape(b, n, -1)


class KeysFirstEinsum(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("bhjd,bhid->bhij", k, q) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)  # expect: ATT001
        return rearrange(out, "b h n d -> b n (h d)")


class ChannelFirstAttnBlock(nn.Module):
    """The VAE mid-block attention: 1x1 convolutions, positions last, v @ pᵀ."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(32, channels)
        self.q = nn.Conv2d(channels, channels, 1)
        self.k = nn.Conv2d(channels, channels, 1)
        self.v = nn.Conv2d(channels, channels, 1)
        self.proj_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        h_ = self.norm(x)
        q, k, v = self.q(h_), self.k(h_), self.v(h_)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1)  # b, hw, c
        k = k.reshape(b, c, h * w)  # b, c, hw
        w_ = torch.bmm(q, k) * (int(c) ** (-0.5))  # b, hw(queries), hw(keys)
        w_ = torch.nn.functional.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w)
        h_ = torch.bmm(v, w_.permute(0, 2, 1))  # expect: ATT001
        return x + self.proj_out(h_.reshape(b, c, h, w))


class ChunkRearrangeAttention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        self.heads = heads
        self.scale = dim_head**-0.5
        self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = dots.softmax(dim=-1)
        out = torch.matmul(attn, v)  # expect: ATT001
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class SplitHeadsAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)
        return att @ v  # expect: ATT001


class UnbindAttention(nn.Module):
    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = attn @ v  # expect: ATT001
        return x.transpose(1, 2).reshape(B, N, C)


# ---------------------------------------------------------------- near misses


class ChannelAttention(nn.Module):
    """Cross-covariance attention: channels attend to channels; the sum runs over tokens."""

    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        k = k * self.scale
        attention = k.transpose(-1, -2) @ v
        attention = attention.softmax(dim=-1)
        x = (attention @ q.transpose(-1, -2)).transpose(-1, -2)  # ok: ATT001
        return x.transpose(1, 2).reshape(B, N, C)


class ClassAttentionPool(nn.Module):
    """CaiT-style class attention: only the class token queries the patch tokens."""

    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        k = self.k(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x_cls = (attn @ v).transpose(1, 2).reshape(B, 1, C)  # ok: ATT001
        return x_cls


class QueryAxisSoftmax(nn.Module):
    """Each key's weights over the queries (a dual-softmax matcher's second half)."""

    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
        weights = scores.softmax(dim=-2)
        return weights @ v  # ok: ATT001


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        q = q.softmax(dim=-1)
        k = k.softmax(dim=-2)
        context = k.transpose(-2, -1) @ v
        out = q @ context  # ok: ATT001
        return rearrange(out, "b h n d -> b n (h d)")


class SigmoidAndSumNormalized(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        gates = torch.sigmoid(q @ k.transpose(-2, -1))
        gated = gates @ v  # ok: ATT001
        scores = (q @ k.transpose(-2, -1)).relu()
        weights = scores / scores.sum(dim=-1, keepdim=True)
        return gated + weights @ v  # ok: ATT001


class NystromApproximation(nn.Module):
    """Landmark attention: kernel_3 · v is a piece of it; kernel_1 · pinv(kernel_2) is not attention (no values)."""

    def __init__(self, dim, num_landmarks=64):
        super().__init__()
        self.num_landmarks = num_landmarks
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.q(x) / math.sqrt(math.sqrt(d)), self.k(x) / math.sqrt(math.sqrt(d)), self.v(x)
        q_land = q.reshape(b, self.num_landmarks, n // self.num_landmarks, d).mean(dim=-2)
        k_land = k.reshape(b, self.num_landmarks, n // self.num_landmarks, d).mean(dim=-2)
        kernel_1 = F.softmax(q @ k_land.transpose(-1, -2), dim=-1)
        kernel_2 = F.softmax(q_land @ k_land.transpose(-1, -2), dim=-1)
        mixed = kernel_1 @ torch.linalg.pinv(kernel_2)  # ok: ATT001
        kernel_3 = F.softmax(q_land @ k.transpose(-1, -2), dim=-1)
        landmark_values = kernel_3 @ v  # ok: ATT001
        return mixed @ landmark_values


def expected_bin_value(logits: torch.Tensor, start: float = 0.0, end: float = 1.0):
    """A categorical mean: softmax over bins times the bin centers (AlphaFold's pLDDT)."""
    num_bins = logits.shape[-1]
    edges = torch.linspace(start, end, num_bins + 1, device=logits.device)
    centers = (edges[:-1] + edges[1:]) / 2
    weights = torch.einsum("...c,...cb->...b", logits, logits.new_ones(logits.shape[-1], num_bins))
    return weights.softmax(-1) @ centers.unsqueeze(1)  # ok: ATT001
