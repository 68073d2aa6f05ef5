"""Compiles blas.cu to blas.ptx with NVRTC (run: eval "$(scripts/cuda-tools.sh)"; python3 compat/kernels/gen.py).

NVRTC 12.0 for compute_80 emits PTX ISA 8.0, which loads on every driver since CUDA 12.0 and
JIT-compiles for sm_80 and newer (H100 included).
"""
import ctypes, os, sys

here = os.path.dirname(os.path.abspath(__file__))
lib = ctypes.CDLL(os.environ.get("NVRTC_LIB", "libnvrtc.so.12"))
src = open(os.path.join(here, "blas.cu"), "rb").read()
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"blas.cu", 0, None, None) == 0
opts = [b"--gpu-architecture=compute_80", b"--std=c++14"]
arr = (ctypes.c_char_p * len(opts))(*opts)
rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
size = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
lib.nvrtcGetProgramLog(prog, log)
if rc != 0:
    sys.exit("nvrtc failed:\n" + log.value.decode())
lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
lib.nvrtcGetPTX(prog, ptx)
open(os.path.join(here, "blas.ptx"), "w").write(ptx.value.decode())
print("wrote blas.ptx", len(ptx.value), "bytes")
