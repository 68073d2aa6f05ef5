//! Stream capture into [`CudaGraph`].

use std::ptr;
use std::sync::Arc;

use super::error::DriverError;
use super::stream::CudaStream;
use super::{cu, sys};

/// An instantiated graph captured from a stream (cudarc's `CudaGraph`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let s = ctx.new_stream()?;
/// let mut x = s.alloc_zeros::<f32>(1024)?;
/// s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
/// s.memset_zeros(&mut x)?; // recorded, not run
/// let graph = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?.unwrap();
/// graph.launch()?;
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaGraph {
    cu_graph: sys::CUgraph,
    cu_graph_exec: sys::CUgraphExec,
    stream: Arc<CudaStream>,
}

// SAFETY: graph handles may be used from any thread; launches are ordered on the stream.
unsafe impl Send for CudaGraph {}
// SAFETY: as above.
unsafe impl Sync for CudaGraph {}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let ctx = &self.stream.ctx;
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: both were created by end_capture and are destroyed once.
        ctx.record_err(unsafe { cu!(cuGraphExecDestroy(self.cu_graph_exec)) });
        // SAFETY: as above.
        ctx.record_err(unsafe { cu!(cuGraphDestroy(self.cu_graph)) });
    }
}

impl CudaStream {
    /// Starts capturing the work queued on this stream into a graph.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.new_stream()?;
    /// s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
    /// let g = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
    /// if let Some(g) = g {
    ///     g.launch()?; // an empty capture still gives a (do-nothing) graph
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn begin_capture(&self, mode: sys::CUstreamCaptureMode) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live stream and a capture mode.
        unsafe { cu!(cuStreamBeginCapture_v2(self.cu_stream, mode)) }
    }

    /// Ends the capture and instantiates the graph (`None` if nothing was captured).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.new_stream()?;
    /// let mut x = s.alloc_zeros::<u8>(64)?;
    /// s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// s.memset_zeros(&mut x)?;
    /// if let Some(g) = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)? {
    ///     g.launch()?;
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn end_capture(
        self: &Arc<Self>,
        flags: sys::CUgraphInstantiate_flags,
    ) -> Result<Option<CudaGraph>, DriverError> {
        self.ctx.bind_to_thread()?;
        let mut graph = ptr::null_mut();
        // SAFETY: writes one graph handle; the stream is capturing.
        unsafe { cu!(cuStreamEndCapture(self.cu_stream, &mut graph))? };
        if graph.is_null() {
            return Ok(None);
        }
        let mut exec = ptr::null_mut();
        // SAFETY: writes one exec handle for a live graph.
        if let Err(e) = unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, flags as u64)) } {
            // SAFETY: the graph was created above and is not used again.
            self.ctx.record_err(unsafe { cu!(cuGraphDestroy(graph)) });
            return Err(e);
        }
        Ok(Some(CudaGraph {
            cu_graph: graph,
            cu_graph_exec: exec,
            stream: self.clone(),
        }))
    }

    /// Whether the stream is capturing.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let s = ctx.new_stream()?;
    /// assert_eq!(s.capture_status()?, sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn capture_status(&self) -> Result<sys::CUstreamCaptureStatus, DriverError> {
        self.ctx.bind_to_thread()?;
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: writes one status through a valid pointer.
        unsafe { cu!(cuStreamIsCapturing(self.cu_stream, &mut status))? };
        Ok(status)
    }
}

impl CudaGraph {
    /// Launches the graph on the stream it was captured from.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let s = ctx.new_stream()?;
    /// # let mut x = s.alloc_zeros::<u8>(64)?;
    /// # s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// # s.memset_zeros(&mut x)?;
    /// let g = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?.unwrap();
    /// for _ in 0..10 {
    ///     g.launch()?;
    /// }
    /// s.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn launch(&self) -> Result<(), DriverError> {
        self.stream.ctx.bind_to_thread()?;
        // SAFETY: a live exec graph and stream.
        unsafe { cu!(cuGraphLaunch(self.cu_graph_exec, self.stream.cu_stream)) }
    }

    /// Uploads the graph to the device ahead of its first launch.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let s = ctx.new_stream()?;
    /// # let mut x = s.alloc_zeros::<u8>(64)?;
    /// # s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// # s.memset_zeros(&mut x)?;
    /// let g = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?.unwrap();
    /// g.upload()?; // the first launch then starts sooner
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn upload(&self) -> Result<(), DriverError> {
        self.stream.ctx.bind_to_thread()?;
        // SAFETY: a live exec graph and stream.
        unsafe { cu!(cuGraphUpload(self.cu_graph_exec, self.stream.cu_stream)) }
    }

    /// The driver's graph handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let s = ctx.new_stream()?;
    /// # let mut x = s.alloc_zeros::<u8>(64)?;
    /// # s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// # s.memset_zeros(&mut x)?;
    /// let g = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?.unwrap();
    /// assert!(!g.cu_graph().is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_graph(&self) -> sys::CUgraph {
        self.cu_graph
    }

    /// The driver's executable graph handle.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// # let s = ctx.new_stream()?;
    /// # let mut x = s.alloc_zeros::<u8>(64)?;
    /// # s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    /// # s.memset_zeros(&mut x)?;
    /// let g = s.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?.unwrap();
    /// assert!(!g.cu_graph_exec().is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_graph_exec(&self) -> sys::CUgraphExec {
        self.cu_graph_exec
    }
}
