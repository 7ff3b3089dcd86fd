#!/usr/bin/env bash
# allocator.sh MLSEM: the executable's malloc, free and operator new are mimalloc's.
# Linked as a shared library, mimalloc replaces them only when the dynamic linker finds
# its symbols before libc's (CMakeLists.txt puts it first on the link line); the loader's
# own trace of symbol bindings shows which library each one was bound to.
set -euo pipefail
mlsem=${1:?mlsem executable}
trace=$(LD_DEBUG=bindings "$mlsem" --version 2>&1 >/dev/null)
status=0
for sym in malloc free calloc realloc _Znwm _ZdlPv; do
  bound=$(grep -E "normal symbol \`$sym'" <<<"$trace" | sed -E 's/.* to ([^ ]+) .*/\1/' | sort -u)
  if [[ -z "$bound" ]]; then
    echo "allocator: no binding of $sym traced" >&2; status=1
  elif grep -qv libmimalloc <<<"$bound"; then
    echo "allocator: $sym bound to: $(tr '\n' ' ' <<<"$bound")" >&2; status=1
  else
    echo "allocator: $sym -> $bound"
  fi
done
exit $status
