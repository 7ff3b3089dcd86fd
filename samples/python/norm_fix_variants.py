"""Norms whose fix depends on dtypes, gates and weight shapes, as in current transformers.

Models: Gemma's (1 + weight) RMSNorm computed in fp32; Gemma 3n's RMSNorm with the weight
cast to fp32 in the code; a weightless fp32 RMSNorm (Falcon Mamba); Mamba 2's gated
RMSNorm (the input is h * silu(gate) in fp32); T5's RMSNorm, which casts to the weight's
dtype rather than the input's; Cohere's LayerNorm, which the same file also builds as a
per-head QK-norm with a (heads, head_dim) weight; a LayerNorm class only ever built with
a 1-D size; DeBERTa's LayerNorm, cast back to the input dtype before the affine; and an
input-feature CMVN on raw audio frames.

Expected findings (tests/golden/norm_fixes_test.cpp checks each fix's text):
- NRM002 in GemmaRMSNorm: F.rms_norm on the fp32 input with 1 + weight in fp32, cast back.
- NRM002 in Gemma3nRMSNorm: input and weight both in fp32, cast back as written.
- NRM002 in WeightlessRMSNorm: F.rms_norm(x) upcasts and casts back itself.
- NRM002 in MambaRMSNormGated: the gate kept, F.rms_norm on the gated value, the weight
  after the cast back.
- NRM002 in T5LayerNorm: the cast to the weight's dtype kept.
- NRM001 in CohereLayerNorm: normalized over the last dim, the weight broadcast (the
  class is also built with a 2-D shape); NRM001 in OneDimLayerNorm: F.layer_norm with the
  weight; NRM001 in DebertaLayerNorm: flagged as differing in the last bits.
- NRM002 in GptOssRMSNorm (weight in fp32, then cast back, as in OLMo 2), in a file whose
  `_keep_in_fp32_modules` keeps the norms' weights in fp32: the fix passes the fp32 input.
Not expected (hidden): NRM001 in FrameCMVN, a cold input-feature normalization.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())  # expect: NRM002
        return output.type_as(x)


class Gemma3nRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()) * self.weight.float()  # expect: NRM002
        return output.type_as(x)


class WeightlessRMSNorm(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x)  # expect: NRM002


class MambaRMSNormGated(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        if gate is not None:
            hidden_states = hidden_states * nn.functional.silu(gate.to(torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        return self.weight * hidden_states.to(input_dtype)


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class CohereLayerNorm(nn.Module):
    def __init__(self, hidden_size=None, eps=1e-5, bias=False):
        """The hidden size can be a tuple or an int. The tuple is used for QKNorm to normalize across head_dim"""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM001
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


class CohereQKNorm(nn.Module):
    def __init__(self, num_heads, head_dim, hidden_size):
        super().__init__()
        self.q_norm = CohereLayerNorm(hidden_size=(num_heads, head_dim), eps=1e-5)
        self.input_layernorm = CohereLayerNorm(hidden_size=(hidden_size), eps=1e-5)


class OneDimLayerNorm(nn.Module):
    def __init__(self, hidden_size=None, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM001
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


def one_dim_norm(hidden_size):
    return OneDimLayerNorm(hidden_size=(hidden_size), eps=1e-5)


class DebertaLayerNorm(nn.Module):
    def __init__(self, size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_type = hidden_states.dtype
        hidden_states = hidden_states.float()
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) / torch.sqrt(variance + self.variance_epsilon)  # expect: NRM001
        hidden_states = hidden_states.to(input_type)
        y = self.weight * hidden_states + self.bias  # expect: NRM001
        return y


def scale_only_layer_norm(x, gain, eps=1e-5):
    centered = x - x.mean(-1, keepdim=True)
    variance = centered.pow(2).mean(-1, keepdim=True)
    return centered * torch.rsqrt(variance + eps) * gain  # expect: NRM001


class FrameCMVN(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        centered = x - mean
        rms = (centered.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt()
        return centered / rms  # ok: NRM001


class AudioEmbedder(nn.Module):
    def __init__(self, frame_len: int, hidden_size: int):
        super().__init__()
        self.frame_len = frame_len
        self.cmvn = FrameCMVN()
        self.proj = nn.Linear(frame_len, hidden_size)

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        frames = input_values.reshape(input_values.shape[0], -1, self.frame_len)
        return self.proj(self.cmvn(frames))  # ok: NRM001


class GptOssRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)  # expect: NRM002
        return (self.weight * hidden_states).to(input_dtype)


class GptOssPreTrainedModel(nn.Module):
    _keep_in_fp32_modules = ["post_attention_layernorm", "input_layernorm", "norm"]
