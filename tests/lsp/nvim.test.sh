#!/usr/bin/env bash
# End-to-end test with Neovim's LSP client (headless): the Neovim 0.7 setup block of
# docs/editors.md, verbatim, starts `mlsem lsp` from PATH; nvim_client.lua checks the
# diagnostics, hover and a quick fix. MLSEM_BIN names the binary under test.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
: "${MLSEM_BIN:?MLSEM_BIN: the mlsem binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '/^Neovim 0\.7/ { found = 1 } found && /^```lua/ { inside = 1; next } inside && /^```/ { exit } inside' \
  "$repo/docs/editors.md" >"$work/setup.lua"
[[ -s "$work/setup.lua" ]] || { echo "docs/editors.md has no Neovim 0.7 setup block" >&2; exit 1; }
# The file of tests/lsp/e2e.test.cjs: two GELUs after CJK text and emoji.
cat >"$work/gelu.py" <<'PY'
import math
import torch
import torch.nn.functional as F


def gelu_tanh(x):
    # 激活函数：手写的 GELU 😀
    label = "😀 中文"; return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # 注释 🚀


def gelu_erf(h):
    s = "é"; return h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))
PY
bindir=$(cd "$(dirname "$MLSEM_BIN")" && pwd)
export PATH="$bindir:$PATH" MLSEM_NVIM_SETUP="$work/setup.lua" MLSEM_NVIM_FILE="$work/gelu.py" \
  MLSEM_NVIM_LOG="$work/log" HOME="$work" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache"
cd "$work"
status=0
timeout $((180 * ${MLSEM_TEST_TIMEOUT_SCALE:-1})) nvim --headless -u NONE -i NONE -n -c "luafile $repo/tests/lsp/nvim_client.lua" </dev/null || status=$?
cat "$work/log" 2>/dev/null || echo "no log: Neovim stopped before the test script ran"
[[ $status -eq 0 ]] && grep -qx ok "$work/log"
