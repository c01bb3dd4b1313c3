#!/usr/bin/env bash
# `make deps`: installs the Debian packages Kiln needs to build and test, and only those that are
# missing. apt-get update runs only when something is missing. When it cannot install (no
# dpkg/apt, not root and no sudo), it says which packages are needed and how to install them.
# With --fuzz (`make fuzz`) it also installs clang and libFuzzer's runtime.
set -euo pipefail

need=(
  make cmake ninja-build g++     # build tools (CMake >= 3.25, g++ >= 12)
  libopenblas-dev libdnnl-dev    # CPU matmul: OpenBLAS and oneDNN
  libopenblas0-openmp            # OpenBLAS on Kiln's OpenMP threads (CMakeLists.txt says why)
  nlohmann-json3-dev             # JSON
  libgloo-dev                    # collectives on the CPU (kiln::distributed)
  libonnx-dev libprotobuf-dev    # ONNX export: ONNX's protobuf classes and checker
  python3-venv                   # the onnxruntime venv of the ONNX export tests (make test)
  libgtest-dev libgmock-dev      # tests
  libbenchmark-dev               # benchmarks
)
if [ "${1:-}" = "--fuzz" ]; then
  # clang 14 is Debian 12's clang; libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev, which
  # clang-14 only recommends.
  need+=(clang-14 libclang-rt-14-dev)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "kiln: this is not a Debian-based system, so 'make deps' cannot check or install packages." >&2
  echo "kiln: install the equivalents of these Debian packages yourself: ${need[*]}" >&2
  echo "kiln: continuing; CMake will name anything it cannot find." >&2
  exit 0
fi

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "kiln: all required system packages are installed."
  exit 0
fi
echo "kiln: missing system packages: ${missing[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
  echo "kiln: apt-get not found; install these packages with your package manager: ${missing[*]}" >&2
  exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
    echo "kiln: installing them needs root; sudo will ask for your password."
    sudo=(sudo)
  else
    echo "kiln: installing them needs root, and this is not root and cannot use sudo. Run as root:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "kiln: installed ${missing[*]}"
