//! The primary context of a device.

use super::*;

/// Retains (creating if needed) the device's primary context.
///
/// # Safety
/// `dev` must be a handle from [`device::get`]; pair with [`release`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: released below, once per retain.
/// unsafe {
///     let c = result::primary_ctx::retain(dev)?;
///     result::ctx::set_current(c)?;
///     result::primary_ctx::release(dev)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn retain(dev: sys::CUdevice) -> Result<sys::CUcontext, DriverError> {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: writes one handle; the caller vouches for `dev`.
    unsafe { cu!(cuDevicePrimaryCtxRetain(&mut ctx, dev))? };
    Ok(ctx)
}

/// Releases one retain of the device's primary context.
///
/// # Safety
/// Must match an earlier [`retain`]; no handle of the context may be used after the last release.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: matches the retain above (the prelude's); the context is not used after.
/// unsafe { result::primary_ctx::release(dev) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn release(dev: sys::CUdevice) -> Result<(), DriverError> {
    // SAFETY: the caller pairs this with a retain.
    unsafe { cu!(cuDevicePrimaryCtxRelease_v2(dev)) }
}
