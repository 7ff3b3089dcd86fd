#!/usr/bin/env python3
"""Writes the measured numbers of a results JSON into the READMEs: a table per kernel
(kernels/<name>/README.md) and the targets overview (kernels/README.md), each between
<!-- results:begin --> and <!-- results:end --> markers, so the prose never carries
numbers that the committed results do not.

  python3 kernels/bench/report.py kernels/results/nvidia-h200.json [more results files]

With several files (one per GPU), each block holds one table per GPU, in the order given."""
import json
import math
import sys
from pathlib import Path

import harness

KERNELS_DIR = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def times(x):
    return "-" if x is None else f"{x:.2f}x"


def by_group(doc):
    """{(kernel, mode, shape): {variant: run}} in results order."""
    groups = {}
    for r in doc["runs"]:
        groups.setdefault((r["kernel"], r.get("mode"), r["shape"]), {})[r["variant"]] = r
    return groups


def ratio(group, other):
    f, o = group.get("fused"), group.get(other)
    return o["ms"] / f["ms"] if f and o else None


def kernel_table(doc, kernel):
    run = harness.run_of(doc, kernel)
    copy = run["copy_gbps"]
    lines = [f"Measured on {doc['device']} (driver {run['driver']}, CUDA {run['cuda']}, torch {run['torch']}), "
             f"{run['date'][:10]}, `{run['command']}`; copy bandwidth of the same run {copy:.0f} GB/s. "
             "Speedups are the other variant's median time over the fused kernel's (above 1: fused is faster). "
             "% of same-bytes copy: against a copy that moves the same bytes, timed the same way in the same run "
             "(- where the run timed none).", "",
             "| mode | shape | dtype | fused ms | throughput | % of copy | % of same-bytes copy | vs eager | vs library | vs compile | vs triton | vs baseline | correct |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (k, mode, shape), g in by_group(doc).items():
        if k != kernel or "fused" not in g:
            continue
        f = g["fused"]
        thr = f"{f['gbps']:.0f} GB/s" if "gbps" in f else f"{f['tflops']:.0f} TFLOP/s"
        pct = f"{100 * f['gbps'] / copy:.0f}%" if "gbps" in f else "-"
        same = same_bytes(f, copy)
        ok = all(g[v]["correct"] for v in ("fused", "baseline", "triton") if v in g)
        lines.append(f"| {mode or ''} | {shape} | {f['dtype']} | {f['ms']:.4f} | {thr} | {pct} | "
                     f"{'-' if same is None else f'{same[0]:.0f}% (copy {same[1]:.0f}%)'} | "
                     f"{times(ratio(g, 'torch_eager'))} | {times(ratio(g, 'torch_library'))} | "
                     f"{times(ratio(g, 'torch_compile'))} | {times(ratio(g, 'triton'))} | {times(ratio(g, 'baseline'))} | "
                     f"{'yes' if ok else 'NO'} |")
    extra = [c for c in doc.get("checks", []) if c["kernel"] == kernel and c["variant"] in ("fused", "baseline", "triton")]
    if extra:
        bad = [c for c in extra if not c["correct"]]
        dtypes = sorted({c["dtype"] for c in extra})
        lines += ["", f"Also checked (not timed) in {', '.join(dtypes)}: {len(extra) - len(bad)} of {len(extra)} "
                      "fused/baseline/triton results within tolerance."]
    lines += ["", f"Plot: [time against size](../results/plots/{Path(doc['_file']).stem}/{kernel}.svg)."]
    return "\n".join(lines)


def same_bytes(fused, copy):
    """(% of the same-bytes copy the fused kernel reached, that copy's % of the run's copy), or None."""
    c = fused.get("copy_same_bytes_gbps")
    if not c or "gbps" not in fused:
        return None
    return 100 * fused["gbps"] / c, 100 * c / copy


def largest(groups, kernel):
    """The groups of a kernel at its largest shape, one per mode."""
    best = {}
    for (k, mode, shape), g in groups.items():
        if k == kernel and "fused" in g and (mode not in best or harness.numel(shape) > harness.numel(best[mode][0])):
            best[mode] = (shape, g)
    return best


LARGE = 4096 * 4096  # memory-bound targets apply at every shape of at least this many elements


def misses(kernel, mode, g, copy):
    """The targets a (kernel, mode, shape) group misses, as words."""
    f = g["fused"]
    pct = 100 * f["gbps"] / copy if "gbps" in f else None
    eager, lib, comp = ratio(g, "torch_eager"), ratio(g, "torch_library"), ratio(g, "torch_compile")
    missed = []
    if kernel in harness.MEMORY_BOUND:
        if pct is not None and pct < 90:
            missed.append("bandwidth")
        if comp is not None and comp < 1.0:
            missed.append("compile")
    if kernel == "attention_fwd" and lib is not None and lib < 0.8:
        missed.append("SDPA parity")
    if eager is not None and eager < 3 and not kernel.startswith("lesson_"):
        missed.append("3x eager")
    return missed


def overview(doc):
    groups = by_group(doc)
    runs = [doc] + list(doc.get("merged_runs", []))
    dates = sorted({r["date"][:10] for r in runs})
    copies = [r["copy_gbps"] for r in runs if r.get("copy_gbps")]
    when = dates[0] if len(dates) == 1 else f"runs of {dates[0]} to {dates[-1]}"
    bandwidth = (f"copy bandwidth {copies[0]:.0f} GB/s" if len({round(c) for c in copies}) == 1 else
                 f"copy bandwidth {min(copies):.0f}-{max(copies):.0f} GB/s, each kernel judged against its own run's")
    lines = [f"{doc['device']}, {when}, {bandwidth}; each kernel at its largest "
             "measured shape (bf16 unless the lesson says otherwise). Targets: memory-bound kernels >= 90% of copy "
             "bandwidth and >= 1.0x torch.compile at every shape of at least 4096x4096 elements; every kernel >= 3x "
             "the eager form; attention >= 0.8x F.scaled_dot_product_attention at 4x16x4096x128, causal and full. "
             "Ratios are the other variant's time over the fused kernel's (above 1: fused is faster).", "",
             "| kernel | mode | shape | fused ms | % of copy | vs eager | vs library | vs compile | vs triton | targets |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kernel in harness.KERNELS:
        for mode, (shape, g) in largest(groups, kernel).items():
            f = g["fused"]
            pct = 100 * f["gbps"] / harness.run_of(doc, kernel)["copy_gbps"] if "gbps" in f else None
            eager, lib, comp = ratio(g, "torch_eager"), ratio(g, "torch_library"), ratio(g, "torch_compile")
            missed = misses(kernel, mode, g, harness.run_of(doc, kernel)["copy_gbps"])
            verdict = "met" if not missed else "missed: " + ", ".join(missed)
            if kernel.startswith("lesson_"):
                verdict = "lesson (vs baseline " + times(ratio(g, "baseline")) + ")"
            lines.append(f"| [{kernel}]({kernel}/README.md) | {mode or ''} | {shape} | {f['ms']:.4f} | "
                         f"{'-' if pct is None else f'{pct:.0f}%'} | {times(eager)} | {times(lib)} | {times(comp)} | "
                         f"{times(ratio(g, 'triton'))} | {verdict} |")
    # the memory-bound targets hold at every large shape, not only the largest
    other = []
    for (kernel, mode, shape), g in groups.items():
        if kernel in harness.MEMORY_BOUND and "fused" in g and harness.numel(shape) >= LARGE:
            if largest(groups, kernel).get(mode, (None,))[0] == shape:
                continue
            run_copy = harness.run_of(doc, kernel)["copy_gbps"]  # the copy of the run that measured it
            missed = [m for m in misses(kernel, mode, g, run_copy) if m in ("bandwidth", "compile")]
            if missed:
                f = g["fused"]
                same = same_bytes(f, run_copy)
                same_text = "" if same is None else f", {same[0]:.0f}% of a same-bytes copy, which ran at {same[1]:.0f}%"
                other.append(f"{kernel}{' ' + mode if mode else ''} {shape} ({100 * f['gbps'] / run_copy:.0f}% of copy"
                             f"{same_text}, {times(ratio(g, 'torch_compile'))} compile: {', '.join(missed)})")
    lines += ["", "Other shapes of at least 4096x4096 that miss a memory-bound target: " +
              ("; ".join(other) if other else "none") + "."]
    san = doc.get("sanitizer")
    if san:
        tools = ", ".join(f"{t} {e['errors'] if e['errors'] is not None else 'did not finish'}"
                          for t, e in san["tools"].items())
        lines += ["", f"compute-sanitizer ({san['date'][:10]}, {', '.join(san['variants'])} at the shapes of "
                      f"harness.SANITIZE_SHAPES), errors per tool: {tools}."]
    return "\n".join(lines)


def replace_block(path, text):
    content = path.read_text()
    if BEGIN not in content or END not in content:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block")
    head, rest = content.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + "\n" + text + "\n" + END + tail)


def main():
    docs = []
    for arg in sys.argv[1:]:
        path = Path(arg)
        doc = json.loads(path.read_text())
        doc["_file"] = str(path)
        docs.append(doc)
    if not docs:
        raise SystemExit(__doc__)
    for kernel in harness.KERNELS:
        tables = [kernel_table(d, kernel) for d in docs if any(r["kernel"] == kernel for r in d["runs"])]
        replace_block(KERNELS_DIR / kernel / "README.md", "\n\n".join(tables) or "Not measured yet.")
    replace_block(KERNELS_DIR / "README.md", "\n\n".join(overview(d) for d in docs))


if __name__ == "__main__":
    main()
