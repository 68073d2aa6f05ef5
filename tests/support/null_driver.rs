//! The call counters of the null driver (tests/fixtures/null_driver.c) that this process loaded
//! as its driver (`CUDRV_LIBCUDA`): which driver calls a cudrv call made.

// Each user takes some of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};

use cudrv::sys::loader::DriverLibrary;

type Counter = unsafe extern "C" fn(c_int, *mut u64) -> *const c_char;
type Reset = unsafe extern "C" fn();
type LastKernel = unsafe extern "C" fn() -> *const c_char;

/// The null driver's counters; `None` when the process's driver is not the null driver.
pub struct Calls {
    counter: Counter,
    reset: Reset,
    last_kernel: LastKernel,
}

impl Calls {
    pub fn of_this_process() -> Option<Calls> {
        let lib = DriverLibrary::global().ok()?;
        let counter = lib.symbol("nulldrv_counter\0").ok()?;
        let reset = lib.symbol("nulldrv_reset\0").ok()?;
        let last_kernel = lib.symbol("nulldrv_last_kernel\0").ok()?;
        // SAFETY: the null driver exports these with exactly these C signatures.
        unsafe {
            Some(Calls {
                counter: std::mem::transmute::<*const std::ffi::c_void, Counter>(counter),
                reset: std::mem::transmute::<*const std::ffi::c_void, Reset>(reset),
                last_kernel: std::mem::transmute::<*const std::ffi::c_void, LastKernel>(last_kernel),
            })
        }
    }

    /// Every entry point called since the last reset, with its count.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for i in 0.. {
            let mut n = 0u64;
            // SAFETY: writes one u64; returns a static NUL-terminated name or NULL past the last.
            let name = unsafe { (self.counter)(i, &mut n) };
            if name.is_null() {
                break;
            }
            if n > 0 {
                // SAFETY: a NUL-terminated function name of the driver library (static storage).
                let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
                out.insert(name, n);
            }
        }
        out
    }

    /// The counts since the last reset, then a reset.
    pub fn take(&self) -> BTreeMap<String, u64> {
        let counts = self.counts();
        self.reset();
        counts
    }

    pub fn reset(&self) {
        // SAFETY: clears the driver's counters; no arguments.
        unsafe { (self.reset)() }
    }

    /// The name of the kernel launched last.
    pub fn last_kernel(&self) -> Option<String> {
        // SAFETY: no arguments; NULL or a NUL-terminated name that lives as long as its module.
        let p = unsafe { (self.last_kernel)() };
        // SAFETY: checked non-null; the module of the last launch is still loaded.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// `counts` as `name=n` pairs, for messages.
pub fn show(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
