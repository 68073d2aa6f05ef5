#!/usr/bin/env python3
"""Generate and verify cudrv's committed PTX (ptx/<module>.ptx.zst from ptx/<module>.cu).

The PTX is committed zstd-compressed (level 19): the text is some 40 MB, the compressed files
about 2.3 MB, which is what the crate ships and what build.rs embeds. `zstd -d ptx/X.ptx.zst`
gives the text to read (ptx/*.ptx is ignored by git).

Usage:
    python3 scripts/ptx.py gen   [MODULE...]   compile with NVRTC, (re)write ptx/<module>.ptx.zst
    python3 scripts/ptx.py check [MODULE...]   verify the committed PTX (exit 1 on any failure):
        1. recompiling each .cu gives byte-identical PTX to the committed file's content (and the
           PTX is ISA .version 8.0 for the manifest's target),
        2. ptxas accepts each module's PTX for each sm target of its module, with no warnings,
        3. ptx/MANIFEST and the ptx/*.cu files name the same modules (no stray .ptx.zst either).
    python3 scripts/ptx.py resources [MODULE...]  print `ptxas -v` register/smem usage per kernel

Environment (from `eval "$(scripts/cuda-tools.sh)"`):
    NVRTC_LIB            path to libnvrtc.so.12 (CUDA 12.0: emits PTX ISA 8.0)
    PTX_JOBS             modules compiled / assembled at once (default: the CPU count)
    PTXAS                path to ptxas 12.0 (check, resources)
    CUDA_NVRTC_INCLUDES  ':'-separated include dirs passed to NVRTC with -I (optional)
    ZSTD                 the zstd command (default: `zstd` on PATH)

ptx/MANIFEST: '#' comment lines and blank lines are ignored; every other line is
`<module> <arch> [sm_targets]` (whitespace separated). <arch> is the NVRTC
--gpu-architecture (compute_80, compute_90a, ...). The optional third field is a
comma-separated list of sm targets to assemble in `check`; by default sm_80 and sm_90 (those
not older than <arch>), or only sm_XXa for an architecture-specific compute_XXa.

Only the standard library and the zstd command are used; NVRTC is called through ctypes. The program name given to
NVRTC is the bare file name (<module>.cu) so that the output does not depend on the checkout's
location.
"""

from __future__ import annotations

import ctypes
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTX_DIR = ROOT / "ptx"
MANIFEST = PTX_DIR / "MANIFEST"
EXPECTED_PTX_VERSION = "8.0"
DEFAULT_SM_TARGETS = ("sm_80", "sm_90")
ARCH_RE = re.compile(r"^compute_(\d+)([a-z]?)$")
SM_RE = re.compile(r"^sm_(\d+)([a-z]?)$")


class Failure(Exception):
    """A check or build step failed; the message says which module/arch and why."""


# ---------------------------------------------------------------------------------------------
# Manifest


@dataclass(frozen=True)
class Module:
    name: str
    arch: str
    sm_targets: tuple[str, ...]
    line: int

    @property
    def source(self) -> Path:
        return PTX_DIR / f"{self.name}.cu"

    @property
    def ptx(self) -> Path:
        """The committed, compressed PTX."""
        return PTX_DIR / f"{self.name}.ptx.zst"

    def committed(self) -> bytes | None:
        """The committed PTX text, or None when the file is missing."""
        return unzstd(self.ptx.read_bytes()) if self.ptx.is_file() else None


def zstd_command() -> str:
    cmd = os.environ.get("ZSTD", "zstd")
    if not (os.path.sep in cmd and os.access(cmd, os.X_OK)) and not shutil.which(cmd):
        raise Failure(f"the zstd command ({cmd}) was not found; install zstd (Debian: apt-get install zstd)")
    return cmd


def unzstd(data: bytes) -> bytes:
    proc = subprocess.run([zstd_command(), "-d", "-q", "-c"], input=data, capture_output=True)
    if proc.returncode != 0:
        raise Failure(f"zstd -d failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def zstd(data: bytes) -> bytes:
    proc = subprocess.run([zstd_command(), "-19", "-q", "-c"], input=data, capture_output=True)
    if proc.returncode != 0:
        raise Failure(f"zstd failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def default_sm_targets(arch: str) -> tuple[str, ...]:
    m = ARCH_RE.match(arch)
    assert m is not None
    number, suffix = int(m.group(1)), m.group(2)
    if suffix:  # architecture-specific features (e.g. wgmma): only that exact chip
        return (f"sm_{number}{suffix}",)
    targets = tuple(t for t in DEFAULT_SM_TARGETS if int(t[3:]) >= number)
    return targets or (f"sm_{number}",)


def read_manifest() -> list[Module]:
    if not MANIFEST.is_file():
        raise Failure(f"{MANIFEST.relative_to(ROOT)} not found")
    modules: list[Module] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(MANIFEST.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        where = f"ptx/MANIFEST:{lineno}"
        if len(fields) < 2:
            raise Failure(f"{where}: expected '<module> <arch> [sm_targets]', got {raw!r}")
        name, arch = fields[0], fields[1]
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise Failure(f"{where}: bad module name {name!r}")
        if not ARCH_RE.match(arch):
            raise Failure(f"{where}: bad arch {arch!r} (want compute_NN or compute_NNa)")
        if name in seen:
            raise Failure(f"{where}: module {name!r} already listed on line {seen[name]}")
        seen[name] = lineno
        if len(fields) >= 3:
            targets = tuple(t for t in fields[2].split(",") if t)
            bad = [t for t in targets if not SM_RE.match(t)]
            if bad or not targets:
                raise Failure(f"{where}: bad sm target list {fields[2]!r}")
        else:
            targets = default_sm_targets(arch)
        modules.append(Module(name, arch, targets, lineno))
    return modules


def select(modules: list[Module], names: list[str]) -> list[Module]:
    if not names:
        return modules
    by_name = {m.name: m for m in modules}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise Failure(f"not in ptx/MANIFEST: {', '.join(unknown)}")
    return [by_name[n] for n in names]


# ---------------------------------------------------------------------------------------------
# Environment


def env_help(missing: list[str]) -> None:
    print(
        f"error: {' and '.join(missing)} not set.\n"
        "Get NVRTC 12.0 and ptxas 12.0 (no GPU or CUDA toolkit needed) with:\n"
        '    eval "$(scripts/cuda-tools.sh)"\n'
        "then run this command again.",
        file=sys.stderr,
    )


def require_env(names: list[str]) -> dict[str, str]:
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        env_help(missing)
        sys.exit(2)
    values = {n: os.environ[n] for n in names}
    for n, v in values.items():
        if not Path(v).is_file():
            print(f"error: {n}={v} does not exist", file=sys.stderr)
            env_help([n])
            sys.exit(2)
    return values


def include_dirs() -> list[str]:
    return [d for d in os.environ.get("CUDA_NVRTC_INCLUDES", "").split(":") if d]


# ---------------------------------------------------------------------------------------------
# NVRTC through ctypes


class Nvrtc:
    def __init__(self, path: str) -> None:
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise Failure(f"cannot load NVRTC_LIB={path}: {e}") from e
        lib = self.lib
        prog_p = ctypes.POINTER(ctypes.c_void_p)
        cstr_array = ctypes.POINTER(ctypes.c_char_p)
        sig = {
            "nvrtcGetErrorString": (ctypes.c_char_p, [ctypes.c_int]),
            "nvrtcVersion": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)] * 2),
            "nvrtcCreateProgram": (
                ctypes.c_int,
                [prog_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, cstr_array, cstr_array],
            ),
            "nvrtcCompileProgram": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, cstr_array]),
            "nvrtcGetProgramLogSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
            "nvrtcGetProgramLog": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
            "nvrtcGetPTXSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
            "nvrtcGetPTX": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
            "nvrtcDestroyProgram": (ctypes.c_int, [prog_p]),
        }
        for name, (restype, argtypes) in sig.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes

    def _check(self, what: str, rc: int) -> None:
        if rc != 0:
            msg = self.lib.nvrtcGetErrorString(rc)
            raise Failure(f"{what} failed: {msg.decode() if msg else rc}")

    def version(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check("nvrtcVersion", self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
        return f"{major.value}.{minor.value}"

    def compile(self, source: bytes, name: str, options: list[str]) -> tuple[bytes, str]:
        """Returns (ptx, log). Raises Failure (with the log) if compilation fails."""
        prog = ctypes.c_void_p()
        self._check(
            f"nvrtcCreateProgram({name})",
            self.lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None),
        )
        try:
            opts = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
            rc = self.lib.nvrtcCompileProgram(prog, len(options), opts)
            log_size = ctypes.c_size_t()
            self._check("nvrtcGetProgramLogSize", self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(log_size)))
            log_buf = ctypes.create_string_buffer(max(log_size.value, 1))
            self._check("nvrtcGetProgramLog", self.lib.nvrtcGetProgramLog(prog, log_buf))
            log = log_buf.value.decode(errors="replace").strip()
            if rc != 0:
                msg = self.lib.nvrtcGetErrorString(rc)
                raise Failure(
                    f"NVRTC failed to compile {name} ({msg.decode() if msg else rc}):\n{indent(log)}"
                )
            size = ctypes.c_size_t()
            self._check("nvrtcGetPTXSize", self.lib.nvrtcGetPTXSize(prog, ctypes.byref(size)))
            buf = ctypes.create_string_buffer(size.value)
            self._check("nvrtcGetPTX", self.lib.nvrtcGetPTX(prog, buf))
            ptx = buf.raw[: size.value].rstrip(b"\0")
            return ptx, log
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def nvrtc_options(module: Module) -> list[str]:
    opts = [f"--gpu-architecture={module.arch}", "--std=c++17"]
    # ptx/ itself first, for the shared kernel headers (ptx/*.cuh); then the CUDA headers.
    opts += [f"-I{d}" for d in [str(PTX_DIR), *include_dirs()]]
    return opts


def renumber_callseqs(ptx: bytes) -> bytes:
    """NVRTC numbers the call sequences it writes (`{ // callseq N, 0` ... `} // callseq N`) with
    a counter that runs on over every program a process compiles, so the same module's PTX
    differs with what its worker compiled before. Renumbered from 0 in order of appearance,
    the PTX depends on the module alone (the numbers are comments)."""
    numbers: dict[bytes, bytes] = {}

    def one(m: re.Match) -> bytes:
        n = numbers.setdefault(m.group(1), str(len(numbers)).encode())
        return b"// callseq " + n

    return re.sub(rb"// callseq (\d+)", one, ptx)


def compile_module(nvrtc: Nvrtc, module: Module) -> tuple[bytes, str]:
    if not module.source.is_file():
        raise Failure(f"{module.name}: source {module.source.relative_to(ROOT)} not found")
    ptx, log = nvrtc.compile(module.source.read_bytes(), module.source.name, nvrtc_options(module))
    return renumber_callseqs(ptx), log


def jobs() -> int:
    """Modules compiled at once: PTX_JOBS, else the CPU count."""
    return max(1, int(os.environ.get("PTX_JOBS", "0")) or os.cpu_count() or 1)


_worker_nvrtc: Nvrtc | None = None


def _worker_init(lib: str) -> None:
    global _worker_nvrtc
    _worker_nvrtc = Nvrtc(lib)


def _worker_compile(module: Module) -> tuple[bytes, str] | Failure:
    assert _worker_nvrtc is not None
    try:
        return compile_module(_worker_nvrtc, module)
    except Failure as e:
        return e


def compile_all(lib: str, modules: list[Module]):
    """Yields (module, (ptx, log) or Failure) in manifest order, compiling up to jobs() modules
    at once (one NVRTC per worker process; renumber_callseqs takes out the one thing in NVRTC's
    output that depends on the process)."""
    if jobs() == 1 or len(modules) < 2:
        nvrtc = Nvrtc(lib)
        for m in modules:
            try:
                yield m, compile_module(nvrtc, m)
            except Failure as e:
                yield m, e
        return
    from concurrent.futures import ProcessPoolExecutor

    # Largest committed PTX (the slowest to compile) first, so the pool does not end waiting on
    # one of them.
    order = sorted(modules, key=lambda m: -(m.ptx.stat().st_size if m.ptx.is_file() else 0))
    with ProcessPoolExecutor(max_workers=jobs(), initializer=_worker_init, initargs=(lib,)) as pool:
        futures = {m.name: pool.submit(_worker_compile, m) for m in order}
        for m in modules:
            yield m, futures[m.name].result()


def ptx_header_problems(module: Module, ptx: bytes) -> list[str]:
    text = ptx.decode(errors="replace")
    problems = []
    v = re.search(r"^\.version\s+(\S+)", text, re.M)
    if not v or v.group(1) != EXPECTED_PTX_VERSION:
        problems.append(
            f".version is {v.group(1) if v else 'missing'}, expected {EXPECTED_PTX_VERSION} "
            "(is NVRTC_LIB the CUDA 12.0 libnvrtc?)"
        )
    t = re.search(r"^\.target\s+(\S+)", text, re.M)
    want_target = "sm_" + module.arch[len("compute_"):]
    if not t or t.group(1).rstrip(",") != want_target:
        problems.append(f".target is {t.group(1) if t else 'missing'}, expected {want_target}")
    if not re.search(r"^\.(visible|weak)\s+\.entry\s", text, re.M):
        problems.append("contains no kernel (.entry)")
    return problems


# ---------------------------------------------------------------------------------------------
# Helpers


def indent(text: str, prefix: str = "    | ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix + "(empty log)"


def rel(p: Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def run_ptxas(ptxas: str, ptx: Path, target: str, out: Path, verbose: bool = False) -> tuple[int, str]:
    cmd = [ptxas, f"--gpu-name={target}", "--warning-as-error", "--warn-on-spills"]
    if verbose:
        cmd.append("--verbose")
    cmd += ["--output-file", str(out), str(ptx)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


# ---------------------------------------------------------------------------------------------
# Commands


def cmd_gen(names: list[str]) -> int:
    env = require_env(["NVRTC_LIB"])
    modules = select(read_manifest(), names)
    nvrtc = Nvrtc(env["NVRTC_LIB"])
    print(f"NVRTC {nvrtc.version()} ({env['NVRTC_LIB']}), {jobs()} at once")
    failed = 0
    for m, result in compile_all(env["NVRTC_LIB"], modules):
        if isinstance(result, Failure):
            print(f"FAIL  gen   {m.name}: {result}")
            failed += 1
            continue
        ptx, log = result
        problems = ptx_header_problems(m, ptx)
        if problems:
            print(f"FAIL  gen   {m.name}: " + "; ".join(problems))
            failed += 1
            continue
        old = m.committed()
        if old == ptx:
            state = "unchanged"
        else:
            m.ptx.write_bytes(zstd(ptx))
            state = "written" if old is None else "updated"
        print(f"ok    gen   {m.name} ({m.arch}) -> {rel(m.ptx)} [{state}, {len(ptx)} bytes, {m.ptx.stat().st_size} compressed]")
        if log:
            print(f"      NVRTC log for {m.name}:\n{indent(log)}")
    if failed:
        print(f"\n{failed} module(s) failed to generate")
        return 1
    return 0


def cmd_check(names: list[str]) -> int:
    env = require_env(["NVRTC_LIB", "PTXAS"])
    all_modules = read_manifest()
    modules = select(all_modules, names)
    nvrtc = Nvrtc(env["NVRTC_LIB"])
    print(f"NVRTC {nvrtc.version()} ({env['NVRTC_LIB']}), {jobs()} at once")
    print(f"ptxas {env['PTXAS']}")
    failures: list[str] = []

    def fail(msg: str) -> None:
        failures.append(msg)
        print(f"FAIL  {msg}")

    with tempfile.TemporaryDirectory(prefix="cudrv-ptx-") as tmp_s:
        tmp = Path(tmp_s)

        # 1. Reproducibility: recompile and compare with the committed PTX.
        for m, result in compile_all(env["NVRTC_LIB"], modules):
            if isinstance(result, Failure):
                fail(f"nvrtc {m.name}: {result}")
                continue
            fresh, log = result
            if log:
                print(f"      NVRTC log for {m.name}:\n{indent(log)}")
            if not m.ptx.is_file():
                fail(f"nvrtc {m.name}: {rel(m.ptx)} is missing; run `python3 scripts/ptx.py gen`")
                continue
            committed = m.committed() or b""
            (tmp / f"{m.name}.ptx").write_bytes(committed)
            problems = ptx_header_problems(m, committed)
            if committed != fresh:
                diff = list(
                    difflib.unified_diff(
                        committed.decode(errors="replace").splitlines(),
                        fresh.decode(errors="replace").splitlines(),
                        f"{rel(m.ptx)} (committed)",
                        f"{rel(m.ptx)} (from {rel(m.source)})",
                        lineterm="",
                        n=1,
                    )
                )
                shown = "\n".join(diff[:40]) + ("\n    ..." if len(diff) > 40 else "")
                fail(
                    f"nvrtc {m.name}: committed {rel(m.ptx)} differs from a fresh compile of "
                    f"{rel(m.source)} ({m.arch}); run `python3 scripts/ptx.py gen`:\n{indent(shown)}"
                )
            elif problems:
                fail(f"nvrtc {m.name}: " + "; ".join(problems))
            else:
                print(f"ok    nvrtc {m.name} ({m.arch}): {rel(m.ptx)} is up to date ({len(committed)} bytes)")

        # 2. Assemble every committed PTX (its text, written to tmp above) for each of its sm
        # targets (up to jobs() at once).
        from concurrent.futures import ThreadPoolExecutor

        runs = []
        for m in modules:
            if not (tmp / f"{m.name}.ptx").is_file():
                fail(f"ptxas {m.name}: {rel(m.ptx)} is missing")
                continue
            runs += [(m, target) for target in m.sm_targets]
        with ThreadPoolExecutor(max_workers=jobs()) as pool:
            results = pool.map(
                lambda r: run_ptxas(
                    env["PTXAS"], tmp / f"{r[0].name}.ptx", r[1], tmp / f"{r[0].name}.{r[1]}.cubin"
                ),
                runs,
            )
            for (m, target), (rc, log) in zip(runs, results):
                if rc != 0 or log:
                    fail(f"ptxas {m.name} {target}: exit {rc}\n{indent(log)}")
                else:
                    print(f"ok    ptxas {m.name} {target}")

        # 3. MANIFEST <-> files (always over the whole manifest).
        listed = {m.name for m in all_modules}
        sources = {p.stem for p in PTX_DIR.glob("*.cu")}
        ptxs = {p.name[: -len(".ptx.zst")] for p in PTX_DIR.glob("*.ptx.zst")}
        ok = True
        for name in sorted(sources - listed):
            fail(f"manifest: ptx/{name}.cu is not listed in ptx/MANIFEST")
            ok = False
        for name in sorted(listed - sources):
            fail(f"manifest: ptx/MANIFEST lists {name!r} but ptx/{name}.cu does not exist")
            ok = False
        for name in sorted(ptxs - listed):
            fail(f"manifest: stray ptx/{name}.ptx.zst has no ptx/MANIFEST entry")
            ok = False
        if ok:
            print(f"ok    manifest: {len(listed)} modules, every ptx/*.cu listed and present")

    if failures:
        print(f"\nptx check FAILED: {len(failures)} problem(s)")
        return 1
    print("\nptx check passed")
    return 0


def parse_ptxas_verbose(log: str) -> dict[str, dict[str, str]]:
    """Per kernel: registers, smem, stack, spills (from `ptxas --verbose` output)."""
    info: dict[str, dict[str, str]] = {}
    kernel = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            kernel = m.group(1)
            info[kernel] = {"registers": "?", "smem": "0", "stack": "0", "spill": "0/0"}
        elif kernel is None:
            continue
        elif m := re.search(r"Used (\d+) registers", line):
            info[kernel]["registers"] = m.group(1)
            if s := re.search(r"(\d+) bytes smem", line):
                info[kernel]["smem"] = s.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            info[kernel]["stack"] = m.group(1)
            info[kernel]["spill"] = f"{m.group(2)}/{m.group(3)}"
    return info


def cmd_resources(names: list[str]) -> int:
    env = require_env(["PTXAS"])
    modules = select(read_manifest(), names)
    failed = 0
    print(f"{'module':12s} {'kernel':20s} {'target':7s} {'regs':>5s} {'smem B':>7s} {'stack B':>8s} {'spill st/ld B':>14s}")
    with tempfile.TemporaryDirectory(prefix="cudrv-ptx-") as tmp_s:
        for m in modules:
            text = Path(tmp_s) / f"{m.name}.ptx"
            text.write_bytes(m.committed() or b"")
            for target in m.sm_targets:
                rc, log = run_ptxas(
                    env["PTXAS"], text, target, Path(tmp_s) / f"{m.name}.{target}.cubin", verbose=True
                )
                if rc != 0:
                    print(f"FAIL  ptxas {m.name} {target}: exit {rc}\n{indent(log)}")
                    failed += 1
                    continue
                for kernel, r in sorted(parse_ptxas_verbose(log).items()):
                    print(
                        f"{m.name:12s} {kernel:20s} {target:7s} {r['registers']:>5s} {r['smem']:>7s} "
                        f"{r['stack']:>8s} {r['spill']:>14s}"
                    )
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    commands = {"gen": cmd_gen, "check": cmd_check, "resources": cmd_resources}
    if len(argv) < 2 or argv[1] not in commands:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        return commands[argv[1]](argv[2:])
    except Failure as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
