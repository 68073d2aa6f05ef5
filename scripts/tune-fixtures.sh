#!/usr/bin/env bash
# Regenerates tests/data/tune_fixtures.ptx from tests/data/tune_fixtures.cu with NVRTC 12.0
# (NVRTC_LIB from `eval "$(bash scripts/cuda-tools.sh)"`), for compute_80.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import ctypes, os, sys
lib = ctypes.CDLL(os.environ["NVRTC_LIB"])
src = open("tests/data/tune_fixtures.cu", "rb").read()
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"tune_fixtures.cu", 0, None, None) == 0
opts = [b"--gpu-architecture=compute_80", b"-std=c++17"]
arr = (ctypes.c_char_p * len(opts))(*opts)
rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
size = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
lib.nvrtcGetProgramLog(prog, log)
if rc != 0:
    sys.exit("NVRTC failed:\n" + log.value.decode())
lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
lib.nvrtcGetPTX(prog, ptx)
open("tests/data/tune_fixtures.ptx", "w").write(ptx.value.decode())
PY
echo "wrote tests/data/tune_fixtures.ptx"
