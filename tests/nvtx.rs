//! NVTX ranges: loaded only when asked for, pushed and popped in nesting order, and a clear
//! "off" or "not found" otherwise. A stand-in libnvToolsExt (tests/fixtures/fake_nvtx.c, built
//! with the C compiler; skipped without one, failing under REQUIRE_CC=1) logs what cudrv calls.
//! Each case runs in a child process: whether NVTX is on is decided once per process.

#[path = "support/child.rs"]
mod child;
#[path = "common/fake_driver.rs"]
mod fake_driver;

/// Set in the child processes.
const CHILD: &str = "CUDRV_NVTX_TEST_CHILD";

fn child(env: &[(&str, &str)]) -> String {
    let mut vars: Vec<(&str, &std::ffi::OsStr)> = vec![(CHILD, "1".as_ref())];
    vars.extend(env.iter().map(|(k, v)| (*k, v.as_ref())));
    child::run(
        "nvtx_child",
        &vars,
        &["NVTX_INJECTION64_PATH", "CUDRV_NVTX", "CUDRV_LIBNVTX"],
    )
}

#[test]
fn ranges_are_pushed_only_when_asked_for_and_nest() {
    let Some(lib) = fake_driver::build(
        "ranges_are_pushed_only_when_asked_for_and_nest",
        fake_driver::Fixture::FakeNvtx,
    ) else {
        return;
    };
    let log = lib.path().with_extension("log");
    let log_s = log.to_string_lossy().to_string();
    let lib_s = lib.path_string();
    // Not asked for: off, nothing loaded, nothing logged.
    let said = child(&[("CUDRV_LIBNVTX", &lib_s), ("FAKE_NVTX_LOG", &log_s)]);
    assert!(said.starts_with("off:"), "{said}");
    assert!(!log.exists());
    // Asked for by a tool's injection variable, or CUDRV_NVTX=1: ranges in nesting order.
    for var in ["NVTX_INJECTION64_PATH", "CUDRV_NVTX"] {
        let _ = std::fs::remove_file(&log);
        let value = if var == "CUDRV_NVTX" {
            "1"
        } else {
            "/nonexistent/injection.so"
        };
        let said = child(&[(var, value), ("CUDRV_LIBNVTX", &lib_s), ("FAKE_NVTX_LOG", &log_s)]);
        assert_eq!(said, "on", "{var}");
        let logged = std::fs::read_to_string(&log).unwrap();
        let mut want = "push outer\npush inner\npop\npop\n".to_string();
        if logged.contains("gemm") {
            // The child had a GPU: a GEMM's range around its kernels.
            want.push_str("push gemm f32 nn 64x48x32\npop\n");
        }
        assert_eq!(logged, want, "{var}");
    }
    // Asked for but absent: a reason naming what was tried, and no crash.
    let said = child(&[("CUDRV_NVTX", "1"), ("CUDRV_LIBNVTX", "/nonexistent/libnvToolsExt.so")]);
    assert!(
        said.contains("no NVTX library") && said.contains("/nonexistent/libnvToolsExt.so"),
        "{said}"
    );
}

/// Run by the test above in a child process.
#[test]
fn nvtx_child() {
    if std::env::var_os(CHILD).is_none() {
        return; // only meaningful as the child of the test above
    }
    {
        let _outer = cudrv::nvtx::Range::push("outer");
        let _inner = cudrv::nvtx::Range::push("inner");
    }
    if let Ok(ctx) = cudrv::Context::new(0) {
        use cudrv::blas::{Gemm, Transpose};
        let s = ctx.new_stream().unwrap();
        let a = cudrv::DeviceBuffer::<f32>::zeroed(&s, 64 * 32).unwrap();
        let b = cudrv::DeviceBuffer::<f32>::zeroed(&s, 32 * 48).unwrap();
        let mut c = cudrv::DeviceBuffer::<f32>::zeroed(&s, 64 * 48).unwrap();
        Gemm::new(Transpose::N, Transpose::N, 64, 48, 32)
            .run(&a, &b, &mut c)
            .unwrap();
        s.synchronize().unwrap();
    }
    match cudrv::nvtx::status() {
        Ok(()) => println!("CHILD on"),
        Err(why) => println!("CHILD {why}"),
    }
}
