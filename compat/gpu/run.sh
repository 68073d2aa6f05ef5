#!/bin/bash
# Runs the compat suite (both features), the migration example (both) and the launch bench on
# a GPU machine, from the folder compat/gpu/bundle.sh filled. Usage: bash .gpu-compat/run.sh [all|suite|bench]
# libnvrtc and libcublas are looked for on the machine and put on LD_LIBRARY_PATH (never the
# stubs directory, whose libcuda.so would shadow the driver for cudarc).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
what=${1:-all}
echo "== device"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
LIBS=$(timeout 60 find /usr /opt /lib /lib64 /usr/local /root /home \( -name 'libnvrtc.so*' -o -name 'libcublas.so*' \) 2>/dev/null | head -20)
echo "$LIBS"
# Never the stubs directory: its libcuda.so stub would shadow the driver for cudarc.
dirs=$(echo "$LIBS" | grep . | grep -v /stubs/ | xargs -r -n1 dirname | sort -u | sort -r | tr '\n' ':')
if ! echo "$LIBS" | grep -q libnvrtc; then
  echo "no libnvrtc found: nvrtc tests will fail under REQUIRE_GPU=1 (set CUDRV_LIBNVRTC)"
fi
export LD_LIBRARY_PATH="${dirs}${LD_LIBRARY_PATH:-}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
export REQUIRE_GPU=1
if [ "$what" = all ] || [ "$what" = suite ]; then
  for f in default legacy; do
    echo "== suite $f"
    # cudarc's run is serial: with 4 threads it crashed once (SIGSEGV) while a cuBLAS handle was
    # torn down on one thread and a stream capture ran on another.
    threads=4; [ "$f" = legacy ] && threads=1
    ./suite-$f --test-threads=$threads > "$OUT/suite-$f.log" 2>&1; echo "suite $f rc=$?"
    grep -E "^test result|FAILED|panicked|SKIPPED" "$OUT/suite-$f.log" | head -40
    grep '^CHECKSUM' "$OUT/suite-$f.log" | sort > "$OUT/checksums-$f.txt"
  done
  echo "== checksum diff (default vs legacy)"; diff "$OUT/checksums-default.txt" "$OUT/checksums-legacy.txt" && echo "identical"
  paste -d'\n' "$OUT/checksums-default.txt" "$OUT/checksums-legacy.txt"
  echo "== suite default, bundled BLAS kernels"
  CUDRV_COMPAT_BLAS=bundled ./suite-default gem --test-threads=4 > "$OUT/suite-bundled.log" 2>&1; echo "suite bundled rc=$?"
  grep -E "^test result|FAILED|panicked|^CHECKSUM" "$OUT/suite-bundled.log" | sort | head -40
  for f in default legacy; do echo "== example $f"; ./migrate-$f; echo "rc=$?"; done
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  echo "== bench"; ./launch-default --bench > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -E "^LAUNCH|^GEMM|time:|^launch/" "$OUT/bench.log"; tail -5 "$OUT/bench.log"
fi
