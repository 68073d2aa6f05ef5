#!/usr/bin/env bash
# scripts/ci-tools.sh - find, or install, each tool a CI step needs, by what the step really uses.
#
# Source it (`. scripts/ci-tools.sh`), then call the `need_*` function of a step before the step.
# Each one either succeeds (and exports what the step needs) or prints one line naming what is
# missing and how to get it, and returns 1; no function ever prints a backtrace.
#
#   need_rust_component NAME   rustfmt / clippy (rustup component add when absent)
#   need_cc                    a C compiler for the fake-driver tests (gcc from Debian)
#   need_python_venv           python3 that can make a virtual environment with pip
#                              (scripts/cuda-tools.sh puts the CUDA wheels in one)
#   need_libclang              the library bindgen loads: libclang.so / libclang-N.so[.M] /
#                              libclang.so.N, never libclang-cpp (a different library, which some
#                              images ship alone); exports LIBCLANG_PATH
#   need_cmd CMD [PACKAGE]     any other command (zstd, ldd, ...), installed from PACKAGE
#
# Installs come from Debian's packages (`apt-get`, one `apt-get update` per run at most) and
# need root; without root or without the registry the function says so and fails.

ci_say() { printf 'ci-tools: %s\n' "$*" >&2; }

# apt_install PACKAGE... : installs from Debian's packages, updating the lists once per process.
_ci_apt_updated=
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        ci_say "cannot install $* (no apt-get on this machine)"
        return 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        ci_say "cannot install $* (apt-get needs root)"
        return 1
    fi
    if [ -z "$_ci_apt_updated" ]; then
        apt-get update -qq >/dev/null 2>&1 || { ci_say "apt-get update failed"; return 1; }
        _ci_apt_updated=1
    fi
    ci_say "installing $* from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 || {
        ci_say "apt-get install $* failed"
        return 1
    }
}

need_cmd() {
    local cmd=$1 pkg=${2:-$1}
    command -v "$cmd" >/dev/null 2>&1 && return 0
    apt_install "$pkg" && command -v "$cmd" >/dev/null 2>&1 && return 0
    ci_say "error: '$cmd' is not on PATH and could not be installed (Debian package $pkg)"
    return 1
}

need_rust_component() {
    local name=$1
    case "$name" in
        rustfmt) cargo fmt --version >/dev/null 2>&1 && return 0 ;;
        clippy) cargo clippy --version >/dev/null 2>&1 && return 0 ;;
        *) ci_say "unknown rust component $name"; return 1 ;;
    esac
    if command -v rustup >/dev/null 2>&1 && rustup component add "$name" >&2; then
        return 0
    fi
    ci_say "error: cargo $name is missing and 'rustup component add $name' failed"
    return 1
}

need_cc() {
    command -v cc >/dev/null 2>&1 && return 0
    need_cmd gcc gcc || return 1
}

# python3 that can create a venv with pip in it (Debian's python3 needs python3-venv for that).
_ci_venv_works() {
    local d
    d=$(mktemp -d) || return 1
    python3 -m venv "$d/v" >/dev/null 2>&1 && "$d/v/bin/python" -m pip --version >/dev/null 2>&1
    local rc=$?
    rm -rf "$d"
    return $rc
}

need_python_venv() {
    command -v python3 >/dev/null 2>&1 || apt_install python3 || {
        ci_say "error: python3 is missing and could not be installed"
        return 1
    }
    _ci_venv_works && return 0
    local ver
    ver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
    apt_install python3-venv "python${ver}-venv" || apt_install python3-venv || true
    _ci_venv_works && return 0
    ci_say "error: python3 ($(command -v python3)) cannot create a virtual environment with pip (Debian: python3-venv)"
    return 1
}

# libclang_in DIR : prints the first file in DIR that bindgen (clang-sys) would load as libclang.
# clang-sys looks for libclang.so, libclang-*.so, libclang.so.* and libclang-*.so.*; the
# libclang-cpp library matches the last pattern by name but is not libclang, so it is skipped.
libclang_in() {
    local dir=$1 f base
    [ -d "$dir" ] || return 1
    for f in "$dir"/libclang.so "$dir"/libclang-*.so "$dir"/libclang.so.* "$dir"/libclang-*.so.*; do
        [ -e "$f" ] || continue
        base=${f##*/}
        case "$base" in libclang-cpp*) continue ;; esac
        printf '%s\n' "$f"
        return 0
    done
    return 1
}

# libclang_dirs : the directories bindgen would search, in its order: LIBCLANG_PATH, llvm-config's
# libdir, then the usual system places (newest LLVM first).
libclang_dirs() {
    [ -n "${LIBCLANG_PATH:-}" ] && printf '%s\n' "$LIBCLANG_PATH"
    command -v llvm-config >/dev/null 2>&1 && llvm-config --libdir 2>/dev/null
    ls -d /usr/lib/llvm-*/lib 2>/dev/null | sort -V -r
    ls -d /usr/lib/*-linux-gnu /usr/lib64 /usr/lib /usr/local/lib 2>/dev/null
}

find_libclang() {
    local dir
    while IFS= read -r dir; do
        libclang_in "$dir" && return 0
    done < <(libclang_dirs)
    return 1
}

need_libclang() {
    local lib
    if ! lib=$(find_libclang); then
        apt_install libclang-dev || true
        lib=$(find_libclang) || {
            ci_say "error: no libclang for bindgen (libclang.so or libclang-N.so; libclang-cpp is not it) in: $(libclang_dirs | tr '\n' ' ')- install Debian's libclang-dev or set LIBCLANG_PATH"
            return 1
        }
    fi
    LIBCLANG_PATH=$(dirname "$lib")
    export LIBCLANG_PATH
    ci_say "libclang: $lib"
}
