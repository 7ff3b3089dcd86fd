#!/usr/bin/env bash
# Cache benchmark (bench/README.md, "Cache"): the same analysis of a real corpus with
# an empty result cache, then again with nothing changed, then after one file changed.
#
#   bench/cache.sh [MLSEM] [PATH...]
#
# MLSEM defaults to build/mlsem; PATHs to the corpus the main benchmark uses
# (/work/corpus/transformers/models, timm, torchvision when present). The cache goes
# to a fresh temporary directory (--cache-dir), so the project's own is untouched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mlsem=${1:-$root/build/mlsem}
shift || true
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  for p in /work/corpus/transformers/models /work/corpus/timm /work/corpus/torchvision; do
    [ -d "$p" ] && paths+=("$p")
  done
fi
[ ${#paths[@]} -gt 0 ] || { echo "usage: bench/cache.sh [MLSEM] PATH..." >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME ARGS...: wall seconds of one `mlsem analyze --format json`, report kept.
run() {
  local name=$1
  shift
  local start end status=0
  start=$(date +%s.%N)
  "$mlsem" analyze --format json --cache-dir "$work/cache" "$@" >"$work/$name.json" 2>"$work/$name.err" || status=$?
  end=$(date +%s.%N)
  [ "$status" -le 1 ] || { cat "$work/$name.err" >&2; exit 1; }
  echo "$end - $start" | bc
}

files=$(find "${paths[@]}" -name '*.py' -type f | wc -l)
cold=$(run cold "${paths[@]}")
warm=$(run warm "${paths[@]}")
cmp -s "$work/cold.json" "$work/warm.json" || { echo "the cached report differs from the fresh one" >&2; exit 1; }
# One file edited (a copy of the corpus's first file, so the corpus stays read-only).
first=$(find "${paths[@]}" -name '*.py' -type f | LC_ALL=C sort | sed -n 1p)
cp "$first" "$work/edited.py"
echo "# edited" >>"$work/edited.py"
edited=$(run edited "${paths[@]}" "$work/edited.py")
entries=$(find "$work/cache" -name '*.json' | wc -l)

printf 'files            %s (%s cache entries)\n' "$files" "$entries"
printf 'first run        %.2f s (empty cache)\n' "$cold"
printf 'second run       %.2f s (nothing changed): %.1fx faster\n' "$warm" "$(echo "$cold / $warm" | bc -l)"
printf 'one file added   %.2f s\n' "$edited"
