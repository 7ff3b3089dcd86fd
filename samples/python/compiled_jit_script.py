"""Pointwise functions scripted with @torch.jit.script, as Megatron-LM and GPT-NeoX write
their bias+GELU: TorchScript's GPU fuser already fuses them, so the fusion rules do not
report them. The same body without the decorator is reported. `@torch.jit.script_if_tracing`
does not script the function in eager mode.

Expected findings: ACT001 on bias_gelu_eager and on bias_gelu_if_tracing. Not expected:
ACT001 on bias_gelu or bias_gelu_back's forward formula.
"""

import torch


@torch.jit.script
def bias_gelu(bias, y):
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))  # ok: ACT001


def bias_gelu_eager(bias, y):
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))  # expect: ACT001


@torch.jit.script_if_tracing
def bias_gelu_if_tracing(bias, y):
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))  # expect: ACT001
