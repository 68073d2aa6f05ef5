#!/usr/bin/env bash
# scripts/ci-fresh.sh - run .ci/run as CI does, on a fresh clone, with nothing carried over:
# a new clone of the committed HEAD (or --rev REV) with ../shared copied beside it, an empty
# CARGO_TARGET_DIR, an empty CUDA tools folder (the NVRTC/ptxas wheels are installed again),
# CI=true and no standard input. Tools installed system-wide (libclang, python3-venv) stay as
# the machine has them: run it once on each machine state you want to prove (for example with
# libclang-cpp only, with no libclang at all, and with libclang-dev).
#
# Usage: scripts/ci-fresh.sh [--rev REV] [--keep]
#   --rev REV   the commit to test (default HEAD; uncommitted changes are not part of a clone)
#   --keep      keep the temporary folder (clone, target, tools, log) for a look afterwards
# Prints .ci/run's output, then the wall time and exit status; exits with .ci/run's status.
set -euo pipefail
rev=HEAD
keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev=${2:?--rev needs a commit}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci-fresh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
root=$(git rev-parse --show-toplevel)
shared="$root/../shared"
[ -d "$shared" ] || { echo "ci-fresh: no ../shared beside $root" >&2; exit 2; }
commit=$(git -C "$root" rev-parse --verify "$rev^{commit}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudrv-ci-fresh.XXXXXX")
[ -n "$keep" ] || trap 'rm -rf "$tmp"' EXIT
git clone -q --no-hardlinks "$root" "$tmp/main"
git -C "$tmp/main" checkout -q "$commit"
cp -a "$shared" "$tmp/shared"
echo "ci-fresh: $commit in $tmp/main (target $tmp/target, CUDA tools $tmp/cuda-tools)"
start=$(date +%s)
set +e
(
  cd "$tmp/main"
  env -u LIBCLANG_PATH -u CUDA_HEADERS_DIR -u NVRTC_LIB -u PTXAS -u CUDA_NVRTC_INCLUDES \
    CI=true CARGO_TARGET_DIR="$tmp/target" CUDA_TOOLS_DIR="$tmp/cuda-tools" \
    bash .ci/run </dev/null 2>&1 | tee "$tmp/ci.log"
  exit "${PIPESTATUS[0]}"
)
rc=$?
set -e
secs=$(( $(date +%s) - start ))
echo "ci-fresh: .ci/run exited $rc after ${secs} s on $(nproc) cores${keep:+ (kept: $tmp)}"
exit $rc
