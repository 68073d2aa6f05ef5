#!/usr/bin/env bash
# Regenerates src/sys/bindings.rs and src/sys/functions.rs with bindgen and fails if they differ
# from the committed files. Needs the libclang that bindgen loads (found, or installed from
# Debian's libclang-dev, by scripts/ci-tools.sh; libclang-cpp alone is not enough) and the CUDA
# 12.9 headers (scripts/cuda-tools.sh sets CUDA_HEADERS_DIR).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
. scripts/ci-tools.sh
if [ -z "${CUDA_HEADERS_DIR:-}" ]; then
  cuda_env=$(bash scripts/cuda-tools.sh) || { echo "check-bindings: the CUDA headers could not be installed" >&2; exit 2; }
  eval "$cuda_env"
fi
need_libclang || { echo "check-bindings: cannot regenerate the bindings without libclang" >&2; exit 2; }
cargo check -q --features regen-bindings
if git diff --exit-code --stat -- src/sys/bindings.rs src/sys/functions.rs; then
  echo "bindings: committed files match bindgen's output for wrapper.h"
else
  echo "bindings: src/sys/bindings.rs or functions.rs differ from bindgen's output (see the diff above)" >&2
  exit 1
fi
