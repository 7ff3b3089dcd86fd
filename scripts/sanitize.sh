#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
# (docs/hardening.md). Any report fails the run: ASan and LeakSanitizer errors, and
# UBSan's (built with -fno-sanitize-recover).
#
#   bash scripts/sanitize.sh            # Python, engine, driver, reports, LSP, CLI
#   MLSEM_SANITIZE_CUDA=ON bash scripts/sanitize.sh   # also the CUDA frontend (slower)
#
# Without MLSEM_SANITIZE_CUDA the CUDA frontend is left out: Clang itself is not built
# with the sanitizers, its parse is several times slower under them, and OSS-Fuzz fuzzes
# it already; our lowering of its AST is covered by the fuzz_cuda target.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=${JOBS:-$(nproc)}
# Clang 22 (the compiler the figures in bench/README.md were measured with); CC/CXX win.
export CC=${CC:-clang-22} CXX=${CXX:-clang++-22}
extra=()
[[ -n "${MLSEM_NODE_MODULES:-}" ]] && extra+=("-DMLSEM_NODE_MODULES=$MLSEM_NODE_MODULES")
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLSEM_SANITIZE=address,undefined \
  -DMLSEM_CUDA_FRONTEND="${MLSEM_SANITIZE_CUDA:-OFF}" -DMLSEM_KERNELS=OFF "${extra[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 1200
echo "sanitize: clean (ASan + UBSan + LeakSanitizer)"
