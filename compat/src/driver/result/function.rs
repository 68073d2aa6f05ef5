//! Function attributes and cache preference.

use super::*;

/// One attribute of a function.
///
/// # Safety
/// `f` must be a live function handle.
pub unsafe fn get_function_attribute(
    f: sys::CUfunction,
    attribute: sys::CUfunction_attribute,
) -> Result<i32, DriverError> {
    let mut value = 0;
    // SAFETY: writes one int; the caller vouches for `f`.
    unsafe { cu!(cuFuncGetAttribute(&mut value, attribute, f))? };
    Ok(value)
}

/// Sets one attribute of a function.
///
/// # Safety
/// `f` must be a live function handle.
pub unsafe fn set_function_attribute(
    f: sys::CUfunction,
    attribute: sys::CUfunction_attribute,
    value: i32,
) -> Result<(), DriverError> {
    // SAFETY: plain values; the caller vouches for `f`.
    unsafe { cu!(cuFuncSetAttribute(f, attribute, value)) }
}

/// Sets a function's L1/shared-memory preference.
///
/// # Safety
/// `f` must be a live function handle.
pub unsafe fn set_function_cache_config(f: sys::CUfunction, attribute: sys::CUfunc_cache) -> Result<(), DriverError> {
    // SAFETY: plain values; the caller vouches for `f`.
    unsafe { cu!(cuFuncSetCacheConfig(f, attribute)) }
}
