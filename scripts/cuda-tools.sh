#!/usr/bin/env bash
# scripts/cuda-tools.sh - fetch the NVIDIA development tools cudrv needs, without a CUDA toolkit
# and without a GPU, and print the shell environment that points at them.
#
# Everything comes from NVIDIA's PyPI wheels, each set in its own virtual environment under
# ${CUDA_TOOLS_DIR:-$HOME/.cache/cuda-tools}:
#
#   v120/  nvidia-cuda-nvrtc-cu12==12.0.140    libnvrtc.so.12 (CUDA C++ -> PTX ISA 8.0, which
#                                                 every r525+ driver can JIT)
#          nvidia-cuda-nvcc-cu12==12.0.140     ptxas 12.0 (assembles PTX for sm_70 .. sm_90a)
#          nvidia-cuda-runtime-cu12==12.0.146  CUDA 12.0 headers for NVRTC (cuda_fp16.h, ...)
#   v129/  nvidia-cuda-runtime-cu12==12.9.79   CUDA 12.9 headers (cuda.h) for bindgen
#
# Output (stdout), meant for eval:
#   NVRTC_LIB, PTXAS, CUDA_NVRTC_INCLUDES (':'-separated), CUDA_HEADERS_DIR, LD_LIBRARY_PATH
#
# Usage:   eval "$(scripts/cuda-tools.sh)"
# Safe to run repeatedly: an environment is (re)installed only when a file it should provide is
# missing. All progress messages go to stderr so that stdout stays eval-able.
set -euo pipefail

root="${CUDA_TOOLS_DIR:-$HOME/.cache/cuda-tools}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { printf 'cuda-tools: %s\n' "$*" >&2; }
# shellcheck source=scripts/ci-tools.sh
. "$here/ci-tools.sh"

# site_packages VENV -> prints the venv's site-packages directory
site_packages() {
    "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

# missing_in VENV RELPATH... : prints the first RELPATH absent from VENV's site-packages
# (nothing when VENV is absent or all are present; returns 1 when VENV has no python).
missing_in() {
    local venv=$1 sp rel
    shift
    [ -x "$venv/bin/python" ] || return 1
    sp=$(site_packages "$venv")
    for rel in "$@"; do
        if [ ! -e "$sp/$rel" ]; then
            printf '%s\n' "$rel"
            return 0
        fi
    done
}

# ensure_env NAME "RELPATH..." PACKAGE... : make sure the venv $root/NAME exists and holds every
# RELPATH (relative to its site-packages); if not, pip-install PACKAGE... into it.
ensure_env() {
    local name=$1 checks=$2 venv gap
    shift 2
    venv="$root/$name"
    # shellcheck disable=SC2086  # checks is a space-separated list on purpose
    if gap=$(missing_in "$venv" $checks); then
        [ -n "$gap" ] || return 0
        say "$venv lacks $gap"
    else
        need_python_venv || exit 1
        say "creating virtual environment $venv"
        rm -rf "$venv"
        mkdir -p "$root"
        python3 -m venv "$venv" >&2 || { say "error: python3 -m venv $venv failed"; exit 1; }
    fi
    say "installing into $venv: $*"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall "$@" >&2 || {
        say "error: pip could not install $* (is PyPI reachable?)"
        exit 1
    }
    # shellcheck disable=SC2086
    gap=$(missing_in "$venv" $checks)
    if [ -n "$gap" ]; then
        say "error: $gap is still missing from $venv after pip install"
        exit 1
    fi
}

ensure_env v120 \
    "nvidia/cuda_nvrtc/lib/libnvrtc.so.12 nvidia/cuda_nvcc/bin/ptxas nvidia/cuda_runtime/include/cuda_runtime.h" \
    nvidia-cuda-nvrtc-cu12==12.0.140 \
    nvidia-cuda-nvcc-cu12==12.0.140 \
    nvidia-cuda-runtime-cu12==12.0.146
ensure_env v129 \
    "nvidia/cuda_runtime/include/cuda.h" \
    nvidia-cuda-runtime-cu12==12.9.79

sp120=$(site_packages "$root/v120")
sp129=$(site_packages "$root/v129")

# ptxas unpacked from a wheel can lack its execute bit; it must run here (x86-64 Linux).
[ -x "$sp120/nvidia/cuda_nvcc/bin/ptxas" ] || chmod +x "$sp120/nvidia/cuda_nvcc/bin/ptxas"
"$sp120/nvidia/cuda_nvcc/bin/ptxas" --version >/dev/null 2>&1 || {
    say "error: $sp120/nvidia/cuda_nvcc/bin/ptxas does not run on this machine"
    exit 1
}

nvrtc_dir="$sp120/nvidia/cuda_nvrtc/lib"
cat <<EOF
export NVRTC_LIB='$nvrtc_dir/libnvrtc.so.12'
export PTXAS='$sp120/nvidia/cuda_nvcc/bin/ptxas'
export CUDA_NVRTC_INCLUDES='$sp120/nvidia/cuda_runtime/include:$sp120/nvidia/cuda_nvcc/include'
export CUDA_HEADERS_DIR='$sp129/nvidia/cuda_runtime/include'
export LD_LIBRARY_PATH='$nvrtc_dir'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
EOF
