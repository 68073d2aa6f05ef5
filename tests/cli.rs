//! The `cudrv` binary end to end, in child processes whose driver is a fake chosen with
//! `CUDRV_LIBCUDA` (the only candidate when set): no driver, a driver that lacks entry points, a
//! driver whose `cuInit` fails, and a one-device driver that cannot create a context.
//!
//! Failures must be one line on stderr, `cudrv: ...`, with exit status 1 and no panic; bad usage
//! exits 2. The fakes are compiled from `tests/fixtures/*.c` at test time; without a C compiler
//! those tests print `SKIPPED (no C compiler): <name>` (and fail under `REQUIRE_CC=1`). No test
//! here uses the machine's real driver, so they behave the same with and without a GPU.

#[path = "common/fake_driver.rs"]
mod fake_driver;

use std::path::PathBuf;
use std::process::{Command, Output};

use fake_driver::Fixture;

/// The `cudrv` binary: Cargo's path for it, else beside this test binary (or one level up,
/// from `target/<profile>/deps/`) when the binaries were copied to another machine.
fn cudrv_bin() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_cudrv"));
    if built.is_file() {
        return built;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let name = built.file_name().expect("a file name").to_owned();
    let mut looked = vec![built.clone()];
    // Beside the test binary (or one folder up), under its own name or the `bin-` name that
    // the GPU bundle gives it.
    let bundled = format!("bin-{}", name.to_string_lossy());
    for dir in exe.ancestors().skip(1).take(2) {
        for file in [name.as_os_str(), bundled.as_ref()] {
            let candidate = dir.join(file);
            if candidate.is_file() {
                return candidate;
            }
            looked.push(candidate);
        }
    }
    panic!("the cudrv binary is not at any of {looked:?}");
}

/// What one `cudrv` run produced.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `cudrv args...` with `CUDRV_LIBCUDA=driver` (unset when `None`).
fn cudrv(driver: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = Command::new(cudrv_bin());
    cmd.args(args)
        .env_remove(cudrv::sys::loader::LIBCUDA_ENV)
        // A panic would then print a backtrace, which the checks below reject.
        .env("RUST_BACKTRACE", "1");
    if let Some(driver) = driver {
        cmd.env(cudrv::sys::loader::LIBCUDA_ENV, driver);
    }
    let Output { status, stdout, stderr } = cmd.output().expect("run the cudrv binary");
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Checks that `run` failed cleanly: exit 1, exactly one stderr line `cudrv: ...`, no panic and
/// no backtrace. Returns that line.
fn assert_one_line_failure(run: &Run) -> String {
    assert_eq!(run.code, Some(1), "{run}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr must be one line\n{run}");
    assert!(run.stderr.ends_with('\n'), "{run}");
    let line = lines[0];
    assert!(line.starts_with("cudrv: "), "{run}");
    for bad in ["panicked", "RUST_BACKTRACE", "backtrace", "Error {", "MissingSymbol {"] {
        assert!(!run.stderr.contains(bad), "stderr contains {bad:?}\n{run}");
        assert!(!run.stdout.contains(bad), "stdout contains {bad:?}\n{run}");
    }
    line.to_string()
}

// ---------------------------------------------------------------------------------------------
// No driver

#[test]
fn info_without_a_driver_fails_with_one_line_naming_the_path() {
    let missing = fake_driver::nonexistent_library();
    let run = cudrv(Some(&missing), &["info"]);
    let line = assert_one_line_failure(&run);
    assert!(line.starts_with("cudrv: no CUDA driver found"), "{run}");
    assert!(line.contains(&missing), "{run}");
    assert_eq!(run.stdout, "", "{run}");
}

#[test]
fn selftest_and_bench_without_a_driver_fail_with_one_line() {
    let missing = fake_driver::nonexistent_library();
    for args in [
        &["selftest"][..],
        &["selftest", "--seed", "7"],
        &["bench"],
        &["bench", "launch"],
        &["bench", "tune"],
        &["profile"],
        &["monitor", "--count", "1"],
    ] {
        let run = cudrv(Some(&missing), args);
        let line = assert_one_line_failure(&run);
        assert!(line.starts_with("cudrv: no CUDA driver found"), "{args:?}: {run}");
        assert!(line.contains(&missing), "{args:?}: {run}");
        assert_eq!(run.stdout, "", "{args:?}: {run}");
    }
}

#[test]
fn a_library_that_is_no_cuda_driver_is_a_missing_entry_point() {
    let test = "a_library_that_is_no_cuda_driver_is_a_missing_entry_point";
    let Some(fake) = fake_driver::build(test, Fixture::NotCuda) else {
        return;
    };
    let run = cudrv(Some(&fake.path_string()), &["info"]);
    let line = assert_one_line_failure(&run);
    assert_eq!(
        line,
        format!(
            "cudrv: the CUDA driver {} has no entry point `cuDriverGetVersion` (this call needs a newer driver)",
            fake.path_string()
        ),
        "{run}"
    );
    assert_eq!(run.stdout, "", "{run}");
}

// ---------------------------------------------------------------------------------------------
// A driver with no devices and few entry points

#[test]
fn info_with_a_minimal_driver_reports_no_devices() {
    let test = "info_with_a_minimal_driver_reports_no_devices";
    let Some(fake) = fake_driver::build(test, Fixture::MissingSymbols) else {
        return;
    };
    let run = cudrv(Some(&fake.path_string()), &["info"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.stderr, "", "{run}");
    assert_eq!(
        run.stdout,
        format!("driver: CUDA 12.0 ({})\ndevices: 0\n", fake.path_string()),
        "{run}"
    );
}

#[test]
fn selftest_and_bench_with_no_devices_fail_with_one_line() {
    let test = "selftest_and_bench_with_no_devices_fail_with_one_line";
    let Some(fake) = fake_driver::build(test, Fixture::MissingSymbols) else {
        return;
    };
    for args in [
        &["selftest"][..],
        &["selftest", "--seed", "1"],
        &["bench"],
        &["bench", "copy"],
    ] {
        let run = cudrv(Some(&fake.path_string()), args);
        let line = assert_one_line_failure(&run);
        assert_eq!(
            line, "cudrv: invalid argument: device 0 requested but the driver sees 0 device(s)",
            "{args:?}: {run}"
        );
        assert_eq!(run.stdout, "", "{args:?}: {run}");
    }
}

// ---------------------------------------------------------------------------------------------
// cuInit fails

#[test]
fn info_when_cuinit_fails_reports_the_driver_error() {
    let test = "info_when_cuinit_fails_reports_the_driver_error";
    let Some(fake) = fake_driver::build(test, Fixture::InitFails) else {
        return;
    };
    for args in [&["info"][..], &["selftest"], &["bench"]] {
        let run = cudrv(Some(&fake.path_string()), args);
        let line = assert_one_line_failure(&run);
        assert_eq!(
            line, "cudrv: cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected",
            "{args:?}: {run}"
        );
        assert_eq!(run.stdout, "", "{args:?}: {run}");
    }
}

// ---------------------------------------------------------------------------------------------
// One device, no cuDevicePrimaryCtxRetain

fn assert_one_device_info(run: &Run, library: &str) {
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.stderr, "", "{run}");
    let expected = [
        format!("driver: CUDA 12.4 ({library})"),
        "devices: 1".into(),
        "".into(),
        "device 0: Fake CUDA Device".into(),
        "  uuid                 GPU-deadbeef-0102-0304-0506-0708090a0bff".into(),
        "  compute capability   8.6".into(),
        "  memory               4096 MiB".into(),
        // No context (cuDevicePrimaryCtxRetain is missing): the line says why.
        format!(
            "  context              unavailable: the CUDA driver {library} has no entry point \
             `cuDevicePrimaryCtxRetain` (this call needs a newer driver)"
        ),
        "  multiprocessors      4".into(),
        "  warp size            32".into(),
        "  threads per block    1024".into(),
        "  block dims           [1024, 1024, 64]".into(),
        "  grid dims            [2147483647, 65535, 65535]".into(),
        "  shared per block     49152 B (101376 B opt-in)".into(),
    ];
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), expected, "{run}");
}

#[test]
fn info_with_one_device_and_no_context_support_shows_the_device() {
    let test = "info_with_one_device_and_no_context_support_shows_the_device";
    let Some(fake) = fake_driver::build(test, Fixture::OneDevice) else {
        return;
    };
    let run = cudrv(Some(&fake.path_string()), &["info"]);
    assert_one_device_info(&run, &fake.path_string());
}

#[test]
fn info_falls_back_to_cudevicegetuuid_without_v2() {
    let test = "info_falls_back_to_cudevicegetuuid_without_v2";
    let Some(fake) = fake_driver::build(test, Fixture::OneDeviceUuidV1) else {
        return;
    };
    let run = cudrv(Some(&fake.path_string()), &["info"]);
    assert_one_device_info(&run, &fake.path_string());
}

#[test]
fn selftest_without_cudeviceprimaryctxretain_names_the_missing_entry_point() {
    let test = "selftest_without_cudeviceprimaryctxretain_names_the_missing_entry_point";
    let Some(fake) = fake_driver::build(test, Fixture::OneDevice) else {
        return;
    };
    let expected = format!(
        "cudrv: the CUDA driver {} has no entry point `cuDevicePrimaryCtxRetain` (this call needs a newer driver)",
        fake.path_string()
    );
    for args in [&["selftest"][..], &["bench"]] {
        let run = cudrv(Some(&fake.path_string()), args);
        let line = assert_one_line_failure(&run);
        assert!(
            line.contains("has no entry point `cuDevicePrimaryCtxRetain`"),
            "{args:?}: {run}"
        );
        assert_eq!(line, expected, "{args:?}: {run}");
        assert_eq!(run.stdout, "", "{args:?}: {run}");
    }
}

// ---------------------------------------------------------------------------------------------
// Usage

#[test]
fn unknown_command_is_a_usage_error() {
    // No driver is needed, or loaded, to reject bad usage.
    let missing = fake_driver::nonexistent_library();
    for args in [&["frobnicate"][..], &[]] {
        let run = cudrv(Some(&missing), args);
        assert_eq!(run.code, Some(2), "{args:?}: {run}");
        assert_eq!(
            run.stderr,
            "usage: cudrv <info [--memory] | selftest [--seed N] | bench [launch|alloc|copy|all|gemm|gemv|graph|fuse|tune] | profile [OPTIONS] | monitor [OPTIONS] | cache [info|clear|warm]>\n",
            "{args:?}: {run}"
        );
        assert_eq!(run.stdout, "", "{args:?}: {run}");
    }
}

#[test]
fn help_prints_usage_on_stdout() {
    for args in [
        &["help"][..],
        &["-h"],
        &["--help"],
        &["bench", "gemm", "--help"],
        &["bench", "gemv", "--types", "f64", "-h"],
        &["selftest", "--help"],
        &["info", "--help"],
    ] {
        let run = cudrv(Some(&fake_driver::nonexistent_library()), args);
        assert_eq!(run.code, Some(0), "{args:?}: {run}");
        assert!(run.stdout.starts_with("usage: cudrv <info"), "{args:?}: {run}");
        // The whole text: every command and every bench option.
        for word in [
            "cudrv selftest",
            "bench gemv",
            "--types",
            "--epilogue",
            "--splits",
            "CUDRV_LIBCUDA",
        ] {
            assert!(run.stdout.contains(word), "{args:?}: no {word:?} in {run}");
        }
        assert_eq!(run.stderr, "", "{args:?}: {run}");
    }
}

#[test]
fn a_closed_stdout_ends_the_tool_without_a_panic() {
    // The pipe's reader is closed before cudrv starts, so its first write meets a broken pipe.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(cudrv_bin())
        .arg("help")
        .env(cudrv::sys::loader::LIBCUDA_ENV, fake_driver::nonexistent_library())
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .output()
        .expect("run the cudrv binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "cudrv wrote to stderr: {stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(13), "{:?}", out.status);
    }
}

/// Checks that `run` was refused as bad usage, before any driver call (the driver is missing
/// in these runs, so reaching it would be exit 1): exit 2, one stderr line `cudrv: ...` that
/// points at `cudrv help`, nothing on stdout. Returns that line.
fn assert_usage_error(run: &Run) -> String {
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{run}");
    assert!(
        lines[0].starts_with("cudrv: ") && lines[0].ends_with("(see `cudrv help`)"),
        "{run}"
    );
    lines[0].to_string()
}

#[test]
fn selftest_with_bad_arguments_is_a_usage_error() {
    let missing = fake_driver::nonexistent_library();
    let run = cudrv(Some(&missing), &["selftest", "--seed", "many"]);
    let line = assert_usage_error(&run);
    assert_eq!(
        line, "cudrv: --seed takes a number, not \"many\" (see `cudrv help`)",
        "{run}"
    );
    let run = cudrv(Some(&missing), &["selftest", "--fast"]);
    let line = assert_usage_error(&run);
    assert!(line.starts_with("cudrv: unexpected arguments"), "{run}");
}

/// `bench gemm --suite --names` ends each row with the kernels cudrv ran, after the `sel`
/// column where there is one (on the null driver: plans, launches and times nothing real).
#[test]
fn suite_rows_name_their_kernels() {
    let test = "suite_rows_name_their_kernels";
    let Some(null) = fake_driver::build(test, Fixture::NullDriver) else {
        return;
    };
    let args = [
        "bench", "gemm", "--suite", "--names", "--types", "f32", "--shapes", "64x64x64", "--trials", "1",
    ];
    for (extra, last) in [
        // The null driver is an H100: exact f32 on its f64 tensor cores; a forced tile keeps the
        // CUDA cores' meaning.
        (&[][..], "gemm_dmma90_f32_"),
        (&["--tiles", "s"][..], "gemm_simt_f32_s_nn"),
    ] {
        let output = Command::new(cudrv_bin())
            .args(args)
            .args(extra)
            .env(cudrv::sys::loader::LIBCUDA_ENV, null.path())
            .env("CUDRV_LIBCUBLAS", "/nonexistent/libcublas.so")
            .output()
            .expect("run the cudrv binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{extra:?}: {stdout}");
        let row = stdout
            .lines()
            .find(|l| l.starts_with("f32 ") && l.contains("64x64x64"))
            .unwrap_or_else(|| panic!("{extra:?}: no f32 row in {stdout}"));
        let fields: Vec<&str> = row.split_whitespace().collect();
        let name = fields.last().unwrap();
        assert!(name.starts_with(last), "{extra:?}: {row}");
        if !extra.is_empty() {
            assert_eq!(fields[fields.len() - 2], "s", "{row}");
        }
    }
}

#[test]
fn bad_bench_arguments_are_usage_errors() {
    let missing = fake_driver::nonexistent_library();
    for (args, says) in [
        (&["bench", "frobnicate"][..], "unknown bench \"frobnicate\""),
        (&["bench", "launch", "--fast"], "unexpected arguments"),
        (&["bench", "gemm", "--fast"], "unknown option \"--fast\""),
        (
            &["bench", "gemm", "--types", "f16,f8"],
            "unknown type \"f8\" for bench gemm",
        ),
        (
            &["bench", "gemv", "--types", "tf32"],
            "unknown type \"tf32\" for bench gemv",
        ),
        (&["bench", "gemm", "--sizes", "12a"], "bad size \"12a\""),
        (&["bench", "gemm", "--shapes", "8x8"], "bad shape \"8x8\""),
        (
            &["bench", "gemv", "--shapes", "8x8x4"],
            "bad gemv shape 8x8x4: m, n >= 1, lda >= m",
        ),
        (
            &["bench", "gemv", "--shapes", "8x8x8x2"],
            "bench gemv --shapes takes MxN or MxNxLDA",
        ),
        (&["bench", "gemm", "--epilogue", "swish"], "bad epilogue \"swish\""),
        (&["bench", "gemm", "--trials"], "--trials needs a value"),
        (
            &["bench", "gemm", "--suite", "--only", "nosuch"],
            "--only nosuch: no suite case's group or MxNxK contains it",
        ),
        (&["bench", "gemm", "--names"], "--names goes with bench gemm --suite"),
        (
            &["bench", "gemm", "--suite", "--beta", "1"],
            "--beta and --epilogue go with --shapes or --sizes without --suite",
        ),
        (
            &["bench", "gemm", "--suite", "--epilogue", "bias,gelu"],
            "--beta and --epilogue go with --shapes or --sizes without --suite",
        ),
        (
            &["bench", "gemv", "--suite", "--names"],
            "--names goes with bench gemm --suite",
        ),
        (&["bench", "tune", "--fast"], "unexpected arguments"),
        (&["profile", "--runs", "0"], "--runs takes a number"),
        (&["profile", "--ptx", "k.ptx"], "a user kernel needs"),
        (&["profile", "--arg", "q8:1"], "--arg \"q8:1\""),
        (&["monitor", "--interval", "0"], "--interval takes seconds"),
        (&["monitor", "--top"], "unknown option \"--top\" to monitor"),
    ] {
        let run = cudrv(Some(&missing), args);
        let line = assert_usage_error(&run);
        assert!(line.contains(says), "{args:?}: {run}");
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel cache's commands

#[test]
fn cache_commands_work_without_a_driver() {
    let dir = std::env::temp_dir().join(format!("cudrv-cli-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.cubin"), vec![1u8; 1000]).unwrap();
    std::fs::write(dir.join("b.cubin"), vec![2u8; 500]).unwrap();
    std::fs::write(dir.join("notes.txt"), b"not an entry").unwrap();
    // The autotuner's file, with two remembered choices.
    let entry = r#"{"digest":"ab","block":256,"resident":0,"micros":1.5,"tuned_unix":1}"#;
    std::fs::write(
        dir.join("tune.json"),
        format!(r#"{{"format":1,"entries":{{"k1":{entry},"k2":{entry}}}}}"#),
    )
    .unwrap();
    let missing = fake_driver::nonexistent_library();
    let run = |args: &[&str]| {
        let out = Command::new(cudrv_bin())
            .args(args)
            .env("CUDRV_CACHE_DIR", &dir)
            .env_remove("CUDRV_CACHE_DISABLE")
            .env(cudrv::sys::loader::LIBCUDA_ENV, &missing)
            .output()
            .expect("run the cudrv binary");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["cache"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&dir.display().to_string()) && out.contains("2 entries"),
        "{out}"
    );
    assert!(out.contains("tune.json (2 tuned launch configurations)"), "{out}");
    let (code, out, err) = run(&["cache", "clear"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("removed 2 entries"), "{out}");
    assert!(out.contains("forgot 2 tuned launch configurations"), "{out}");
    assert!(!dir.join("tune.json").exists());
    assert!(!dir.join("a.cubin").exists() && dir.join("notes.txt").exists());
    // Warming needs the GPU: without a driver, one line and status 1.
    let (code, out, err) = run(&["cache", "warm"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.starts_with("cudrv: no CUDA driver found") && err.lines().count() == 1,
        "{err}"
    );
    let (code, _, err) = run(&["cache", "everything"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown cache command"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
