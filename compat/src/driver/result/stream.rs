//! Streams.

use super::*;

/// How a created stream relates to the legacy default stream.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// use result::stream::StreamKind;
/// let s = result::stream::create(StreamKind::NonBlocking)?;
/// // SAFETY: created above, not used after.
/// unsafe { result::stream::destroy(s) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// assert!(result::stream::null().is_null());
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn null() -> sys::CUstream {
    std::ptr::null_mut()
}

/// Creates a stream in the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let s = result::stream::create(result::stream::StreamKind::Default)?;
/// assert!(!s.is_null());
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn create(kind: StreamKind) -> Result<sys::CUstream, DriverError> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuStreamCreate(&mut stream, kind.flags()))? };
    Ok(stream)
}

/// Creates a stream with a priority (lower numbers run first).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let (_, highest) = result::stream::get_priority_range()?;
/// let s = result::stream::create_with_priority(result::stream::StreamKind::NonBlocking, highest)?;
/// # let _ = s;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn create_with_priority(kind: StreamKind, priority: i32) -> Result<sys::CUstream, DriverError> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuStreamCreateWithPriority(&mut stream, kind.flags(), priority))? };
    Ok(stream)
}

/// (least, greatest) stream priority of the current context.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let (least, greatest) = result::stream::get_priority_range()?;
/// assert!(greatest <= least);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a live stream.
/// unsafe { result::stream::synchronize(stream) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn synchronize(stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamSynchronize(stream)) }
}

/// Destroys a stream created by [`create`].
///
/// # Safety
/// `stream` must be live and not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: not used after.
/// unsafe { result::stream::destroy(stream) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn destroy(stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamDestroy_v2(stream)) }
}

/// Makes later work on `stream` wait for `event`.
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
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// let e = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
/// // SAFETY: live event and streams.
/// unsafe {
///     result::event::record(e, result::stream::null())?;
///     result::stream::wait_event(stream, e, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a managed allocation, attached to this stream only.
/// unsafe {
///     let p = result::malloc_managed(4096, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)?;
///     result::stream::attach_mem_async(stream, p, 0, sys::CUmemAttach_flags::CU_MEM_ATTACH_SINGLE)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// unsafe extern "C" fn done(_arg: *mut std::ffi::c_void) {
///     eprintln!("the stream reached this point");
/// }
/// // SAFETY: `done` makes no CUDA calls; its argument is unused.
/// unsafe { result::stream::launch_host_function(stream, done, std::ptr::null_mut()) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a live stream; the capture is ended below.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
///     let graph = result::stream::end_capture(stream)?;
///     # let _ = graph;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn begin_capture(stream: sys::CUstream, mode: sys::CUstreamCaptureMode) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `stream`.
    unsafe { cu!(cuStreamBeginCapture_v2(stream, mode)) }
}

/// Ends a capture and returns its graph (null if the capture was invalidated).
///
/// # Safety
/// `stream` must be capturing.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a live stream in capture.
/// let graph = unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     result::stream::end_capture(stream)?
/// };
/// # let _ = graph;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a live stream.
/// let status = unsafe { result::stream::is_capturing(stream) }?;
/// assert_eq!(status, sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn is_capturing(stream: sys::CUstream) -> Result<sys::CUstreamCaptureStatus, DriverError> {
    let mut status = sys::CUstreamCaptureStatus::default();
    // SAFETY: writes one enum value (sys stores only values it names).
    unsafe { cu!(cuStreamIsCapturing(stream, &mut status))? };
    Ok(status)
}
