//! Runs one test of this test binary in a child process (a fresh process: what is decided once
//! per process, such as loaded libraries or a cache read at first use, starts over) and returns
//! what it said after `CHILD ` on the line that has it.

use std::ffi::OsStr;
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
