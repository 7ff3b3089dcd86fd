"""The benchmark's logic that needs neither a GPU nor PyTorch: the shapes, tolerances,
byte and flop counts, the results format and its summary. bench.py drives it on a GPU;
test_bench_logic.py checks it anywhere (CI)."""
import math
import re

# Accuracy of an output against the float64 reference: relative L2 error
# ||out - ref|| / ||ref||. float32 math lands far below 1e-5; a 16-bit output's own
# rounding alone gives about 2^-9 (bf16) or 2^-12 (fp16), so the bounds leave headroom
# for float32 accumulation and fast exp/tanh without letting a wrong element pass.
REL_L2_TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}

VARIANTS = ("fused", "baseline", "torch_eager", "torch_library", "torch_compile", "triton")

# Shapes per kernel, small to LLM-sized, with ragged ones (sizes not multiples of the
# block or the 8-element pack). Modes are separate rows of the results.
SHAPES = {
    "bias_gelu": {"modes": ["tanh", "erf"], "shapes": [(1024, 1024), (4097, 3001), (4096, 4096), (16384, 8192)]},
    "softmax": {"shapes": [(1024, 1024), (4097, 3001), (4096, 4096), (16384, 8192), (1024, 131072)]},
    "layernorm": {"shapes": [(1024, 1024), (4097, 3001), (4096, 4096), (16384, 8192)]},
    "rmsnorm": {"shapes": [(1024, 1024), (4097, 3001), (4096, 4096), (16384, 8192)]},
    "gated_mlp": {"modes": ["swiglu", "geglu"], "shapes": [(1024, 1024), (4097, 3001), (4096, 4096), (16384, 8192)]},
    # (tokens, heads, head_dim) with sequence length 1024 or 4096
    "rope": {"shapes": [(2048, 16, 64), (1000, 7, 72), (8192, 32, 128), (32768, 32, 128)]},
    "cross_entropy": {"shapes": [(1024, 32000), (4097, 50257), (4096, 128256), (8192, 50304)]},
    # (batch, heads, seq, head_dim); modes: causal or not
    "attention_fwd": {"modes": ["causal", "full"],
                      "shapes": [(2, 3, 777, 64), (8, 16, 1024, 64), (1, 5, 1000, 128), (4, 16, 2048, 128),
                                 (4, 16, 4096, 128)]},
    "lesson_coalescing": {"dtype": "float32", "shapes": [(3001, 4097), (4096, 4096), (8192, 8192)]},
    "lesson_vectorized": {"dtype": "bfloat16", "shapes": [((1 << 24) + 3,), (1 << 24,), (1 << 28,)]},
    "lesson_warp_reduce": {"dtype": "float32", "shapes": [(4097, 3001), (65536, 1024), (16384, 8192)]},
    "lesson_tiled_matmul": {"dtype": "float32", "shapes": [(1000, 1001, 999), (1024, 1024, 1024), (4096, 4096, 4096)]},
    "lesson_smem_transpose": {"dtype": "float32", "shapes": [(3001, 4097), (4096, 4096), (8192, 8192)]},
    # modes: the forward alone, or a training step's forward and backward
    "lesson_dropout": {"dtype": "bfloat16", "modes": ["forward", "train"],
                       "shapes": [(4097, 3001), (4096, 4096), (16384, 8192)]},
    # (experts, routed rows, k, n): ragged with an empty expert; Mixtral-like (8 experts of
    # ~1000 rows); DeepSeek-like (64 of ~256); Qwen3-MoE-like (128 of ~64)
    "lesson_grouped_gemm": {"dtype": "bfloat16", "shapes": [(7, 1000, 256, 200), (8, 8192, 4096, 4096),
                                                            (64, 16384, 2048, 1408), (128, 8192, 2048, 768)]},
    "lesson_fp8_quant": {"dtype": "bfloat16", "shapes": [(4097, 3001), (4096, 4096), (16384, 8192), (1024, 131072)]},
}
KERNELS = tuple(SHAPES)

# Shapes for --sanitize (compute-sanitizer slows kernels 10-100x): small, but covering every
# code path of each kernel (ragged sizes, the vector path, long rows, both attention tails).
SANITIZE_SHAPES = {
    "bias_gelu": [(33, 3001), (64, 1024)],
    # (3, 32768): 8 packs a thread at 512 threads; (3, 32767): unaligned at 512 threads, which
    # layernorm caches (layernorm_cached_long, 128 registers), softmax gives the cluster kernel
    # and rmsnorm its bounded kernel.
    "softmax": [(33, 3001), (16, 1024), (4, 131072), (3, 32768), (3, 32767)],
    "layernorm": [(33, 3001), (16, 8192), (3, 32768), (3, 32767)],
    "rmsnorm": [(33, 3001), (16, 8192), (3, 32768), (3, 32767)],
    "gated_mlp": [(33, 3001), (16, 1024)],
    "rope": [(100, 7, 72), (64, 16, 64)],
    "cross_entropy": [(17, 50257), (8, 128256)],
    "attention_fwd": [(1, 2, 777, 64), (1, 2, 256, 128)],
    "lesson_coalescing": [(301, 409), (256, 256)],
    "lesson_vectorized": [(4099,), (4096,)],
    "lesson_warp_reduce": [(301, 409), (64, 1024)],
    "lesson_tiled_matmul": [(100, 101, 99), (128, 128, 128)],
    "lesson_smem_transpose": [(301, 409), (256, 256)],
    "lesson_dropout": [(33, 3001), (16, 1024)],
    "lesson_grouped_gemm": [(5, 300, 64, 136), (3, 129, 128, 72)],
    "lesson_fp8_quant": [(33, 3001), (16, 8192), (2, 131072), (3, 32767)],
}
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")


def sanitizer_errors(log):
    """The error count compute-sanitizer printed ('ERROR SUMMARY: N errors'), or None
    when the log has no summary (the tool did not run to the end)."""
    # memcheck and synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY:
    # H hazards displayed (N errors, W warnings)"
    found = re.findall(r"ERROR SUMMARY: (\d+) error|SUMMARY: \d+ hazards? displayed \((\d+) error", log)
    return int(next(g for g in found[-1] if g)) if found else None


def sanitizer_kernels(log):
    """Names of the kernels compute-sanitizer reported errors in, in order of first report."""
    names = []
    for m in re.finditer(r"^=+\s+at (?:0x[0-9a-f]+ in )?(?:void )?(.+?)(?:\(|\+0x|$)", log, re.M):
        name = m.group(1).strip()
        if name and name not in names:
            names.append(name)
    return names
# Philox4x32-10 (common/philox.h), written once more here for the float64 references of
# lesson_dropout: the same arithmetic works on Python ints and on int64 torch tensors (no
# product exceeds 2^49), so the benchmark computes the expected mask on the GPU with torch and
# the CPU tests check this code against the Random123 known answers.
MASK32 = 0xFFFFFFFF


def _mulhilo32(a, m):
    """(hi, lo) 32-bit halves of a * m, a < 2^32 (int or int64 tensor), m a 32-bit constant."""
    lo_part, hi_part = a * (m & 0xFFFF), a * (m >> 16)  # each < 2^48
    t = (lo_part >> 16) + hi_part  # (a * m) >> 16
    return t >> 16, ((t & 0xFFFF) << 16) | (lo_part & 0xFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    for rnd in range(10):
        if rnd:
            k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
        hi0, lo0 = _mulhilo32(c0, 0xD2511F53)
        hi1, lo1 = _mulhilo32(c2, 0xCD9E8D57)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def dropout_threshold(p):
    """ceil(p * 2^24): element kept when its word's top 24 bits reach it (philox.h)."""
    return math.ceil(p * (1 << 24))


MEMORY_BOUND = ("bias_gelu", "softmax", "layernorm", "rmsnorm", "gated_mlp", "rope", "cross_entropy")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def shape_str(shape):
    return "x".join(str(d) for d in shape)


def numel(shape_text):
    return math.prod(int(d) for d in shape_text.split("x"))


def rel_l2(sq_err_sum, sq_ref_sum):
    """||out - ref|| / ||ref|| from the two sums of squares (0/0 counts as exact)."""
    if sq_ref_sum == 0:
        return 0.0 if sq_err_sum == 0 else math.inf
    return math.sqrt(sq_err_sum / sq_ref_sum)


def is_correct(rel_err, dtype, bad_elements):
    """bad_elements: NaN/Inf where the reference is finite, or elements left unwritten."""
    return bad_elements == 0 and math.isfinite(rel_err) and rel_err <= REL_L2_TOLERANCE[dtype]


def bytes_moved(kernel, shape, dtype, mode=None):
    """The fewest bytes a perfectly fused kernel must move: each input read once, each output written once."""
    b = DTYPE_BYTES[dtype]
    if kernel in ("bias_gelu",):
        rows, cols = shape
        return 2 * rows * cols * b + cols * b
    if kernel in ("softmax", "rmsnorm", "layernorm"):
        rows, cols = shape
        params = {"softmax": 0, "rmsnorm": 1, "layernorm": 2}[kernel]
        return 2 * rows * cols * b + params * cols * b
    if kernel == "gated_mlp":
        rows, cols = shape
        return 3 * rows * cols * b
    if kernel == "rope":
        tokens, heads, dim = shape
        return 2 * tokens * heads * dim * b
    if kernel == "cross_entropy":
        rows, vocab = shape
        return rows * vocab * b + rows * 8 + rows * 4
    if kernel in ("lesson_coalescing", "lesson_smem_transpose"):
        return 2 * math.prod(shape) * b
    if kernel == "lesson_vectorized":
        return 2 * shape[0] * b
    if kernel == "lesson_warp_reduce":
        rows, cols = shape
        return rows * cols * b + rows * b
    if kernel == "lesson_dropout":  # x -> y, and in training dy -> dx; no mask
        return (4 if mode == "train" else 2) * math.prod(shape) * b
    if kernel == "lesson_fp8_quant":  # x read, 1-byte q and a float32 scale per row written
        rows, cols = shape
        return rows * cols * (b + 1) + rows * 4
    return None


def flops(kernel, shape, mode=None):
    if kernel == "attention_fwd":
        batch, heads, seq, dim = shape
        f = 4 * batch * heads * seq * seq * dim
        return f / 2 if mode == "causal" else f
    if kernel == "lesson_tiled_matmul":
        m, n, k = shape
        return 2 * m * n * k
    if kernel == "lesson_grouped_gemm":
        _, rows, k, n = shape
        return 2 * rows * k * n
    return None


def run_record(kernel, shape, dtype, variant, ms, mode=None, correct=None, max_abs_err=None, rel_err=None,
               copy_same_bytes_gbps=None):
    """One row of "runs": time plus throughput (gbps for memory-bound kernels, tflops for matmul-like).
    copy_same_bytes_gbps: a device-to-device copy moving the same bytes (bytes_moved; half read,
    half written), timed the same way in the same run (bench.py gives it to the fused runs)."""
    r = {"kernel": kernel, "shape": shape_str(shape), "dtype": dtype, "variant": variant, "ms": round(ms, 5)}
    if mode:
        r["mode"] = mode
    by, fl = bytes_moved(kernel, shape, dtype, mode), flops(kernel, shape, mode)
    if by is not None:
        r["gbps"] = round(by / ms / 1e6, 1)
    if fl is not None:
        r["tflops"] = round(fl / ms / 1e9, 2)
    r["correct"] = correct
    r["max_abs_err"] = max_abs_err
    if rel_err is not None:
        r["rel_err"] = rel_err
    if copy_same_bytes_gbps is not None:
        r["copy_same_bytes_gbps"] = copy_same_bytes_gbps
    return r


def same_bytes_copy(kernel, shape, dtype, mode=None):
    """Bytes of the source of a copy that moves as many bytes as the kernel (read plus written),
    or None when the kernel is not memory-bound."""
    by = bytes_moved(kernel, shape, dtype, mode)
    return None if by is None or kernel not in MEMORY_BOUND else by // 2


def summarize(runs, copy_gbps):
    """Per (kernel, mode, shape, dtype): fused time against every other variant, the
    fraction of the run's copy bandwidth the fused kernel reached, and, where the run timed a
    copy of the same bytes, the fraction of that copy's bandwidth (fraction_of_same_bytes_copy)."""
    groups = {}
    for r in runs:
        key = (r["kernel"], r.get("mode"), r["shape"], r["dtype"])
        groups.setdefault(key, {})[r["variant"]] = r
    out = []
    for (kernel, mode, shape, dtype), by_variant in groups.items():
        fused = by_variant.get("fused")
        if not fused or not fused.get("ms"):
            continue
        row = {"kernel": kernel, "mode": mode, "shape": shape, "dtype": dtype, "fused_ms": fused["ms"]}
        for v in VARIANTS[1:]:
            if v in by_variant and by_variant[v].get("ms"):
                row["speedup_vs_" + v] = round(by_variant[v]["ms"] / fused["ms"], 3)
        if fused.get("gbps") and copy_gbps:
            row["fraction_of_copy"] = round(fused["gbps"] / copy_gbps, 3)
        if fused.get("gbps") and fused.get("copy_same_bytes_gbps"):
            row["same_bytes_copy_of_copy"] = round(fused["copy_same_bytes_gbps"] / copy_gbps, 3) if copy_gbps else None
            row["fraction_of_same_bytes_copy"] = round(fused["gbps"] / fused["copy_same_bytes_gbps"], 3)
        out.append(row)
    return out


def merge_results(old, new, kernels):
    """A results file with `kernels` re-measured: `old` keeps its rows of every other kernel
    and its run's fields (device, date, command, copy_gbps); the rows of `kernels` come from
    `new`, a run on the same device, whose own fields are kept in `merged_runs`. Refuses a
    different device."""
    if old.get("device") != new.get("device"):
        raise ValueError(f"cannot merge a run on {new.get('device')!r} into results of {old.get('device')!r}")
    kernels = set(kernels)
    out = dict(old)
    for key in ("runs", "checks"):
        out[key] = [r for r in old.get(key, []) if r["kernel"] not in kernels] + new.get(key, [])
    if "attention_fwd" in kernels:
        out["attention_configs"] = new.get("attention_configs", [])
    out["errors"] = [e for e in old.get("errors", []) if e.split(" ", 1)[0] not in kernels] + new.get("errors", [])
    entry = {k: new.get(k) for k in ("date", "command", "driver", "cuda", "torch", "triton", "copy_gbps")}
    entry["kernels"] = sorted(kernels)
    out["merged_runs"] = prune_merged_runs(old.get("merged_runs", []), kernels) + [entry]
    out["summary"] = summarize_file(out)
    return out


def summarize_file(doc):
    """summarize() over a results file, each kernel against the copy bandwidth of its own run."""
    kernels_in_order = dict.fromkeys(r["kernel"] for r in doc["runs"])
    return [row for k in kernels_in_order
            for row in summarize([r for r in doc["runs"] if r["kernel"] == k], run_of(doc, k)["copy_gbps"])]


def prune_merged_runs(entries, kernels):
    """Earlier merged runs without `kernels` (re-measured since); runs left with none dropped."""
    out = []
    for m in entries:
        rest = [k for k in m["kernels"] if k not in kernels]
        if rest:
            out.append(dict(m, kernels=rest))
    return out


def run_of(doc, kernel):
    """The fields of the run that measured `kernel` (device, date, command, copy_gbps, ...):
    its merged run's where it was re-measured by a --merge run, else the file's."""
    for m in reversed(doc.get("merged_runs", [])):  # the latest run that measured it
        if kernel in m["kernels"]:
            return {**doc, **{k: v for k, v in m.items() if v is not None}}
    return doc


def merge_sanitizer(old, new):
    """The sanitizer section after `new` re-checked some kernels: totals per tool over the
    kernels checked in either run (`runs` lists the runs). Totals cannot be split by kernel, so
    a kernel the old section already counts cannot be re-checked this way (check all of them)."""
    if not old:
        return new
    again = [k for k in new["kernels"] if k in old["kernels"]]
    if again:
        raise ValueError(f"sanitizer totals already count {', '.join(again)}: run --sanitize over every kernel")
    out = dict(new)
    out["kernels"] = [k for k in old["kernels"] if k not in new["kernels"]] + new["kernels"]
    out["instrumented"] = sorted(set(old.get("instrumented", [])) | set(new.get("instrumented", [])))
    runs = old.get("runs") or [{k: old.get(k) for k in ("date", "kernels")}]
    out["runs"] = runs + [{"date": new["date"], "kernels": new["kernels"]}]
    out["tools"] = {}
    for tool in SANITIZER_TOOLS:
        a, b = old["tools"].get(tool), new["tools"].get(tool)
        if not a or not b:
            out["tools"][tool] = b or a
            continue
        merged = dict(b)
        merged["errors"] = None if a["errors"] is None or b["errors"] is None else a["errors"] + b["errors"]
        merged["exit_code"] = a["exit_code"] or b["exit_code"]
        for k in ("seconds", "checks", "checks_correct"):
            merged[k] = round(a[k] + b[k], 1)
        merged["kernels_with_errors"] = a["kernels_with_errors"] + b["kernels_with_errors"]
        out["tools"][tool] = merged
    return out


def device_slug(name):
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3' (the results file's name)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


REQUIRED_TOP = ("device", "driver", "cuda", "torch", "date", "command", "copy_gbps", "runs")
REQUIRED_RUN = ("kernel", "shape", "dtype", "variant", "ms", "correct", "max_abs_err")


def validate_results(doc):
    """Problems with a results document, as strings (empty when it is well-formed)."""
    problems = [f"missing key '{k}'" for k in REQUIRED_TOP if k not in doc]
    for tool, entry in (doc.get("sanitizer") or {}).get("tools", {}).items():
        if tool not in SANITIZER_TOOLS:
            problems.append(f"sanitizer: unknown tool {tool!r}")
        elif "errors" not in entry:
            problems.append(f"sanitizer.{tool}: missing 'errors'")
    for i, r in enumerate(doc.get("runs", [])):
        problems += [f"runs[{i}]: missing '{k}'" for k in REQUIRED_RUN if k not in r]
        if "gbps" not in r and "tflops" not in r:
            problems.append(f"runs[{i}]: neither 'gbps' nor 'tflops'")
        if r.get("variant") not in VARIANTS:
            problems.append(f"runs[{i}]: unknown variant {r.get('variant')!r}")
    return problems
