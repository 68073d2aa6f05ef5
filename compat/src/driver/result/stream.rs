//! Streams.

use super::*;

/// How a created stream relates to the legacy default stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Synchronizes with the legacy default stream (`CU_STREAM_DEFAULT`).
    Default,
    /// Does not synchronize with the legacy default stream (`CU_STREAM_NON_BLOCKING`).
    NonBlocking,
}

impl StreamKind {
    fn flags(self) -> c_uint {
        match self {
            StreamKind::Default => sys::CUstream_flags::CU_STREAM_DEFAULT as c_uint,
            StreamKind::NonBlocking => sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint,
        }
    }
}

/// The legacy default stream (a null handle).
pub fn null() -> sys::CUstream {
    std::ptr::null_mut()
}

/// Creates a stream in the current context.
pub fn create(kind: StreamKind) -> Result<sys::CUstream, DriverError> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuStreamCreate(&mut stream, kind.flags()))? };
    Ok(stream)
}

/// Creates a stream with a priority (lower numbers run first).
pub fn create_with_priority(kind: StreamKind, priority: i32) -> Result<sys::CUstream, DriverError> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuStreamCreateWithPriority(&mut stream, kind.flags(), priority))? };
    Ok(stream)
}

/// (least, greatest) stream priority of the current context.
pub fn get_priority_range() -> Result<(i32, i32), DriverError> {
    let (mut least, mut greatest) = (0, 0);
    // SAFETY: writes two ints through valid pointers.
    unsafe { cu!(cuCtxGetStreamPriorityRange(&mut least, &mut greatest))? };
    Ok((least, greatest))
}

/// Waits for all work on `stream`.
///
/// # Safety
/// `stream` must be live (or null).
pub unsafe fn synchronize(stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamSynchronize(stream)) }
}

/// Destroys a stream created by [`create`].
///
/// # Safety
/// `stream` must be live and not used afterwards.
pub unsafe fn destroy(stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamDestroy_v2(stream)) }
}

/// Makes later work on `stream` wait for `event`.
///
/// # Safety
/// Both handles must be live.
pub unsafe fn wait_event(
    stream: sys::CUstream,
    event: sys::CUevent,
    flags: sys::CUevent_wait_flags,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuStreamWaitEvent(stream, event, flags as c_uint)) }
}

/// Attaches managed memory to a stream.
///
/// # Safety
/// `stream` must be live and `dptr..dptr+num_bytes` managed memory.
pub unsafe fn attach_mem_async(
    stream: sys::CUstream,
    dptr: sys::CUdeviceptr,
    num_bytes: usize,
    flags: sys::CUmemAttach_flags,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handles and the range.
    unsafe { cu!(cuStreamAttachMemAsync(stream, dptr, num_bytes, flags as c_uint)) }
}

/// Runs `func(arg)` on a driver thread once earlier work on `stream` is done.
///
/// # Safety
/// `stream` must be live; `func` must be safe to call with `arg` from another thread and must
/// not call the CUDA API.
pub unsafe fn launch_host_function(
    stream: sys::CUstream,
    func: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the stream, the function and its argument.
    unsafe { cu!(cuLaunchHostFunc(stream, Some(func), arg)) }
}

/// Starts capturing `stream` into a graph.
///
/// # Safety
/// `stream` must be live and not the legacy default stream.
pub unsafe fn begin_capture(stream: sys::CUstream, mode: sys::CUstreamCaptureMode) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamBeginCapture_v2(stream, mode)) }
}

/// Ends a capture and returns its graph (null if the capture was invalidated).
///
/// # Safety
/// `stream` must be capturing.
pub unsafe fn end_capture(stream: sys::CUstream) -> Result<sys::CUgraph, DriverError> {
    let mut graph = std::ptr::null_mut();
    // SAFETY: writes one handle; the caller vouches for `stream`.
    unsafe { cu!(cuStreamEndCapture(stream, &mut graph))? };
    Ok(graph)
}

/// Whether `stream` is capturing.
///
/// # Safety
/// `stream` must be live.
pub unsafe fn is_capturing(stream: sys::CUstream) -> Result<sys::CUstreamCaptureStatus, DriverError> {
    let mut status = sys::CUstreamCaptureStatus::default();
    // SAFETY: writes one enum value (sys stores only values it names).
    unsafe { cu!(cuStreamIsCapturing(stream, &mut status))? };
    Ok(status)
}
