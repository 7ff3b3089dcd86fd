#!/usr/bin/env python3
"""Tallies round 8's verdicts (verdict_*.md, rows `| A1 | ... | RIGHT | ...`) per set and
rule; with a run directory argument, also which judged findings that run still shows
(matched by fingerprint, then by rule+path+line)."""
import collections, glob, json, os, re, sys
here = os.path.dirname(os.path.abspath(__file__))
key = json.load(open(os.path.join(here, "key.json")))
verdict = {}
for f in sorted(glob.glob(os.path.join(here, "verdict_*.md"))):
    for line in open(f):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in key and cells[2].upper().strip("*") in ("RIGHT", "WRONG"):
            verdict[cells[0]] = cells[2].upper().strip("*")
shown = None
if len(sys.argv) > 1:
    shown = set()
    for f in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
        for line in open(f):
            d = json.loads(line)
            if d.get("type") == "finding" and d["confidence"] >= 0.5 and not d.get("context"):
                shown.add(d["fingerprint"]); shown.add((d["rule"], d["path"], d["line"]))
by = collections.defaultdict(lambda: [0, 0, 0, 0])  # judged, right, shown now, right shown now
for fid, v in verdict.items():
    k = key[fid]
    for group in (fid[0], k["rule"], "training" if fid[0] in "BCD" else ("default" if fid[0] == "A" else "sample-E")):
        b = by[group]
        b[0] += 1; b[1] += v == "RIGHT"
        if shown is not None and (k["fingerprint"] in shown or (k["rule"], k["path"], k["line"]) in shown):
            b[2] += 1; b[3] += v == "RIGHT"
print(f"judged {len(verdict)} of {len(key)}")
for g in sorted(by):
    j, r, s, rs = by[g]
    now = f"; shown now {s}, right {rs}" if shown is not None else ""
    print(f"{g:10} judged {j:3} right {r:3} ({100*r/j:.0f}%){now}")
