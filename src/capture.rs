//! Stream capture: recording the work queued on a stream into a graph, the memory the recorded
//! work goes on using, and errors that say what broke a capture.
//!
//! Rules, in the order they matter:
//! - A capture records work; nothing runs until the graph is launched. A call that must wait for
//!   the device (a copy to the host, a synchronize) cannot be recorded: the driver refuses it and
//!   the capture is spoiled. [`Stream::capture`] then ends the capture, throws the partial graph
//!   away and returns an [`Error::Capture`] that names the call; the stream is usable again.
//! - Device memory freed on the capturing stream while it records (a temporary dropped inside the
//!   closure) is still used by every launch of the graph, so it is not returned to the pool: the
//!   graph keeps it and gives it back when it is dropped, in stream order after its launches.
//! - Memory the graph uses but does not keep (buffers made before the capture) must outlive the
//!   graph's launches; the graph stores their addresses.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::driver::{check, cu};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::memory::buffer::{release, Allocation};
use crate::stream::Stream;
use crate::sys::{self, CUresult};

/// Memory freed on a stream while it was capturing: the captured work still uses it, so the
/// graph holds it and frees it (in the capturing stream's order) when the graph goes.
#[derive(Debug)]
pub(crate) struct KeptAllocation {
    pub(crate) stream: Arc<Stream>,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) alloc: Allocation,
}

impl Drop for KeptAllocation {
    fn drop(&mut self) {
        let alloc = std::mem::replace(&mut self.alloc, Allocation::None);
        release(&self.stream, self.ptr, alloc);
    }
}

/// A capture in progress on a stream: what it must hand to its graph.
#[derive(Debug, Default)]
pub(crate) struct CaptureState {
    pub(crate) kept: Vec<KeptAllocation>,
}

/// Ends a capture that did not finish (an error or a panic in the closure): the partial graph is
/// destroyed and the stream leaves capture mode.
struct AbortOnDrop<'a> {
    stream: &'a Stream,
    armed: bool,
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.stream.end_capture_raw();
        }
    }
}

impl Stream {
    /// Records the work `f` queues on this stream into a graph and instantiates it; nothing runs
    /// until [`Graph::launch`]. Buffers dropped inside `f` are kept by the graph.
    ///
    /// If `f` fails, panics, or makes a call that cannot be recorded (a copy to the host, a
    /// synchronize), the capture is ended and discarded, the stream is usable again, and the
    /// error ([`Error::Capture`]) names what went wrong.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 1024])?;
    /// let step = stream.capture(|_| {
    ///     for _ in 0..10 {
    ///         ops::scale_in_place(&mut x, 2.0)?;
    ///     }
    ///     Ok(())
    /// })?;
    /// step.launch(&stream)?; // ten kernels, one call
    /// assert_eq!(x.to_vec()?[0], 1024.0);
    /// // A call that waits for the device cannot be recorded: a clear error, a usable stream.
    /// let err = stream.capture(|_| x.to_vec().map(|_| ())).unwrap_err();
    /// assert!(err.to_string().contains("capture"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn capture<F>(&self, f: F) -> Result<Graph>
    where
        F: FnOnce(&Stream) -> Result<()>,
    {
        let (graph, kept) = self.record(f)?;
        Graph::instantiate(self.context().clone(), graph, kept, self)
    }

    /// Records `f` into an uninstantiated graph (the part of [`Stream::capture`] that
    /// [`Graph::update`] shares).
    pub(crate) fn record<F>(&self, f: F) -> Result<(sys::CUgraph, Vec<KeptAllocation>)>
    where
        F: FnOnce(&Stream) -> Result<()>,
    {
        self.begin_capture()?;
        let mut guard = AbortOnDrop {
            stream: self,
            armed: true,
        };
        let ran = f(self);
        guard.armed = false;
        let ended = self.end_capture_raw();
        match (ran, ended) {
            (Ok(()), Ok((graph, kept))) => Ok((graph, kept)),
            (Err(e), ended) => {
                if let Ok((graph, kept)) = ended {
                    // SAFETY: the graph came from this capture and nothing else refers to it.
                    let _ = unsafe { sys::cuGraphDestroy(graph) };
                    drop(kept);
                }
                Err(explain(e, "the closure's work"))
            }
            (Ok(()), Err(e)) => Err(explain(e, "ending the capture")),
        }
    }

    /// Starts capturing the work queued on this stream into a graph (thread-local mode: calls
    /// that would wait for the device are refused on this thread only). Prefer
    /// [`Stream::capture`], which also ends a capture that fails.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// stream.begin_capture()?;
    /// // ... queue kernels and copies on `stream` ...
    /// let graph = stream.end_capture()?;
    /// graph.launch(&stream)?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn begin_capture(&self) -> Result<()> {
        self.begin_capture_in(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    }

    /// [`Stream::begin_capture`] in another capture mode: `GLOBAL` refuses calls that would wait
    /// for the device on every thread while the capture lasts, `RELAXED` on none.
    ///
    /// ```no_run
    /// use cudrv::sys::CUstreamCaptureMode;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// stream.begin_capture_in(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
    /// let graph = stream.end_capture()?;
    /// # let _ = graph;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn begin_capture_in(&self, mode: sys::CUstreamCaptureMode) -> Result<()> {
        if self.is_per_thread() || self.raw().is_null() {
            return Err(Error::Capture {
                what: "beginning a capture".into(),
                reason: "the default (NULL) and per-thread streams cannot be captured; capture on a \
                         stream made with Context::new_stream"
                    .into(),
                source: None,
            });
        }
        let mut state = self.capture_state.lock();
        if state.is_some() {
            return Err(Error::Capture {
                what: "beginning a capture".into(),
                reason: "this stream is already capturing; end that capture first".into(),
                source: None,
            });
        }
        self.context().bind_to_thread()?;
        // SAFETY: the handle is live; the mode is a valid enumerator.
        unsafe { cu!(cuStreamBeginCapture_v2(self.raw(), mode)) }.map_err(|e| explain(e, "beginning a capture"))?;
        *state = Some(CaptureState::default());
        self.capturing.store(true, Ordering::Release);
        Ok(())
    }

    /// Ends the capture begun by [`Stream::begin_capture`] and instantiates the graph.
    ///
    /// ```no_run
    /// use cudrv::{ops, DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32; 4])?;
    /// stream.begin_capture()?;
    /// ops::scale_in_place(&mut x, 2.0)?; // recorded, not run
    /// let graph = stream.end_capture()?;
    /// for _ in 0..3 {
    ///     graph.launch(&stream)?;
    /// }
    /// assert_eq!(x.to_vec()?, vec![8.0; 4]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn end_capture(&self) -> Result<Graph> {
        self.end_capture_with(0)
    }

    /// [`Stream::end_capture`] with `cuGraphInstantiateWithFlags` flags (e.g. auto-free on
    /// launch, device launch).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// stream.begin_capture()?;
    /// let auto_free = cudrv::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
    /// let graph = stream.end_capture_with(auto_free.0 as u64)?;
    /// # let _ = graph;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn end_capture_with(&self, flags: u64) -> Result<Graph> {
        let (graph, kept) = self.end_capture_raw().map_err(|e| explain(e, "ending the capture"))?;
        Graph::instantiate_with(self.context().clone(), graph, kept, self, flags)
    }

    /// Whether a capture begun by cudrv is in progress on this stream.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// assert!(!stream.is_capturing());
    /// stream.begin_capture()?;
    /// assert!(stream.is_capturing());
    /// stream.end_capture()?;
    /// assert!(!stream.is_capturing());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn is_capturing(&self) -> bool {
        self.capturing.load(Ordering::Acquire)
    }

    /// Whether this stream's work is being recorded into a graph: a capture begun by cudrv, or
    /// one begun outside it (the driver's view). Work whose correctness depends on running once
    /// (a kernel that trusts a per-launch number) asks this.
    pub(crate) fn is_recorded(&self) -> bool {
        self.is_capturing() || crate::driver::stream_capturing(self.raw())
    }

    /// Ends the driver's capture and takes the capture state; the graph is destroyed if the
    /// capture failed. Always leaves the stream out of capture mode.
    fn end_capture_raw(&self) -> Result<(sys::CUgraph, Vec<KeptAllocation>)> {
        let state = self.capture_state.lock().take();
        self.capturing.store(false, Ordering::Release);
        let Some(state) = state else {
            return Err(Error::Capture {
                what: "ending a capture".into(),
                reason: "this stream is not capturing".into(),
                source: None,
            });
        };
        self.context().bind_to_thread()?;
        let mut graph = std::ptr::null_mut();
        // SAFETY: writes one CUgraph through a valid pointer; the handle is live. The driver ends
        // the capture whatever it returns.
        let code = unsafe { sys::resolve::cuStreamEndCapture()?(self.raw(), &mut graph) };
        if code != CUresult::CUDA_SUCCESS {
            if !graph.is_null() {
                // SAFETY: a graph handed back by a failed capture is ours to destroy.
                let _ = unsafe { sys::cuGraphDestroy(graph) };
            }
            // The kept memory was used only by work that will never run: free it now.
            drop(state);
            return Err(check(code, "cuStreamEndCapture").unwrap_err());
        }
        Ok((graph, state.kept))
    }

    /// Keeps memory freed on this stream while it captures (see the module rules); returns it
    /// back if the stream is not capturing after all.
    pub(crate) fn keep_for_capture(&self, kept: KeptAllocation) -> Option<KeptAllocation> {
        match self.capture_state.lock().as_mut() {
            Some(state) => {
                state.kept.push(kept);
                None
            }
            None => Some(kept),
        }
    }
}

/// Wraps an error raised while capturing in an [`Error::Capture`] that says what the driver's
/// capture codes mean.
pub(crate) fn explain(err: Error, what: &str) -> Error {
    if matches!(err, Error::Capture { .. }) {
        return err;
    }
    let reason = match err.driver_code().and_then(capture_reason) {
        Some(reason) => reason,
        None => "an operation recorded into the graph failed".into(),
    };
    Error::Capture {
        what: what.into(),
        reason,
        source: Some(Box::new(err)),
    }
}

/// What a capture-related `CUresult` means for the caller.
fn capture_reason(code: u32) -> Option<String> {
    use CUresult as R;
    let text = match code {
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.0 => {
            "a call that waits for the device (a copy to or from host memory, a synchronize, a \
             blocking allocation) was made during the capture; a capture can only record work. \
             Do it before or after the capture"
        }
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.0 => {
            "an earlier call spoiled the capture (one that waits for the device, or a failed \
             operation); the capture was discarded"
        }
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED.0 => {
            "work was forked onto another stream during the capture and not joined back (record \
             an event on that stream and make the capturing stream wait on it)"
        }
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION.0 => {
            "the capture depended on work outside it, or another stream waited on work inside it"
        }
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.0 => {
            "the legacy default (NULL) stream was used during the capture; it would wait for the \
             capturing stream"
        }
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_MERGE.0 => "two independent captures were merged",
        c if c == R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD.0 => {
            "the capture was ended on another thread than the one that began it"
        }
        c if c == R::CUDA_ERROR_CAPTURED_EVENT.0 => {
            "an event recorded during the capture was queried or waited on from the host"
        }
        _ => return None,
    };
    Some(text.into())
}
