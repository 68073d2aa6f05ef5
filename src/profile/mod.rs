//! The kernel profiler: every launch cudrv makes in a context (launch builder, registry kernels,
//! `ops`, BLAS) timed on the GPU, keyed by kernel name, with no wait on the launch path;
//! [`Profiler::report`] waits for the timed launches and gives per-kernel figures, flags and
//! advice, as a table, JSON or a Chrome trace.
//!
//! Off (the default, unless `CUDRV_PROFILE` is set when the context is made) it costs one
//! relaxed atomic load per launch. On, the times come from CUPTI's kernel records where
//! libcupti can be loaded ([`Timing::Cupti`]: the driver writes each kernel's start and end,
//! the launch path only notes the launch), or else from two `cuEventRecord`s per timed launch
//! ([`Timing::Events`]; events are reused). Every launch is timed by default
//! (`CUDRV_PROFILE=1`), or each kernel's first few and then one in `N` ([`Sampling::OneIn`],
//! `CUDRV_PROFILE=1/N`), which divides the events' host cost by about `N`. Launches recorded
//! into a graph capture are not timed. Memory stays bounded in a long run: finished launches
//! are read back every thousand or so, each kernel keeps running figures ([`KEPT`] durations
//! for its percentiles), and the trace keeps the last [`DEFAULT_TRACE_CAPACITY`] launches. A
//! kernel's `launches` minus its `count` are launches that were not timed (sampling, or a
//! record CUPTI dropped).
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

mod activity;
mod matching;
mod report;
mod sampling;
pub(crate) mod scope;
mod state;
mod stats;
mod tally;
mod timing;

use parking_lot::Mutex;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

pub use report::Report;
pub use sampling::{Sampling, FIRST_TIMED};
pub use stats::{summarize, Flag, KernelStats, Sample, HIGH_CV, OUTLIER_FACTOR, SLOW_US};
pub use tally::KEPT;
pub use timing::{Timing, TIMING_ENV};

use activity::Listener;
use matching::Expected;
use state::{Pending, State, HARVEST_EVERY};

use crate::context::bind_raw;
use crate::driver::cu;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::module::Function;
use crate::stream::Stream;
use crate::sys;

/// `CUDRV_PROFILE=1` switches profiling on for every context as it is made; `CUDRV_PROFILE=1/N`
/// times one launch in `N` ([`Sampling::parse`]).
pub const PROFILE_ENV: &str = "CUDRV_PROFILE";

/// A launch the profiler counted, whose end has not been recorded yet.
pub(crate) struct Begun {
    /// Its kernel's index in `State::kernels`, of generation `generation`.
    key: usize,
    generation: u64,
    /// The operation's work, when this launch carries it.
    flops: f64,
    bytes: f64,
    /// Its start and end events, when it is timed with events.
    events: Option<(sys::CUevent, sys::CUevent)>,
    /// CUPTI's id of its stream, when CUPTI times it.
    traced: Option<u32>,
}

/// Timed launches kept for [`Report::samples`] (the trace) by default.
///
/// ```
/// assert_eq!(cudrv::profile::DEFAULT_TRACE_CAPACITY, 100_000);
/// ```
pub const DEFAULT_TRACE_CAPACITY: usize = 100_000;

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
        if state.listener.is_none() && state.timing != Timing::Events {
            bind_raw(self.ctx)?;
            // SAFETY: the profiler's context is live while the profiler is.
            match unsafe { Listener::new(self.ctx) } {
                Ok(l) => state.listener = Some(l),
                Err(why) if state.timing == Timing::Cupti => {
                    return Err(crate::Error::InvalidArgument(format!("profiler timing cupti: {why}")));
                }
                Err(why) => state.no_cupti = Some(why),
            }
        }
        if let Some(l) = state.listener.as_mut() {
            if let Err(why) = l.start() {
                if state.timing == Timing::Cupti {
                    return Err(crate::Error::InvalidArgument(format!("profiler timing cupti: {why}")));
                }
                state.listener = None;
                state.no_cupti = Some(why);
            }
        }
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
        if let Some(l) = self.state.lock().listener.as_mut() {
            l.stop();
        }
    }

    /// Chooses how launches are timed from the next [`Profiler::enable`] on ([`Timing`];
    /// `CUDRV_PROFILE_TIMING` sets it for every context). Leaving CUPTI reads its records
    /// first.
    ///
    /// ```no_run
    /// use cudrv::profile::Timing;
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().set_timing(Timing::Events)?;
    /// ctx.profiler().enable()?;
    /// assert_eq!(ctx.profiler().timing(), Timing::Events);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_timing(&self, timing: Timing) -> Result<()> {
        let mut state = self.state.lock();
        state.timing = timing;
        if timing == Timing::Events && state.listener.is_some() {
            bind_raw(self.ctx)?;
            state.harvest(true, true)?;
            state.listener = None;
        }
        Ok(())
    }

    /// How launches are timed now: [`Timing::Cupti`] or [`Timing::Events`] (before the first
    /// [`Profiler::enable`], the setting asked for).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// println!("{:?} ({:?})", ctx.profiler().timing(), ctx.profiler().why_not_cupti());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn timing(&self) -> Timing {
        let state = self.state.lock();
        state.timed_with().unwrap_or(state.timing)
    }

    /// Why the profiler times with events where CUPTI was tried (libcupti absent, or its
    /// activity calls refused, e.g. under another tool that holds CUPTI).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert!(ctx.profiler().why_not_cupti().is_none()); // not tried before `enable`
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn why_not_cupti(&self) -> Option<String> {
        self.state.lock().no_cupti.clone()
    }

    /// Chooses which launches are timed from now on: every one (the default; two
    /// `cuEventRecord`s per launch, a few microseconds of host time on a VM), or one in `n` of
    /// each kernel's launches after its first [`FIRST_TIMED`] (the host cost divided by about
    /// `n`; counts stay exact, durations and rates are estimated from the timed launches).
    /// `CUDRV_PROFILE=1/N` sets `OneIn(N)` for every context.
    ///
    /// ```no_run
    /// use cudrv::profile::Sampling;
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().set_sampling(Sampling::OneIn(16));
    /// ctx.profiler().enable()?;
    /// assert_eq!(ctx.profiler().sampling(), Sampling::OneIn(16));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_sampling(&self, sampling: Sampling) {
        self.state.lock().sampling = sampling;
    }

    /// Which launches are timed.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// println!("{:?}", ctx.profiler().sampling());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn sampling(&self) -> Sampling {
        self.state.lock().sampling
    }

    /// Keeps the last `capacity` timed launches for [`Report::samples`] and the trace (default
    /// [`DEFAULT_TRACE_CAPACITY`]); older ones leave the trace but stay in their kernel's
    /// figures, and [`Report::dropped_samples`] counts them. The profiler's memory is bounded
    /// by this and by [`KEPT`] durations per kernel, however long it runs.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().set_trace_capacity(1000);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn set_trace_capacity(&self, capacity: usize) {
        let mut state = self.state.lock();
        state.trace_capacity = capacity;
        state.trim_trace(capacity);
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

    /// Like [`Profiler::report`], without waiting: the launches the GPU has finished, in launch
    /// order up to the first one still queued or running (read by a later call).
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

    /// The per-kernel figures of [`Profiler::finished`] without the launches themselves: what
    /// a monitor polls (no copy of the trace).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().enable()?;
    /// assert!(ctx.profiler().kernel_stats()?.is_empty());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel_stats(&self) -> Result<Vec<KernelStats>> {
        let mut state = self.state.lock();
        bind_raw(self.ctx)?;
        state.harvest(false, true)?;
        Ok(state.kernel_stats())
    }

    /// Reads the pending launches (all of them, waiting, or those already finished).
    fn collect(&self, wait: bool) -> Result<Report> {
        let mut state = self.state.lock();
        bind_raw(self.ctx)?;
        state.harvest(wait, true)?;
        Ok(Report {
            kernels: state.kernel_stats(),
            samples: state.trace.iter().cloned().collect(),
            dropped_samples: state.dropped,
            timing: state.timed_with(),
            why_not_cupti: state.no_cupti.clone(),
        })
    }

    /// Waits for the launches timed so far, then forgets every figure.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// ctx.profiler().clear()?;
    /// assert!(ctx.profiler().report()?.samples.is_empty());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn clear(&self) -> Result<()> {
        let mut state = self.state.lock();
        bind_raw(self.ctx)?;
        state.harvest(true, true)?;
        state.expecting.clear();
        state.kernels.clear();
        state.index.clear();
        state.trace.clear();
        state.dropped = 0;
        state.generation += 1;
        Ok(())
    }

    /// Before a launch of `function` on `stream`: counts it and, if it is to be timed, records
    /// its start event. `None` when the profiler is off or the stream is capturing a graph (a
    /// captured event cannot be waited on).
    #[inline]
    pub(crate) fn begin(&self, stream: &Stream, function: &Function) -> Option<Begun> {
        if !self.enabled() || stream.is_capturing() {
            return None;
        }
        let op = scope::current();
        // The operation's work goes with its first launch (a split product's reduction, for
        // one, carries none).
        let credit = op.as_ref().is_some_and(|o| !o.credited.swap(true, Ordering::Relaxed));
        let (flops, bytes) = match (&op, credit) {
            (Some(o), true) => (o.flops, o.bytes),
            _ => (0.0, 0.0),
        };
        let mut state = self.state.lock();
        let key = state.key(function, op.as_deref());
        let launches = {
            let t = &mut state.kernels[key].tally;
            t.launches += 1;
            t.launches
        };
        let random = state.rng.next_u64();
        let generation = state.generation;
        let timed = state.sampling.times(launches, random);
        let begun = |events, traced| Begun {
            key,
            generation,
            flops,
            bytes,
            events,
            traced,
        };
        if let Some(l) = state.listener.as_ref() {
            let id = match stream.cupti_id.get() {
                Some(&id) => Some(id),
                None => {
                    // SAFETY: the context and the stream are live.
                    let id = unsafe { l.stream_id(self.ctx, stream.raw(), stream.is_per_thread()) }.ok();
                    if let (Some(id), false) = (id, stream.is_per_thread()) {
                        let _ = stream.cupti_id.set(id);
                    }
                    id
                }
            };
            let function = state.kernels[key].function;
            if let Some(id) = id {
                state.expecting.push(
                    id,
                    Expected {
                        key,
                        name: function,
                        timed,
                        stream: stream.raw() as u64,
                        flops,
                        bytes,
                    },
                );
            }
            return Some(begun(None, id));
        }
        if !timed {
            return Some(begun(None, None));
        }
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
        Some(begun(Some((start, end)), None))
    }

    /// After a successful launch: records its end event and keeps the pair for the report;
    /// every [`HARVEST_EVERY`] timed launches, reads those the GPU has finished.
    #[inline]
    pub(crate) fn end(&self, begun: Begun, function: &Function, config: &LaunchConfig, stream: &Stream) {
        if begun.traced.is_some() {
            self.end_traced(begun, function, config);
            return;
        }
        let Some((start, end)) = begun.events else {
            return;
        };
        let mut state = self.state.lock();
        // A clear since the launch began forgot its kernel: the launch is not counted.
        if begun.generation != state.generation {
            state.spare.extend([start, end]);
            return;
        }
        // SAFETY: the event and the stream are live.
        if unsafe { cu!(cuEventRecord(end, stream.raw())) }.is_err() {
            state.spare.extend([start, end]);
            return;
        }
        state.kernels[begun.key].note_shape(function, config);
        state.pending.push_back(Pending {
            key: begun.key,
            stream: stream.raw() as u64,
            flops: begun.flops,
            bytes: begun.bytes,
            start,
            end,
        });
        if state.pending.len() >= state.harvest_at {
            // An error here stays pending and is reported by the next report.
            let _ = state.harvest_events(false);
            state.harvest_at = state.pending.len() + HARVEST_EVERY;
        }
    }

    /// After a successful launch CUPTI times: notes its shape for the advice and, every
    /// [`HARVEST_EVERY`] launches, matches the records CUPTI has handed over (no flush).
    fn end_traced(&self, begun: Begun, function: &Function, config: &LaunchConfig) {
        let mut state = self.state.lock();
        if begun.generation != state.generation {
            return;
        }
        state.kernels[begun.key].note_shape(function, config);
        state.since_harvest += 1;
        if state.since_harvest >= HARVEST_EVERY {
            state.since_harvest = 0;
            let _ = state.harvest_records(false, false);
        }
    }

    /// After a failed launch: the events go back and the launch is not counted.
    pub(crate) fn abandon(&self, begun: Begun) {
        let mut state = self.state.lock();
        if begun.generation == state.generation {
            if let Some(k) = state.kernels.get_mut(begun.key) {
                k.tally.launches = k.tally.launches.saturating_sub(1);
            }
        }
        if let Some((start, end)) = begun.events {
            state.spare.extend([start, end]);
        }
        if let (Some(id), true) = (begun.traced, begun.generation == state.generation) {
            state.expecting.withdraw(id, begun.key);
        }
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
        state.listener = None;
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
