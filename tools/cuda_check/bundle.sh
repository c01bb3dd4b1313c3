#!/usr/bin/env bash
# Packs what run.sh needs on a lent GPU machine, which has the CUDA toolkit and PyTorch but none
# of Kiln's Debian dependencies, into build/cuda-bundle.tar.xz: the library, the CUDA backend
# beside it (kiln/backends, where the autoload looks), the test and benchmark programs, and the
# shared libraries they need that are not glibc's or CUDA's. Carry that file with the run.
set -euo pipefail
BUILD=${BUILD:-build}
STAGE=$(mktemp -d)
mkdir -p "$STAGE/lib/kiln/backends" "$STAGE/bin"
cp -P "$BUILD"/libkiln.so* "$STAGE/lib/"
cp "$BUILD/kiln/backends/libkiln_cuda.so" "$STAGE/lib/kiln/backends/"
cp "$BUILD/tests/kiln_tests" "$BUILD/tests/kiln_cuda_tests" "$BUILD/bench/cuda_bench" \
   "$BUILD/bench/cuda_pointwise_variants" "$STAGE/bin/"
cp "$BUILD/tests/libkiln_test_backend.so" "$STAGE/lib/"
for lib in $(ldd "$BUILD/tests/kiln_tests" "$BUILD/kiln/backends/libkiln_cuda.so" |
             awk '/=> \// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libkiln*|libcu*|libnvrtc*) ;;
    *) cp -L "$lib" "$STAGE/lib/" ;;
  esac
done
tar -C "$STAGE" -cJf "$BUILD/cuda-bundle.tar.xz" .
rm -rf "$STAGE"
ls -la "$BUILD/cuda-bundle.tar.xz"
