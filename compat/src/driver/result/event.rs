//! Events.

use super::*;

/// Creates an event in the current context.
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
pub unsafe fn record(event: sys::CUevent, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuEventRecord(event, stream)) }
}

/// Milliseconds between two recorded, completed timing events.
///
/// # Safety
/// Both events must be live.
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
pub unsafe fn query(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventQuery(event)) }
}

/// Waits for the event.
///
/// # Safety
/// `event` must be live.
pub unsafe fn synchronize(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventSynchronize(event)) }
}

/// Destroys the event.
///
/// # Safety
/// `event` must be live and not used afterwards.
pub unsafe fn destroy(event: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `event`.
    unsafe { cu!(cuEventDestroy_v2(event)) }
}
