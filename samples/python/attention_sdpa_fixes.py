"""Hand-written attention as real models write it, and whether SDPA can replace it as is.

Expected findings (ATT001 at the product with v), each with the fix that computes the
same numbers (tests/unit/python_attention_fix_test.cpp checks the fix text):
- BERT-style eager attention with the additive mask and dropout, the only path;
- DETR-style: q scaled by the projection (q_proj(x) * scaling), scores not scaled: scale=1.0;
- a relative-position bias and an optional padding mask added to the scores: one float
  attn_mask, `bias if mask is None else bias + mask`;
- GPT-1 style: k split into (B, H, D, T) already transposed: the fix transposes it back;
- q, k, v unpacked from a fused projection (`qkv[0]`, ...): the fix names q, k, v;
- a mask re-assigned before it is added (BigBird): the fix names the value added;
- T5-style scores that are not scaled at all: scale=1.0;
- a masked_fill with -inf on a padding mask: attn_mask=~(mask) form;
- a free function whose `scaling` parameter the caller sets (T5 passes 1.0): scale=scaling;
- products made inside a MatMul wrapper module (SqueezeBERT): q, k, v as placeholders;
- a mask cast to the scores' dtype (`mask.to(scores.dtype)`): the fix casts to q's;
- GPT-J/CodeGen-style fp32 scores from upcast q and k, v left in its dtype: the fix says
  SDPA needs one dtype and how the numbers then differ;
- BLIP's ViT attention, whose probabilities are saved for Grad-CAM only under
  `if register_hook:` (an opt-in visualization, not what SDPA must return).
- a KV-cache decode whose causal mask is sliced from the cache position: attn_mask=~mask
  (is_causal=True would align the triangle top-left, wrong when queries are fewer than
  keys); nanoGPT's mask cut from row 0 (`bias[:, :, :t, :t]`): is_causal=True.
Not expected (near misses, marked ok: reported only as demoted info, hidden by default):
- GPT-1's `w * b - 1e4 * (1 - b)` causal mask: a subtraction mlsem does not rewrite;
- attention sinks: the scores also feed a logsumexp (SDPA does not return it);
- window attention adding the shift mask in a reshaped view of the scores;
- Swin V2's per-head learned logit scale multiplying the scores;
- VITS-style relative values computed from the probabilities;
- LiLT-style: a second score matrix added to the scores;
- a piece of block-sparse attention (BigBird);
- a masked_fill with a finite -100 (not a hard mask);
- scores computed one way in an `if` branch and another way in the other (LUKE);
- a relative-position score matrix added before the scale (Conformer's matrix_bd);
- H2O's heavy-hitter cache: the probabilities are handed to the cache, which keeps the keys
  they weigh most (SDPA does not return them).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads, p=0.1):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(p)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, self.num_attention_heads, self.attention_head_size)
        query_layer = self.query(hidden_states).view(shape).transpose(1, 2)
        key_layer = self.key(hidden_states).view(shape).transpose(1, 2)
        value_layer = self.value(hidden_states).view(shape).transpose(1, 2)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)  # expect: ATT001
        return context_layer.transpose(1, 2).reshape(b, t, -1)


class DetrAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(hidden, hidden)
        self.k_proj = nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        query_states = self.q_proj(hidden_states) * self.scaling
        query_states = query_states.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)  # expect: ATT001
        return attn_output


class RelativeBiasAttention(nn.Module):
    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.table = nn.Parameter(torch.zeros(heads, window * window, window * window))

    def forward(self, x, mask=None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        rel_bias = self.table.unsqueeze(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn + rel_bias
        if mask is not None:
            attn = attn + mask
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)  # expect: ATT001


class OpenAIGPTAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.n_head = heads
        self.c_attn = nn.Linear(dim, dim * 3)

    def split_heads(self, x, k=False):
        x = x.view(x.size(0), x.size(1), self.n_head, x.size(-1) // self.n_head)
        if k:
            return x.permute(0, 2, 3, 1)
        return x.permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None):
        query, key, value = self.c_attn(x).split(x.size(-1), dim=2)
        q = self.split_heads(query)
        k = self.split_heads(key, k=True)
        v = self.split_heads(value)
        w = torch.matmul(q, k)
        w = w / math.sqrt(v.size(-1))
        if attention_mask is not None:
            w = w + attention_mask
        w = nn.functional.softmax(w, dim=-1)
        return torch.matmul(w, v)  # expect: ATT001


class ReassignedMaskAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        b, t, c = hidden_states.shape
        query_layer = self.query(hidden_states).view(b, t, self.heads, -1).transpose(1, 2)
        if encoder_hidden_states is not None:
            hidden_states = encoder_hidden_states
            attention_mask = encoder_attention_mask
        key_layer = self.key(hidden_states).view(b, -1, self.heads, c // self.heads).transpose(1, 2)
        value_layer = self.value(hidden_states).view(b, -1, self.heads, c // self.heads).transpose(1, 2)
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(c // self.heads)
        scores = scores + attention_mask
        probs = scores.softmax(dim=-1)
        return torch.matmul(probs, value_layer)  # expect: ATT001


class UnscaledT5Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)

    def forward(self, hidden_states):
        b, t, c = hidden_states.shape
        q = self.q(hidden_states).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.k(hidden_states).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.v(hidden_states).view(b, t, self.heads, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2))
        weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        return torch.matmul(weights, v)  # expect: ATT001


class PaddingMaskAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, mask):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(mask == 0, float("-inf"))
        return scores.softmax(dim=-1) @ v  # expect: ATT001


def t5_attention(query, key, value, attention_mask, scaling=None, dropout=0.0):
    # The caller passes scaling=1.0 (T5): the fix passes the variable, not SDPA's default.
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    attn_weights = attn_weights + attention_mask
    attn_weights = F.softmax(attn_weights, dim=-1)
    attn_weights = F.dropout(attn_weights, p=dropout)
    return torch.matmul(attn_weights, value)  # expect: ATT001


class MatMulWrapper(nn.Module):
    def forward(self, mat1, mat2):
        return torch.matmul(mat1, mat2)


class WrappedProductsAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.matmul_qk = MatMulWrapper()
        self.matmul_qkv = MatMulWrapper()

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        # The finding covers this function's own lines: the products are in the wrapper.
        scores = self.matmul_qk(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # expect: ATT001
        probs = F.softmax(scores, dim=-1)
        return self.matmul_qkv(probs, v)


class CanineStyleAttention(nn.Module):
    def forward(self, query_layer, key_layer, value_layer, attention_mask, head_dim):
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(head_dim)
        attention_scores = attention_scores + attention_mask.to(attention_scores.dtype)
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        return torch.matmul(attention_probs, value_layer)  # expect: ATT001


# ---------------------------------------------------------------- near misses


class OpenAIMultiplicativeMask(nn.Module):
    def __init__(self, dim, heads, n_ctx):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx))
        self.scale = True

    def forward(self, q, k, v):
        w = torch.matmul(q, k)
        if self.scale:
            w = w / math.sqrt(v.size(-1))
        b = self.bias[:, :, : w.size(-2), : w.size(-1)]
        w = w * b + -1e4 * (1 - b)
        w = nn.functional.softmax(w, dim=-1)
        return torch.matmul(w, v)  # ok: ATT001


class SinkAttention(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.sinks = nn.Parameter(torch.zeros(heads))

    def forward(self, query, key, value, scaling):
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
        lse = torch.logsumexp(attn_weights, dim=-1)
        sink_scale = (lse - self.sinks.view(1, -1, 1)).sigmoid()
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value)  # ok: ATT001
        return attn_output * sink_scale.unsqueeze(-1)


class HeavyHitterAttention(nn.Module):
    def forward(self, query, key, value, past_key_value, layer_idx):
        attn_weights = torch.matmul(query, key.transpose(2, 3)) / math.sqrt(query.size(-1))
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        if past_key_value is not None:
            past_key_value.update_slimming(attn_weights, layer_idx)
        return torch.matmul(attn_weights, value)  # ok: ATT001


class GradCamViTAttention(nn.Module):
    """BLIP's ViT: the probabilities are saved for Grad-CAM only when asked."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def save_attention_map(self, attention_map):
        self.attention_map = attention_map

    def forward(self, x, register_hook=False):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        if register_hook:
            self.save_attention_map(attn)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)  # expect: ATT001


class ShiftedWindowAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, mask):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        nw = mask.shape[0]
        attn = attn.view(B_ // nw, nw, self.heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, self.heads, N, N)
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B_, N, C)  # ok: ATT001


class CosineLogitScaleAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((heads, 1, 1))))

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
        attn = attn * logit_scale
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)  # ok: ATT001


class RelativeValueAttention(nn.Module):
    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads = heads
        self.scaling = (dim // heads) ** -0.5
        self.emb_rel_v = nn.Parameter(torch.randn(1, window * 2 + 1, dim // heads))

    def forward(self, query_states, key_states, value_states):
        attn_weights = torch.bmm(query_states * self.scaling, key_states.transpose(1, 2))
        attn_probs = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_probs, value_states)  # ok: ATT001
        relative_weights = torch.matmul(attn_probs, self.emb_rel_v)
        return attn_output + relative_weights


class TwoStreamAttention(nn.Module):
    def forward(self, q, k, v, lq, lk, head_dim):
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
        layout_scores = torch.matmul(lq, lk.transpose(-1, -2)) / math.sqrt(head_dim)
        scores = scores + layout_scores
        probs = nn.Softmax(dim=-1)(scores)
        return torch.matmul(probs, v)  # ok: ATT001


class BlockSparseAttention(nn.Module):
    def bigbird_block_sparse_attention(self, query_layer, key_layer, value_layer, to_mask, rsqrt_d):
        first_product = torch.einsum("bhqd,bhkd->bhqk", query_layer[:, :, 0], key_layer)
        first_product = first_product * rsqrt_d
        first_product += (1.0 - to_mask) * -10000.0
        first_attn_weights = nn.functional.softmax(first_product, dim=-1)
        return torch.einsum("bhqk,bhkd->bhqd", first_attn_weights, value_layer)  # ok: ATT001


class SoftWindowMask(nn.Module):
    def forward(self, q, k, v, window_mask):
        attn = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        attn = attn.masked_fill(window_mask != 0, -100.0)
        attn = attn.softmax(dim=-1)
        return attn @ v  # ok: ATT001


class EntityAwareAttention(nn.Module):
    def forward(self, q, k, v, eq, ek, head_dim, use_entities):
        if use_entities:
            word_scores = torch.matmul(q, k.transpose(-1, -2))
            entity_scores = torch.matmul(eq, ek.transpose(-1, -2))
            scores = torch.cat([word_scores, entity_scores], dim=2)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(head_dim)
        probs = F.softmax(scores, dim=-1)
        return torch.matmul(probs, v)  # ok: ATT001


class RelativeShiftAttention(nn.Module):
    def forward(self, q_u, q_v, k, v, pos, head_dim):
        matrix_ac = torch.matmul(q_u, k.permute(0, 2, 3, 1))
        matrix_bd = torch.matmul(q_v, pos.permute(0, 2, 3, 1))
        matrix_bd = torch.cat([matrix_bd[..., 1:], matrix_bd[..., :1]], dim=-1)
        scores = (matrix_ac + matrix_bd) / math.sqrt(head_dim)
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v)  # ok: ATT001


class Fp32ScoresAttention(nn.Module):
    """GPT-J / CodeGen: q and k upcast to fp32 for the scores, v left in its dtype."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.scale_attn = math.sqrt(dim // heads)

    def forward(self, hidden_states):
        b, t, c = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        q = q.to(torch.float32)
        k = k.to(torch.float32)
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.scale_attn
        probs = scores.softmax(dim=-1).to(v.dtype)
        return torch.matmul(probs, v)  # expect: ATT001


class CachedCausalAttention(nn.Module):
    """A GPT with a KV cache: on a decode step the queries are the last rows of the causal
    mask, so the mask is sliced from the cache position, not from row 0."""

    def __init__(self, dim, heads, context_length):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        self.cache_k = None
        self.cache_v = None
        self.pos = 0

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        if self.cache_k is not None:
            k = torch.cat([self.cache_k, k], dim=2)
            v = torch.cat([self.cache_v, v], dim=2)
        self.cache_k, self.cache_v = k, v
        mask_bool = self.mask.bool()[self.pos:self.pos + t, :k.shape[-2]]
        self.pos += t
        scores = q @ k.transpose(-2, -1)
        scores.masked_fill_(mask_bool, -torch.inf)
        probs = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return probs @ v  # expect: ATT001


class TruncatedCausalAttention(nn.Module):
    """nanoGPT: the causal mask cut to the sequence from row 0: is_causal=True is the same."""

    def __init__(self, dim, heads, block_size):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v  # expect: ATT001
