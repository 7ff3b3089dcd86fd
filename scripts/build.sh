#!/usr/bin/env bash
# Configures and builds mlsem (and, where nvcc is found, the reference kernels) in build/.
# Quiet when it works; on failure it prints the whole log.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j "$(nproc)"; } >"$log" 2>&1; then
  cat "$log"
  echo "build: failed" >&2
  exit 1
fi
grep -E "^-- (mlsem allocator|CUDA frontend|Clang 22 not found|mlsem kernels)" "$log" || true
echo "build: done (build/mlsem)"
