//! The profiler's state behind its lock: each kernel's figures, the launches waiting for their
//! times (event pairs, or CUPTI records to match), and the trace; and the reading of finished
//! launches into them.

use std::collections::{HashMap, VecDeque};

use super::activity::Listener;
use super::matching::{name_hash, Expecting, Outcome};
use super::scope;
use super::stats::{KernelStats, Sample};
use super::tally::Tally;
use super::{Sampling, Timing, DEFAULT_TRACE_CAPACITY};
use crate::driver::cu;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::module::Function;
use crate::selftest::Rng;
use crate::sys;

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
pub(super) struct Pending {
    /// Its kernel's index in `State::kernels`.
    pub(super) key: usize,
    pub(super) stream: u64,
    /// The operation's work, when this launch carries it.
    pub(super) flops: f64,
    pub(super) bytes: f64,
    pub(super) start: sys::CUevent,
    pub(super) end: sys::CUevent,
}

/// A kernel's figures so far, under its report name.
pub(super) struct Kernel {
    pub(super) name: String,
    /// Its function's name, hashed as CUPTI's records are matched.
    pub(super) function: u64,
    pub(super) tally: Tally,
    /// Its last timed launch (for the occupancy and grid advice).
    pub(super) shape: Option<(Function, LaunchConfig)>,
}

impl Kernel {
    /// Keeps `function` and `config` as the kernel's last launch (for the advice).
    pub(super) fn note_shape(&mut self, function: &Function, config: &LaunchConfig) {
        let same = self
            .shape
            .as_ref()
            .is_some_and(|(f, c)| f.raw() == function.raw() && c == config);
        if !same {
            self.shape = Some((function.clone(), *config));
        }
    }
}

/// Timed launches read back in one go, at most, before the launch path reads the finished
/// ones (keeps the events and the pending list bounded in a long run).
pub(super) const HARVEST_EVERY: usize = 1024;

pub(super) struct State {
    /// Recorded when profiling was switched on: the trace's time zero.
    pub(super) origin: Option<sys::CUevent>,
    pub(super) pending: VecDeque<Pending>,
    /// The pending length at which the launch path next reads finished launches.
    pub(super) harvest_at: usize,
    pub(super) index: HashMap<String, usize>,
    pub(super) kernels: Vec<Kernel>,
    /// The last `trace_capacity` timed launches.
    pub(super) trace: VecDeque<Sample>,
    pub(super) trace_capacity: usize,
    /// Timed launches that left the trace window (still in their kernel's figures).
    pub(super) dropped: u64,
    pub(super) sampling: Sampling,
    /// Which launches `Sampling::OneIn` times.
    pub(super) rng: Rng,
    pub(super) spare: Vec<sys::CUevent>,
    /// The timing asked for ([`Profiler::set_timing`]).
    pub(super) timing: Timing,
    /// Why CUPTI is not timing launches, when it was tried and failed.
    pub(super) no_cupti: Option<String>,
    /// CUPTI's records of this context, when CUPTI times the launches.
    pub(super) listener: Option<Listener>,
    /// Launches waiting for their CUPTI record.
    pub(super) expecting: Expecting,
    /// Launches CUPTI times since the launch path last read its records.
    pub(super) since_harvest: usize,
    /// Counts [`Profiler::clear`]s: a launch begun before one is not counted after it (its
    /// kernel index means nothing any more).
    pub(super) generation: u64,
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
            timing: Timing::from_env(),
            no_cupti: None,
            listener: None,
            expecting: Expecting::default(),
            since_harvest: 0,
            generation: 0,
        }
    }
}

impl State {
    /// How launches are being timed: CUPTI's records while the listener runs, else event pairs
    /// once the profiler was enabled; `None` before that.
    pub(super) fn timed_with(&self) -> Option<Timing> {
        match (&self.listener, self.origin.is_some()) {
            (Some(_), _) => Some(Timing::Cupti),
            (None, true) => Some(Timing::Events),
            (None, false) => None,
        }
    }

    /// The index of the kernel `function` is reported under (inside `op`: "label / name").
    pub(super) fn key(&mut self, function: &Function, op: Option<&scope::Op>) -> usize {
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
            function: name_hash(function.name().as_bytes()),
            tally: Tally::default(),
            shape: None,
        });
        self.index.insert(name, self.kernels.len() - 1);
        self.kernels.len() - 1
    }

    /// Reads the timed launches: all of them (`wait`), or those the GPU has finished and (with
    /// `flush`) CUPTI has handed over.
    pub(super) fn harvest(&mut self, wait: bool, flush: bool) -> Result<()> {
        self.harvest_events(wait)?;
        if self.listener.is_some() {
            self.harvest_records(wait, flush)?;
        }
        Ok(())
    }

    /// Takes CUPTI's records of this context and matches them to the launches. Waiting, the
    /// context is synchronized first and launches left without a record are given up.
    pub(super) fn harvest_records(&mut self, wait: bool, flush: bool) -> Result<()> {
        let Some(l) = self.listener.as_ref() else {
            return Ok(());
        };
        let mut out = Outcome::default();
        if wait && self.expecting.len() > 0 {
            // SAFETY: no arguments; the caller made the profiler's context current.
            unsafe { cu!(cuCtxSynchronize())? };
        }
        if (wait || flush) && self.expecting.len() > 0 {
            let _ = l.flush(false);
        }
        self.expecting.take(l.take(), &mut out);
        if wait && self.expecting.len() > 0 {
            // Everything has run: the buffers still filling hold the rest.
            let _ = l.flush(true);
            self.expecting.take(l.take(), &mut out);
            out.lost += self.expecting.clear();
        }
        let origin = l.origin_ns;
        for m in out.matched {
            let l = m.launch;
            let duration_us = m.end.saturating_sub(m.start) as f64 / 1e3;
            let start_us = (m.start as f64 - origin as f64) / 1e3;
            self.add_timed(l.key, l.stream, start_us, duration_us, l.flops, l.bytes);
        }
        Ok(())
    }

    /// Reads the launches timed with events in launch order: all of them (`wait`), or up to the
    /// first the GPU has not finished. The first error stops the reading and leaves the rest
    /// pending.
    pub(super) fn harvest_events(&mut self, wait: bool) -> Result<()> {
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
            self.add_timed(p.key, p.stream, f64::from(since) * 1e3, duration_us, p.flops, p.bytes);
        }
        Ok(())
    }

    /// A timed launch of kernel `key`: into its figures and the trace.
    pub(super) fn add_timed(
        &mut self,
        key: usize,
        stream: u64,
        start_us: f64,
        duration_us: f64,
        flops: f64,
        bytes: f64,
    ) {
        let kernel = &mut self.kernels[key];
        kernel.tally.add(duration_us, flops, bytes);
        if self.trace_capacity == 0 {
            self.dropped += 1;
            return;
        }
        let name = kernel.name.clone();
        self.trim_trace(self.trace_capacity - 1);
        self.trace.push_back(Sample {
            name,
            stream,
            start_us,
            duration_us,
            flops,
            bytes,
        });
    }

    /// Drops the oldest launches of the trace beyond `keep`, counting them.
    pub(super) fn trim_trace(&mut self, keep: usize) {
        while self.trace.len() > keep {
            self.trace.pop_front();
            self.dropped += 1;
        }
    }

    /// Every kernel's figures (those timed at least once), most total time first.
    pub(super) fn kernel_stats(&self) -> Vec<KernelStats> {
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
