//! NVTX ranges around cudrv's operations, so that Nsight Systems shows them above their
//! kernels. libnvToolsExt is loaded at run time, only when a tool asks for ranges
//! (`NVTX_INJECTION64_PATH` is set, as Nsight Systems sets it) or `CUDRV_NVTX=1`; it is tried at
//! `$CUDRV_LIBNVTX`, then `libnvToolsExt.so.1`, `libnvToolsExt.so`. Absent, ranges are skipped
//! and [`status`] says why. Off, a range costs one atomic load.
//!
//! ```
//! // Without a profiling tool attached, cudrv pushes no ranges.
//! let s = cudrv::nvtx::status();
//! assert!(s.is_ok() || s.is_err());
//! ```

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

/// `CUDRV_NVTX=1` turns ranges on without a tool's injection variable.
pub const NVTX_ENV: &str = "CUDRV_NVTX";
/// `CUDRV_LIBNVTX`: the NVTX library to load first.
pub const LIBNVTX_ENV: &str = "CUDRV_LIBNVTX";
/// Set by Nsight Systems (and other NVTX tools) in the processes it traces.
const INJECTION_ENV: &str = "NVTX_INJECTION64_PATH";

type PushFn = unsafe extern "C" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "C" fn() -> c_int;

struct Nvtx {
    push: PushFn,
    pop: PopFn,
    _lib: libloading::Library,
}

fn load() -> Result<Nvtx, String> {
    let wanted = std::env::var_os(INJECTION_ENV).is_some_and(|v| !v.is_empty())
        || std::env::var(NVTX_ENV).is_ok_and(|v| v == "1");
    if !wanted {
        return Err(format!(
            "off: no NVTX tool attached ({INJECTION_ENV} unset) and {NVTX_ENV} is not 1"
        ));
    }
    let mut names: Vec<String> = crate::sys::loader::named_by(LIBNVTX_ENV).into_iter().collect();
    names.extend(["libnvToolsExt.so.1".to_string(), "libnvToolsExt.so".to_string()]);
    let resolve = |name: &str, lib: libloading::Library| {
        // SAFETY: the symbols have these C signatures in every NVTX version 1 to 3.
        let found = unsafe {
            (
                lib.get::<PushFn>(b"nvtxRangePushA\0").map(|s| *s),
                lib.get::<PopFn>(b"nvtxRangePop\0").map(|s| *s),
            )
        };
        match found {
            (Ok(push), Ok(pop)) => Ok(Nvtx { push, pop, _lib: lib }),
            _ => Err(format!("{name} has no nvtxRangePushA / nvtxRangePop")),
        }
    };
    // SAFETY: loading libnvToolsExt runs its initialisers, which have no preconditions.
    unsafe { crate::sys::loader::open_first("NVTX", &names, resolve) }
}

fn nvtx() -> &'static Result<Nvtx, String> {
    static NVTX: OnceLock<Result<Nvtx, String>> = OnceLock::new();
    NVTX.get_or_init(load)
}

/// Whether ranges are being pushed: `Ok(())`, or why not.
///
/// ```
/// if let Err(why) = cudrv::nvtx::status() {
///     println!("NVTX ranges off: {why}");
/// }
/// ```
pub fn status() -> Result<(), String> {
    nvtx().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// Whether ranges are on (the library loaded because a tool asked for them).
#[inline]
pub(crate) fn enabled() -> bool {
    nvtx().is_ok()
}

/// An open range; closed when dropped.
///
/// ```
/// {
///     let _r = cudrv::nvtx::Range::push("my step"); // a no-op unless a tool is attached
/// }
/// ```
#[derive(Debug)]
pub struct Range {
    open: bool,
}

impl Range {
    /// Opens a range named `text` on this thread (nothing when ranges are off).
    pub fn push(text: &str) -> Range {
        let Ok(n) = nvtx() else { return Range { open: false } };
        let Ok(c) = CString::new(text.replace('\0', " ")) else {
            return Range { open: false };
        };
        // SAFETY: a NUL-terminated string that outlives the call (NVTX copies it).
        unsafe { (n.push)(c.as_ptr()) };
        Range { open: true }
    }
}

impl Drop for Range {
    fn drop(&mut self) {
        if self.open {
            if let Ok(n) = nvtx() {
                // SAFETY: closes the range this value opened, on the same thread (Range is
                // not Send: it holds no data but is only made and dropped in one scope).
                unsafe { (n.pop)() };
            }
        }
    }
}
