//! The calling thread's current context.

use super::*;

/// Creates a context (`cuCtxCreate_v3` without affinity parameters) and makes it current.
///
/// # Safety
/// `dev` must be a handle from [`device::get`]; the context is the caller's to destroy.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: the context is destroyed by the caller (cuCtxDestroy) when done.
/// let own = unsafe { result::ctx::create_v3(0, dev) }?;
/// assert!(!own.is_null());
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn create_v3(flags: c_uint, dev: sys::CUdevice) -> Result<sys::CUcontext, DriverError> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: no affinity array (null, 0); writes one handle.
    unsafe { cu!(cuCtxCreate_v3(&mut ctx, std::ptr::null_mut(), 0, flags, dev))? };
    Ok(ctx)
}

/// Creates a context with `cuCtxCreate_v4` and makes it current.
///
/// # Safety
/// `ctx_create_params` must be null or valid; `dev` a handle from [`device::get`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: null parameters ask for the defaults; the caller destroys the context.
/// let own = unsafe { result::ctx::create_v4(std::ptr::null_mut(), 0, dev) }?;
/// # let _ = own;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn create_v4(
    ctx_create_params: *mut sys::CUctxCreateParams,
    flags: c_uint,
    dev: sys::CUdevice,
) -> Result<sys::CUcontext, DriverError> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: the caller vouches for the parameters; writes one handle.
    unsafe { cu!(cuCtxCreate_v4(&mut ctx, ctx_create_params, flags, dev))? };
    Ok(ctx)
}

/// Makes `ctx` current on the calling thread.
///
/// # Safety
/// `ctx` must be a live context (or null, to unbind).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: `ctx` is a live context (retained above).
/// unsafe { result::ctx::set_current(ctx) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn set_current(ctx: sys::CUcontext) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `ctx`.
    unsafe { cu!(cuCtxSetCurrent(ctx)) }
}

/// The calling thread's current context, if any.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// assert_eq!(result::ctx::get_current()?, Some(ctx));
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_current() -> Result<Option<sys::CUcontext>, DriverError> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuCtxGetCurrent(&mut ctx))? };
    Ok((!ctx.is_null()).then_some(ctx))
}

/// Sets the current context's flags.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// result::ctx::set_flags(sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC)?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn set_flags(flags: sys::CUctx_flags) -> Result<(), DriverError> {
    // SAFETY: a flags word.
    unsafe { cu!(cuCtxSetFlags(flags as c_uint)) }
}

/// Waits for all work of the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// result::ctx::synchronize()?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn synchronize() -> Result<(), DriverError> {
    // SAFETY: no arguments.
    unsafe { cu!(cuCtxSynchronize()) }
}

/// A limit of the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// println!("{}", result::ctx::get_limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE)?);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_limit(limit: sys::CUlimit) -> Result<usize, DriverError> {
    let mut value = 0;
    // SAFETY: writes one size through a valid pointer.
    unsafe { cu!(cuCtxGetLimit(&mut value, limit))? };
    Ok(value)
}

/// Sets a limit of the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// result::ctx::set_limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20)?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn set_limit(limit: sys::CUlimit, value: usize) -> Result<(), DriverError> {
    // SAFETY: plain values.
    unsafe { cu!(cuCtxSetLimit(limit, value)) }
}

/// The current context's L1/shared-memory preference.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// println!("{:?}", result::ctx::get_cache_config()?);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_cache_config() -> Result<sys::CUfunc_cache, DriverError> {
    let mut config = sys::CUfunc_cache::default();
    // SAFETY: writes one enum value; sys stores only values it names.
    unsafe { cu!(cuCtxGetCacheConfig(&mut config))? };
    Ok(config)
}

/// Sets the current context's L1/shared-memory preference.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// result::ctx::set_cache_config(sys::CUfunc_cache::CU_FUNC_CACHE_PREFER_EQUAL)?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn set_cache_config(config: sys::CUfunc_cache) -> Result<(), DriverError> {
    // SAFETY: a plain value.
    unsafe { cu!(cuCtxSetCacheConfig(config)) }
}
