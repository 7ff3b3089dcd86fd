#!/usr/bin/env python3
"""Stratified sample of mlsem findings for hand judging.

    sample.py REPORT.json [--per-rule N] [--seed S] [--strip PREFIX] > sample.md

Takes up to N findings per rule (all of a rule when it has fewer), chosen with a fixed
seed, and prints each with its location, message, confidence, evidence, fix and the
source lines it covers (with a few lines of context), as a Markdown list that a judge
annotates. Also prints the count of findings per rule and per 1,000 lines analyzed.
"""
import argparse, collections, json, os, random, sys


def lines_of(path, cache={}):
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                cache[path] = f.read().splitlines()
        except OSError:
            cache[path] = []
    return cache[path]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--per-rule", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--strip", default="")
    ap.add_argument("--context", type=int, default=4)
    ap.add_argument("--lines", type=int, default=0, help="lines analyzed (for per-1k figures)")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    by_rule = collections.defaultdict(list)
    for f in rep["findings"]:
        by_rule[f["rule"]].append(f)
    rng = random.Random(a.seed)
    print("| rule | findings | per 1k lines |\n|---|---|---|")
    for r in sorted(by_rule):
        n = len(by_rule[r])
        per = f"{1000.0 * n / a.lines:.2f}" if a.lines else "-"
        print(f"| {r} | {n} | {per} |")
    print()
    k = 0
    for r in sorted(by_rule):
        fs = sorted(by_rule[r], key=lambda f: (f["path"], f["line"]))
        pick = fs if len(fs) <= a.per_rule else sorted(rng.sample(fs, a.per_rule), key=lambda f: (f["path"], f["line"]))
        for f in pick:
            k += 1
            path = f["path"][len(a.strip):] if a.strip and f["path"].startswith(a.strip) else f["path"]
            print(f"### {k}. {r} {path}:{f['line']} ({f.get('function','')}) conf {f['confidence']:.2f} {f.get('severity','')}")
            print(f"- message: {f['message']}")
            if f.get("context"):
                print(f"- context: {f['context']}")
            for e in f.get("evidence", []):
                sign = "+" if e.get("present") else "-"
                where = f" (line {e['line']})" if e.get("line") else ""
                print(f"  - {sign} {e['text']}{where}")
            print(f"- fix: {f.get('fix','')}")
            src = lines_of(f["path"])
            lo = max(1, f["line"] - a.context)
            hi = min(len(src), f.get("end_line", f["line"]) + a.context)
            ev = [e["line"] for e in f.get("evidence", []) if e.get("line")]
            print("```python")
            for i in range(lo, hi + 1):
                mark = ">" if f["line"] <= i <= f.get("end_line", f["line"]) else " "
                print(f"{i:5d}{mark} {src[i-1]}")
            print("```")
            print("- verdict: \n- reason: \n")


if __name__ == "__main__":
    sys.exit(main())
