//! Runs one test of this test binary in a child process (a fresh process: what is decided once
//! per process, such as loaded libraries or a cache read at first use, starts over) and returns
//! what it said after `CHILD ` on the line that has it.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// Runs the test `name` alone, with `env` set and `unset` removed; panics with its output if it
/// fails or says nothing.
pub fn run(name: &str, env: &[(&str, &OsStr)], unset: &[&str]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--nocapture", "--test-threads", "1"]);
    for var in unset {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // The test harness prints the test's name on the line the child's output starts.
    text.lines()
        .find_map(|l| l.split_once("CHILD ").map(|(_, said)| said.to_string()))
        .unwrap_or_else(|| panic!("{text}"))
}

/// What a child on a fake driver never inherits from the test run: the profiler's and NVTX's
/// switches (they would add calls and libraries the fake does not expect) and an external ptxas.
#[allow(dead_code)] // not every test binary that includes this file runs a fake driver
const DRIVER_CHILD_UNSET: [&str; 4] = ["CUDRV_PROFILE", "CUDRV_NVTX", "NVTX_INJECTION64_PATH", "CUDRV_PTXAS"];

/// Runs the test `name` alone on the driver library `driver` (`CUDRV_LIBCUDA`), with a kernel
/// cache of its own beside it, `marker` set to 1 (the child's test does its work only then),
/// `env` set, and [`DRIVER_CHILD_UNSET`] and `unset` removed.
#[allow(dead_code)] // not every test binary that includes this file runs a fake driver
pub fn run_on_driver(name: &str, marker: &str, driver: &Path, env: &[(&str, &OsStr)], unset: &[&str]) -> String {
    let cache = driver.with_extension(format!("{name}.cache"));
    let mut all: Vec<(&str, &OsStr)> = vec![
        (marker, "1".as_ref()),
        ("CUDRV_LIBCUDA", driver.as_os_str()),
        ("CUDRV_CACHE_DIR", cache.as_os_str()),
    ];
    all.extend_from_slice(env);
    let mut removed = DRIVER_CHILD_UNSET.to_vec();
    removed.extend_from_slice(unset);
    run(name, &all, &removed)
}
