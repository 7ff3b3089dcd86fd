#!/usr/bin/env bash
# Installs what is missing, builds everything (analyzer, CUDA frontend, reference
# kernels where nvcc is found) and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600
