//! The primary context of a device.

use super::*;

/// Retains (creating if needed) the device's primary context.
///
/// # Safety
/// `dev` must be a handle from [`device::get`]; pair with [`release`].
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
pub unsafe fn release(dev: sys::CUdevice) -> Result<(), DriverError> {
    // SAFETY: the caller pairs this with a retain.
    unsafe { cu!(cuDevicePrimaryCtxRelease_v2(dev)) }
}
