#!/usr/bin/env python3
"""Checks and benchmarks mlsem's reference kernels on this machine's GPU.

For each kernel and shape: the fused kernel and the unfused baseline (ours, from
libmlsem_kernels.so through ctypes) and the Triton form (kernels/<name>/<name>_triton.py)
are checked against a float64 reference, as are the PyTorch forms; then six variants are
timed in this one run (fused, baseline, torch_eager: the hand-written form, torch_library:
the fused library call, torch_compile: torch.compile of the hand-written form, triton)
with triton.testing.do_bench (median), next to the device-to-device copy bandwidth. Writes the results JSON
(harness.validate_results describes it) and prints a table last.

  python3 kernels/bench/bench.py [--kernel NAME ...] [--out FILE] [--check-only] [--lib PATH]
  python3 kernels/bench/bench.py --sanitize [--kernel NAME ...] [--out FILE]

--merge (with or without --sanitize) re-measures the selected kernels into an existing
results file: the other kernels' rows stay, the run's own fields go to `merged_runs`, and
sanitizer totals add up over both runs (harness.merge_results, harness.merge_sanitizer).

--sanitize runs the correctness checks of our variants (fused, baseline, triton) at the
small shapes of harness.SANITIZE_SHAPES under compute-sanitizer's memcheck, racecheck and
synccheck, and writes what each tool found into the `sanitizer` section of the results
file (the rest of the file is kept).

Without --lib the library is built with CMake into $MLSEM_KERNELS_BUILD
(default ~/.cache/mlsem/kernels-build) unless it is already there.
"""
import argparse
import ctypes
import datetime
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

KERNELS_DIR = Path(__file__).resolve().parent.parent
DTYPE_CODE = {"float32": 0, "float16": 1, "bfloat16": 2}
ACT_CODE = {"swiglu": 0, "geglu": 1}

# Variants that write the case's output tensor (poisoned before each check).
OURS = ("fused", "baseline", "triton")
P, I64, I32, F32, U64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float, ctypes.c_uint64
SIGNATURES = {
    "bias_gelu": [P, P, P, I64, I64, I32, I32, P],
    "softmax": [P, P, I64, I64, I32, P],
    "layernorm": [P, P, P, P, I64, I64, F32, I32, P],
    "rmsnorm": [P, P, P, I64, I64, F32, I32, P],
    "gated_mlp": [P, P, I64, P, I64, I64, I32, I32, P],
    "rope": [P, P, P, P, I64, I64, I64, I64, I32, P],
    "cross_entropy": [P, P, P, P, I64, I64, I32, P],
    "attention_fwd": [P, P, P, P, I64, I64, I64, I64, I32, I32, P],
    "lesson_coalescing": [P, P, I64, I64, P],
    "lesson_vectorized": [P, P, I64, P],
    "lesson_warp_reduce": [P, P, I64, I64, P],
    "lesson_tiled_matmul": [P, P, P, I64, I64, I64, P],
    "lesson_smem_transpose": [P, P, I64, I64, P],
    # the baseline also takes the mask it stores
    "lesson_dropout": {"fused": [P, P, P, P, I64, F32, U64, U64, P],
                       "baseline": [P, P, P, P, P, I64, F32, U64, U64, P]},
    "lesson_grouped_gemm": [P, P, P, P, P, I64, I64, I64, I64, P],
    "lesson_fp8_quant": [P, P, P, I64, I64, P],
}


def build_library():
    build = Path(os.environ.get("MLSEM_KERNELS_BUILD", Path.home() / ".cache" / "mlsem" / "kernels-build"))
    lib = build / "libmlsem_kernels.so"
    if not lib.exists():
        jobs = str(max(1, min(16, os.cpu_count() or 1)))
        subprocess.run(["cmake", "-S", str(KERNELS_DIR), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                        "-DMLSEM_BUILD_TESTS=OFF", "-DMLSEM_KERNELS=ON"], check=True)
        subprocess.run(["cmake", "--build", str(build), "-j", jobs, "--target", "mlsem_kernels"], check=True)
    return lib


class Library:
    """The C ABI of libmlsem_kernels.so; a non-zero return code raises."""

    def __init__(self, path):
        self.dll = ctypes.CDLL(str(path))
        self.dll.mlsem_error_string.restype = ctypes.c_char_p
        self.dll.mlsem_error_string.argtypes = [I32]
        for name, sigs in SIGNATURES.items():
            for kind in ("fused", "baseline"):
                sig = sigs[kind] if isinstance(sigs, dict) else sigs
                fn = getattr(self.dll, f"mlsem_{name}_{kind}")
                fn.restype = I32
                fn.argtypes = sig if not (name == "attention_fwd" and kind == "fused") else sig[:-1] + [I32, P]
        self.dll.mlsem_attention_fwd_config_count.restype = I32

    def call(self, name, kind, *args):
        rc = getattr(self.dll, f"mlsem_{name}_{kind}")(*args)
        if rc != 0:
            raise RuntimeError(f"mlsem_{name}_{kind}: {self.dll.mlsem_error_string(rc).decode()}")


def load_triton(kernel):
    """kernels/<kernel>/<kernel>_triton.py as a module, or None when the kernel has none."""
    path = KERNELS_DIR / kernel / f"{kernel}_triton.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"{kernel}_triton", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Case:
    """One kernel at one shape: our two launches, PyTorch's three forms, the reference.

    out: the tensor our kernels write (poisoned before each check); ref(): float64
    reference of `view(out)`; torch outputs are compared through torch_view and ref_torch.
    extra_out: further tensors our kernels write (poisoned too)."""

    def __init__(self, out, ref, fused, baseline, eager_fn, eager_args, library=None, view=None, torch_view=None,
                 ref_torch=None, compile_eager=True, triton=None, extra_out=()):
        self.out, self.ref, self.fused, self.baseline = out, ref, fused, baseline
        self.extra_out = list(extra_out)
        self.triton = triton  # writes `out` like ours
        self.eager_fn, self.eager_args, self.library = eager_fn, eager_args, library
        self.view = view or (lambda t: t)
        self.torch_view = torch_view or self.view
        self.ref_torch = ref_torch or ref
        self.compile_eager = compile_eager


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", action="append", choices=harness.KERNELS, help="limit to these kernels")
    ap.add_argument("--out", default=None, help="results JSON (default kernels/results/<device>.json)")
    ap.add_argument("--lib", default=os.environ.get("MLSEM_KERNELS_LIB"), help="path of libmlsem_kernels.so")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    ap.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time per variant")
    ap.add_argument("--sanitize", action="store_true",
                    help="run our variants under compute-sanitizer; results in the file's `sanitizer` section")
    ap.add_argument("--sanitizer", default=os.environ.get("COMPUTE_SANITIZER", "compute-sanitizer"),
                    help="the compute-sanitizer executable")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other kernels' rows (and sanitizer totals) of the existing results file")
    ap.add_argument("--small", action="store_true", help="the small shapes of harness.SANITIZE_SHAPES")
    ap.add_argument("--ours-only", action="store_true", help="only our variants: fused, baseline, triton")
    args = ap.parse_args()
    if args.sanitize:
        return sanitize(args)

    import torch
    import torch.nn.functional as F
    import triton
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch._dynamo.config.cache_size_limit = 256
    lib = Library(args.lib or build_library())
    tri = {k: load_triton(k) for k in harness.KERNELS}
    dev = "cuda"
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # noqa: E731
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)

    def randn(*shape, dtype=torch.bfloat16, scale=1.0, shift=0.0):
        return (torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen) * scale + shift).to(dtype)

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        return do_bench(fn, warmup=25, rep=args.rep_ms, return_mode="median")

    def code(dt):
        return DTYPE_CODE[str(dt).split(".")[-1]]

    def poison(t):
        """NaN in every element: float8 has no fill_ everywhere, so its NaN byte (0x7f in e4m3fn)."""
        if t.dtype.is_floating_point and t.element_size() == 1:
            t.view(torch.uint8).fill_(0x7F)
        else:
            t.fill_(float("nan"))

    def compare(out, ref):
        o = out.double()
        finite_ref = torch.isfinite(ref)
        bad = int((~torch.isfinite(o) & finite_ref).sum().item())
        diff = torch.where(finite_ref & torch.isfinite(o), o - ref, torch.zeros_like(o))
        sq_err = float(diff.pow(2).sum().item())
        sq_ref = float(torch.where(finite_ref, ref, torch.zeros_like(ref)).pow(2).sum().item())
        return harness.rel_l2(sq_err, sq_ref), float(diff.abs().max().item()), bad

    # ---- the cases ----------------------------------------------------------------------

    def case_bias_gelu(shape, mode, dt):
        rows, cols = shape
        x, b = randn(rows, cols, dtype=dt), randn(cols, dtype=dt)
        y = torch.empty_like(x)
        tanh = mode == "tanh"

        def eager(x, b):
            h = x + b
            if tanh:
                return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
            return h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))

        def ref():
            h = x.double() + b.double()
            if tanh:
                return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
            return 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))

        a = lambda k: lambda: lib.call("bias_gelu", k, ptr(x), ptr(b), ptr(y), rows, cols, int(tanh), code(dt), stream())  # noqa: E731
        return Case(y, ref, a("fused"), a("baseline"), eager, (x, b),
                    library=lambda: F.gelu(x + b, approximate="tanh" if tanh else "none"),
                    triton=lambda: tri["bias_gelu"].bias_gelu(x, b, y, tanh))

    def case_softmax(shape, mode, dt):
        rows, cols = shape
        x = randn(rows, cols, dtype=dt, scale=2.0)
        y = torch.empty_like(x)

        def eager(x):
            m = x.max(dim=-1, keepdim=True).values
            e = torch.exp(x - m)
            return e / e.sum(dim=-1, keepdim=True)

        a = lambda k: lambda: lib.call("softmax", k, ptr(x), ptr(y), rows, cols, code(dt), stream())  # noqa: E731
        return Case(y, lambda: torch.softmax(x.double(), -1), a("fused"), a("baseline"), eager, (x,),
                    library=lambda: F.softmax(x, dim=-1), triton=lambda: tri["softmax"].softmax(x, y))

    def case_layernorm(shape, mode, dt):
        rows, cols = shape
        x = randn(rows, cols, dtype=dt, scale=2.0, shift=0.5)
        w, bb = randn(cols, dtype=dt, shift=1.0), randn(cols, dtype=dt)
        y = torch.empty_like(x)

        def eager(x, w, b, eps=1e-5):
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            return (x - mu) / torch.sqrt(var + eps) * w + b

        a = lambda k: lambda: lib.call("layernorm", k, ptr(x), ptr(w), ptr(bb), ptr(y), rows, cols, 1e-5, code(dt), stream())  # noqa: E731
        return Case(y, lambda: F.layer_norm(x.double(), (cols,), w.double(), bb.double(), 1e-5),
                    a("fused"), a("baseline"), eager, (x, w, bb),
                    library=lambda: F.layer_norm(x, (cols,), w, bb, 1e-5),
                    triton=lambda: tri["layernorm"].layernorm(x, w, bb, y, 1e-5))

    def case_rmsnorm(shape, mode, dt):
        rows, cols = shape
        x, w = randn(rows, cols, dtype=dt), randn(cols, dtype=dt, shift=1.0)
        y = torch.empty_like(x)

        def eager(x, w, eps=1e-6):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w

        def ref():
            xd = x.double()
            return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()

        a = lambda k: lambda: lib.call("rmsnorm", k, ptr(x), ptr(w), ptr(y), rows, cols, 1e-6, code(dt), stream())  # noqa: E731
        return Case(y, ref, a("fused"), a("baseline"), eager, (x, w),
                    library=lambda: F.rms_norm(x, (cols,), w, 1e-6),
                    triton=lambda: tri["rmsnorm"].rmsnorm(x, w, y, 1e-6))

    def case_gated_mlp(shape, mode, dt):
        rows, cols = shape
        # Both halves of one [rows, 2 * cols] projection, as x.chunk(2, -1) gives them.
        proj = randn(rows, 2 * cols, dtype=dt, scale=2.0)
        g, u = proj[:, :cols], proj[:, cols:]
        y = torch.empty(rows, cols, device=dev, dtype=dt)
        act = F.silu if mode == "swiglu" else F.gelu

        def eager(proj):
            g, u = proj.chunk(2, dim=-1)
            return act(g) * u

        a = lambda k: lambda: lib.call("gated_mlp", k, ptr(g), ptr(u), 2 * cols, ptr(y), rows, cols, ACT_CODE[mode], code(dt), stream())  # noqa: E731
        return Case(y, lambda: act(g.double()) * u.double(), a("fused"), a("baseline"), eager, (proj,),
                    triton=lambda: tri["gated_mlp"].gated_mlp(g, u, 2 * cols, y, mode == "geglu"))

    def case_rope(shape, mode, dt):
        tokens, heads, dim = shape
        seq = 1024 if tokens <= 8192 else 4096
        half = dim // 2
        x = randn(tokens, heads, dim, dtype=dt)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, half, device=dev, dtype=torch.float64) / half))
        angles = torch.arange(seq, device=dev, dtype=torch.float64)[:, None] * inv_freq[None, :]
        cos32, sin32 = angles.cos().float().contiguous(), angles.sin().float().contiguous()
        # The model's tables, as Hugging Face builds them: [seq, dim] in x's dtype.
        cos_t = torch.cat([cos32, cos32], -1).to(dt)
        sin_t = torch.cat([sin32, sin32], -1).to(dt)
        pos = torch.arange(tokens, device=dev) % seq
        y = torch.empty_like(x)

        def rotate_half(t):
            t1, t2 = t[..., :half], t[..., half:]
            return torch.cat((-t2, t1), dim=-1)

        def eager(x, cos, sin):
            c, s = cos[pos][:, None, :], sin[pos][:, None, :]
            return x * c + rotate_half(x) * s

        def ref():
            xd = x.double()
            c = cos32.double()[pos][:, None, :]
            s = sin32.double()[pos][:, None, :]
            x1, x2 = xd[..., :half], xd[..., half:]
            return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)

        a = lambda k: lambda: lib.call("rope", k, ptr(x), ptr(cos32), ptr(sin32), ptr(y), tokens, seq, heads, dim, code(dt), stream())  # noqa: E731
        return Case(y, ref, a("fused"), a("baseline"), eager, (x, cos_t, sin_t),
                    triton=lambda: tri["rope"].rope(x, cos32, sin32, y, seq))

    def case_cross_entropy(shape, mode, dt):
        rows, vocab = shape
        logits = randn(rows, vocab, dtype=dt, scale=2.0)
        tgt = torch.randint(0, vocab, (rows,), device=dev, generator=gen)
        losses = torch.empty(rows, device=dev, dtype=torch.float32)
        mean = torch.empty(1, device=dev, dtype=torch.float32)

        def eager(logits, tgt):
            lp = torch.log(torch.softmax(logits.float(), dim=-1))
            return -lp.gather(1, tgt[:, None]).mean()

        def ref():
            xd = logits.double()
            return torch.logsumexp(xd, -1) - xd.gather(1, tgt[:, None])[:, 0]

        a = lambda k: lambda: lib.call("cross_entropy", k, ptr(logits), ptr(tgt), ptr(losses), ptr(mean), rows, vocab, code(dt), stream())  # noqa: E731
        return Case(losses, ref, a("fused"), a("baseline"), eager, (logits, tgt),
                    library=lambda: F.cross_entropy(logits, tgt), ref_torch=lambda: ref().mean().reshape(()),
                    torch_view=lambda t: t.reshape(()),
                    triton=lambda: tri["cross_entropy"].cross_entropy(logits, tgt, losses, mean))

    def case_attention_fwd(shape, mode, dt):
        b, h, t, d = shape
        causal = mode == "causal"
        q, k, v = (randn(b, h, t, d, dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        mask = torch.tril(torch.ones(t, t, device=dev, dtype=torch.bool))

        def eager(q, k, v):
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            if causal:
                att = att.masked_fill(~mask, float("-inf"))
            att = F.softmax(att, dim=-1)
            return att @ v

        def ref():  # the first two heads of the first sequence, in float64
            qd, kd, vd = (z[:1, :2].double() for z in (q, k, v))
            att = (qd @ kd.transpose(-2, -1)) / math.sqrt(d)
            if causal:
                att = att.masked_fill(~mask, float("-inf"))
            return torch.softmax(att, -1) @ vd

        dcode = code(dt)
        fused = lambda cfg=0: lambda: lib.dll.mlsem_attention_fwd_fused(ptr(q), ptr(k), ptr(v), ptr(o), b, h, t, d, int(causal), dcode, cfg, stream())  # noqa: E731
        baseline = lambda: lib.call("attention_fwd", "baseline", ptr(q), ptr(k), ptr(v), ptr(o), b, h, t, d, int(causal), dcode, stream())  # noqa: E731
        c = Case(o, ref, lambda: check_rc(fused()()), baseline, eager, (q, k, v),
                 library=lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                 view=lambda z: z[:1, :2], triton=lambda: tri["attention_fwd"].attention_fwd(q, k, v, o, causal))
        c.configs = [lambda cfg=cfg: check_rc(fused(cfg)()) for cfg in range(1, lib.dll.mlsem_attention_fwd_config_count() + 1)]
        return c

    def check_rc(rc):
        if rc != 0:
            raise RuntimeError(lib.dll.mlsem_error_string(rc).decode())

    def case_lesson_coalescing(shape, mode, dt):
        rows, cols = shape
        x = randn(rows, cols, dtype=dt)
        y = torch.empty_like(x)
        a = lambda k: lambda: lib.call("lesson_coalescing", k, ptr(x), ptr(y), rows, cols, stream())  # noqa: E731
        return Case(y, lambda: 2 * x.double(), a("fused"), a("baseline"), lambda x: 2 * x, (x,), compile_eager=False)

    def case_lesson_vectorized(shape, mode, dt):
        (n,) = shape
        x = randn(n, dtype=dt)
        y = torch.empty_like(x)
        a = lambda k: lambda: lib.call("lesson_vectorized", k, ptr(x), ptr(y), n, stream())  # noqa: E731
        return Case(y, lambda: 2 * x.double(), a("fused"), a("baseline"), lambda x: 2 * x, (x,), compile_eager=False)

    def case_lesson_warp_reduce(shape, mode, dt):
        rows, cols = shape
        x = randn(rows, cols, dtype=dt)
        y = torch.empty(rows, device=dev, dtype=dt)
        a = lambda k: lambda: lib.call("lesson_warp_reduce", k, ptr(x), ptr(y), rows, cols, stream())  # noqa: E731
        return Case(y, lambda: x.double().sum(-1), a("fused"), a("baseline"), lambda x: x.sum(-1), (x,),
                    compile_eager=False)

    def case_lesson_tiled_matmul(shape, mode, dt):
        m, n, kk = shape
        a_, b_ = randn(m, kk, dtype=dt), randn(kk, n, dtype=dt)
        c = torch.empty(m, n, device=dev, dtype=dt)
        a = lambda k: lambda: lib.call("lesson_tiled_matmul", k, ptr(a_), ptr(b_), ptr(c), m, n, kk, stream())  # noqa: E731
        return Case(c, lambda: a_.double() @ b_.double(), a("fused"), a("baseline"), lambda a, b: a @ b, (a_, b_),
                    compile_eager=False)

    def case_lesson_smem_transpose(shape, mode, dt):
        rows, cols = shape
        x = randn(rows, cols, dtype=dt)
        y = torch.empty(cols, rows, device=dev, dtype=dt)
        a = lambda k: lambda: lib.call("lesson_smem_transpose", k, ptr(x), ptr(y), rows, cols, stream())  # noqa: E731
        return Case(y, lambda: x.double().t(), a("fused"), a("baseline"), lambda x: x.t().contiguous(), (x,),
                    compile_eager=False)

    def case_lesson_dropout(shape, mode, dt):
        rows, cols = shape
        n, p, seed, offset = rows * cols, 0.1, 0x1234ABCD5678, 96
        train, scale = mode == "train", 1.0 / (1.0 - p)
        x, dy = randn(rows, cols, dtype=dt), randn(rows, cols, dtype=dt)
        y, dx = torch.empty_like(x), torch.empty_like(x)  # dx: written in training only
        mask = torch.empty(n, device=dev, dtype=torch.uint8)  # the baseline's stored mask
        dyp, dxp = (ptr(dy), ptr(dx)) if train else (None, None)
        fused = lambda: lib.call("lesson_dropout", "fused", ptr(x), dyp, ptr(y), dxp, n, p, seed, offset, stream())  # noqa: E731
        baseline = lambda: lib.call("lesson_dropout", "baseline", ptr(x), dyp, ptr(mask), ptr(y), dxp, n, p, seed, offset, stream())  # noqa: E731
        keep = []

        def ref():
            if not keep:  # the mask from harness.philox4x32_10 in int64 torch arithmetic: written apart from the kernel
                g = torch.arange((n + 3) // 4, device=dev, dtype=torch.int64) + offset
                words = harness.philox4x32_10(g & harness.MASK32, g >> 32, 0, 0, seed & harness.MASK32, seed >> 32)
                w = torch.stack(words, -1).reshape(-1)[:n]
                keep.append(((w >> 8) >= harness.dropout_threshold(p)).reshape(rows, cols).double())
            yr = x.double() * keep[0] * scale
            return torch.stack([yr, dy.double() * keep[0] * scale]) if train else yr

        def eager(x, dy):  # the hand-written form; autograd would keep `mask` for the backward
            mask = torch.rand_like(x) >= p
            y = x * mask / (1 - p)
            return (y, dy * mask / (1 - p)) if train else y

        def library():
            yl, m = torch.ops.aten.native_dropout(x, p, True)
            return (yl, torch.ops.aten.native_dropout_backward(dy, m, scale)) if train else yl

        # PyTorch draws other random numbers: its outputs are checked element by element to be
        # 0 or the scaled input (dx dropped exactly where y is), not against our mask.
        def torch_view(got):
            yt, dxt = got if train else (got, None)
            dropped = yt == 0
            yv = torch.where(dropped, x.double() * scale, yt.double())
            if not train:
                return yv
            return torch.stack([yv, torch.where(dropped, dy.double() * scale + dxt.double(), dxt.double())])

        def ref_torch():
            return torch.stack([x.double() * scale, dy.double() * scale]) if train else x.double() * scale

        triton_fn = lambda: tri["lesson_dropout"].dropout(x, y, p, seed, offset, dy if train else None,  # noqa: E731
                                                         dx if train else None)
        return Case(y, ref, fused, baseline, eager, (x, dy), library=library, extra_out=[dx] if train else [],
                    triton=triton_fn,
                    view=(lambda t: torch.stack([t, dx])) if train else None, torch_view=torch_view, ref_torch=ref_torch)

    def case_lesson_grouped_gemm(shape, mode, dt):
        experts, total, kk, nn = shape
        # Routing: tokens per expert drawn from skewed expert probabilities; at the small
        # shapes one expert gets none (an empty group is skipped, not a crash).
        probs = torch.softmax(torch.randn(experts, device=dev, generator=gen), 0)
        counts = torch.bincount(torch.multinomial(probs, total, replacement=True, generator=gen), minlength=experts)
        if experts > 2 and total < 4096:
            counts[0] += counts[2]
            counts[2] = 0
        offsets = torch.zeros(experts + 1, dtype=torch.int64, device=dev)
        offsets[1:] = counts.cumsum(0)
        offsets_host = offsets.cpu()
        bounds = offsets_host.tolist()
        x = randn(total, kk, dtype=dt)
        w = randn(experts, kk, nn, dtype=dt, scale=1.0 / math.sqrt(kk))
        y = torch.empty(total, nn, device=dev, dtype=dt)
        a = lambda k: lambda: lib.call("lesson_grouped_gemm", k, ptr(x), ptr(w), ptr(offsets), ptr(offsets_host), ptr(y), experts, total, kk, nn, stream())  # noqa: E731

        def eager(x, w):  # the loop over experts of a mixture-of-experts layer
            return torch.cat([x[bounds[e]:bounds[e + 1]] @ w[e] for e in range(experts)])

        def ref():
            xd, wd = x.double(), w.double()
            return torch.cat([xd[bounds[e]:bounds[e + 1]] @ wd[e] for e in range(experts)])

        library = None
        if hasattr(torch, "_grouped_mm"):  # one grouped launch (CUTLASS), offsets: int32 ends of the groups
            ends = offsets[1:].to(torch.int32)
            library = lambda: torch._grouped_mm(x, w, offs=ends)  # noqa: E731
        return Case(y, ref, a("fused"), a("baseline"), eager, (x, w), library=library, compile_eager=False)

    def case_lesson_fp8_quant(shape, mode, dt):
        rows, cols = shape
        # rows of very different magnitudes, as tokens' activations are
        x = (torch.randn(rows, cols, device=dev, generator=gen) *
             torch.exp(2 * torch.randn(rows, 1, device=dev, generator=gen))).to(dt)
        q = torch.empty(rows, cols, device=dev, dtype=torch.float8_e4m3fn)
        scale = torch.empty(rows, device=dev, dtype=torch.float32)
        fmax = 448.0

        def eager(x):
            amax = x.abs().amax(dim=-1, keepdim=True).float()
            s = amax.clamp(min=1e-12) / fmax
            return (x.float() / s).clamp(-fmax, fmax).to(torch.float8_e4m3fn), s.squeeze(-1)

        def ref_scale():
            return x.double().abs().amax(-1, keepdim=True).clamp(min=1e-12) / fmax

        def ref():  # e4m3 of the float64 quotient
            return (x.double() / ref_scale()).clamp(-fmax, fmax).to(torch.float8_e4m3fn).double()

        # q with each row multiplied by (its scale / the float64 scale): a wrong scale shows
        # as a wrong row, a NaN (unwritten) scale as NaN.
        def dequant_view(qt, st):
            return qt.double() * (st.double()[:, None] / ref_scale())

        a = lambda k: lambda: lib.call("lesson_fp8_quant", k, ptr(x), ptr(q), ptr(scale), rows, cols, stream())  # noqa: E731
        return Case(q, ref, a("fused"), a("baseline"), eager, (x,), view=lambda t: dequant_view(t, scale),
                    triton=lambda: tri["lesson_fp8_quant"].fp8_quant(x, q, scale),
                    torch_view=lambda got: dequant_view(got[0], got[1]), extra_out=[scale])

    scope = dict(locals())
    cases = {name: fn for name, fn in scope.items() if name.startswith("case_")}

    # ---- the run ------------------------------------------------------------------------

    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        driver = "unknown"
    doc = {
        "device": torch.cuda.get_device_name(0), "driver": driver, "cuda": torch.version.cuda,
        "torch": torch.__version__, "triton": triton.__version__,
        "sm_count": props.multi_processor_count,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "timing": f"triton.testing.do_bench median, warmup 25 ms, rep {args.rep_ms:g} ms",
        "tolerance_rel_l2": harness.REL_L2_TOLERANCE,
        "copy_gbps": None, "runs": [], "checks": [], "attention_configs": [], "errors": [],
    }
    out_path = Path(args.out) if args.out else KERNELS_DIR / "results" / f"{harness.device_slug(doc['device'])}.json"

    selected = args.kernel or list(harness.KERNELS)
    old = json.loads(out_path.read_text()) if args.merge and out_path.exists() else None

    def save():
        doc["summary"] = harness.summarize(doc["runs"], doc["copy_gbps"])
        out_path.parent.mkdir(parents=True, exist_ok=True)
        merged = harness.merge_results(old, doc, selected) if old else doc
        out_path.write_text(json.dumps(merged, indent=1) + "\n")

    if not args.check_only:
        src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        doc["copy_gbps"] = round(2 * src.numel() / timed(lambda: dst.copy_(src)) / 1e6, 1)
        print(f"copy bandwidth: {doc['copy_gbps']} GB/s", flush=True)
        del src, dst

    same_bytes = {}

    def copy_same_bytes_gbps(kernel, shape, dtype_name, mode):
        """Bandwidth of a device-to-device copy moving as many bytes as the kernel, timed as the
        kernels are (one per byte count and run): at mid sizes a copy itself gets well under the
        1 GB copy's bandwidth (launch and timing overheads, the flush's dirty lines in L2)."""
        nbytes = harness.same_bytes_copy(kernel, shape, dtype_name, mode)
        if nbytes is None or args.check_only:
            return None
        if nbytes not in same_bytes:
            src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=dev)
            dst = torch.empty_like(src)
            same_bytes[nbytes] = round(2 * nbytes / timed(lambda: dst.copy_(src)) / 1e6, 1)
            del src, dst
        return same_bytes[nbytes]

    def check(kernel, shape, mode, dtype_name, c, variant, run):
        """Runs one variant once on poisoned output, compares it with the reference."""
        ours = variant in OURS
        if ours:
            for t in [c.out] + c.extra_out:
                poison(t)
        got = run()
        torch.cuda.synchronize()
        out = c.view(c.out) if ours else c.torch_view(got)
        ref = c.ref() if ours else c.ref_torch()
        rel, max_abs, bad = compare(out, ref)
        ok = harness.is_correct(rel, dtype_name, bad)
        if not ok:
            print(f"  WRONG {kernel} {mode or ''} {harness.shape_str(shape)} {dtype_name} {variant}: "
                  f"rel_l2 {rel:.3g}, max_abs {max_abs:.3g}, bad {bad}", flush=True)
        return ok, max_abs, rel

    started = time.time()
    for kernel in selected:
        spec = dict(harness.SHAPES[kernel])
        if args.small:
            spec["shapes"] = harness.SANITIZE_SHAPES[kernel]
        timed_dtype = spec.get("dtype", "bfloat16")
        # Correctness in the other 16-bit type too (and float32 where the kernel has it),
        # at the ragged and a mid-sized shape: checks only, not timed.
        extra_dtypes = [] if "dtype" in spec else (["float16"] if kernel == "attention_fwd" else ["float16", "float32"])
        for mode in spec.get("modes", [None]):
            for shape in spec["shapes"]:
                for dtype_name in [timed_dtype] + extra_dtypes:
                    is_timed = dtype_name == timed_dtype and not args.check_only
                    if dtype_name != timed_dtype and (args.small or shape not in spec["shapes"][1:3]):
                        continue
                    try:
                        c = cases["case_" + kernel](shape, mode, getattr(torch, dtype_name))
                        variants = {"fused": c.fused, "baseline": c.baseline,
                                    "torch_eager": lambda c=c: c.eager_fn(*c.eager_args)}
                        if c.library:
                            variants["torch_library"] = c.library
                        if c.compile_eager and is_timed:
                            compiled = torch.compile(c.eager_fn, dynamic=False)
                            variants["torch_compile"] = lambda c=c, f=compiled: f(*c.eager_args)
                        if c.triton:
                            variants["triton"] = c.triton
                        if args.ours_only:
                            variants = {v: f for v, f in variants.items() if v in OURS}
                        for variant, run in variants.items():
                            ok, max_abs, rel = check(kernel, shape, mode, dtype_name, c, variant, run)
                            if is_timed:
                                ms = timed(run)
                                same = copy_same_bytes_gbps(kernel, shape, dtype_name, mode) if variant == "fused" else None
                                doc["runs"].append(harness.run_record(kernel, shape, dtype_name, variant, ms, mode,
                                                                      ok, max_abs, rel, copy_same_bytes_gbps=same))
                            else:
                                doc["checks"].append({"kernel": kernel, "mode": mode, "shape": harness.shape_str(shape),
                                                      "dtype": dtype_name, "variant": variant, "correct": ok,
                                                      "max_abs_err": max_abs, "rel_err": rel})
                        if kernel == "attention_fwd" and is_timed:
                            for i, cfg in enumerate(c.configs, start=1):
                                ms = timed(cfg)
                                doc["attention_configs"].append({"shape": harness.shape_str(shape), "mode": mode,
                                                                 "config": i, "ms": round(ms, 5),
                                                                 "tflops": round(harness.flops(kernel, shape, mode) / ms / 1e9, 2)})
                    except Exception as e:  # one failing case must not lose the rest of the run
                        msg = f"{kernel} {mode or ''} {harness.shape_str(shape)} {dtype_name}: {type(e).__name__}: {e}"
                        print("  ERROR " + msg, flush=True)
                        doc["errors"].append(msg)
                    finally:
                        c = None
                        torch.cuda.empty_cache()
        print(f"{kernel}: done ({time.time() - started:.0f} s)", flush=True)
        save()

    save()
    problems = harness.validate_results(doc)
    print_table(doc)
    print(f"results: {out_path}" + (f" (problems: {problems})" if problems else ""))
    ours_wrong = [r for r in doc["runs"] + doc["checks"]
                  if r["correct"] is False and r["variant"] in OURS]
    return 1 if ours_wrong or doc["errors"] else 0


def device_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def checked_kernel_names():
    """Substrings of the kernels the sanitizer instruments: ours (C++ namespace
    mlsem_kernels) and the Triton ones (their function names); PyTorch's own kernels, which
    the checks use for inputs and references, run uninstrumented."""
    names = ["mlsem_kernels"]
    for path in sorted(KERNELS_DIR.glob("*/*_triton.py")):
        names += re.findall(r"@triton\.jit\s*\ndef (\w+)", path.read_text())
    return names


def sanitize(args):
    """Our variants' checks at small shapes under each compute-sanitizer tool, one child
    process per tool; the `sanitizer` section of the results file records what each found."""
    lib = args.lib or build_library()
    out_path = Path(args.out) if args.out else KERNELS_DIR / "results" / f"{harness.device_slug(device_name())}.json"
    doc = json.loads(out_path.read_text()) if out_path.exists() else {}
    kernels = args.kernel or list(harness.KERNELS)
    counted = set(kernels) & set((doc.get("sanitizer") or {}).get("kernels", []))
    if args.merge and counted:
        raise SystemExit(f"--merge: the sanitizer totals already count {', '.join(sorted(counted))}; "
                         "run --sanitize over every kernel instead")
    try:
        version = subprocess.run([args.sanitizer, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    except (OSError, IndexError):
        version = "unknown"
    section = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "compute_sanitizer": version, "device": device_name(), "kernels": kernels,
               "variants": list(OURS), "shapes": "harness.SANITIZE_SHAPES",
               "instrumented": checked_kernel_names(), "tools": {}}
    failed = False
    for tool in harness.SANITIZER_TOOLS:
        tmp = out_path.with_name(f".sanitize-{tool}.json")
        cmd = [args.sanitizer, "--tool", tool, "--print-limit", "100"]
        for name in checked_kernel_names():
            cmd += ["--kernel-name", f"kns={name}"]
        cmd += [sys.executable, str(Path(__file__).resolve()),
               "--check-only", "--small", "--ours-only", "--lib", str(lib), "--out", str(tmp)]
        for k in kernels:
            cmd += ["--kernel", k]
        started = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        checks = json.loads(tmp.read_text()).get("checks", []) if tmp.exists() else []
        tmp.unlink(missing_ok=True)
        errors = harness.sanitizer_errors(log)
        entry = {"errors": errors, "exit_code": proc.returncode, "seconds": round(time.time() - started, 1),
                 "checks": len(checks), "checks_correct": sum(1 for c in checks if c["correct"]),
                 "kernels_with_errors": harness.sanitizer_kernels(log) if errors else []}
        if errors is None or errors or proc.returncode:
            entry["log_tail"] = log[-4000:]
            failed = True
        section["tools"][tool] = entry
        print(f"{tool}: {errors} errors, exit {proc.returncode}, {entry['checks_correct']}/{len(checks)} checks "
              f"correct, {entry['seconds']} s", flush=True)
    doc["sanitizer"] = harness.merge_sanitizer(doc.get("sanitizer"), section) if args.merge else section
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"results: {out_path}")
    return 1 if failed else 0


def print_table(doc):
    print(f"\n{doc['device']}  copy {doc['copy_gbps']} GB/s  torch {doc['torch']}")
    print(f"{'kernel':<22}{'mode':<8}{'shape':<18}{'fused ms':>10}{'GB/s|TF':>9}{'%copy':>7}{'%same':>7}"
          f"{'x eager':>9}{'x lib':>8}{'x compile':>10}{'x base':>8}{'x triton':>9}")
    fused = {(r["kernel"], r.get("mode"), r["shape"]): r for r in doc["runs"] if r["variant"] == "fused"}
    for s in doc.get("summary", []):
        r = fused[(s["kernel"], s["mode"], s["shape"])]
        thr = r.get("gbps", r.get("tflops"))
        f = lambda k: f"{s[k]:.2f}" if k in s else "-"  # noqa: E731
        pct = f"{100 * s['fraction_of_copy']:.0f}" if "fraction_of_copy" in s else "-"
        same = f"{100 * s['fraction_of_same_bytes_copy']:.0f}" if "fraction_of_same_bytes_copy" in s else "-"
        print(f"{s['kernel']:<22}{s['mode'] or '':<8}{s['shape']:<18}{s['fused_ms']:>10.4f}{thr:>9}{pct:>7}{same:>7}"
              f"{f('speedup_vs_torch_eager'):>9}{f('speedup_vs_torch_library'):>8}"
              f"{f('speedup_vs_torch_compile'):>10}{f('speedup_vs_baseline'):>8}{f('speedup_vs_triton'):>9}")
    wrong = [r for r in doc["runs"] + doc["checks"] if r["correct"] is False]
    ours = [r for r in wrong if r["variant"] in OURS]
    print(f"outside tolerance: {len(ours)} of ours, {len(wrong) - len(ours)} of PyTorch's; errors: {len(doc['errors'])}")


if __name__ == "__main__":
    sys.exit(main())
