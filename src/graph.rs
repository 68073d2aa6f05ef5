//! Graphs: captured stream work, replayed with one launch, and updated in place when the
//! buffers or scalars it uses change.
//!
//! Updating beats capturing anew: [`Graph::update`] records the closure again but patches the
//! instantiated graph (`cuGraphExecUpdate`) instead of instantiating a new one, and
//! [`Graph::set_kernel_args`] changes one kernel's arguments without recording anything.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::capture::{explain, KeptAllocation};
use crate::context::Context;
use crate::driver::{check, cu};
use crate::error::{Error, Result};
use crate::launch::{check_params, KernelArg, MAX_KERNEL_ARGS};
use crate::module::Function;
use crate::stream::Stream;
use crate::sys::{self, CUresult};

/// An instantiated CUDA graph, made by [`Stream::capture`] or [`Stream::end_capture`].
///
/// Replaying a graph costs one launch for all its nodes. Memory freed during the capture is kept
/// until the graph is dropped; buffers made before the capture must outlive its launches.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 1024])?;
/// let step = stream.capture(|_| {
///     for _ in 0..100 {
///         ops::scale_in_place(&mut x, 1.0001)?; // 100 small launches...
///     }
///     Ok(())
/// })?;
/// step.launch(&stream)?; // ...replayed with one call
/// stream.synchronize()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct Graph {
    /// The latest recorded graph: the parameters the exec runs with.
    graph: sys::CUgraph,
    /// The graph the exec was instantiated from: its nodes name the exec's nodes (an in-place
    /// update does not change them). The same handle as `graph` until an in-place update.
    origin: sys::CUgraph,
    exec: sys::CUgraphExec,
    ctx: Arc<Context>,
    /// Memory freed while recording, still used by the graph's work.
    kept: Vec<KeptAllocation>,
    /// The stream the graph was recorded on: kept memory goes back in its order.
    home: sys::CUstream,
    /// Orders launches on other streams before the kept memory's release (made on first need).
    fence: Mutex<Option<sys::CUevent>>,
    /// The kernel nodes of `graph` and of `origin`, in the order the graphs list them (found on
    /// first need).
    kernels: Mutex<Option<KernelHandles>>,
}

// SAFETY: graph handles may be used from any thread; launches are ordered by their stream, and the
// mutable caches are behind mutexes.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

/// How [`Graph::update`] applied the newly recorded work.
///
/// ```
/// let how = cudrv::graph::GraphUpdate::InPlace;
/// assert!(how.in_place());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphUpdate {
    /// The instantiated graph was patched: same nodes and edges, new parameters.
    InPlace,
    /// The new work could not patch the old (the driver's reason); a new graph was instantiated.
    Rebuilt {
        /// Why the patch was refused, e.g. "the graph's topology changed".
        reason: String,
    },
}

impl GraphUpdate {
    /// Whether the update patched the graph in place.
    ///
    /// ```
    /// use cudrv::graph::GraphUpdate;
    /// assert!(!GraphUpdate::Rebuilt { reason: "topology".into() }.in_place());
    /// ```
    pub fn in_place(&self) -> bool {
        matches!(self, GraphUpdate::InPlace)
    }
}

/// One kernel node of a graph, as [`Graph::kernel_nodes`] lists them.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
/// let g = stream.capture(|_| ops::scale_in_place(&mut x, 2.0))?;
/// let node = &g.kernel_nodes()?[0];
/// println!("{} grid {:?} block {:?}", node.name.as_deref().unwrap_or("?"), node.grid_dim, node.block_dim);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNode {
    /// Position among the graph's kernel nodes (the index [`Graph::set_kernel_args`] takes).
    pub index: usize,
    /// The kernel's name, where the driver reports it (12.3 and later).
    pub name: Option<String>,
    /// Blocks along x, y, z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block along x, y, z.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl Graph {
    pub(crate) fn instantiate(
        ctx: Arc<Context>,
        graph: sys::CUgraph,
        kept: Vec<KeptAllocation>,
        home: &Stream,
    ) -> Result<Graph> {
        Self::instantiate_with(ctx, graph, kept, home, 0)
    }

    pub(crate) fn instantiate_with(
        ctx: Arc<Context>,
        graph: sys::CUgraph,
        kept: Vec<KeptAllocation>,
        home: &Stream,
        flags: u64,
    ) -> Result<Graph> {
        let exec = match instantiate_exec_with(graph, flags) {
            Ok(exec) => exec,
            Err(e) => {
                // SAFETY: the graph is ours and no exec refers to it.
                let _ = unsafe { sys::cuGraphDestroy(graph) };
                return Err(e);
            }
        };
        Ok(Graph {
            graph,
            origin: graph,
            exec,
            ctx,
            kept,
            home: home.raw(),
            fence: Mutex::new(None),
            kernels: Mutex::new(None),
        })
    }

    /// The number of nodes in the graph.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
    /// let g = stream.capture(|_| {
    ///     ops::scale_in_place(&mut x, 2.0)?;
    ///     ops::scale_in_place(&mut x, 3.0)
    /// })?;
    /// assert_eq!(g.node_count()?, 2);
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
    /// let g = stream.capture(|_| ops::scale_in_place(&mut x, 2.0))?;
    /// g.launch(&stream)?;
    /// g.launch(&stream)?;
    /// assert_eq!(x.to_vec()?, vec![4.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuGraphLaunch(self.exec, stream.raw()))? };
        if !self.kept.is_empty() && stream.raw() != self.home {
            // The kept memory goes back on the home stream: order it after this launch.
            self.order_home_after(stream)?;
        }
        Ok(())
    }

    /// Records `f` again on `stream` and applies it to this graph: patched in place when only
    /// parameters changed (buffers, scalars, grid sizes of the same kernels), instantiated anew
    /// otherwise; the result says which. Launches already queued run the old work.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut a = DeviceBuffer::from_slice(&stream, &[1.0f32; 256])?;
    /// let mut b = DeviceBuffer::from_slice(&stream, &[5.0f32; 256])?;
    /// let mut g = stream.capture(|_| ops::scale_in_place(&mut a, 2.0))?;
    /// // Same kernel, another buffer and scalar: patched, not re-instantiated.
    /// assert!(g.update(&stream, |_| ops::scale_in_place(&mut b, 3.0))?.in_place());
    /// g.launch(&stream)?;
    /// assert_eq!(b.to_vec()?[0], 15.0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn update<F>(&mut self, stream: &Stream, f: F) -> Result<GraphUpdate>
    where
        F: FnOnce(&Stream) -> Result<()>,
    {
        let (graph, kept) = stream.record(f)?;
        let mut info = sys::CUgraphExecUpdateResultInfo::default();
        // SAFETY: both graphs are live; `info` is a valid out-parameter.
        let code = unsafe { sys::resolve::cuGraphExecUpdate_v2()?(self.exec, graph, &mut info) };
        let how = if code == CUresult::CUDA_SUCCESS {
            // The exec keeps the nodes of the graph it was made from; the new graph is kept for
            // the parameters it now runs with.
            if self.graph != self.origin {
                // SAFETY: the previous recording is ours and no exec refers to it.
                let _ = unsafe { sys::cuGraphDestroy(self.graph) };
            }
            self.graph = graph;
            GraphUpdate::InPlace
        } else if code == CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE {
            let exec = match instantiate_exec(graph) {
                Ok(exec) => exec,
                Err(e) => {
                    // SAFETY: the new graph is ours and no exec refers to it.
                    let _ = unsafe { sys::cuGraphDestroy(graph) };
                    return Err(e);
                }
            };
            // SAFETY: the old exec and graphs are ours; the driver frees an exec once the
            // launches in flight finish, and the exec no longer needs its graphs.
            unsafe {
                let _ = sys::cuGraphExecDestroy(self.exec);
                self.destroy_graphs();
            }
            self.exec = exec;
            self.graph = graph;
            self.origin = graph;
            GraphUpdate::Rebuilt {
                reason: update_refusal(info.result).into(),
            }
        } else {
            // SAFETY: as above.
            let _ = unsafe { sys::cuGraphDestroy(graph) };
            return Err(explain(
                check(code, "cuGraphExecUpdate").unwrap_err(),
                "updating the graph",
            ));
        };
        *self.kernels.get_mut() = None;
        // Old kept memory goes back in home-stream order, after the launches already queued.
        self.kept = kept;
        self.home = stream.raw();
        Ok(how)
    }

    /// Uploads the graph to the device on `stream` ahead of its first launch there.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
    /// let g = stream.capture(|_| ops::scale_in_place(&mut x, 2.0))?;
    /// g.upload(&stream)?; // the first launch then starts sooner
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuGraphUpload(self.exec, stream.raw())) }
    }

    /// The driver's handles: the graph last recorded and the executable graph (for driver
    /// calls cudrv does not wrap; both stay owned by this value).
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
    /// let g = stream.capture(|_| ops::scale_in_place(&mut x, 2.0))?;
    /// let (graph, exec) = g.raw();
    /// assert!(!graph.is_null() && !exec.is_null());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> (sys::CUgraph, sys::CUgraphExec) {
        (self.graph, self.exec)
    }

    /// The graph's kernel nodes in the order the graph lists them (for a recorded graph, the
    /// order the kernels were queued).
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 16])?;
    /// let g = stream.capture(|_| ops::scale_in_place(&mut x, 2.0))?;
    /// assert_eq!(g.kernel_nodes()?.len(), 1);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel_nodes(&self) -> Result<Vec<KernelNode>> {
        let nodes = self.kernel_handles()?.current;
        let name_of = sys::resolve::cuFuncGetName().ok();
        let mut out = Vec::with_capacity(nodes.len());
        for (index, &node) in nodes.iter().enumerate() {
            let p = node_params(node)?;
            let name = name_of.and_then(|get| {
                let mut s: *const std::os::raw::c_char = ptr::null();
                // SAFETY: writes one string pointer owned by the driver; the function is live.
                let ok = unsafe { get(&mut s, p.func) } == CUresult::CUDA_SUCCESS && !s.is_null();
                // SAFETY: the driver returned a NUL-terminated string that lives with the function.
                ok.then(|| unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy().into_owned())
            });
            out.push(KernelNode {
                index,
                name,
                grid_dim: (p.gridDimX, p.gridDimY, p.gridDimZ),
                block_dim: (p.blockDimX, p.blockDimY, p.blockDimZ),
                shared_mem_bytes: p.sharedMemBytes,
            });
        }
        Ok(out)
    }

    /// Replaces the arguments of kernel node `index` (see [`Graph::kernel_nodes`]) in the
    /// instantiated graph, without recording anything; later launches use them. `function` must
    /// be the node's kernel; the arguments' sizes are checked against its parameters where the
    /// driver reports them.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list in number, order and type, and the
    /// kernel must only access memory within the buffers passed, which must outlive the graph's
    /// launches.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, LaunchConfig};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let fill = ctx.kernel("fill_f32")?;
    /// let out = DeviceBuffer::<f32>::zeroed(&stream, 8)?;
    /// let (v, n) = (1.0f32, 8usize);
    /// let mut g = stream.capture(|s| {
    ///     // SAFETY: fill_f32(float* out, float value, size_t n).
    ///     unsafe { s.launch_builder(&fill).arg(&out).arg(&v).arg(&n).launch(LaunchConfig::for_num_elems(8)) }
    /// })?;
    /// let seven = 7.0f32;
    /// // SAFETY: the same kernel, the same parameter types.
    /// unsafe { g.set_kernel_args(0, &fill, &[&out, &seven, &n])? };
    /// g.launch(&stream)?;
    /// assert_eq!(out.to_vec()?, vec![7.0; 8]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub unsafe fn set_kernel_args(&mut self, index: usize, function: &Function, args: &[&dyn KernelArg]) -> Result<()> {
        let handles = self.kernel_handles()?;
        let (Some(&node), Some(&exec_node)) = (handles.current.get(index), handles.origin.get(index)) else {
            return Err(Error::InvalidArgument(format!(
                "the graph has {} kernel nodes; there is no node {index}",
                handles.current.len()
            )));
        };
        let mut p = node_params(node)?;
        if p.func != function.raw() {
            return Err(Error::InvalidArgument(format!(
                "kernel node {index} does not run `{}`; pass the node's own kernel",
                function.name()
            )));
        }
        if args.len() > MAX_KERNEL_ARGS {
            return Err(Error::InvalidArgument(format!(
                "{} arguments given to `{}`; at most {MAX_KERNEL_ARGS} are supported",
                args.len(),
                function.name()
            )));
        }
        if let Some(kernel) = function.param_sizes() {
            let sizes: Vec<usize> = args.iter().map(|a| a.param_size()).collect();
            check_params(function.name(), kernel, &sizes)?;
        }
        let mut params: Vec<*mut c_void> = args.iter().map(|a| a.as_kernel_param()).collect();
        p.kernelParams = params.as_mut_ptr();
        p.extra = ptr::null_mut();
        self.ctx.bind_to_thread()?;
        // SAFETY: the node belongs to this exec's graph and runs `function`; the parameter
        // pointers are valid for this call (the driver copies the values); their agreement with
        // the kernel is the caller's contract.
        unsafe { cu!(cuGraphExecKernelNodeSetParams_v2(self.exec, exec_node, &p)) }
    }

    /// The kernel nodes' handles, listed once per recording.
    fn kernel_handles(&self) -> Result<KernelHandles> {
        let mut cached = self.kernels.lock();
        if let Some(handles) = cached.as_ref() {
            return Ok(handles.clone());
        }
        let current = kernel_nodes_of(self.graph)?;
        let origin = if self.origin == self.graph {
            current.clone()
        } else {
            kernel_nodes_of(self.origin)?
        };
        let handles = KernelHandles { current, origin };
        *cached = Some(handles.clone());
        Ok(handles)
    }

    /// Destroys the recorded graphs (the exec must no longer need them).
    ///
    /// # Safety
    /// `graph` and `origin` must not be used afterwards.
    unsafe fn destroy_graphs(&mut self) {
        // SAFETY: both are graphs of this value, destroyed once (the same handle only once).
        unsafe {
            if self.graph != self.origin {
                let _ = sys::cuGraphDestroy(self.graph);
            }
            let _ = sys::cuGraphDestroy(self.origin);
        }
    }

    /// Makes the home stream wait for the work queued on `stream` so far.
    fn order_home_after(&self, stream: &Stream) -> Result<()> {
        let mut fence = self.fence.lock();
        let event = match *fence {
            Some(e) => e,
            None => {
                let mut e = ptr::null_mut();
                let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
                // SAFETY: writes one event handle; the context is current. Destroyed in Drop.
                unsafe { cu!(cuEventCreate(&mut e, flags))? };
                *fence = Some(e);
                e
            }
        };
        // SAFETY: the event and both streams are live.
        unsafe {
            cu!(cuEventRecord(event, stream.raw()))?;
            cu!(cuStreamWaitEvent(self.home, event, 0))
        }
    }
}

/// The kernel nodes of the latest recording (parameters) and of the instantiated one (the exec's
/// node identities), index for index.
#[derive(Clone, Debug)]
struct KernelHandles {
    current: Vec<sys::CUgraphNode>,
    origin: Vec<sys::CUgraphNode>,
}

/// A graph's kernel nodes in the order the graph lists them.
fn kernel_nodes_of(graph: sys::CUgraph) -> Result<Vec<sys::CUgraphNode>> {
    let mut n = 0usize;
    // SAFETY: with a NULL node array the driver writes only the count.
    unsafe { cu!(cuGraphGetNodes(graph, ptr::null_mut(), &mut n))? };
    let mut all = vec![ptr::null_mut(); n];
    // SAFETY: the array holds `n` nodes; the driver writes at most that many and the count.
    unsafe { cu!(cuGraphGetNodes(graph, all.as_mut_ptr(), &mut n))? };
    all.truncate(n);
    let mut kernels = Vec::new();
    for node in all {
        let mut ty = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: the node is live; writes one enum.
        unsafe { cu!(cuGraphNodeGetType(node, &mut ty))? };
        if ty == sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            kernels.push(node);
        }
    }
    Ok(kernels)
}

fn instantiate_exec(graph: sys::CUgraph) -> Result<sys::CUgraphExec> {
    instantiate_exec_with(graph, 0)
}

fn instantiate_exec_with(graph: sys::CUgraph, flags: u64) -> Result<sys::CUgraphExec> {
    let mut exec = ptr::null_mut();
    // SAFETY: writes one CUgraphExec through a valid pointer; `graph` is a live graph.
    unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, flags)) }
        .map_err(|e| explain(e, "instantiating the graph"))?;
    Ok(exec)
}
fn node_params(node: sys::CUgraphNode) -> Result<sys::CUDA_KERNEL_NODE_PARAMS> {
    let mut p = sys::CUDA_KERNEL_NODE_PARAMS::default();
    // SAFETY: the node is a live kernel node; writes one parameter struct.
    unsafe { cu!(cuGraphKernelNodeGetParams_v2(node, &mut p))? };
    Ok(p)
}

/// The driver's reason for refusing an in-place update, in words.
fn update_refusal(result: sys::CUgraphExecUpdateResult) -> &'static str {
    use sys::CUgraphExecUpdateResult as R;
    match result {
        R::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => "the graph's nodes or edges changed",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => "a node's type changed",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => "a kernel node runs another function",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
            "a node's parameters changed in a way that cannot be patched"
        }
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => "a node's change is not supported by in-place updates",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => "a kernel changed in a way that cannot be patched",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => "a node's attributes changed",
        _ => "the driver refused the update",
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: the handles were created for this value and are destroyed once; the driver
        // frees an exec with launches in flight when they finish.
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            self.destroy_graphs();
            if let Some(e) = self.fence.get_mut().take() {
                let _ = sys::cuEventDestroy_v2(e);
            }
        }
        // `kept` drops now: its memory goes back to the pool in home-stream order, after every
        // launch (launches on other streams were ordered before it in `launch`).
    }
}
