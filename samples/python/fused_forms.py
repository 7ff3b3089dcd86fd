"""A transformer that already uses the fused library forms: nothing here should be flagged.

Models a current-PyTorch decoder: nn.RMSNorm and F.rms_norm, F.layer_norm for the
final norm, rotary embeddings from torchtune's module, attention through
F.scaled_dot_product_attention with dropout and is_causal, a SwiGLU through Liger's
fused SiLU-mul kernel, nn.GELU after a LayerNorm (not a GEMM epilogue), the loss
through F.cross_entropy, and one `.item()` outside any loop.

Expected findings: none; the lines that hold a fused replacement carry ok marks.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from liger_kernel.ops.swiglu import LigerSiLUMulFunction
from torchtune.modules import RotaryPositionalEmbeddings


class FusedAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int, max_seq_len: int = 4096, dropout: float = 0.0):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.dropout = dropout
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.rope = RotaryPositionalEmbeddings(self.head_dim, max_seq_len=max_seq_len)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)
        q = self.rope(q)  # ok: POS001
        k = self.rope(k)  # ok: POS001
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        out = F.scaled_dot_product_attention(  # ok: ATT001
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class FusedSwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(LigerSiLUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))  # ok: FUS001, FUS002


class ConvNeXtStyleMLP(nn.Module):
    """Norm, then GELU: the activation does not follow a GEMM directly."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.act = nn.GELU(approximate="tanh")
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(self.act(self.norm(x)))  # ok: ACT001, FUS002, NRM001


class Block(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.attn_norm = nn.RMSNorm(dim, eps=1e-6)
        self.attn = FusedAttention(dim, n_heads)
        self.mlp_norm_weight = nn.Parameter(torch.ones(dim))
        self.mlp = FusedSwiGLU(dim, 4 * dim)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))  # ok: NRM002
        h = F.rms_norm(x, (x.shape[-1],), self.mlp_norm_weight, eps=1e-6)  # ok: NRM002
        return x + self.mlp(h)


class FusedLM(nn.Module):
    def __init__(self, vocab: int = 32000, dim: int = 1024, n_layers: int = 8, n_heads: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, n_heads) for _ in range(n_layers))
        self.final_norm_weight = nn.Parameter(torch.ones(dim))
        self.final_norm_bias = nn.Parameter(torch.zeros(dim))
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, targets=None):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        x = F.layer_norm(x, (x.shape[-1],), self.final_norm_weight, self.final_norm_bias)  # ok: NRM001
        logits = self.head(x)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # ok: LOS001
        return logits, loss


@torch.no_grad()
def evaluate_batch(model: FusedLM, tokens: torch.Tensor, targets: torch.Tensor) -> float:
    _, loss = model(tokens, targets)
    return loss.item()  # ok: SYN001
