#!/usr/bin/env python3
"""Validates `mlsem analyze --format json` and `--format json-lines` over the samples
(and a notebook, a file error and an unused suppression) against
docs/schema/report.schema.json with the jsonschema package (Debian: python3-jsonschema).
Also checks that the schema rejects a report with a defect.

usage: validate_json.py MLSEM_BINARY  (run from the repository root)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("the jsonschema module is missing: run scripts/setup.sh (apt: python3-jsonschema)")

mlsem = os.path.abspath(sys.argv[1])
root = os.getcwd()
schema = json.load(open(os.path.join(root, "docs/schema/report.schema.json")))
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)

with tempfile.TemporaryDirectory() as work:
    shutil.copytree(os.path.join(root, "samples"), os.path.join(work, "samples"))
    with open(os.path.join(work, "samples/broken.py"), "w") as f:
        f.write("def broken(:\n    pass\n")
    with open(os.path.join(work, "samples/unused.py"), "w") as f:
        f.write("x = 1  # mlsem: ignore[ATT001]\n")

    def run(fmt):
        done = subprocess.run([mlsem, "analyze", "--no-cache", "--report-unused-suppressions", "--format", fmt, "samples"],
                              cwd=work, capture_output=True, text=True)
        if done.returncode != 1:
            sys.exit(f"mlsem exited {done.returncode} for --format {fmt}: {done.stderr}")
        return done.stdout

    report = json.loads(run("json"))
    problems = list(validator.iter_errors(report))
    for p in problems:
        print(f"json: {list(p.absolute_path)}: {p.message}")
    if len(report["findings"]) < 10 or not report["errors"]:
        sys.exit("expected the samples' findings and the syntax error in the report")
    if not any(f["cell"] for f in report["findings"]):
        sys.exit("expected notebook findings with a cell")

    lines = run("json-lines").splitlines()
    definitions = {"finding": schema["definitions"]["finding"], "error": schema["definitions"]["error"]}
    for number, line in enumerate(lines, 1):
        item = json.loads(line)
        sub = dict(definitions[item["type"]])
        sub["definitions"] = schema["definitions"]
        for p in jsonschema.Draft7Validator(sub).iter_errors(item):
            problems.append(p)
            print(f"json-lines:{number}: {p.message}")
    if len(lines) != len(report["findings"]) + len(report["errors"]):
        sys.exit(f"json-lines has {len(lines)} lines for {len(report['findings'])} findings and {len(report['errors'])} errors")

    # The schema must catch a defect: a finding without its rule, a confidence above 1.
    broken = json.loads(json.dumps(report))
    del broken["findings"][0]["rule"]
    broken["findings"][1]["confidence"] = 1.5
    caught = list(validator.iter_errors(broken))
    if len(caught) < 2:
        sys.exit("the schema accepted a broken report")

    if problems:
        sys.exit(f"{len(problems)} schema violations")
    print(f"ok: {len(report['findings'])} findings, {len(report['errors'])} errors, {len(lines)} json lines valid")
