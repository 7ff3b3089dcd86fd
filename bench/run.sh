#!/usr/bin/env bash
# Speed benchmark (bench/README.md): mlsem's full analysis of a large real corpus
# beside the bare tree-sitter parse of the same files and Ruff's WebAssembly build,
# measured in one run.
#
#   bench/run.sh [RUNS]        RUNS repetitions of each step (default 5); medians are reported
#
# Environment: MLSEM_BUILD_DIR (default build-bench), JOBS (the "all jobs" count,
# default nproc), BUILD=0 (use the binaries already in the build directory),
# RUFF=0 (skip Ruff-wasm), INSTR=0 (skip counting instructions),
# INSTR_EVERY=N (count instructions on every Nth file only; default 1, the whole corpus).
# mlsem exits 1 when it has findings; only other codes are failures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
jobs=${JOBS:-$(nproc)}
build=${MLSEM_BUILD_DIR:-$root/build-bench}
out=$root/bench/out
mkdir -p "$out"

if [ "${BUILD:-1}" != 0 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLSEM_BUILD_TESTS=OFF \
      -DMLSEM_KERNELS=OFF >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
  fi
  cmake --build "$build" -j "$jobs" --target mlsem mlsem_parse_bench >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log" >&2; exit 1; }
fi

corpus=$("$root/bench/fetch_corpus.sh")
# The same explicit list goes to both tools, so both see exactly the same files
# (a directory walk would also pick up the corpus's one .cu template).
find "$corpus" -name '*.py' -type f | LC_ALL=C sort >"$out/files.txt"
mapfile -t files <"$out/files.txt"

# The peer: Ruff's WebAssembly build for Node, pinned in bench/ruff/package.json.
ruff=${RUFF:-1}
if [ "$ruff" != 0 ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "bench: node/npm not found: Ruff-wasm is skipped" >&2
    ruff=0
  elif [ ! -d "$root/bench/ruff/node_modules/@astral-sh/ruff-wasm-nodejs" ]; then
    (cd "$root/bench/ruff" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) \
      >"$out/ruff-install.log" 2>&1 || { cat "$out/ruff-install.log" >&2; exit 1; }
  fi
fi

# measure STEP CMD...: runs CMD under /usr/bin/time and appends "wall_s cpu_s rss_kb" to
# $out/STEP.times. The bare parse reports its own times (files are read before its
# clock starts), which replace the process's; mlsem's are the whole process: start-up,
# loading the rules, reading the files, analysis and writing the JSON report.
measure() {
  local step=$1
  shift
  local status=0
  /usr/bin/time -f '%e %U %S %M' -o "$out/$step.time" "$@" >"$out/$step.stdout" 2>"$out/$step.stderr" ||
    status=$?
  if [ "$status" -gt 1 ]; then
    echo "bench: $step failed with exit code $status:" >&2
    tail -5 "$out/$step.stderr" >&2
    exit 1
  fi
  # GNU time puts "Command exited with non-zero status 1" first when mlsem found something.
  read -r wall user sys rss < <(tail -1 "$out/$step.time")
  local cpu
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  if [[ $step == parse-* || $step == ruff-* ]]; then
    wall=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' "$out/$step.stdout")
    cpu=$(sed -n 's/.* cpu_seconds=\([0-9.]*\).*/\1/p' "$out/$step.stdout")
  fi
  echo "$wall $cpu $rss" >>"$out/$step.times"
}

# median COLUMN FILE
median() {
  awk -v c="$1" '{ print $c }' "$2" | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for j in 1 "$jobs"; do rm -f "$out/parse-j$j.times" "$out/analyze-j$j.times"; done
rm -f "$out/ruff-j1.times"
# Interleaved, so that load from other processes falls on all steps alike.
for ((r = 1; r <= runs; r++)); do
  for j in 1 "$jobs"; do
    measure "parse-j$j" "$build/bench/mlsem_parse_bench" -j "$j" "$out/files.txt"
    measure "analyze-j$j" "$build/mlsem" analyze --no-cache --format json -j "$j" \
      --output "$out/analyze-j$j.json" "${files[@]}"
    if [ "$j" = 1 ] && [ "$ruff" != 0 ]; then
      measure ruff-j1 node "$root/bench/ruff_wasm.cjs" "$out/files.txt"
    fi
  done
done

# Instructions retired, 1 job, counted by valgrind's callgrind (exact and unmoved by
# other load; hardware counters are not exposed on the development VM). Slow: about a
# minute per billion instructions, so INSTR_EVERY=N counts every Nth file only.
instr=${INSTR:-1}
every=${INSTR_EVERY:-1}
if [ "$instr" != 0 ] && ! command -v valgrind >/dev/null; then
  echo "bench: valgrind not found: instructions are not counted" >&2
  instr=0
fi
if [ "$instr" != 0 ]; then
  awk -v n="$every" '(NR - 1) % n == 0' "$out/files.txt" >"$out/instr-files.txt"
  mapfile -t instr_files <"$out/instr-files.txt"
  count_instr() {  # STEP CMD...: prints the instructions CMD retired
    local step=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$out/$step.instr.log" || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$step.instr.log" | tail -1
  }
  instr_parse=$(count_instr parse "$build/bench/mlsem_parse_bench" -j 1 "$out/instr-files.txt")
  instr_analyze=$(count_instr analyze "$build/mlsem" analyze --no-cache --format json -j 1 \
    --output "$out/instr-analyze.json" "${instr_files[@]}")
  if [ -z "$instr_parse" ] || [ -z "$instr_analyze" ]; then
    echo "bench: callgrind failed: see $out/parse.instr.log and $out/analyze.instr.log" >&2
    instr=0
  fi
fi

bytes=$(cat "${files[@]}" | wc -c)
count=${#files[@]}
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "corpus: $count files, $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }') MB ($corpus)"
echo "machine: $cpu_model, $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%F %H:%M UTC'); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "medians of $runs runs. bare parse: tree-sitter-python on files already in memory."
echo "mlsem analyze: the whole process. Ruff-wasm: checks of files already in memory."
echo "files/s and MB/s from wall time; cpu = user + sys."
printf '\n%-14s %4s %7s %7s %8s %6s %8s %10s %9s\n' \
  step jobs wall_s cpu_s files/s MB/s RSS_MB "x bare" "x bare"
printf '%-14s %4s %7s %7s %8s %6s %8s %10s %9s\n' "" "" "" "" "" "" "(peak)" "(wall)" "(cpu)"
for j in 1 "$jobs"; do
  bare_wall=$(median 1 "$out/parse-j$j.times")
  bare_cpu=$(median 2 "$out/parse-j$j.times")
  steps=("parse-j$j" "analyze-j$j")
  [ "$j" = 1 ] && [ "$ruff" != 0 ] && steps+=(ruff-j1)
  for step in "${steps[@]}"; do
    label="mlsem analyze"
    [[ $step == parse-* ]] && label="bare parse"
    [[ $step == ruff-* ]] && label="ruff-wasm"
    awk -v l="$label" -v j="$j" -v w="$(median 1 "$out/$step.times")" -v c="$(median 2 "$out/$step.times")" \
      -v r="$(median 3 "$out/$step.times")" -v n="$count" -v b="$bytes" -v bw="$bare_wall" -v bc="$bare_cpu" \
      'BEGIN { printf "%-14s %4d %7.2f %7.2f %8.0f %6.2f %8.0f %10.2f %9.2f\n",
               l, j, w, c, n / w, b / 1e6 / w, r / 1024, w / bw, c / bc }'
  done
done

if [ "$ruff" != 0 ]; then
  awk -v rw="$(median 1 "$out/ruff-j1.times")" -v rc="$(median 2 "$out/ruff-j1.times")" \
    -v mw="$(median 1 "$out/analyze-j1.times")" -v mc="$(median 2 "$out/analyze-j1.times")" \
    'BEGIN { printf "\nmlsem vs Ruff-wasm, 1 job: %.2fx as fast in wall time, %.2fx in CPU time\n", rw / mw, rc / mc }'
fi
if [ "$instr" != 0 ]; then
  awk -v p="$instr_parse" -v a="$instr_analyze" -v n="${#instr_files[@]}" \
    'BEGIN { printf "instructions retired, 1 job, %d files: bare parse %.2f G (whole process), " \
                    "mlsem analyze %.2f G: %.2fx\n", n, p / 1e9, a / 1e9, a / p }'
fi

if command -v python3 >/dev/null; then
  python3 - "$out/analyze-j1.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"\nmlsem -j 1: {len(report['findings'])} findings, {len(report['errors'])} file errors "
      f"(full report: {sys.argv[1]})")
EOF
fi
