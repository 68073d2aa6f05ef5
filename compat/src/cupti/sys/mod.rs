//! Raw CUPTI types and functions, as cudarc's `cupti::sys` has them (enums are Rust enums).
//!
//! The types are generated from CUPTI 12.9's `cupti.h` (see `cupti-wrapper.h`); driver types
//! (`CUcontext`, `CUstream`, ...) are [`driver::sys`](crate::imp::driver::sys)'s. The functions
//! call libcupti, loaded on first use: `$CUDRV_LIBCUPTI` (a path) if set, otherwise
//! `libcupti.so.13` / `libcupti.so.12` / `libcupti.so` from the library path, then from
//! `extras/CUPTI/lib64` of `$CUDA_PATH`, `$CUDA_HOME` and `/usr/local/cuda`. Without the library
//! every call returns `CUPTI_ERROR_NOT_INITIALIZED`, and an entry point the library lacks
//! returns `CUPTI_ERROR_NOT_SUPPORTED`; [`load_error`] says what was tried. A status number
//! these bindings do not name reads as `CUPTI_ERROR_UNKNOWN`.
//!
//! ```no_run
//! use cudrv_compat::imp::cupti::sys;
//! let mut timestamp = 0u64;
//! // SAFETY: writes one u64.
//! let rc = unsafe { sys::cuptiGetTimestamp(&mut timestamp) };
//! println!("{rc:?} {timestamp} {:?}", sys::load_error());
//! ```

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    dead_code,
    unpredictable_function_pointer_comparisons,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
#[rustfmt::skip]
mod bindings;

pub use bindings::*;

use std::ffi::c_void;
use std::sync::OnceLock;

use cudrv::sys::loader::{DriverLibrary, LoadError, SymbolSlot};

/// Environment variable naming the libcupti to load.
pub const LIBCUPTI_ENV: &str = "CUDRV_LIBCUPTI";

/// The libcupti names and paths tried, in order.
pub fn candidates() -> Vec<String> {
    if let Some(path) = std::env::var_os(LIBCUPTI_ENV).filter(|p| !p.is_empty()) {
        return vec![path.to_string_lossy().into_owned()];
    }
    let names = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];
    let mut out: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let roots = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(std::path::PathBuf::from)
        .chain([std::path::PathBuf::from("/usr/local/cuda")]);
    for root in roots {
        for name in names {
            out.push(root.join("extras/CUPTI/lib64").join(name).display().to_string());
        }
    }
    out
}

fn library() -> Result<&'static DriverLibrary, &'static LoadError> {
    static LIB: OnceLock<Result<DriverLibrary, LoadError>> = OnceLock::new();
    // SAFETY: the candidates are NVIDIA's CUPTI library names or the user's explicit override;
    // loading it runs its initialisers, which have no preconditions.
    LIB.get_or_init(|| unsafe { DriverLibrary::open(&candidates()) })
        .as_ref()
}

/// Why libcupti could not be loaded (what was tried), or `None` once it is loaded.
pub fn load_error() -> Option<String> {
    library()
        .err()
        .map(|e| e.to_string().replace("CUDA driver", "CUPTI library"))
}

/// A libcupti entry point through `slot`: `CUPTI_ERROR_NOT_INITIALIZED` without the library,
/// `CUPTI_ERROR_NOT_SUPPORTED` when it lacks the symbol.
fn resolve(slot: &SymbolSlot) -> Result<*const c_void, CUptiResult> {
    let lib = library().map_err(|_| CUptiResult::CUPTI_ERROR_NOT_INITIALIZED)?;
    slot.get_in(lib).map_err(|_| CUptiResult::CUPTI_ERROR_NOT_SUPPORTED)
}

/// Declares one wrapper per CUPTI function: it resolves the entry point lazily and checks the
/// status number it returns before it becomes a [`CUptiResult`].
macro_rules! cupti_functions {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> CUptiResult;)*) => {
        $(
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #[doc = concat!("Calls libcupti's `", stringify!($name), "`.")]
            ///
            /// # Safety
            /// The same contract as the C function of that name in the CUPTI reference.
            pub unsafe fn $name($($arg: $ty),*) -> CUptiResult {
                static SLOT: SymbolSlot = SymbolSlot::new(concat!(stringify!($name), "\0"));
                let address = match resolve(&SLOT) {
                    Ok(address) => address,
                    Err(rc) => return rc,
                };
                // SAFETY: the address is libcupti's export of this name, whose C declaration
                // bindgen turned into this signature (the status read as a plain u32).
                let function = unsafe {
                    ::core::mem::transmute::<*const c_void, unsafe extern "C" fn($($ty),*) -> u32>(address)
                };
                // SAFETY: forwarded to the caller, who upholds the C function's contract.
                let rc = unsafe { function($($arg),*) };
                CUptiResult::from_raw(rc).unwrap_or(CUptiResult::CUPTI_ERROR_UNKNOWN)
            }
        )*
    };
}

#[rustfmt::skip]
mod functions {
    use super::*;
    use crate::imp::driver::sys::{CUcontext, CUdevice, CUgraph, CUgraphExec, CUgraphNode, CUstream};
    include!("functions.rs");
}
pub use functions::*;
