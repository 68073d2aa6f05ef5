//! The kernel profiler: every launch cudrv makes in a context (launch builder, registry kernels,
//! `ops`, BLAS) timed on the GPU with a pair of events, keyed by kernel name, with no wait on the
//! launch path; [`Profiler::report`] waits for the timed launches and gives per-kernel figures,
//! flags and advice, as a table, JSON or a Chrome trace.
//!
//! Off (the default, unless `CUDRV_PROFILE=1` when the context is made) it costs one relaxed
//! atomic load per launch. On, two `cuEventRecord`s per launch (events are reused). Launches
//! recorded into a graph capture are not timed (a captured event cannot be waited on).
//!
//! ```no_run
//! use cudrv::{ops, DeviceBuffer};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! ctx.profiler().enable()?;
//! let mut x = DeviceBuffer::from_slice(&stream, &vec![1.0f32; 1 << 20])?;
//! for _ in 0..100 {
//!     ops::scale_in_place(&mut x, 1.001)?;
//! }
//! let report = ctx.profiler().report()?;
//! print!("{}", report.table());
//! std::fs::write("trace.json", report.chrome_trace()).unwrap(); // open in ui.perfetto.dev
//! # Ok::<(), cudrv::Error>(())
//! ```

mod report;
pub(crate) mod scope;
mod stats;

use std::collections::HashMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

pub use report::Report;
pub use stats::{summarize, Flag, KernelStats, Sample, HIGH_CV, OUTLIER_FACTOR, SLOW_US};

use crate::context::bind_raw;
use crate::driver::cu;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::module::Function;
use crate::stream::Stream;
use crate::sys;

/// `CUDRV_PROFILE=1` switches profiling on for every context as it is made.
pub const PROFILE_ENV: &str = "CUDRV_PROFILE";

/// A launch whose end has not been recorded yet.
pub(crate) struct Begun {
    start: sys::CUevent,
    end: sys::CUevent,
}

/// Adds the occupancy and grid advice for a kernel's last launch `cfg` of `f`.
fn advise(k: &mut KernelStats, f: &Function, cfg: &LaunchConfig) {
    use crate::sys::CUdevice_attribute as A;
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    let threads = b.0 * b.1 * b.2;
    let smem = cfg.shared_mem_bytes as usize;
    let Ok(blocks) = f.max_active_blocks_per_multiprocessor(threads, smem) else {
        return;
    };
    let device = f.context().device();
    let Ok(per_sm) = device.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) else {
        return;
    };
    // The suggestion for the launch's own dynamic shared memory (the kernel may size it by the
    // block; then the suggestion is only a hint).
    let better = f.max_potential_block_size(smem).ok().and_then(|(_, suggested)| {
        let keeps = f.max_active_blocks_per_multiprocessor(suggested, smem).ok()? * suggested;
        (suggested != threads).then_some((suggested, keeps))
    });
    k.judge_launch(
        [g.0, g.1, g.2],
        [b.0, b.1, b.2],
        (blocks * threads, per_sm.max(1) as u32),
        better,
        f.context().limits().multiprocessor_count,
    );
}

/// Whether the GPU has reached `event` (an error counts as reached: reading it reports it).
fn finished(event: sys::CUevent) -> bool {
    // SAFETY: the event is live.
    let code = unsafe { sys::cuEventQuery(event) };
    code != sys::CUresult::CUDA_ERROR_NOT_READY
}

/// A timed launch whose events the report has not read yet.
struct Pending {
    function: Function,
    config: LaunchConfig,
    /// The operation the launch belongs to (BLAS), if any.
    op: Option<Arc<scope::Op>>,
    /// Whether this launch carries the operation's work (its first launch does).
    credit: bool,
    stream: u64,
    start: sys::CUevent,
    end: sys::CUevent,
}

#[derive(Default)]
struct State {
    /// Recorded when profiling was switched on: the trace's time zero.
    origin: Option<sys::CUevent>,
    pending: Vec<Pending>,
    done: Vec<Sample>,
    /// Each key's last launch (for the occupancy and grid advice).
    shapes: HashMap<String, (Function, LaunchConfig)>,
    spare: Vec<sys::CUevent>,
}

/// A context's kernel profiler ([`crate::Context::profiler`]).
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// assert!(!ctx.profiler().enabled() || std::env::var("CUDRV_PROFILE").is_ok());
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct Profiler {
    ctx: sys::CUcontext,
    on: AtomicBool,
    state: Mutex<State>,
}

// SAFETY: the event handles are only used under the mutex; CUDA handles may be used from any thread.
unsafe impl Send for Profiler {}
// SAFETY: as above.
unsafe impl Sync for Profiler {}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler")
            .field("enabled", &self.enabled())
            .finish_non_exhaustive()
    }
}

impl Profiler {
    pub(crate) fn new(ctx: sys::CUcontext) -> Profiler {
        Profiler {
            ctx,
            on: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        }
    }

    /// Whether launches are being timed.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().disable();
    /// assert!(!ctx.profiler().enabled());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts timing launches (the trace's time zero is now).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// assert!(ctx.profiler().enabled());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn enable(&self) -> Result<()> {
        let mut state = self.state.lock();
        if state.origin.is_none() {
            let origin = self.event(&mut state)?;
            // SAFETY: the event is live; the NULL stream of the current context.
            unsafe { cu!(cuEventRecord(origin, ptr::null_mut()))? };
            state.origin = Some(origin);
        }
        self.on.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Stops timing launches; what was timed stays for [`Profiler::report`].
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().disable();
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn disable(&self) {
        self.on.store(false, Ordering::Relaxed);
    }

    /// Waits for the launches timed so far and returns every timed launch's figures (those of
    /// earlier reports included, until [`Profiler::clear`]).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// let r = ctx.profiler().report()?;
    /// assert!(r.kernels.is_empty()); // nothing ran: an empty report, not an error
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn report(&self) -> Result<Report> {
        self.collect(true)
    }

    /// Like [`Profiler::report`], without waiting: the launches whose end the GPU has reached;
    /// those still queued or running are read by a later call (the device monitor's view).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// let so_far = ctx.profiler().finished()?;
    /// assert!(so_far.samples.len() <= ctx.profiler().report()?.samples.len());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn finished(&self) -> Result<Report> {
        self.collect(false)
    }

    /// Reads the pending launches' events (all of them, waiting, or those already finished).
    fn collect(&self, wait: bool) -> Result<Report> {
        let mut state = self.state.lock();
        bind_raw(self.ctx)?;
        let pending = std::mem::take(&mut state.pending);
        let origin = state.origin;
        let mut first_error = None;
        for p in pending {
            if first_error.is_some() || (!wait && !finished(p.end)) {
                state.pending.push(p);
                continue;
            }
            let mut ms = 0.0f32;
            let mut since = 0.0f32;
            // SAFETY: the events are live and were recorded (end after start) on one stream.
            let timed = unsafe {
                cu!(cuEventSynchronize(p.end)).and_then(|()| cu!(cuEventElapsedTime(&mut ms, p.start, p.end)))
            };
            if let Some(o) = origin {
                // SAFETY: both events are live and recorded in this context.
                let _ = unsafe { cu!(cuEventElapsedTime(&mut since, o, p.start)) };
            }
            state.spare.push(p.start);
            state.spare.push(p.end);
            let name = match &p.op {
                Some(op) => format!("{} / {}", op.label, p.function.name()),
                None => p.function.name().to_string(),
            };
            match timed {
                Ok(()) => {
                    state.done.push(Sample {
                        name: name.clone(),
                        stream: p.stream,
                        start_us: since as f64 * 1e3,
                        duration_us: ms as f64 * 1e3,
                        flops: p.op.as_ref().filter(|_| p.credit).map_or(0.0, |op| op.flops),
                        bytes: p.op.as_ref().filter(|_| p.credit).map_or(0.0, |op| op.bytes),
                    });
                    state.shapes.insert(name, (p.function, p.config));
                }
                Err(e) => first_error = Some(e),
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let mut report = Report::from_samples(state.done.clone());
        for k in &mut report.kernels {
            if let Some((f, cfg)) = state.shapes.get(&k.name) {
                advise(k, f, cfg);
            }
        }
        Ok(report)
    }

    /// Forgets the launches timed so far.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().clear()?;
    /// assert!(ctx.profiler().report()?.samples.is_empty());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn clear(&self) -> Result<()> {
        self.report()?;
        let mut state = self.state.lock();
        state.done.clear();
        state.shapes.clear();
        Ok(())
    }

    /// Before a launch on `stream`: records its start event (`None` when the profiler is off, or
    /// the stream is capturing a graph).
    #[inline]
    pub(crate) fn begin(&self, stream: &Stream) -> Option<Begun> {
        if !self.enabled() || stream.is_capturing() {
            return None;
        }
        let mut state = self.state.lock();
        let start = self.event(&mut state).ok()?;
        let end = match self.event(&mut state) {
            Ok(e) => e,
            Err(_) => {
                state.spare.push(start);
                return None;
            }
        };
        // SAFETY: the event and the stream are live.
        if unsafe { cu!(cuEventRecord(start, stream.raw())) }.is_err() {
            state.spare.extend([start, end]);
            return None;
        }
        Some(Begun { start, end })
    }

    /// After a successful launch: records its end event and keeps the pair for the report.
    #[inline]
    pub(crate) fn end(&self, begun: Begun, function: &Function, config: &LaunchConfig, stream: &Stream) {
        let mut state = self.state.lock();
        // SAFETY: the event and the stream are live.
        if unsafe { cu!(cuEventRecord(begun.end, stream.raw())) }.is_err() {
            state.spare.extend([begun.start, begun.end]);
            return;
        }
        let op = scope::current();
        let credit = op.as_ref().is_some_and(|o| !o.credited.swap(true, Ordering::Relaxed));
        state.pending.push(Pending {
            function: function.clone(),
            config: *config,
            op,
            credit,
            stream: stream.raw() as u64,
            start: begun.start,
            end: begun.end,
        });
    }

    /// After a failed launch: the events go back.
    pub(crate) fn abandon(&self, begun: Begun) {
        self.state.lock().spare.extend([begun.start, begun.end]);
    }

    /// A timing event, reused or new.
    fn event(&self, state: &mut State) -> Result<sys::CUevent> {
        if let Some(e) = state.spare.pop() {
            return Ok(e);
        }
        bind_raw(self.ctx)?;
        let mut e = ptr::null_mut();
        // SAFETY: writes one event handle; the context is current. Destroyed in `release`.
        unsafe { cu!(cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT.0))? };
        Ok(e)
    }

    /// Destroys every event (the context is going away).
    pub(crate) fn release(&self) {
        let mut state = self.state.lock();
        let _ = bind_raw(self.ctx);
        let pending = std::mem::take(&mut state.pending);
        let origin = state.origin.take();
        let events = std::mem::take(&mut state.spare)
            .into_iter()
            .chain(origin)
            .chain(pending.iter().flat_map(|p| [p.start, p.end]))
            .collect::<Vec<_>>();
        for e in events {
            // SAFETY: each event was created by this profiler and is destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(e) };
        }
    }
}
