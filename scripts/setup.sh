#!/usr/bin/env bash
# Installs what mlsem needs on Debian 12 (run as root): compilers, libraries and
# python3-jsonschema (for the tests) from Debian's packages; the tree-sitter C sources
# and the SARIF Multitool (for the tests) from the npm registry. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(g++ cmake ninja-build pkg-config git
      nlohmann-json3-dev libtomlplusplus-dev libgtest-dev libgmock-dev libbenchmark-dev
      libmimalloc-dev  # the mlsem executable's allocator (CMakeLists.txt: MLSEM_ALLOCATOR)
      python3-jsonschema
      clang-22 libclang-cpp22-dev libclang-22-dev llvm-22-dev
      libclang-rt-22-dev  # Clang's sanitizer and libFuzzer runtimes: scripts/sanitize.sh, fuzz/
      graphviz  # graphviz: `mlsem learn -o path.svg` and its test
      neovim)   # neovim: the LSP test with Neovim's own client (tests/lsp/nvim.test.sh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from another repository that bundles npm: ask for the command.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# node_modules/.mlsem-lock records the lock file it was installed from.
if ! cmp -s package-lock.json node_modules/.mlsem-lock 2>/dev/null; then
  echo "setup: npm ci (tree-sitter, tree-sitter-python; SARIF Multitool and LSP client for the tests)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.mlsem-lock
fi
