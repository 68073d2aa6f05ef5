//! Function attributes and cache preference.

use super::*;

/// One attribute of a function.
///
/// # Safety
/// `f` must be a live function handle.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: `f` is a live function.
/// let regs = unsafe { result::function::get_function_attribute(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS) }?;
/// println!("{regs} registers");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: `f` is a live function.
/// unsafe { result::function::set_function_attribute(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: `f` is a live function.
/// unsafe { result::function::set_function_cache_config(f, sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_SHARED) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn set_function_cache_config(f: sys::CUfunction, attribute: sys::CUfunc_cache) -> Result<(), DriverError> {
    // SAFETY: plain values; the caller vouches for `f`.
    unsafe { cu!(cuFuncSetCacheConfig(f, attribute)) }
}
