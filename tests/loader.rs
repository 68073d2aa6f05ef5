//! The driver loader in-process, against fake driver libraries compiled from
//! `tests/fixtures/*.c` (its errors are `cudrv::sys::LoadError`, which the safe layer turns into
//! [`cudrv::Error`] with the same message), and the messages of [`cudrv::Error`].
//!
//! Nothing here touches the process-wide library (`DriverLibrary::global`, `CUDRV_LIBCUDA`):
//! that is opened once per process, so tests/cli.rs covers it with child processes. These tests
//! therefore behave the same with and without a real GPU and driver. Tests that need a fake
//! library skip visibly without a C compiler (and fail under `REQUIRE_CC=1`).

#[path = "common/fake_driver.rs"]
mod fake_driver;

use std::ffi::{c_char, c_int, c_void, CStr};

use cudrv::sys::loader::DriverLibrary;
use cudrv::sys::{CUresult, LoadError};
use cudrv::Error;
use fake_driver::{FakeDriver, Fixture};

type CuInit = unsafe extern "C" fn(u32) -> CUresult;
type CuDriverGetVersion = unsafe extern "C" fn(*mut c_int) -> CUresult;
type CuGetErrorText = unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult;

fn open(paths: &[String]) -> Result<DriverLibrary, LoadError> {
    // SAFETY: the paths are fake drivers built from tests/fixtures (no initialisers) or paths
    // that do not exist.
    unsafe { DriverLibrary::open(paths) }
}

fn open_fake(fake: &FakeDriver) -> DriverLibrary {
    open(&[fake.path_string()]).unwrap_or_else(|e| panic!("opening {}: {e}", fake.path().display()))
}

/// Resolves `name` and returns it as `F`.
///
/// # Safety
/// `F` must be the function-pointer type of the C function `name` in the fixture library.
unsafe fn function<F: Copy>(lib: &DriverLibrary, name: &'static str) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*const c_void>());
    let address = lib.symbol(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!address.is_null());
    // SAFETY: a non-null code address exported under `name`; the caller vouches for `F`.
    unsafe { std::mem::transmute_copy::<*const c_void, F>(&address) }
}

/// Calls the fixture's `cuGetErrorName`/`cuGetErrorString` (`which`) for `code`.
fn error_text(lib: &DriverLibrary, which: &'static str, code: u32) -> Option<String> {
    // SAFETY: both functions are `CUresult f(CUresult, const char **)` in the fixtures.
    let f: CuGetErrorText = unsafe { function(lib, which) };
    let mut ptr = std::ptr::null();
    // SAFETY: writes one pointer to a static string through a valid pointer.
    let rc = unsafe { f(CUresult(code), &mut ptr) };
    if rc != CUresult::CUDA_SUCCESS || ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, pointing to a NUL-terminated string literal of the fixture.
    Some(unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------------------------
// Opening

#[test]
fn open_missing_path_is_no_driver_naming_the_path() {
    let missing = fake_driver::nonexistent_library();
    let err = open(std::slice::from_ref(&missing)).unwrap_err();
    match &err {
        LoadError::NoDriver { tried, reason } => {
            assert_eq!(tried, &missing);
            assert!(!reason.is_empty());
        }
        other => panic!("expected NoDriver, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with("no CUDA driver found: could not load "), "{msg}");
    assert!(msg.contains(&missing), "{msg}");
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert_eq!(Error::from(err.clone()).driver_code(), None);
    assert_eq!(
        Error::from(err.clone()).to_string(),
        msg,
        "the safe layer keeps the message"
    );
}

#[test]
fn open_with_no_candidates_is_no_driver() {
    let err = open(&[]).unwrap_err();
    assert_eq!(
        err,
        LoadError::NoDriver {
            tried: String::new(),
            reason: "no candidates".into()
        }
    );
}

#[test]
fn open_names_every_candidate_tried_and_the_last_reason() {
    let a = "/nonexistent/cudrv-test/a/libcuda.so.1".to_string();
    let b = "/nonexistent/cudrv-test/b/libcuda.so".to_string();
    let err = open(&[a.clone(), b.clone()]).unwrap_err();
    let LoadError::NoDriver { tried, reason } = &err else {
        panic!("expected NoDriver, got {err:?}")
    };
    assert_eq!(tried, &format!("{a}, {b}"));
    // The reason is the loader's message for the last candidate.
    assert!(reason.contains(&b), "{reason}");
    assert!(err.to_string().contains(&format!("could not load {a}, {b} (")), "{err}");
}

#[test]
fn open_falls_back_to_the_next_candidate() {
    let test = "open_falls_back_to_the_next_candidate";
    let Some(fake) = fake_driver::build(test, Fixture::MissingSymbols) else {
        return;
    };
    let Some(other) = fake_driver::build(test, Fixture::InitFails) else {
        return;
    };
    let lib = open(&[
        fake_driver::nonexistent_library(),
        fake.path_string(),
        other.path_string(),
    ])
    .unwrap();
    assert_eq!(lib.path(), fake.path_string(), "the first candidate that loads wins");
}

#[test]
fn library_without_cuda_symbols_opens_but_resolves_nothing() {
    let Some(fake) = fake_driver::build(
        "library_without_cuda_symbols_opens_but_resolves_nothing",
        Fixture::NotCuda,
    ) else {
        return;
    };
    let lib = open_fake(&fake);
    for name in ["cuInit\0", "cuDriverGetVersion\0", "cuGetErrorName\0"] {
        let err = lib.symbol(name).unwrap_err();
        assert_eq!(
            err,
            LoadError::MissingSymbol {
                name: name.trim_end_matches('\0'),
                library: fake.path_string()
            }
        );
    }
    assert!(!lib.symbol("not_a_cuda_driver\0").unwrap().is_null());
}

// ---------------------------------------------------------------------------------------------
// Symbols

#[test]
fn missing_symbol_is_an_error_naming_symbol_and_library() {
    let Some(fake) = fake_driver::build(
        "missing_symbol_is_an_error_naming_symbol_and_library",
        Fixture::MissingSymbols,
    ) else {
        return;
    };
    let lib = open_fake(&fake);
    assert_eq!(lib.path(), fake.path_string());
    assert!(!lib.symbol("cuInit\0").unwrap().is_null());

    let err = lib.symbol("cuMemAllocAsync\0").unwrap_err();
    match &err {
        LoadError::MissingSymbol { name, library } => {
            assert_eq!(*name, "cuMemAllocAsync");
            assert_eq!(library, &fake.path_string());
        }
        other => panic!("expected MissingSymbol, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&fake.path_string()), "{msg}");
    assert!(msg.contains("has no entry point `cuMemAllocAsync`"), "{msg}");
    assert_eq!(Error::from(err.clone()).driver_code(), None);
    assert_eq!(
        Error::from(err.clone()).to_string(),
        msg,
        "the safe layer keeps the message"
    );

    // Asking again fails the same way; so do other missing entry points; present ones still resolve.
    assert_eq!(lib.symbol("cuMemAllocAsync\0").unwrap_err(), err);
    assert!(matches!(
        lib.symbol("cuLaunchKernel\0"),
        Err(LoadError::MissingSymbol {
            name: "cuLaunchKernel",
            ..
        })
    ));
    assert_eq!(lib.symbol("cuInit\0").unwrap(), lib.symbol("cuInit\0").unwrap());
    for name in [
        "cuDriverGetVersion\0",
        "cuDeviceGetCount\0",
        "cuGetErrorName\0",
        "cuGetErrorString\0",
    ] {
        assert!(!lib.symbol(name).unwrap().is_null(), "{name}");
    }
}

#[test]
fn symbol_name_without_nul_is_an_error_not_a_panic() {
    let Some(fake) = fake_driver::build(
        "symbol_name_without_nul_is_an_error_not_a_panic",
        Fixture::MissingSymbols,
    ) else {
        return;
    };
    let lib = open_fake(&fake);
    assert!(matches!(
        lib.symbol("cuInit"),
        Err(LoadError::MissingSymbol { name: "cuInit", .. })
    ));
    assert!(matches!(lib.symbol("cu\0Init\0"), Err(LoadError::MissingSymbol { .. })));
    assert!(matches!(lib.symbol(""), Err(LoadError::MissingSymbol { name: "", .. })));
}

#[test]
fn fake_entry_points_are_callable_through_resolved_pointers() {
    let Some(fake) = fake_driver::build(
        "fake_entry_points_are_callable_through_resolved_pointers",
        Fixture::MissingSymbols,
    ) else {
        return;
    };
    let lib = open_fake(&fake);
    // SAFETY: the fixture defines `int cuInit(unsigned int)`; CUresult is a transparent u32.
    let cu_init: CuInit = unsafe { function(&lib, "cuInit\0") };
    // SAFETY: cuInit takes a flags word only.
    assert_eq!(unsafe { cu_init(0) }, CUresult::CUDA_SUCCESS);
    // SAFETY: as above; the fixture rejects non-zero flags like the real driver.
    assert_eq!(unsafe { cu_init(1) }, CUresult::CUDA_ERROR_INVALID_VALUE);

    // SAFETY: the fixture defines `int cuDriverGetVersion(int *)`.
    let get_version: CuDriverGetVersion = unsafe { function(&lib, "cuDriverGetVersion\0") };
    let mut version = 0;
    // SAFETY: writes one int through a valid pointer.
    assert_eq!(unsafe { get_version(&mut version) }, CUresult::CUDA_SUCCESS);
    assert_eq!(version, 12000);
    assert_eq!(cudrv::DriverVersion(version).to_string(), "12.0");
}

#[test]
fn failing_cuinit_returns_its_code_and_the_driver_names_it() {
    let Some(fake) = fake_driver::build(
        "failing_cuinit_returns_its_code_and_the_driver_names_it",
        Fixture::InitFails,
    ) else {
        return;
    };
    let lib = open_fake(&fake);
    // SAFETY: the fixture defines `int cuInit(unsigned int)`; CUresult is a transparent u32.
    let cu_init: CuInit = unsafe { function(&lib, "cuInit\0") };
    // SAFETY: cuInit takes a flags word only.
    let rc = unsafe { cu_init(0) };
    assert_eq!(rc, CUresult::CUDA_ERROR_NO_DEVICE);
    assert_eq!(rc.0, 100);
    assert_eq!(
        error_text(&lib, "cuGetErrorName\0", rc.0).as_deref(),
        Some("CUDA_ERROR_NO_DEVICE")
    );
    assert_eq!(
        error_text(&lib, "cuGetErrorString\0", rc.0).as_deref(),
        Some("no CUDA-capable device is detected")
    );
    // An unknown code: the driver declines, as the real one does.
    assert_eq!(error_text(&lib, "cuGetErrorName\0", 12345), None);
}

#[test]
fn two_fake_libraries_stay_independent() {
    let test = "two_fake_libraries_stay_independent";
    let Some(ok) = fake_driver::build(test, Fixture::MissingSymbols) else {
        return;
    };
    let Some(failing) = fake_driver::build(test, Fixture::InitFails) else {
        return;
    };
    let (a, b) = (open_fake(&ok), open_fake(&failing));
    // SAFETY: both fixtures define `int cuInit(unsigned int)`.
    let (init_a, init_b): (CuInit, CuInit) = unsafe { (function(&a, "cuInit\0"), function(&b, "cuInit\0")) };
    // SAFETY: cuInit takes a flags word only.
    assert_eq!(unsafe { init_a(0) }, CUresult::CUDA_SUCCESS);
    // SAFETY: as above.
    assert_eq!(unsafe { init_b(0) }, CUresult::CUDA_ERROR_NO_DEVICE);
    assert!(b.symbol("cuDeviceGetCount\0").is_ok());
    assert!(matches!(
        b.symbol("cuDeviceGet\0"),
        Err(LoadError::MissingSymbol { library, .. }) if library == failing.path_string()
    ));
}

#[test]
fn driver_library_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<DriverLibrary>();
}

// ---------------------------------------------------------------------------------------------
// Error messages

#[test]
fn driver_error_names_api_code_name_and_message() {
    let err = Error::Driver {
        api: "cuInit",
        code: 100,
        name: "CUDA_ERROR_NO_DEVICE".into(),
        message: "no CUDA-capable device is detected".into(),
    };
    assert_eq!(
        err.to_string(),
        "cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
    );
    assert_eq!(err.driver_code(), Some(100));
}

#[test]
fn missing_symbol_error_names_symbol_and_library() {
    let err = Error::MissingSymbol {
        name: "cuMemAllocAsync",
        library: "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into(),
    };
    assert_eq!(
        err.to_string(),
        "the CUDA driver /usr/lib/x86_64-linux-gnu/libcuda.so.1 has no entry point `cuMemAllocAsync` \
         (this call needs a newer driver)"
    );
    assert_eq!(err.driver_code(), None);
}

#[test]
fn no_driver_error_names_what_was_tried_and_why() {
    let err = Error::NoDriver {
        tried: "libcuda.so.1, libcuda.so".into(),
        reason: "libcuda.so: cannot open shared object file: No such file or directory".into(),
    };
    assert_eq!(
        err.to_string(),
        "no CUDA driver found: could not load libcuda.so.1, libcuda.so \
         (libcuda.so: cannot open shared object file: No such file or directory)"
    );
    assert_eq!(err.driver_code(), None);
}

#[test]
fn unknown_kernel_error_lists_known_names() {
    let err = Error::UnknownKernel {
        name: "saxpy".into(),
        known: vec![
            "cudrv_axpy_f32".into(),
            "cudrv_fill_f32".into(),
            "cudrv_scale_f32".into(),
        ],
    };
    assert_eq!(
        err.to_string(),
        "unknown kernel `saxpy`; known kernels: cudrv_axpy_f32, cudrv_fill_f32, cudrv_scale_f32"
    );
    let none = Error::UnknownKernel {
        name: "saxpy".into(),
        known: vec![],
    };
    assert!(none.to_string().starts_with("unknown kernel `saxpy`"), "{none}");
}

#[test]
fn module_load_error_includes_the_jit_log() {
    let err = Error::ModuleLoad {
        module: "mine.ptx".into(),
        code: 218,
        name: "CUDA_ERROR_INVALID_PTX".into(),
        message: "a PTX JIT compilation failed".into(),
        log: "ptxas application ptx input, line 12; error   : Unknown symbol 'x'\n\n".into(),
    };
    let msg = err.to_string();
    assert_eq!(
        msg,
        "loading module `mine.ptx` failed: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed\n\
         JIT log:\n\
         ptxas application ptx input, line 12; error   : Unknown symbol 'x'"
    );
    assert_eq!(
        msg.lines().next(),
        Some("loading module `mine.ptx` failed: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed")
    );
    assert_eq!(err.driver_code(), Some(218));
}

#[test]
fn module_load_error_without_a_log_is_one_line() {
    for log in ["", "  \n\t\n"] {
        let err = Error::ModuleLoad {
            module: "<memory>".into(),
            code: 222,
            name: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION".into(),
            message: "the provided PTX was compiled with an unsupported toolchain".into(),
            log: log.into(),
        };
        assert_eq!(
            err.to_string(),
            "loading module `<memory>` failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): \
             the provided PTX was compiled with an unsupported toolchain"
        );
    }
}

#[test]
fn errors_are_clone_eq_and_thread_safe() {
    fn assert_error<T: std::error::Error + Send + Sync + Clone + PartialEq + 'static>() {}
    assert_error::<Error>();
    let err = Error::MissingSymbol {
        name: "cuLaunchKernel",
        library: "libcuda.so.1".into(),
    };
    assert_eq!(err.clone(), err);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    assert_eq!(boxed.to_string(), err.to_string());
}
