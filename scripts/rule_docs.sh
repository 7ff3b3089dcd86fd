#!/usr/bin/env bash
# Writes docs/rules/<ID>.md for every rule (`mlsem explain --format markdown ID`) and the
# index docs/rules/README.md. Editors link each finding's code to its rule's page.
#   bash scripts/rule_docs.sh [path/to/mlsem]     (default: build/mlsem)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/mlsem}
out=docs/rules
mkdir -p "$out"
rm -f "$out"/*.md
{
  echo "# Rules"
  echo
  echo "One page per rule, generated from rules/ by \`bash scripts/rule_docs.sh\`. \`mlsem lsp\` links"
  echo "each diagnostic's code here; \`mlsem explain ID\` prints the same in a terminal."
  echo
  echo "| id | name | language | summary |"
  echo "|---|---|---|---|"
} > "$out/README.md"
"$bin" rules --format json --data . | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    print(r["id"], r["name"], r["language"], r["summary"].replace("|", "\\|"), sep="\t")
' | while IFS=$'\t' read -r id name language summary; do
  "$bin" explain --format markdown --data . "$id" > "$out/$id.md"
  echo "| [$id]($id.md) | $name | $language | $summary |" >> "$out/README.md"
done
echo "rule_docs: $(ls "$out" | grep -vc README) pages in $out"
