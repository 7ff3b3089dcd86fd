#!/usr/bin/env python3
"""One SVG per kernel from a results JSON: time (ms, log scale) against problem size
(elements, log scale), one line per variant (and mode). Plain SVG, no plotting library.

  python3 kernels/bench/plot.py kernels/results/nvidia-h200.json [--out-dir DIR]
(default DIR: kernels/results/plots/<results file stem>/)"""
import argparse
import json
import math
from pathlib import Path

import harness

COLORS = {"fused": "#d62728", "baseline": "#9467bd", "torch_eager": "#7f7f7f", "torch_library": "#1f77b4",
          "torch_compile": "#2ca02c", "triton": "#9467bd"}
DASHES = ["", "6,3", "2,2"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 440, 70, 190, 40, 50


def series_of(runs, kernel):
    """{(variant, mode): [(elements, ms, shape)]} sorted by size."""
    series = {}
    for r in runs:
        if r["kernel"] == kernel:
            series.setdefault((r["variant"], r.get("mode")), []).append((harness.numel(r["shape"]), r["ms"], r["shape"]))
    return {k: sorted(v) for k, v in series.items()}


def svg(kernel, doc):
    series = series_of(doc["runs"], kernel)
    xs = [p[0] for pts in series.values() for p in pts]
    ys = [p[1] for pts in series.values() for p in pts]
    x0, x1 = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda x: LEFT + (math.log10(x) - x0) / (x1 - x0) * (W - LEFT - RIGHT)  # noqa: E731
    py = lambda y: H - BOTTOM - (math.log10(y) - y0) / (y1 - y0) * (H - TOP - BOTTOM)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="14">{kernel}: time vs size on {doc["device"]} '
           f'(median, lower is better)</text>']
    for e in range(y0, y1 + 1):  # horizontal grid at powers of ten
        y = py(10 ** e)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g} ms</text>')
    shapes = sorted({(p[0], p[2]) for pts in series.values() for p in pts})
    for i, (n, shape) in enumerate(shapes):
        x = px(n)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 14 + 12 * (i % 2)}" text-anchor="middle">{shape}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" text-anchor="middle">shape (elements, log scale)</text>')
    modes = sorted({m for (_, m) in series if m is not None})
    legend_y = TOP
    for (variant, mode), pts in sorted(series.items(), key=lambda kv: (harness.VARIANTS.index(kv[0][0]), kv[0][1] or "")):
        color, dash = COLORS[variant], DASHES[modes.index(mode) % len(DASHES)] if mode in modes else ""
        path = " ".join(f"{px(n):.1f},{py(ms):.1f}" for n, ms, _ in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash_attr}/>')
        out += [f'<circle cx="{px(n):.1f}" cy="{py(ms):.1f}" r="2.5" fill="{color}"/>' for n, ms, _ in pts]
        label = variant + (f" ({mode})" if mode else "")
        out.append(f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 34}" y1="{legend_y}" y2="{legend_y}" stroke="{color}" '
                   f'stroke-width="2"{dash_attr}/>')
        out.append(f'<text x="{W - RIGHT + 40}" y="{legend_y + 4}">{label}</text>')
        legend_y += 16
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out-dir")
    args = ap.parse_args()
    doc = json.loads(Path(args.results).read_text())
    out_dir = Path(args.out_dir) if args.out_dir else Path(args.results).parent / "plots" / Path(args.results).stem
    out_dir.mkdir(parents=True, exist_ok=True)
    for kernel in dict.fromkeys(r["kernel"] for r in doc["runs"]):
        (out_dir / f"{kernel}.svg").write_text(svg(kernel, doc))
        print(out_dir / f"{kernel}.svg")


if __name__ == "__main__":
    main()
