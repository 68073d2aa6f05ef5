#!/usr/bin/env bash
# scripts/gpu-check.sh - the GPU checks of a build, on the GPU machine with the bundle carried
# (.gpu, from ../shared/gpu/bundle.sh): `cudrv selftest` (every bundled kernel, fresh seed),
# then the GEMM test binaries whose kernels change most often (gpu_blas_fuzz with fresh seeds,
# gpu_blas_hopper, gpu_exec), then every other test binary of the bundle. Each step prints its
# summary lines and the seconds since the start; the full output goes to $OUT/<step>.txt (or
# /tmp). On a fresh machine the driver compiles each tensor-core kernel on first use, which
# makes the first steps slower (the selftest took 196 s on a fresh H200).
#
# Usage: scripts/gpu-check.sh [STEP...]
#   STEP: selftest, a test binary's name (gpu_blas_fuzz, gpu_blas_hopper, ...), or "rest" (every
#   test binary not named before it); default: selftest gpu_blas_fuzz gpu_blas_hopper gpu_exec
#   rest. Exits non-zero if any step failed.
# Environment: SKIP="suite ..." leaves those test binaries out of "rest".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/.gpu/run.sh" path > /dev/null || exit 2
b=/tmp/cudrv-gpu/b
out=${OUT:-/tmp}
export REQUIRE_GPU=1
t0=$(date +%s)
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(selftest gpu_blas_fuzz gpu_blas_hopper gpu_exec rest)
done_names=" "
fail=0
binary() { awk -F'\t' -v n="$1" '$1 == "test" && $2 == n {print $3}' "$b/manifest.tsv"; }
for step in "${steps[@]}"; do
  case "$step" in
    selftest)
      bash "$root/.gpu/run.sh" bin cudrv selftest > "$out/selftest.txt" 2>&1; rc=$?
      head -n 1 "$out/selftest.txt"; grep -v ' pass$' "$out/selftest.txt" | tail -n +3 | tail -n 5 ;;
    rest)
      rc=0
      while IFS=$'\t' read -r kind name file; do
        [ "$kind" = test ] || continue
        case "$done_names" in *" $name "*) continue ;; esac
        case " ${SKIP:-} " in *" $name "*) continue ;; esac
        "$b/bin/$file" --include-ignored >> "$out/rest.txt" 2>&1 || { echo "!!! $file failed"; rc=1; }
      done < "$b/manifest.tsv"
      grep -c '^test result: ok' "$out/rest.txt" | sed 's/$/ test binaries passed in rest/' ;;
    *)
      files=$(binary "$step")
      [ -n "$files" ] || { echo "no test binary named $step in the bundle"; fail=1; continue; }
      rc=0
      : > "$out/$step.txt"
      for f in $files; do
        "$b/bin/$f" --include-ignored >> "$out/$step.txt" 2>&1 || rc=1
      done
      grep -E '^test result|, [1-9][0-9]* failed|panicked' "$out/$step.txt" | tail -n 8
      done_names="$done_names$step " ;;
  esac
  echo "$step rc $rc at $(( $(date +%s) - t0 )) s"
  [ "$rc" -eq 0 ] || fail=1
done
echo "gpu-check: $([ $fail -eq 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $fail
