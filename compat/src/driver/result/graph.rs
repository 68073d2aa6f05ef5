//! Graphs.

use super::*;

/// Instantiates a graph.
///
/// # Safety
/// `graph` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: a live stream; the graph it captured is instantiated, launched and destroyed here.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let graph = result::stream::end_capture(stream)?;
///     let exec = result::graph::instantiate(graph, sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
///     result::graph::launch(exec, stream)?;
///     result::graph::exec_destroy(exec)?;
///     result::graph::destroy(graph)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn instantiate(
    graph: sys::CUgraph,
    flags: sys::CUgraphInstantiate_flags,
) -> Result<sys::CUgraphExec, DriverError> {
    let mut exec = std::ptr::null_mut();
    // SAFETY: writes one handle; the caller vouches for `graph`.
    unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, flags as u64))? };
    Ok(exec)
}

/// Destroys an executable graph.
///
/// # Safety
/// `graph_exec` must be live and not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: as in `instantiate`; the executable is not used after it is destroyed.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let graph = result::stream::end_capture(stream)?;
///     let exec = result::graph::instantiate(graph, sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
///     result::graph::exec_destroy(exec)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn exec_destroy(graph_exec: sys::CUgraphExec) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuGraphExecDestroy(graph_exec)) }
}

/// Destroys a graph.
///
/// # Safety
/// `graph` must be live and not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: the captured graph is not used after it is destroyed.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let graph = result::stream::end_capture(stream)?;
///     result::graph::destroy(graph)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn destroy(graph: sys::CUgraph) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuGraphDestroy(graph)) }
}

/// Launches an executable graph on `stream`.
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
/// // SAFETY: a live executable graph and stream.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let exec = result::graph::instantiate(result::stream::end_capture(stream)?, sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
///     for _ in 0..3 {
///         result::graph::launch(exec, stream)?;
///     }
///     result::stream::synchronize(stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn launch(graph_exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuGraphLaunch(graph_exec, stream)) }
}

/// Uploads an executable graph to the device ahead of its first launch.
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
/// // SAFETY: a live executable graph and stream.
/// unsafe {
///     result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let exec = result::graph::instantiate(result::stream::end_capture(stream)?, sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
///     result::graph::upload(exec, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn upload(graph_exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuGraphUpload(graph_exec, stream)) }
}
