//! Stream capture into [`CudaGraph`].

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
///
/// It is cudrv's [`cudrv::Graph`] underneath: memory freed on the stream while it captures is
/// kept until the graph drops (the captured work still uses it), and a capture the driver
/// refuses is ended so that the stream works again.
#[derive(Debug)]
pub struct CudaGraph {
    graph: cudrv::Graph,
    stream: Arc<CudaStream>,
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
        self.inner
            .begin_capture_in(mode.into())
            .map_err(DriverError::from_cudrv)
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
        let graph = self
            .inner
            .end_capture_with(flags as u64)
            .map_err(DriverError::from_cudrv)?;
        Ok(Some(CudaGraph {
            graph,
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
        self.graph.launch(&self.stream.inner).map_err(DriverError::from_cudrv)
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
        self.graph.upload(&self.stream.inner).map_err(DriverError::from_cudrv)
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
        self.graph.raw().0 as sys::CUgraph
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
        self.graph.raw().1 as sys::CUgraphExec
    }
}
