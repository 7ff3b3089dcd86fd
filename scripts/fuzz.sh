#!/usr/bin/env bash
# Runs one libFuzzer target (docs/hardening.md) until it has used CPU_SECONDS of CPU time,
# measured from /proc (not wall time: on a shared machine a nice'd fuzzer gets less than a
# core), then stops it with SIGINT so that libFuzzer prints its final statistics.
#
#   bash scripts/fuzz.sh TARGET CPU_SECONDS [BUILD_DIR]     # TARGET: python cuda toml report lsp
#
# Reads build-fuzz/ (configure it as docs/hardening.md says), seeds from fuzz/make_seeds.py,
# keeps the growing corpus in BUILD_DIR/corpus/TARGET and writes BUILD_DIR/fuzz-TARGET.log;
# a crash, leak or timeout leaves BUILD_DIR/crash-TARGET-* (also -leak-, -timeout-, -oom-).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: python cuda toml report lsp}
budget=${2:?CPU seconds}
dir=${3:-build-fuzz}
bin="$dir/fuzz/fuzz_$target"
[[ -x "$bin" ]] || { echo "fuzz.sh: $bin not built (docs/hardening.md)" >&2; exit 2; }
[[ -d "$dir/seeds/$target" ]] || python3 fuzz/make_seeds.py "$dir/seeds"
mkdir -p "$dir/corpus/$target"
args=(-timeout=20 -rss_limit_mb=4096 -print_final_stats=1 "-artifact_prefix=$dir/crash-$target-")
case $target in
  python) args+=(-dict=fuzz/dict/python.dict -max_len=16384) ;;
  cuda) args+=(-max_len=2048) ;;
  toml) args+=(-dict=fuzz/dict/toml.dict) ;;
  lsp) args+=(-dict=fuzz/dict/lsp.dict) ;;
esac
log="$dir/fuzz-$target.log"
nice -n 19 "$bin" "$dir/corpus/$target" "$dir/seeds/$target" "${args[@]}" >"$log" 2>&1 &
pid=$!
# With the kernel's autogroups, nice alone does not yield to other sessions' builds:
# lower the fuzzer's group too.
echo 19 >"/proc/$pid/autogroup" 2>/dev/null || true
ticks=$(getconf CLK_TCK)
while kill -0 "$pid" 2>/dev/null; do
  sleep 5
  # Fields 14 and 15 (utime, stime), counted after the parenthesised command name.
  rest=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || break
  read -r -a f <<<"$rest"
  used=$(((f[11] + f[12]) / ticks))
  if ((used >= budget)); then
    kill -INT "$pid" 2>/dev/null || true
    break
  fi
done
wait "$pid" || status=$?
# fuzz_toml's and fuzz_python's scratch directories (removed at exit, but SIGINT ends
# libFuzzer with _Exit).
rm -rf "${TMPDIR:-/tmp}/mlsem-fuzz-toml-$pid" "${TMPDIR:-/tmp}/mlsem-fuzz-python-$pid"
echo "fuzz.sh: $target stopped after ${used:-0} CPU seconds (exit ${status:-0}); log: $log"
grep -E '^(stat::|#[0-9]+ *DONE)|ERROR|SUMMARY' "$log" | tail -15 || true
ls "$dir"/crash-"$target"-* 2>/dev/null && exit 1
exit 0
