#!/usr/bin/env bash
# Regenerates src/sys/bindings.rs and src/sys/functions.rs with bindgen and fails if they differ
# from the committed files. Needs libclang (Debian: libclang-dev) and the CUDA 12.9 headers
# (scripts/cuda-tools.sh sets CUDA_HEADERS_DIR).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
if [ -z "${CUDA_HEADERS_DIR:-}" ]; then
  eval "$(bash scripts/cuda-tools.sh)"
fi
if [ -z "${LIBCLANG_PATH:-}" ]; then
  lib=$(ls -d /usr/lib/llvm-*/lib 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$lib" ] && export LIBCLANG_PATH="$lib"
fi
if ! ls "${LIBCLANG_PATH:-/nonexistent}"/libclang*.so* >/dev/null 2>&1; then
  echo "check-bindings: libclang not found (install libclang-dev); cannot regenerate" >&2
  exit 2
fi
cargo check -q --features regen-bindings
if git diff --exit-code --stat -- src/sys/bindings.rs src/sys/functions.rs; then
  echo "bindings: committed files match bindgen's output for wrapper.h"
else
  echo "bindings: src/sys/bindings.rs or functions.rs differ from bindgen's output (see the diff above)" >&2
  exit 1
fi
