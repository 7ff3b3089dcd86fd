#!/usr/bin/env python3
"""Review sets for blind round 8: every finding shown by default with --preview
(confidence >= 0.5, not demoted) from run/*.jsonl, split by rule into sets; FUS003 as a
random sample of 20 (seed 8). Writes sets/SET.md (what reviewers see) and key.json
(finding id -> fingerprint, rule, path, line)."""
import glob, json, os, random, sys

SETS = {"A": {"ATT001", "ATT002", "FUS001", "NRM001", "NRM002", "POS001", "ACT001", "LOS001"},
        "B": {"PLC001", "PLC002"},
        "C": {"DAT001", "GRD001"},
        "D": {"SYN001", "OPT001", "PRC001", "PRC002", "TRN001", "TRN002", "TRN003", "LAY001", "DBG001", "CMP001"},
        "E": {"FUS003"}}
here = os.path.dirname(os.path.abspath(__file__))
found = []
for f in sorted(glob.glob(os.path.join(here, "run", "*.jsonl"))):
    for line in open(f):
        d = json.loads(line)
        if d.get("type") == "finding" and d["confidence"] >= 0.5 and not d.get("context"):
            found.append(d)
found.sort(key=lambda d: (d["path"], d["line"], d["rule"]))
key = {}
for name, rules in SETS.items():
    items = [d for d in found if d["rule"] in rules]
    if name == "E":
        random.Random(8).shuffle(items)
        items = sorted(items[:20], key=lambda d: (d["path"], d["line"]))
    out = [f"# Set {name}: {len(items)} findings\n"]
    for i, d in enumerate(items, 1):
        fid = f"{name}{i}"
        key[fid] = {"fingerprint": d["fingerprint"], "rule": d["rule"], "path": d["path"], "line": d["line"]}
        out.append(f"## {fid}. {d['rule']} ({d['name']}) at {d['path']}:{d['line']}-{d['end_line']}, in `{d['function']}`, confidence {d['confidence']:.2f}\n")
        out.append(f"- message: {d['message']}")
        for e in d.get("evidence", []):
            where = f" (line {e['line']})" if e.get("line") else ""
            kind = "related place" if e.get("related") else ("evidence" if e.get("present") else "absent")
            out.append(f"- {kind}: {e['text']}{where}")
        out.append(f"- fix: {d['fix']}")
        if d.get("measured"):
            out.append(f"- measured: {d['measured']}")
        out.append("")
    open(os.path.join(here, "sets", f"{name}.md"), "w").write("\n".join(out))
    print(name, len(items))
json.dump(key, open(os.path.join(here, "key.json"), "w"), indent=1)
