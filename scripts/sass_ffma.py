#!/usr/bin/env python3
"""FFMA operand registers of a kernel's main loop, read from the cubin ptxas makes of the
committed PTX (no disassembler needed: the development machine has ptxas but no nvdisasm).

Usage (after `eval "$(scripts/cuda-tools.sh)"`, which sets PTXAS):
    python3 scripts/sass_ffma.py MODULE KERNEL [KERNEL...] [--arch sm_90]

For each kernel it finds the stretch between two branches that holds the most FFMAs (the
unrolled main loop) and prints its instructions, FFMAs, their reuse flags, and how many of
them read two registers of one bank among the sources not taken from the reuse cache, under
two models of the register file: banks by register number mod 2 and mod 4. Such reads are a
candidate cause of the dispatch stalls ncu reports on the CUDA-core GEMM kernels
(docs/kernels/gemm-simt.md, "f32 on the CUDA cores: where cuBLAS's lead comes from").

The cubin is ptxas 12.0's (the development machine's); the driver's compiler on the GPU machine
(CUDA 13) allocates registers differently (gemm_simt_f32_v_nn: the same instruction count, 17%
of the FFMA register tuples in common, similar bank rates), so the counts show a direction,
not the GPU's figures: `cuobjdump -sass` there gives those.

What it relies on (sm_70 to sm_90 instructions are 16 bytes; checked against `cuobjdump -sass`
of gemm_simt_f32_v_nn on sm_90, 2026-11-28): opcode in bits 0-11 (FFMA with three registers:
0x223), destination register bits 16-23, sources A 24-31, B 32-39, C 64-71, reuse flags of
A, B, C in bits 122, 123, 124; BRA is opcode 0x947. Register 255 is RZ.
"""

import collections
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

FFMA = 0x223
BRA = 0x947
RZ = 255


def elf_sections(data: bytes) -> dict[str, bytes]:
    """The sections of a 64-bit little-endian ELF file by name."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit("not a 64-bit ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for h in headers:
        start = names_at + h[0]
        name = data[start : data.index(b"\0", start)].decode()
        out[name] = data[h[4] : h[4] + h[5]]
    return out


def bits(word: int, lo: int, hi: int) -> int:
    return (word >> lo) & ((1 << (hi - lo)) - 1)


def loop_stats(code: bytes) -> dict:
    words = [int.from_bytes(code[i : i + 16], "little") for i in range(0, len(code), 16)]
    # Stretches between branches; the main loop is the one with the most FFMAs.
    stretches, start = [], 0
    for i, w in enumerate(words):
        if bits(w, 0, 12) == BRA:
            stretches.append((start, i))
            start = i + 1
    stretches.append((start, len(words)))
    lo, hi = max(stretches, key=lambda s: sum(bits(w, 0, 12) == FFMA for w in words[s[0] : s[1]]))
    ffma, reuse, same_bank = 0, collections.Counter(), {2: 0, 4: 0}
    for w in words[lo:hi]:
        if bits(w, 0, 12) != FFMA:
            continue
        ffma += 1
        flags = bits(w, 122, 125)
        reuse[flags] += 1
        sources = [bits(w, 24, 32), bits(w, 32, 40), bits(w, 64, 72)]
        read = [r for k, r in enumerate(sources) if not flags & (1 << k) and r != RZ]
        for banks in same_bank:
            per_bank = collections.Counter(r % banks for r in read)
            same_bank[banks] += sum(n - 1 for n in per_bank.values())
    return {"instructions": hi - lo, "ffma": ffma, "reuse": dict(reuse), "same_bank": same_bank}


def main() -> None:
    args = sys.argv[1:]
    arch = "sm_90"
    if "--arch" in args:
        i = args.index("--arch")
        arch = args[i + 1]
        del args[i : i + 2]
    if len(args) < 2:
        raise SystemExit(__doc__)
    module, kernels = args[0], args[1:]
    ptxas = os.environ.get("PTXAS", "ptxas")
    root = Path(__file__).resolve().parent.parent
    ptx = subprocess.run(
        [os.environ.get("ZSTD", "zstd"), "-qdc", str(root / "ptx" / f"{module}.ptx.zst")],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / f"{module}.ptx", Path(tmp) / f"{module}.cubin"
        src.write_bytes(ptx)
        subprocess.run([ptxas, f"--gpu-name={arch}", "-O3", str(src), "-o", str(cubin)], check=True)
        sections = elf_sections(cubin.read_bytes())
    for kernel in kernels:
        code = sections.get(f".text.{kernel}")
        if code is None:
            raise SystemExit(f"{kernel}: no such kernel in {module}")
        s = loop_stats(code)
        slots = lambda k: "".join(c for b, c in enumerate("ABC") if k & (1 << b)) or "-"
        flags = ", ".join(f"{slots(k)} {n}" for k, n in sorted(s["reuse"].items()))
        print(
            f"{kernel}: main loop {s['instructions']} instructions, {s['ffma']} FFMA; reuse flags [{flags}]; "
            f"second reads of one bank: {s['same_bank'][2]} (banks mod 2), {s['same_bank'][4]} (mod 4)"
        )


if __name__ == "__main__":
    main()
