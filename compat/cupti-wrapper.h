/*
 * Input to bindgen for src/cupti/sys/bindings.rs and src/cupti/sys/functions.rs (feature `cupti`).
 *
 * Header version: CUPTI 12.9 (`cupti.h` from the PyPI wheel nvidia-cuda-cupti-cu12==12.9.79) over
 * the CUDA 12.9 headers of nvidia-cuda-runtime-cu12==12.9.79. Driver types (CUcontext, CUstream,
 * ...) are not regenerated: the bindings use cudrv-compat's `driver::sys`.
 *
 * Regenerate (needs libclang):
 *     eval "$(../scripts/cuda-tools.sh)"                 # sets CUDA_HEADERS_DIR
 *     pip download --no-deps nvidia-cuda-cupti-cu12==12.9.79 && unzip the wheel
 *     CUPTI_HEADERS_DIR=<wheel>/nvidia/cuda_cupti/include \
 *     CUDA_CRT_HEADERS_DIR=<cuda-tools>/v120/.../nvidia/cuda_nvcc/include \
 *         cargo build -p cudrv-compat --features regen-cupti-bindings
 */
#include <cupti.h>
