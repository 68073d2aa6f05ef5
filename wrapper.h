/*
 * Input to bindgen for src/sys/bindings.rs and src/sys/functions.rs.
 *
 * Header version: CUDA 12.9 driver API (`cuda.h` from the PyPI wheel nvidia-cuda-runtime-cu12==12.9.79,
 * CUDA_VERSION 12090). Symbols are the versioned ones that header maps to (`cuMemAlloc_v2`, ...).
 *
 * Regenerate (needs libclang, e.g. Debian's libclang-dev):
 *     eval "$(scripts/cuda-tools.sh)"          # sets CUDA_HEADERS_DIR
 *     cargo build --features regen-bindings
 * Check that the committed files match (done by .ci/run where the tools are present):
 *     scripts/check-bindings.sh
 */
#include <cuda.h>
