//! Graphs.

use super::*;

/// Instantiates a graph.
///
/// # Safety
/// `graph` must be live.
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
pub unsafe fn exec_destroy(graph_exec: sys::CUgraphExec) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuGraphExecDestroy(graph_exec)) }
}

/// Destroys a graph.
///
/// # Safety
/// `graph` must be live and not used afterwards.
pub unsafe fn destroy(graph: sys::CUgraph) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuGraphDestroy(graph)) }
}

/// Launches an executable graph on `stream`.
///
/// # Safety
/// Both handles must be live.
pub unsafe fn launch(graph_exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuGraphLaunch(graph_exec, stream)) }
}

/// Uploads an executable graph to the device ahead of its first launch.
///
/// # Safety
/// Both handles must be live.
pub unsafe fn upload(graph_exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuGraphUpload(graph_exec, stream)) }
}
