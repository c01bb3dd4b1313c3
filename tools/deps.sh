#!/usr/bin/env bash
# Installs the Debian packages Kiln needs, and only those that are missing.
set -euo pipefail
need=(cmake ninja-build g++ libopenblas-dev libdnnl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "kiln: missing system packages: ${missing[*]}"
if ! command -v apt-get >/dev/null; then
  echo "kiln: apt-get not found; install these packages with your system's package manager." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
    echo "kiln: not root and no sudo; run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
