#!/usr/bin/env bash
# Validates mlsem's SARIF with Microsoft's SARIF Multitool and GitHub's ingestion
# rules (`validate --rule-kind "Sarif;Gh"`). The Multitool exits 0 even when it finds
# errors, so its own SARIF output is read: any error fails the test. Also checks that
# a log with a defect is caught, so the test cannot pass by validating nothing.
# usage: validate_sarif.sh MLSEM_BINARY SARIF_MULTITOOL
set -euo pipefail
mlsem=$1
tool=$2
root=$(pwd)
if [ ! -f "$tool" ]; then
  echo "SARIF Multitool not found at $tool: run scripts/setup.sh (npm ci)" >&2
  exit 1
fi
[ -x "$tool" ] || chmod u+x "$tool"
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/samples" "$work/samples"
cd "$work"
# Beyond the samples: a syntax error (a tool notification), an unused suppression (the
# SUP001 pseudo-rule) and a path that needs percent-encoding.
printf 'def broken(:\n    pass\n' > samples/broken.py
printf 'x = 1  # mlsem: ignore[ATT001]\n' > samples/unused.py
mkdir -p "samples/with space"
cp samples/python/gpt_nanogpt.py "samples/with space/gpt #1.py"

status=0
"$mlsem" analyze --no-cache --report-unused-suppressions --format sarif -o mlsem.sarif samples || status=$?
if [ "$status" -ne 1 ]; then
  echo "mlsem analyze exited $status, expected 1 (findings)" >&2
  exit 1
fi

# Prints the validator's findings; exits 1 when it reports an error.
check() {
  rm -f validation.sarif
  "$tool" validate --rule-kind "Sarif;Gh" -o validation.sarif "$1" >validator.log 2>&1 || {
    cat validator.log >&2
    return 2
  }
  python3 - validation.sarif <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
errors = warnings = 0
for run in log.get("runs", []):
    for result in run.get("results", []):
        level = result.get("level", "warning")
        message = result.get("message", {})
        text = message.get("text") or " ".join(message.get("arguments", []))
        print(f"{level}: {result.get('ruleId')}: {text}")
        errors += level == "error"
        warnings += level == "warning"
print(f"{errors} errors, {warnings} warnings")
sys.exit(1 if errors else 0)
PY
}

echo "== mlsem's SARIF"
check mlsem.sarif
results=$(python3 -c 'import json,sys; print(len(json.load(open("mlsem.sarif"))["runs"][0]["results"]))')
if [ "$results" -lt 10 ]; then
  echo "expected the samples' findings in the log, got $results results" >&2
  exit 1
fi

echo "== a log with a result without a message must be rejected"
python3 - <<'PY'
import json
log = json.load(open("mlsem.sarif"))
del log["runs"][0]["results"][0]["message"]
json.dump(log, open("broken.sarif", "w"))
PY
if check broken.sarif; then
  echo "the validator accepted a broken log: the check is not working" >&2
  exit 1
fi
echo "ok: $results results validated"
