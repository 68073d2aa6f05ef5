//! compat returns errors, never panics, when driver entry points or libnvrtc are missing.
//!
//! The process-wide driver library is opened once per process, so the checks run in a child
//! process (this test binary again) whose `CUDRV_LIBCUDA` points at a fake driver compiled from
//! `tests/fixtures/fake_cuda_one_device.c`: it reports one device and exports nothing else.
//! Skips visibly without a C compiler (`cc`), and fails then under `REQUIRE_CC=1`. Under `legacy`
//! the modules are cudarc's, which panics here by design; the test is compat's own.
#![cfg(not(feature = "legacy"))]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

const CHILD: &str = "CUDRV_COMPAT_MISSING_PIECES_CHILD";

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
}

/// Compiles the fake driver into the target's temporary directory.
fn fake_driver() -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_cuda_one_device.c");
    // The build's temporary directory, or the system's where that is gone (a test binary carried
    // to another machine).
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let tmp = if tmp.is_dir() { tmp } else { std::env::temp_dir() };
    let out = tmp.join("libfake_cuda_one_device.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        other => {
            assert!(
                std::env::var("REQUIRE_CC").as_deref() != Ok("1"),
                "REQUIRE_CC=1 but cc failed: {other:?}"
            );
            say("SKIPPED (no C compiler, or it failed): missing_driver_pieces_are_errors");
            None
        }
    }
}

#[test]
fn missing_driver_pieces_are_errors() {
    let Some(lib) = fake_driver() else { return };
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("CUDRV_LIBCUDA", &lib)
        .env("CUDRV_LIBNVRTC", "/nonexistent/libnvrtc.so.13")
        .env("LD_LIBRARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("CHILD OK"), "{text}");
}

/// The checks, run only in the child process.
#[test]
fn child() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    use cudrv_compat::driver::{sys, CudaContext, DriverError};
    use cudrv_compat::nvrtc::{compile_ptx, CompileError};

    assert_eq!(CudaContext::device_count().unwrap(), 1);
    // The fake driver has no cuDeviceGet: an error naming it, not a panic.
    let err = CudaContext::new(0).unwrap_err();
    assert_eq!(err, DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND));
    let detail = err.detail().expect("a detail");
    assert!(detail.contains("cuDeviceGet"), "{detail}");
    assert!(format!("{err}").contains("cuDeviceGet"), "{err}");
    // Raw calls of missing entry points return CUDA_ERROR_NOT_FOUND.
    let mut ptr = 0;
    // SAFETY: a missing entry point is never called; the wrapper returns NOT_FOUND.
    let rc = unsafe { sys::cuMemAllocAsync(&mut ptr, 16, std::ptr::null_mut()) };
    assert_eq!(rc, sys::CUresult::CUDA_ERROR_NOT_FOUND);
    // No libnvrtc: an error listing what was tried. A libnvrtc that the system's own search path
    // (the loader's cache) finds after the missing CUDRV_LIBNVRTC cannot be hidden from a child
    // process: there the compile succeeds, and the absent library is checked only on machines
    // without one (such as CI's).
    match compile_ptx("extern \"C\" __global__ void k() {}") {
        Err(CompileError::LibraryNotFound { tried, .. }) => {
            assert!(tried.contains("/nonexistent/libnvrtc.so.13"), "{tried}")
        }
        Ok(_) => say("SKIPPED (libnvrtc on the system search path): the missing-libnvrtc check"),
        other => panic!("expected LibraryNotFound, got {other:?}"),
    }
    println!("CHILD OK");
}
