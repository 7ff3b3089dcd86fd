#!/usr/bin/env bash
# Which corpus files nvcc compiles: runs every command of the corpus's
# compile_commands.json (bench/fetch_cuda_corpus.sh), JOBS at a time, and writes
# nvcc_ok.txt and nvcc_fail.txt (with each failure's first error) next to it.
# A full device compile per file: run it on a machine with cores to spare.
set -uo pipefail
root="${CUDA_CORPUS:-/work/cudacorpus}"
jobs="${JOBS:-$(nproc)}"
out="$root/nvcc-log"; rm -rf "$out"; mkdir -p "$out"
python3 - "$root/compile_commands.json" "$out" <<'PY'
import json, shlex, sys, os
for i, e in enumerate(json.load(open(sys.argv[1]))):
    with open(os.path.join(sys.argv[2], f"{i:03d}.sh"), "w") as f:
        f.write(f"cd {shlex.quote(e['directory'])} && {shlex.join(e['arguments'])}\n")
    with open(os.path.join(sys.argv[2], f"{i:03d}.file"), "w") as f:
        f.write(e["file"])
PY
ls "$out"/*.sh | xargs -P "$jobs" -I{} sh -c 'bash {} > {}.log 2>&1; echo $? > {}.rc'
: > "$root/nvcc_ok.txt"; : > "$root/nvcc_fail.txt"
for s in "$out"/*.sh; do
  file=$(cat "${s%.sh}.file")
  if [ "$(cat "$s.rc")" = 0 ]; then echo "$file" >> "$root/nvcc_ok.txt"
  else echo "$file: $(grep -m1 -E 'error|fatal' "$s.log")" >> "$root/nvcc_fail.txt"; fi
done
echo "nvcc compiles $(wc -l < "$root/nvcc_ok.txt") files; fails on $(wc -l < "$root/nvcc_fail.txt")"
