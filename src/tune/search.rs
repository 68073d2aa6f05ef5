//! The search: every block size the kernel allows (multiples of the warp size up to its
//! `max_threads_per_block`, within its dynamic shared memory), each timed with events over a
//! batch of launches; the fastest few timed again, interleaved, and the best median wins.

use serde::Serialize;

use super::options::TuneOptions;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::launch::LaunchConfig;
use crate::module::Function;
use crate::stream::Stream;

/// One block size and its measured time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// Threads per block.
    pub block: u32,
    /// Microseconds per launch (the median of the second pass for finalists, the first pass's
    /// figure for the others).
    pub micros: f64,
}

/// What a search found.
pub(crate) struct Found {
    pub block: u32,
    pub resident: u32,
    pub micros: f64,
    pub candidates: Vec<Candidate>,
}

/// A block size the search may try, with its device-filling block count.
struct Trial {
    block: u32,
    resident: u32,
}

/// The block sizes `f` can be launched with under `opts`, the occupancy API's suggestion first.
fn candidates(f: &Function, opts: &TuneOptions) -> Result<Vec<Trial>> {
    let limits = f.context().limits();
    let warp = limits.warp_size.max(1);
    let max = f.attributes().max_threads_per_block.min(limits.max_block_dim[0]);
    let smem_max = f.max_dynamic_shared_memory();
    let sms = limits.multiprocessor_count;
    let mut out = Vec::new();
    for block in opts.blocks.sizes(warp, max) {
        let smem = opts.shared.bytes(block);
        if smem <= smem_max {
            let per_sm = f.max_active_blocks_per_multiprocessor(block, smem as usize)?;
            if per_sm > 0 {
                out.push(Trial {
                    block,
                    resident: per_sm.saturating_mul(sms),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "kernel `{}`: no block size fits ({:?}; at most {max} threads per block, {smem_max} bytes of dynamic \
             shared memory; the rule asks {} + {} per thread)",
            f.name(),
            opts.blocks,
            opts.shared.fixed,
            opts.shared.per_thread
        )));
    }
    if let Ok((_, suggested)) = f.max_potential_block_size(opts.shared.fixed as usize) {
        if let Some(i) = out.iter().position(|o| o.block == suggested) {
            out.swap(0, i);
        }
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The block sizes to try, the events, and the batch length, ready to time.
struct Timer<'a> {
    stream: &'a Stream,
    opts: &'a TuneOptions,
    size: u64,
    trials: Vec<Trial>,
    events: (Event, Event),
    reps: u32,
}

impl<'a> Timer<'a> {
    /// Lists the candidates, warms up (first-launch costs) and sizes the batches from the
    /// suggestion's time.
    fn new(
        f: &Function,
        stream: &'a Stream,
        size: u64,
        opts: &'a TuneOptions,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<Timer<'a>> {
        if stream.is_capturing() {
            return Err(Error::InvalidArgument(format!(
                "kernel `{}`: cannot tune while the stream is capturing a graph (launches are timed)",
                f.name()
            )));
        }
        let ctx = stream.context();
        let mut timer = Timer {
            stream,
            opts,
            size,
            trials: candidates(f, opts)?,
            events: (Event::new(ctx, true)?, Event::new(ctx, true)?),
            reps: 1,
        };
        timer.time(0, launch)?;
        let once = timer.time(0, launch)?.max(0.5);
        timer.reps = (opts.batch_us / once).ceil().clamp(1.0, 1000.0) as u32;
        Ok(timer)
    }

    fn config(&self, i: usize) -> LaunchConfig {
        let t = &self.trials[i];
        self.opts.config(self.size, t.block, t.resident)
    }

    /// Microseconds per launch of trial `i`: one batch between a pair of events.
    fn time(&self, i: usize, launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>) -> Result<f64> {
        let config = self.config(i);
        self.events.0.record(self.stream)?;
        for _ in 0..self.reps {
            launch(&config)?;
        }
        self.events.1.record(self.stream)?;
        self.events.1.synchronize()?;
        Ok(f64::from(self.events.0.elapsed_ms(&self.events.1)?) * 1e3 / f64::from(self.reps))
    }

    /// The median over `rounds` interleaved rounds of each of `which`.
    fn medians(
        &self,
        which: &[usize],
        rounds: usize,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<Vec<f64>> {
        let mut times = vec![Vec::with_capacity(rounds); which.len()];
        for _ in 0..rounds.max(1) {
            for (slot, &i) in which.iter().enumerate() {
                times[slot].push(self.time(i, launch)?);
            }
        }
        Ok(times.into_iter().map(median).collect())
    }
}

/// Searches the block sizes of `f` for `size` items: one batch each, then the fastest
/// [`TuneOptions::finalists`] again over [`TuneOptions::rounds`] interleaved rounds; the best
/// median wins. `launch` enqueues one launch with the configuration it is given, on `stream`.
pub(crate) fn search(
    f: &Function,
    stream: &Stream,
    size: u64,
    opts: &TuneOptions,
    launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
) -> Result<Found> {
    let timer = Timer::new(f, stream, size, opts, launch)?;
    let mut measured = Vec::with_capacity(timer.trials.len());
    for (i, t) in timer.trials.iter().enumerate() {
        measured.push(Candidate {
            block: t.block,
            micros: timer.time(i, launch)?,
        });
    }
    let mut finalists: Vec<usize> = (0..measured.len()).collect();
    finalists.sort_by(|&a, &b| measured[a].micros.total_cmp(&measured[b].micros));
    finalists.truncate(opts.finalists.max(1));
    let medians = timer.medians(&finalists, opts.rounds, launch)?;
    let mut best = (finalists[0], f64::INFINITY);
    for (&i, &m) in finalists.iter().zip(&medians) {
        measured[i].micros = m;
        if m < best.1 {
            best = (i, m);
        }
    }
    measured.sort_by_key(|c| c.block);
    let chosen = &timer.trials[best.0];
    Ok(Found {
        block: chosen.block,
        resident: chosen.resident,
        micros: best.1,
        candidates: measured,
    })
}

/// Every candidate block size of `f` timed over [`TuneOptions::rounds`] interleaved rounds
/// (medians), in increasing block order: the whole curve, for reports and for checking a
/// search.
pub(crate) fn sweep(
    f: &Function,
    stream: &Stream,
    size: u64,
    opts: &TuneOptions,
    launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
) -> Result<Vec<Candidate>> {
    let timer = Timer::new(f, stream, size, opts, launch)?;
    let all: Vec<usize> = (0..timer.trials.len()).collect();
    let medians = timer.medians(&all, opts.rounds, launch)?;
    let mut out: Vec<Candidate> = timer
        .trials
        .iter()
        .zip(medians)
        .map(|(t, micros)| Candidate { block: t.block, micros })
        .collect();
    out.sort_by_key(|c| c.block);
    Ok(out)
}
