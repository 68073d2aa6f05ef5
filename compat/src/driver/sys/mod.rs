//! Raw driver types and functions as cudarc's `driver::sys` has them: Rust enums.
//!
//! Every enumeration of `cuda.h` is a `#[repr(u32)]` (or `i32`) Rust enum, so an exhaustive
//! `match` over, say, [`CUfunc_cache`] compiles as it does with cudarc. Values that share a number
//! are associated constants of the enum. Structs, unions and aliases that hold such an enum are
//! this module's own copies of cudrv's; every other item is cudrv's own (`cudrv::sys`).
//!
//! `sys::cuXxx(...)` calls the driver's entry point through cudrv's lazily loaded table: an entry
//! point the installed driver lacks returns `CUDA_ERROR_NOT_FOUND`, never a panic. A driver newer
//! than these bindings may answer with a number they do not name; such a value never reaches an
//! enum: an unknown `CUresult` reads as `CUDA_ERROR_UNKNOWN`, and an unknown value for an enum out
//! parameter is not stored and the call returns `CUDA_ERROR_UNKNOWN`. (`cudrv::sys`, whose enums
//! are newtypes, carries any value.) Each enum converts to and from cudrv's newtype of the same
//! name with `From`/`TryFrom`, and has `from_raw` for a bare number.
//!
//! ```no_run
//! use cudrv_compat::imp::driver::sys;
//! // SAFETY: cuInit takes a flags word; cuCtxGetCacheConfig writes one enum value.
//! unsafe { sys::cuInit(0) };
//! let mut config = sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE;
//! let rc = unsafe { sys::cuCtxGetCacheConfig(&mut config) };
//! let text = match config {
//!     sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_NONE => "none",
//!     sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED => "shared",
//!     sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_L1 => "L1",
//!     sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_EQUAL => "equal",
//! };
//! println!("{rc:?}: {text}");
//! ```

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    dead_code,
    unpredictable_function_pointer_comparisons,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
#[rustfmt::skip]
mod bindings;

pub use bindings::*;

/// The driver's answer as this binding's enum; a number it does not name reads as
/// `CUDA_ERROR_UNKNOWN`.
#[inline]
fn result_of(rc: cudrv::sys::CUresult) -> CUresult {
    CUresult::from_raw(rc.0).unwrap_or(CUresult::CUDA_ERROR_UNKNOWN)
}
