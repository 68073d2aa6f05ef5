//! Fake CUDA driver libraries, compiled from `tests/fixtures/*.c` when a test runs.
//!
//! The C sources are embedded in the test binary, so a binary copied to another machine needs
//! only a C compiler there. Without one (a GPU machine that runs prebuilt test binaries, say) a
//! test prints `SKIPPED (no C compiler): <name>` and returns; with `REQUIRE_CC=1` it fails instead.
//!
//! ```ignore
//! let Some(lib) = fake_driver::build("my_test", Fixture::InitFails) else { return };
//! // lib.path() is an absolute path to the shared library; the directory goes when `lib` drops.
//! ```

// Each test file uses only some of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fake driver variant; each is one C file under `tests/fixtures/`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fixture {
    /// `cuInit`, `cuDriverGetVersion` (12000), `cuDeviceGetCount` (0 devices) and the error-name
    /// functions; nothing else (no `cuMemAllocAsync`, `cuLaunchKernel`, `cuDeviceGet`, ...).
    MissingSymbols,
    /// `cuInit` fails with 100 (`CUDA_ERROR_NO_DEVICE`); `cuDriverGetVersion` works.
    InitFails,
    /// One device whose name, UUID (`cuDeviceGetUuid_v2`), attributes and memory can be read, but
    /// no `cuDevicePrimaryCtxRetain`.
    OneDevice,
    /// As [`Fixture::OneDevice`], but with the pre-11.4 `cuDeviceGetUuid` instead of `_v2`.
    OneDeviceUuidV1,
    /// A shared library with no `cu*` symbol at all.
    NotCuda,
    /// Not a driver: `nvtxRangePushA` / `nvtxRangePop` logging to `$FAKE_NVTX_LOG`.
    FakeNvtx,
    /// One H100-shaped device on which every call succeeds at once and no kernel runs (device
    /// memory is host memory); every entry point counts its calls (`nulldrv_calls`,
    /// `nulldrv_reset`; tests/support/null_driver.rs reads them). Built optimised: benches time
    /// cudrv's host work through it.
    NullDriver,
    /// Not a driver: the libcupti activity calls the profiler makes, and `fakecupti_emit` to
    /// queue a kernel record for the next flush (tests/profile_cupti.rs).
    FakeCupti,
}

impl Fixture {
    fn file_stem(self) -> &'static str {
        match self {
            Fixture::MissingSymbols => "missing_symbols",
            Fixture::InitFails => "init_fails",
            Fixture::OneDevice => "one_device",
            Fixture::OneDeviceUuidV1 => "one_device_uuid_v1",
            Fixture::NotCuda => "not_cuda",
            Fixture::FakeNvtx => "fake_nvtx",
            Fixture::NullDriver => "null_driver",
            Fixture::FakeCupti => "fake_cupti",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Fixture::MissingSymbols => include_str!("../fixtures/missing_symbols.c"),
            Fixture::InitFails => include_str!("../fixtures/init_fails.c"),
            Fixture::OneDevice | Fixture::OneDeviceUuidV1 => include_str!("../fixtures/one_device.c"),
            Fixture::NotCuda => include_str!("../fixtures/not_cuda.c"),
            Fixture::FakeNvtx => include_str!("../fixtures/fake_nvtx.c"),
            Fixture::NullDriver => include_str!("../fixtures/null_driver.c"),
            Fixture::FakeCupti => include_str!("../fixtures/fake_cupti.c"),
        }
    }

    fn defines(self) -> &'static [&'static str] {
        match self {
            Fixture::OneDeviceUuidV1 => &["-DFAKE_UUID_V1"],
            _ => &[],
        }
    }
}

/// A compiled fake driver; its directory is removed when this is dropped.
#[derive(Debug)]
pub struct FakeDriver {
    dir: PathBuf,
    path: PathBuf,
}

impl FakeDriver {
    /// The shared library's absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as a `String`, the form `DriverLibrary::open` and error messages use.
    pub fn path_string(&self) -> String {
        self.path.to_str().expect("temp paths are UTF-8").to_string()
    }
}

impl Drop for FakeDriver {
    fn drop(&mut self) {
        // The library may still be mapped (a test's `DriverLibrary`); unlinking is fine on Unix.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An absolute library path that does not exist, for "no driver" tests.
pub fn nonexistent_library() -> String {
    "/nonexistent/cudrv-test/libcuda.so.1".to_string()
}

fn require_cc() -> bool {
    std::env::var("REQUIRE_CC").is_ok_and(|v| v == "1")
}

/// Reports a missing C compiler: a skip, or a failure under `REQUIRE_CC=1`.
fn no_compiler(test: &str, why: &str) -> Option<FakeDriver> {
    if require_cc() {
        panic!("REQUIRE_CC=1 but no C compiler is usable for {test}: {why}");
    }
    println!("SKIPPED (no C compiler): {test}: {why}");
    None
}

/// The Rust target triple of this test binary: `TARGET` if set, else derived from `std::env::consts`.
fn target_triple() -> String {
    if let Some(t) = std::env::var("TARGET").ok().filter(|t| !t.is_empty()) {
        return t;
    }
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" if cfg!(target_env = "musl") => format!("{arch}-unknown-linux-musl"),
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        os => format!("{arch}-unknown-{os}"),
    }
}

/// A fresh directory for one test's libraries: under `CARGO_TARGET_TMPDIR` where that exists
/// (it is the build machine's path), else under the system's temporary directory.
fn test_dir(test: &str, fixture: Fixture) -> PathBuf {
    let leaf = format!("{test}-{}-{}", fixture.file_stem(), std::process::id());
    let roots = [
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake_driver"),
        std::env::temp_dir().join("cudrv-fake-driver"),
    ];
    for root in roots {
        let dir = root.join(&leaf);
        let _ = std::fs::remove_dir_all(&dir);
        if std::fs::create_dir_all(&dir).is_ok() {
            return dir;
        }
    }
    panic!("cannot create a temporary directory for {test}");
}

/// Compiles `fixture` into a shared library for `test`, or returns `None` after printing
/// `SKIPPED (no C compiler): <test>` when there is no C compiler (a failure under `REQUIRE_CC=1`).
///
/// A compiler that runs but rejects the fixture is a test failure, never a skip.
pub fn build(test: &str, fixture: Fixture) -> Option<FakeDriver> {
    if !cfg!(unix) {
        return no_compiler(test, "fake drivers are built only on Unix");
    }
    let target = target_triple();
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .emit_rerun_if_env_changed(false)
        .opt_level(if fixture == Fixture::NullDriver { 2 } else { 0 })
        .debug(false)
        .target(&target)
        .host(&target)
        .try_get_compiler();
    let compiler = match compiler {
        Ok(c) => c,
        Err(e) => return no_compiler(test, &format!("cc found none for {target}: {e}")),
    };

    let dir = test_dir(test, fixture);
    let src = dir.join(format!("{}.c", fixture.file_stem()));
    let lib = dir.join(format!("lib{}.so", fixture.file_stem()));
    std::fs::write(&src, fixture.source()).expect("write the fixture source");

    let mut cmd: Command = compiler.to_command();
    cmd.args(["-shared", "-fPIC"])
        .args(fixture.defines())
        .arg("-o")
        .arg(&lib)
        .arg(&src);
    let output = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return no_compiler(test, &format!("cannot run {:?}: {e}", compiler.path()));
        }
    };
    if !output.status.success() {
        panic!(
            "{test}: compiling {} failed ({}):\n{:?}\n{}{}",
            src.display(),
            output.status,
            cmd,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(lib.is_file(), "{test}: the compiler wrote no {}", lib.display());
    Some(FakeDriver { dir, path: lib })
}
