#!/usr/bin/env bash
# scripts/gpu-ab.sh - an A/B of two builds of the `cudrv` command in one job on the GPU machine,
# the way the figures in docs/kernels/*.md are taken: the saved build (A) and the bundle's build
# (B) run the same bench command in alternating rounds, so both meet the same machine state.
#
# Usage:
#   scripts/gpu-ab.sh save             (development machine) builds `cudrv` from the working
#                                      tree in release mode into .gpu-old/cudrv.zst: run it
#                                      before the change, then build the bundle
#                                      (../shared/gpu/bundle.sh) from the changed tree
#   scripts/gpu-ab.sh run ARGS...      (GPU machine, .gpu and .gpu-old carried) runs `cudrv ARGS`
#                                      with A, then B, ROUNDS times (default 2), into $OUT/old.txt
#                                      and $OUT/new.txt (or /tmp), then prints the suite rows
#                                      side by side
#   scripts/gpu-ab.sh compare OLD NEW  prints the suite rows of two such files side by side
#
# A row of the comparison: round, type, ops, shape, batch, TFLOP/s of A and of B (change), the
# cuBLAS rate in each run, the ratio to cuBLAS in each run, and B's kernel (with --names).
# Example: scripts/gpu-ab.sh run bench gemm --suite --shapes 100x60x64x500,4095x4097x1023 \
#              --ops nn,tn --types f16,tf32 --trials 5 --names
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

compare() {
  local old=$1 new=$2
  rows() { awk '/^== round/ {r = $3} $6 ~ /^[0-9,]+$/ && $8 ~ /^[0-9.]+$/ {print r, $1, $3, $4, $5, $8, $9, $10, $NF}' "$1"; }
  paste -d' ' <(rows "$old") <(rows "$new") | awk '{
    printf "%s %-5s %-3s %-16s %6s  A %8.2f  B %8.2f (%+6.1f%%)  cuBLAS %8.2f / %8.2f  ratio %6.3f / %6.3f  %s\n",
      $1, $2, $3, $4, $5, $6, $15, 100 * ($15 / $6 - 1), $7, $16, $8, $17, $18 }'
}

case "${1:-}" in
  save)
    cd "$root" || exit 2
    cargo build --release --bin cudrv || exit 1
    mkdir -p .gpu-old
    zstd -q -19 --long=30 -f target/release/cudrv -o .gpu-old/cudrv.zst || exit 1
    echo "saved $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + changes') as .gpu-old/cudrv.zst" ;;
  run)
    shift
    [ $# -gt 0 ] || { echo "usage: scripts/gpu-ab.sh run ARGS... (the cudrv command line)"; exit 2; }
    [ -f "$root/.gpu-old/cudrv.zst" ] || { echo "no .gpu-old/cudrv.zst: run 'scripts/gpu-ab.sh save' first and carry .gpu-old"; exit 2; }
    bash "$root/.gpu/run.sh" path > /dev/null || exit 2
    dir=/tmp/cudrv-gpu/b
    new="$dir/bin/$(awk -F'\t' '$1 == "bin" && $2 == "cudrv" {print $3; exit}' "$dir/manifest.tsv")"
    old=/tmp/cudrv-ab-old
    z=zstd
    command -v zstd > /dev/null || { z="$root/.gpu/zstd"; export LD_LIBRARY_PATH="$root/.gpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }
    "$z" -q -d --long=30 -f "$root/.gpu-old/cudrv.zst" -o "$old" && chmod +x "$old" || exit 2
    out=${OUT:-/tmp}
    : > "$out/old.txt"; : > "$out/new.txt"
    fail=0
    for r in $(seq 1 "${ROUNDS:-2}"); do
      echo "== round $r" >> "$out/old.txt"; "$old" "$@" >> "$out/old.txt" 2>&1 || { echo "A exited $? in round $r"; fail=1; }
      echo "== round $r" >> "$out/new.txt"; "$new" "$@" >> "$out/new.txt" 2>&1 || { echo "B exited $? in round $r"; fail=1; }
    done
    compare "$out/old.txt" "$out/new.txt"
    exit $fail ;;
  compare)
    compare "${2:?old file}" "${3:?new file}" ;;
  *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
