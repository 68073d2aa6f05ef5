//! Graphs: captured stream work, replayed with one launch.

use std::ptr;
use std::sync::Arc;

use crate::context::Context;
use crate::driver::cu;
use crate::error::Result;
use crate::stream::Stream;
use crate::sys;

/// An instantiated CUDA graph, made by [`Stream::end_capture`].
///
/// Replaying a graph costs one launch for all its nodes.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 1024])?;
/// stream.begin_capture()?;
/// for _ in 0..100 {
///     ops::scale_in_place(&mut x, 1.0001)?; // 100 small launches...
/// }
/// let step = stream.end_capture()?; // ...replayed with one call
/// step.launch(&stream)?;
/// stream.synchronize()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    ctx: Arc<Context>,
}

// SAFETY: graph handles may be used from any thread; launches are ordered by their stream.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl Graph {
    pub(crate) fn instantiate(ctx: Arc<Context>, graph: sys::CUgraph) -> Result<Graph> {
        let mut exec = ptr::null_mut();
        // SAFETY: writes one CUgraphExec through a valid pointer; `graph` came from a capture.
        let made = unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, 0)) };
        if let Err(e) = made {
            // SAFETY: the graph is ours and no exec refers to it.
            let _ = unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { graph, exec, ctx })
    }

    /// The number of nodes in the graph.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
    /// stream.begin_capture()?;
    /// ops::scale_in_place(&mut x, 2.0)?;
    /// ops::scale_in_place(&mut x, 3.0)?;
    /// assert_eq!(stream.end_capture()?.node_count()?, 2);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: with a NULL node array the driver writes only the count.
        unsafe { cu!(cuGraphGetNodes(self.graph, ptr::null_mut(), &mut n))? };
        Ok(n)
    }

    /// Replays the graph on `stream`.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32])?;
    /// stream.begin_capture()?;
    /// ops::scale_in_place(&mut x, 2.0)?;
    /// let g = stream.end_capture()?;
    /// g.launch(&stream)?;
    /// g.launch(&stream)?;
    /// assert_eq!(x.to_vec()?, vec![4.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuGraphLaunch(self.exec, stream.raw())) }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both handles were created for this value and are destroyed once.
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}
