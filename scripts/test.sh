#!/usr/bin/env bash
# Installs what is missing, builds everything (analyzer, CUDA frontend, reference
# kernels where nvcc is found) and runs the whole test suite with CTest; then builds the
# suite again under AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, the
# CUDA frontend included, and runs it (scripts/sanitize.sh; docs/hardening.md).
# MLSEM_NO_SANITIZE=1 skips the second part (a quicker local run; CI runs both).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
if [[ "${MLSEM_NO_SANITIZE:-0}" != 1 ]]; then
  MLSEM_SANITIZE_CUDA=${MLSEM_SANITIZE_CUDA:-ON} bash scripts/sanitize.sh
fi
