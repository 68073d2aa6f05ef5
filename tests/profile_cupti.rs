//! The profiler's CUPTI path without a GPU: a child process whose driver is the null driver
//! (tests/fixtures/null_driver.c) and whose libcupti is a fake (tests/fixtures/fake_cupti.c)
//! that hands over the kernel records the test queues. Records are matched to their launches
//! per stream, whatever order they come in; another library's kernel is skipped; a launch whose
//! record never comes is given up at the report; launches while off are not timed. Skipped
//! without a C compiler (failing under `REQUIRE_CC=1`).

#[path = "support/child.rs"]
mod child;
#[path = "common/fake_driver.rs"]
mod fake_driver;

use std::ffi::{c_char, c_int, CString};

use cudrv::profile::Timing;
use cudrv::{Context, DeviceBuffer, LaunchConfig, Stream};

/// Set in the child process.
const CHILD: &str = "CUDRV_PROFILE_CUPTI_CHILD";

#[test]
fn cupti_records_are_matched_to_their_launches() {
    let test = "cupti_records_are_matched_to_their_launches";
    let Some(driver) = fake_driver::build(test, fake_driver::Fixture::NullDriver) else {
        return;
    };
    let Some(cupti) = fake_driver::build(test, fake_driver::Fixture::FakeCupti) else {
        return;
    };
    let said = child::run_on_driver(
        "cupti_child",
        CHILD,
        driver.path(),
        &[
            ("CUDRV_LIBCUPTI", cupti.path().as_os_str()),
            ("CUDRV_PROFILE_TIMING", "cupti".as_ref()),
        ],
        &[],
    );
    assert_eq!(said, "ok");
}

type Emit = unsafe extern "C" fn(u32, *const c_char, u64, u64) -> c_int;

#[test]
fn cupti_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let ctx = Context::new(0).unwrap();
    let (s, other) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let f = ctx.kernel("cudrv_empty_args").unwrap();
    let a = DeviceBuffer::from_slice(&s, &[1.0f32; 32]).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&s, 32).unwrap();
    let launch = |on: &Stream, b: &mut DeviceBuffer<f32>| {
        let mut l = on.launch_builder(&f);
        l.arg(&a).arg(b).arg(&32u64).arg(&2.0f32);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: cudrv_empty_args(const float*, float*, u64, float) on the null driver, which
        // runs nothing.
        unsafe { l.launch(cfg) }.unwrap();
    };
    let path = std::env::var("CUDRV_LIBCUPTI").unwrap();
    // SAFETY: the fake CUPTI the profiler loaded (the same handle); its initialisers do nothing.
    let lib = unsafe { libloading::Library::new(&path) }.unwrap();
    // SAFETY: fakecupti_emit has this C signature (tests/fixtures/fake_cupti.c).
    let emit: Emit = unsafe { *lib.get::<Emit>(b"fakecupti_emit\0").unwrap() };
    let id = |st: &Stream| (st.raw() as usize % 1_000_003) as u32;
    let name = CString::new("cudrv_empty_args").unwrap();
    let foreign = CString::new("some_other_librarys_kernel").unwrap();
    // SAFETY: a NUL-terminated name the fake copies.
    let record = |st: &Stream, n: &CString, start: u64, end: u64| unsafe { emit(id(st), n.as_ptr(), start, end) };

    let prof = ctx.profiler();
    prof.enable().unwrap();
    assert_eq!((prof.timing(), prof.why_not_cupti()), (Timing::Cupti, None));
    for _ in 0..5 {
        launch(&s, &mut b);
    }
    for _ in 0..3 {
        launch(&other, &mut b);
    }
    // The records of the 5 launches on `s` (1 to 5 us), a kernel of another library on `s`, and
    // the 3 on `other` (2 us each); the fake hands them over newest first.
    for i in 0..5u64 {
        assert_eq!(record(&s, &name, 2000 + 100 * i, 2000 + 100 * i + 1000 * (i + 1)), 0);
    }
    assert_eq!(record(&s, &foreign, 5000, 6000), 0);
    for i in 0..3u64 {
        assert_eq!(record(&other, &name, 9000 + 100 * i, 11_000 + 100 * i), 0);
    }
    let r = prof.report().unwrap();
    assert_eq!(r.kernels.len(), 1, "{}", r.table());
    let k = &r.kernels[0];
    assert_eq!(
        (k.name.as_str(), k.count, k.launches),
        ("cudrv_empty_args", 8, 8),
        "{}",
        r.table()
    );
    assert!(
        (k.total_us - 21.0).abs() < 1e-9 && k.min_us == 1.0 && k.max_us == 5.0,
        "{k:?}"
    );
    // The trace: each stream's launches in order, starts from the profiler's time zero (1000 ns).
    let starts: Vec<f64> = r
        .samples
        .iter()
        .filter(|x| x.stream == s.raw() as u64)
        .map(|x| x.start_us)
        .collect();
    assert_eq!(starts, vec![1.0, 1.1, 1.2, 1.3, 1.4]);
    let durations: Vec<f64> = r
        .samples
        .iter()
        .filter(|x| x.stream == s.raw() as u64)
        .map(|x| x.duration_us)
        .collect();
    assert_eq!(durations, vec![1.0, 2.0, 3.0, 4.0, 5.0]);

    // A launch whose record never comes: given up at the report (counted, not timed).
    prof.clear().unwrap();
    launch(&s, &mut b);
    launch(&s, &mut b);
    assert_eq!(record(&s, &name, 20_000, 23_000), 0);
    let r = prof.report().unwrap();
    let k = &r.kernels[0];
    assert_eq!((k.count, k.launches, r.samples.len()), (1, 2, 1), "{}", r.table());

    // Off: collection stops (the fake takes no record) and nothing is counted.
    prof.disable();
    prof.clear().unwrap();
    launch(&s, &mut b);
    assert_eq!(record(&s, &name, 30_000, 31_000), 1, "CUPTI still collecting while off");
    assert!(prof.report().unwrap().kernels.is_empty());
    println!("CHILD ok");
}

/// Set in the child process of the test without libcupti.
const ABSENT_CHILD: &str = "CUDRV_PROFILE_NO_CUPTI_CHILD";

#[test]
fn cupti_asked_for_without_libcupti_is_a_clear_error() {
    let test = "cupti_asked_for_without_libcupti_is_a_clear_error";
    let Some(driver) = fake_driver::build(test, fake_driver::Fixture::NullDriver) else {
        return;
    };
    let missing = driver.path().with_extension("no-such-libcupti.so");
    let said = child::run_on_driver(
        "cupti_absent_child",
        ABSENT_CHILD,
        driver.path(),
        &[("CUDRV_LIBCUPTI", missing.as_os_str())],
        &["CUDRV_PROFILE_TIMING"],
    );
    assert_eq!(said, "ok");
}

#[test]
fn cupti_absent_child() {
    if std::env::var_os(ABSENT_CHILD).is_none() {
        return;
    }
    // Asked for by name: enabling fails, saying why, and leaves the profiler off.
    let ctx = Context::new(0).unwrap();
    let prof = ctx.profiler();
    prof.set_timing(Timing::Cupti).unwrap();
    let err = prof.enable().unwrap_err().to_string();
    assert!(err.contains("cupti"), "{err}");
    assert!(!prof.enabled(), "a failed enable left the profiler on");
    // Automatic: the profiler times with events and says why not CUPTI.
    let ctx = Context::new(0).unwrap();
    let prof = ctx.profiler();
    prof.enable().unwrap();
    assert_eq!(prof.timing(), Timing::Events);
    let why = prof.why_not_cupti().expect("no reason given for timing with events");
    assert!(why.contains("libcupti") || why.contains("cupti"), "{why}");
    println!("CHILD ok");
}

/// A library named by `CUDRV_LIBCUPTI` is the only one tried: with a libcupti on the loader's
/// path as well (as on a machine with the CUDA toolkit), naming a missing one still fails when
/// CUPTI is asked for, and the automatic choice falls back to events.
#[test]
fn a_named_libcupti_is_the_only_one_tried() {
    let test = "a_named_libcupti_is_the_only_one_tried";
    let Some(driver) = fake_driver::build(test, fake_driver::Fixture::NullDriver) else {
        return;
    };
    let Some(cupti) = fake_driver::build(test, fake_driver::Fixture::FakeCupti) else {
        return;
    };
    let dir = cupti.path().with_extension("on-the-path");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(cupti.path(), dir.join("libcupti.so")).unwrap();
    let mut search = dir.clone().into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        search.push(":");
        search.push(old);
    }
    let missing = driver.path().with_extension("no-such-libcupti.so");
    let said = child::run_on_driver(
        "cupti_absent_child",
        ABSENT_CHILD,
        driver.path(),
        &[
            ("CUDRV_LIBCUPTI", missing.as_os_str()),
            ("LD_LIBRARY_PATH", search.as_os_str()),
        ],
        &["CUDRV_PROFILE_TIMING"],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(said, "ok");
}
