//! The kernel profiler: every launch cudrv makes in a context (launch builder, registry kernels,
//! `ops`, BLAS) timed on the GPU with a pair of events, keyed by kernel name, with no wait on the
//! launch path; [`Profiler::report`] waits for the timed launches and gives per-kernel figures,
//! flags and advice, as a table, JSON or a Chrome trace.
//!
//! Off (the default, unless `CUDRV_PROFILE` is set when the context is made) it costs one
//! relaxed atomic load per launch. On, two `cuEventRecord`s per timed launch (events are
//! reused): every launch by default (`CUDRV_PROFILE=1`), or each kernel's first few and then
//! one in `N` ([`Sampling::OneIn`], `CUDRV_PROFILE=1/N`), which divides the host cost by about
//! `N`. Launches recorded into a graph capture are not timed (a captured event cannot be
//! waited on). Memory stays bounded in a long run: finished launches are read back every
//! thousand or so, each kernel keeps running figures ([`KEPT`] durations for its
//! percentiles), and the trace keeps the last [`DEFAULT_TRACE_CAPACITY`] launches.
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
mod sampling;
pub(crate) mod scope;
mod stats;
mod tally;

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

pub use report::Report;
pub use sampling::{Sampling, FIRST_TIMED};
pub use stats::{summarize, Flag, KernelStats, Sample, HIGH_CV, OUTLIER_FACTOR, SLOW_US};
pub use tally::KEPT;

use tally::Tally;

use crate::selftest::Rng;

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
    /// Its start and end events, when it is timed.
    events: Option<(sys::CUevent, sys::CUevent)>,
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

/// A timed launch whose events the report has not read yet.
struct Pending {
    /// Its kernel's index in `State::kernels`.
    key: usize,
    stream: u64,
    /// The operation's work, when this launch carries it.
    flops: f64,
    bytes: f64,
    start: sys::CUevent,
    end: sys::CUevent,
}

/// A kernel's figures so far, under its report name.
struct Kernel {
    name: String,
    tally: Tally,
    /// Its last timed launch (for the occupancy and grid advice).
    shape: Option<(Function, LaunchConfig)>,
}

/// Timed launches read back in one go, at most, before the launch path reads the finished
/// ones (keeps the events and the pending list bounded in a long run).
const HARVEST_EVERY: usize = 1024;

/// Timed launches kept for [`Report::samples`] (the trace) by default.
///
/// ```
/// assert_eq!(cudrv::profile::DEFAULT_TRACE_CAPACITY, 100_000);
/// ```
pub const DEFAULT_TRACE_CAPACITY: usize = 100_000;

struct State {
    /// Recorded when profiling was switched on: the trace's time zero.
    origin: Option<sys::CUevent>,
    pending: VecDeque<Pending>,
    /// The pending length at which the launch path next reads finished launches.
    harvest_at: usize,
    index: HashMap<String, usize>,
    kernels: Vec<Kernel>,
    /// The last `trace_capacity` timed launches.
    trace: VecDeque<Sample>,
    trace_capacity: usize,
    /// Timed launches that left the trace window (still in their kernel's figures).
    dropped: u64,
    sampling: Sampling,
    /// Which launches `Sampling::OneIn` times.
    rng: Rng,
    spare: Vec<sys::CUevent>,
    /// Counts [`Profiler::clear`]s: a launch begun before one is not counted after it (its
    /// kernel index means nothing any more).
    generation: u64,
}

impl Default for State {
    fn default() -> State {
        State {
            origin: None,
            pending: VecDeque::new(),
            harvest_at: HARVEST_EVERY,
            index: HashMap::new(),
            kernels: Vec::new(),
            trace: VecDeque::new(),
            trace_capacity: DEFAULT_TRACE_CAPACITY,
            dropped: 0,
            sampling: Sampling::Every,
            rng: Rng::new(0),
            spare: Vec::new(),
            generation: 0,
        }
    }
}

impl State {
    /// The index of the kernel `function` is reported under (inside `op`: "label / name").
    fn key(&mut self, function: &Function, op: Option<&scope::Op>) -> usize {
        // A plain launch is looked up by the kernel's name without building a string.
        if op.is_none() {
            if let Some(&i) = self.index.get(function.name()) {
                return i;
            }
        }
        let name = match op {
            Some(op) => format!("{} / {}", op.label, function.name()),
            None => function.name().to_string(),
        };
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        self.kernels.push(Kernel {
            name: name.clone(),
            tally: Tally::default(),
            shape: None,
        });
        self.index.insert(name, self.kernels.len() - 1);
        self.kernels.len() - 1
    }

    /// Reads the pending launches in launch order: all of them (`wait`), or up to the first the
    /// GPU has not finished. The first error stops the reading and leaves the rest pending.
    fn harvest(&mut self, wait: bool) -> Result<()> {
        while let Some(p) = self.pending.front() {
            let (mut ms, mut since) = (0.0f32, 0.0f32);
            if wait {
                // SAFETY: the event is live and recorded.
                unsafe { cu!(cuEventSynchronize(p.end))? };
            }
            // SAFETY: the events are live and were recorded (end after start) on one stream.
            // Not finished yet, it answers NOT_READY (one driver call where a query and then
            // the reading were two: on the launch path each costs about a microsecond).
            let code = unsafe { sys::cuEventElapsedTime(&mut ms, p.start, p.end) };
            if code == sys::CUresult::CUDA_ERROR_NOT_READY {
                break;
            }
            crate::driver::check(code, "cuEventElapsedTime")?;
            // The trace's start time (a second call: only for a launch the trace keeps).
            if let (Some(o), true) = (self.origin, self.trace_capacity > 0) {
                // SAFETY: both events are live and recorded in this context.
                let _ = unsafe { cu!(cuEventElapsedTime(&mut since, o, p.start)) };
            }
            let Some(p) = self.pending.pop_front() else { break };
            self.spare.extend([p.start, p.end]);
            let duration_us = f64::from(ms) * 1e3;
            let kernel = &mut self.kernels[p.key];
            kernel.tally.add(duration_us, p.flops, p.bytes);
            if self.trace_capacity == 0 {
                self.dropped += 1;
                continue;
            }
            let name = kernel.name.clone();
            self.trim_trace(self.trace_capacity - 1);
            self.trace.push_back(Sample {
                name,
                stream: p.stream,
                start_us: f64::from(since) * 1e3,
                duration_us,
                flops: p.flops,
                bytes: p.bytes,
            });
        }
        Ok(())
    }

    /// Drops the oldest launches of the trace beyond `keep`, counting them.
    fn trim_trace(&mut self, keep: usize) {
        while self.trace.len() > keep {
            self.trace.pop_front();
            self.dropped += 1;
        }
    }

    /// Every kernel's figures (those timed at least once), most total time first.
    fn kernel_stats(&self) -> Vec<KernelStats> {
        let mut out: Vec<KernelStats> = self
            .kernels
            .iter()
            .filter(|k| k.tally.count > 0)
            .map(|k| {
                let mut stats = KernelStats::from_tally(&k.name, &k.tally);
                if let Some((f, cfg)) = &k.shape {
                    advise(&mut stats, f, cfg);
                }
                stats
            })
            .collect();
        out.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
        out
    }
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
        state.harvest(false)?;
        Ok(state.kernel_stats())
    }

    /// Reads the pending launches (all of them, waiting, or those already finished).
    fn collect(&self, wait: bool) -> Result<Report> {
        let mut state = self.state.lock();
        bind_raw(self.ctx)?;
        state.harvest(wait)?;
        Ok(Report {
            kernels: state.kernel_stats(),
            samples: state.trace.iter().cloned().collect(),
            dropped_samples: state.dropped,
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
        state.harvest(true)?;
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
        if !state.sampling.times(launches, random) {
            return Some(Begun {
                key,
                generation,
                flops,
                bytes,
                events: None,
            });
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
        Some(Begun {
            key,
            generation,
            flops,
            bytes,
            events: Some((start, end)),
        })
    }

    /// After a successful launch: records its end event and keeps the pair for the report;
    /// every [`HARVEST_EVERY`] timed launches, reads those the GPU has finished.
    #[inline]
    pub(crate) fn end(&self, begun: Begun, function: &Function, config: &LaunchConfig, stream: &Stream) {
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
        let kernel = &mut state.kernels[begun.key];
        let same = kernel
            .shape
            .as_ref()
            .is_some_and(|(f, c)| f.raw() == function.raw() && c == config);
        if !same {
            kernel.shape = Some((function.clone(), *config));
        }
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
            let _ = state.harvest(false);
            state.harvest_at = state.pending.len() + HARVEST_EVERY;
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
