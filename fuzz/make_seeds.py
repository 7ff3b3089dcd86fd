#!/usr/bin/env python3
"""Builds the fuzz targets' seed corpora from samples/, the data and tests/fuzz/.

    python3 fuzz/make_seeds.py OUT    # OUT/{python,cuda,toml,report,lsp}/

The corpora are generated, not committed (docs/hardening.md). Inputs follow each entry
point's format (fuzz/*.cpp): toml inputs start with a byte naming the kind of file, lsp
inputs with a mode byte and carry message bodies separated by 0x1e; python inputs with
0x1e bytes are projects, one file a part, for the cross-file pass.
"""
import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX = 64 * 1024  # larger files slow the fuzzers down and add little


def put(out, target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX:
        return
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def lsp_seed(mode, bodies):
    return bytes([mode]) + b"\x1e".join(json.dumps(b).encode() for b in bodies)


ATTENTION = """def {name}(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = F.softmax(scores, dim=-1)
    return probs @ v
"""
BLOCK = """class Block:
    def __init__(self, kind="flash", dim=4, use_other: bool = False):
        if kind == "flash":
            self.attn = flash_attention
        elif kind in ("legacy", "old") and not use_other:
            self.attn = legacy_attention
        else:
            self.attn = None
        if self.fast():
            self.other = None
        elif use_other:
            self.other = other_attention
"""


def project_seeds():
    """Python projects (parts m0.py, m1.py, ... or c<k>.json, separated by 0x1e, fuzz/python.cpp)
    whose findings sit in top-level definitions other files import, some built only under a
    switch: the cross-file pass (driver/references.cpp, driver/switched_off.cpp)."""
    head = "import math\nimport torch.nn.functional as F\n\n\n"
    attn = head + "\n\n".join(ATTENTION.format(name=n) for n in
                               ("legacy_attention", "flash_attention", "other_attention", "dead_attention"))
    attn += "\n\n@register\n" + ATTENTION.format(name="registered_attention") + "\n\n" + BLOCK
    model = "from m0 import Block\n\n\nclass Net:\n    def __init__(self):\n        self.block = Block(dim=8)\n"
    extras = ["", "b = m0.Block(kind=\"legacy\")\n", "parser.add_argument(\"--kind\")\n",
              "b = m0.Block(kind=args.attention, use_other=True)\n", "f = eval(\"flash_\" + name)\n"]
    for i, extra in enumerate(extras):
        parts = [attn, model, "import m0\nimport m1\n" + extra]
        if i % 2:
            parts.append(json.dumps({"model": {"target": "m1.Net", "kind": "old", "use_other": i == 3}}))
        yield "\x1e".join(parts)


LAYERS = """import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        probs = F.softmax(scores, dim=-1)
        return probs @ v


class QuietAttention(Attention):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class LoudAttention(Attention):
    def forward(self, q, k, v):
        return super().forward(q, k, v) * 2


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))
"""
MODEL = """import torch
from m0 import RMSNorm, Attention, QuietAttention, gelu

try:
    from flash_attn import flash_attn_func
    attention = flash_attn_func
except ImportError:
    attention = Attention()

try:
    from apex.normalization import FusedRMSNorm
except ImportError:
    FusedRMSNorm = None


class Block(torch.nn.Module):
    def __init__(self, dim, fused=False):
        super().__init__()
        if fused:
            self.norm = FusedRMSNorm(dim)
        elif dim > 4:
            self.norm = torch.nn.Identity()
        else:
            self.norm = RMSNorm(dim)
        self.act = torch.nn.GELU() if fused else gelu
        self.attn = QuietAttention()

    def forward(self, x):
        return self.attn(self.norm(x), x, x)
"""
TRAINS = [
    "import torch\nfrom m1 import Block\n\nmodel = Block(64, fused=args.fused)\nmodel = torch.compile(model)\n"
    "block = Block(64)\nblock.compile()\n",
    "import torch\nimport m1\n\nnet = m1.Block(8)\nnet.layers[0].compile()\nopt_step = torch.compile(step)\n"
    "compiled = torch.compile(\n    net.encoder, mode=\"max-autotune\")\n\"\"\"torch.compile(model)\"\"\"\n"
    "# torch.compile(model)\n@torch.compile(mode=\"reduce-overhead\")\ndef f(x):\n    return x\n",
    "import keras\nfrom m1 import Block\n\nmodel = Block(8)\nmodel.compile(optimizer=\"adam\", loss=\"mse\")\n",
    "import torch\nfrom m0 import RMSNorm, gelu\nfrom liger_kernel import LigerRMSNorm\n\n"
    "norm = LigerRMSNorm(8) if use_liger else RMSNorm(8)\ntry:\n    import triton\n    act = fused_gelu\n"
    "except ImportError:\n    act = gelu\nfinally:\n    pass\nmodel = torch.compile(norm)\n",
]
CI = """name: ci
on: [push]
jobs:
  test:
    strategy:
      matrix:
        torch-version: [1.13.1, 2.0.0]
        torch:
          - 1.12
          - "2.1"
    env:
      TORCH_VERSION=2.2.0  # pytorch 1.8
    steps:
      - run: pip install torch==${{ matrix.torch-version }} torchvision
      - run: pip install "torch>=2.1,<2.3" pytorch=1.12.1
"""


def fallback_seeds():
    """Projects for the compile and fallback steps of the cross-file pass (driver/compile_sites.cpp,
    driver/fallbacks.cpp): torch.compile(model), block.compile(), `if fused: FusedX else: X`,
    `try/except ImportError` fallbacks, subclasses overriding forward; one carries a CI file,
    which fuzz/python.cpp reads as one (driver/torch_version.cpp)."""
    for i, train in enumerate(TRAINS):
        parts = [LAYERS, MODEL, train]
        if i == 1:
            parts.append(json.dumps({"norm": "RMSNorm", "attention": "LoudAttention"}))
        if i == 3:
            parts.append(CI)
        yield "\x1e".join(parts)


def flag_seeds():
    """Projects for the constant-flags step (driver/constant_flags.cpp): a method's finding under
    `if self.<flag>:`, the flag set once to a literal, and again elsewhere in some of them."""
    cls = ("import math\nimport torch.nn.functional as F\n\n\nclass Attention:\n"
           "    def __init__(self, dim):\n        self.manual = False\n        self.dim = dim\n\n"
           "    def forward(self, q, k, v):\n        if self.manual and self.dim > 0:\n"
           "            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
           "            return F.softmax(scores, dim=-1) @ v\n"
           "        return F.scaled_dot_product_attention(q, k, v)\n")
    for extra in ("", "m.manual = True\n", "m.manual |= 1\n", "setattr(m, 'manual', True)\n"):
        yield "\x1e".join([cls, "from m0 import Attention\n\nm = Attention(8)\n" + extra])


def main():
    out = pathlib.Path(sys.argv[1])
    pys = sorted((ROOT / "samples").rglob("*.py")) + sorted((ROOT / "samples").rglob("*.ipynb"))
    cus = sorted((ROOT / "samples").rglob("*.cu")) + sorted((ROOT / "samples").rglob("*.cuh"))
    for p in pys:
        put(out, "python", p.read_bytes())
    for p in cus:
        put(out, "cuda", p.read_bytes())
    for seed in project_seeds():
        put(out, "python", seed)
    for seed in fallback_seeds():
        put(out, "python", seed)
    for seed in flag_seeds():
        put(out, "python", seed)
    for kind, sub in ((0, "concepts"), (1, "patterns"), (2, "rules")):
        for p in sorted((ROOT / sub).rglob("*.toml")):
            put(out, "toml", bytes([kind]) + p.read_bytes())
    config = ('select = ["attention", "NRM", "ACT001"]\nignore = ["FUS"]\nmin-confidence = 0.6\n'
              'torch-version = "2.4"\nextend-exclude = ["third_party"]\nrespect-gitignore = false\n'
              'per-file-ignores = { "tests/**" = ["SYN001"] }\nseverity = { ATT001 = "error" }\n')
    put(out, "toml", b"\x03" + config.encode())
    put(out, "toml", b"\x04[project]\nname = \"x\"\n[tool.mlsem]\n" + config.encode())
    for target in ("python", "cuda", "toml", "report", "lsp"):
        for p in sorted((ROOT / "tests/fuzz" / target).glob("*")):
            put(out, target, p.read_bytes())
    # Reports: the bytes are read as the report's structure; any text does as a start.
    for p in pys[:8]:
        put(out, "report", p.read_bytes()[:4096])
    # The language server: a session per sample, pushed and pulled diagnostics.
    for i, p in enumerate(pys[:12] + cus[:4]):
        uri = "file:///work/" + p.name
        lang = "cuda" if p.suffix in (".cu", ".cuh") else "python"
        text = p.read_text(errors="replace")
        caps = {"textDocument": {"diagnostic": {}}} if i % 2 else {}
        bodies = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"capabilities": caps, "positionEncoding": ["utf-8", "utf-16"][i % 2:]}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "method": "textDocument/didOpen",
             "params": {"textDocument": {"uri": uri, "languageId": lang, "version": 1, "text": text}}},
            {"jsonrpc": "2.0", "method": "textDocument/didChange",
             "params": {"textDocument": {"uri": uri, "version": 2},
                        "contentChanges": [{"range": {"start": {"line": 3, "character": 0},
                                                      "end": {"line": 3, "character": 4}}, "text": "x = 1\n"}]}},
            {"jsonrpc": "2.0", "id": 2, "method": "textDocument/diagnostic", "params": {"textDocument": {"uri": uri}}},
            {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": uri}, "position": {"line": 10, "character": 8}}},
            {"jsonrpc": "2.0", "id": 4, "method": "textDocument/codeAction",
             "params": {"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0},
                                                                "end": {"line": 200, "character": 0}},
                        "context": {"diagnostics": []}}},
            {"jsonrpc": "2.0", "id": 5, "method": "workspace/diagnostic", "params": {"previousResultIds": []}},
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 5}},
            {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
            {"jsonrpc": "2.0", "id": 6, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        ]
        put(out, "lsp", lsp_seed(3 if i % 3 else 1, bodies))
        framed = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(j), j)
                          for j in (json.dumps(b).encode() for b in bodies[:4]))
        put(out, "lsp", b"\x00" + framed)


if __name__ == "__main__":
    main()
