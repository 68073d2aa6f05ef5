//! Events.

use super::*;

/// Creates an event in the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
/// // SAFETY: created above, destroyed once.
/// unsafe { result::event::destroy(e) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn create(flags: sys::CUevent_flags) -> Result<sys::CUevent, DriverError> {
    let mut event = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuEventCreate(&mut event, flags as c_uint))? };
    Ok(event)
}

/// Records `event` on `stream`.
///
/// # Safety
/// Both handles must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?;
/// // SAFETY: a live event on the legacy default stream.
/// unsafe { result::event::record(e, result::stream::null()) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn record(event: sys::CUevent, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuEventRecord(event, stream)) }
}

/// Milliseconds between two recorded, completed timing events.
///
/// # Safety
/// Both events must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let (a, b) = (result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?, result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?);
/// // SAFETY: live timing events, recorded and completed before the query.
/// let ms = unsafe {
///     result::event::record(a, result::stream::null())?;
///     result::event::record(b, result::stream::null())?;
///     result::event::synchronize(b)?;
///     result::event::elapsed(a, b)?
/// };
/// assert!(ms >= 0.0);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn elapsed(start: sys::CUevent, end: sys::CUevent) -> Result<f32, DriverError> {
    let mut ms = MaybeUninit::<f32>::uninit();
    // SAFETY: writes one float on success; the caller vouches for both events.
    unsafe { cu!(cuEventElapsedTime_v2(ms.as_mut_ptr(), start, end))? };
    // SAFETY: the driver wrote the value (the call succeeded).
    Ok(unsafe { ms.assume_init() })
}

/// `Ok` if the event's work is done, `CUDA_ERROR_NOT_READY` if not.
///
/// # Safety
/// `event` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?;
/// // SAFETY: a live event; Err(CUDA_ERROR_NOT_READY) while its work runs.
/// let done = unsafe { result::event::query(e) }.is_ok();
/// # let _ = done;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn query(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventQuery(event)) }
}

/// Waits for the event.
///
/// # Safety
/// `event` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?;
/// // SAFETY: a live event.
/// unsafe { result::event::synchronize(e) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn synchronize(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventSynchronize(event)) }
}

/// Destroys the event.
///
/// # Safety
/// `event` must be live and not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)?;
/// // SAFETY: not used after this.
/// unsafe { result::event::destroy(e) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn destroy(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventDestroy_v2(event)) }
}
