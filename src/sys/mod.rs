//! Raw driver API: bindgen types and a lazily loaded function table.
//!
//! `bindings` is generated from `wrapper.h` (CUDA 12.9 `cuda.h`) and committed. Every driver
//! entry point appears twice:
//! - `sys::resolve::cuXxx()` returns the function pointer, or [`LoadError::MissingSymbol`] /
//!   [`LoadError::NoDriver`]; the safe layer uses this form (and turns the error into
//!   `cudrv::Error` with `?`).
//! - `sys::cuXxx(...)` calls it directly, like the C function. If the library or the symbol is
//!   missing it returns `CUDA_ERROR_NOT_FOUND` instead of panicking.
//!
//! ```no_run
//! use cudrv::sys;
//! // SAFETY: cuInit takes a flags word and has no pointer arguments.
//! let rc = unsafe { sys::cuInit(0) };
//! assert_eq!(rc, sys::CUresult::CUDA_SUCCESS);
//! ```
//!
//! This module depends on nothing else in the crate: the layers above import it, never the
//! other way round.

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
pub mod cupti;
pub mod loader;

pub use loader::LoadError;

pub use bindings::*;

/// Declares the driver function table: for each `fn name(args) -> CUresult;` a resolver in
/// [`resolve`] and a raw calling wrapper in this module.
macro_rules! driver_functions {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// Entry-point resolvers: each returns the driver's function pointer, resolved on first use.
        #[allow(non_snake_case, missing_docs, clippy::type_complexity)]
        pub mod resolve {
            use super::*;
            $(
                #[inline]
                pub fn $name() -> $crate::sys::loader::Result<unsafe extern "C" fn($($ty),*) -> $ret> {
                    static SLOT: $crate::sys::loader::SymbolSlot =
                        $crate::sys::loader::SymbolSlot::new(concat!(stringify!($name), "\0"));
                    let address = SLOT.get()?;
                    // SAFETY: the address was exported by the driver under this name, and
                    // bindgen took this signature from the same name's declaration in cuda.h.
                    Ok(unsafe {
                        ::core::mem::transmute::<*const ::core::ffi::c_void, unsafe extern "C" fn($($ty),*) -> $ret>(address)
                    })
                }
            )*
        }
        $(
            #[allow(non_snake_case, missing_docs, clippy::too_many_arguments)]
            #[doc = concat!("Calls the driver's `", stringify!($name), "`; `CUDA_ERROR_NOT_FOUND` if it is missing.")]
            ///
            /// # Safety
            /// The same contract as the C function of that name in the CUDA Driver API reference.
            #[inline]
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                match resolve::$name() {
                    // SAFETY: forwarded to the caller, who upholds the C function's contract.
                    Ok(f) => unsafe { f($($arg),*) },
                    Err(_) => CUresult::CUDA_ERROR_NOT_FOUND,
                }
            }
        )*
    };
}

#[allow(clippy::all)]
#[rustfmt::skip]
mod functions;
pub use functions::*;
