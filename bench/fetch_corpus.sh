#!/usr/bin/env bash
# Fetches the benchmark corpus: the Python sources of Debian's python3-torch,
# python3-torchvision and python3-torchaudio, unpacked under bench/corpus/ (git-ignored).
# Idempotent: a package already unpacked is skipped. Prints the corpus root.
set -euo pipefail
cd "$(dirname "$0")"
corpus="$PWD/corpus"
mkdir -p "$corpus/debs" "$corpus/tree"

for pkg in python3-torch python3-torchvision python3-torchaudio; do
  stamp="$corpus/tree/.$pkg.unpacked"
  [ -e "$stamp" ] && continue
  if ! ls "$corpus/debs/${pkg}"_*.deb >/dev/null 2>&1; then
    # As root, apt hands downloads to the _apt user, who cannot write here: keep root.
    sandbox=(); [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
    (cd "$corpus/debs" && apt-get download -qq "${sandbox[@]}" "$pkg")
  fi
  dpkg -x "$corpus/debs/${pkg}"_*.deb "$corpus/tree"
  touch "$stamp"
done

# The analyzed tree is the Python packages only (dist-packages), not docs or binaries.
echo "$corpus/tree/usr/lib/python3/dist-packages"
