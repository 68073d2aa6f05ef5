//! `cudrv bench graph`: a step of many small dependent kernels, run as plain launches, as a graph
//! recorded and instantiated anew every step, as a graph updated in place every step, and as a
//! graph replayed unchanged; all in one run, with ratios.

use std::sync::Arc;

use std::time::Instant;

use cudrv::exec::{Batch, BlockProfile, Executor};
use cudrv::{ops, DeviceBuffer, Result, Stream};

use crate::timing::{time, Timing};

/// Kernels per step and elements per vector: the shape of the pipelines this measures.
const OPS: usize = 170;
const LEN: usize = 100_000;
/// The large case: few kernels, much work each.
const LARGE_OPS: usize = 10;
const LARGE: usize = 16 << 20;

/// The four vectors one step works on.
pub(crate) struct Vectors {
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    z: DeviceBuffer<f32>,
    w: DeviceBuffer<f32>,
}

impl Vectors {
    fn new(stream: &Arc<Stream>, seed: f32) -> Result<Self> {
        Self::with_len(stream, seed, LEN)
    }

    fn with_len(stream: &Arc<Stream>, seed: f32, len: usize) -> Result<Self> {
        let v = |k: f32| DeviceBuffer::from_slice(stream, &vec![seed * k; len]);
        Ok(Vectors {
            x: v(1.0)?,
            y: v(0.5)?,
            z: v(0.25)?,
            w: v(0.125)?,
        })
    }

    /// One step: OPS dependent elementwise kernels (each reads what an earlier one wrote).
    fn step(&mut self, alpha: f32) -> Result<()> {
        self.step_of(OPS, alpha)
    }

    /// The first `ops` kernels of a step.
    fn step_of(&mut self, ops: usize, alpha: f32) -> Result<()> {
        for i in 0..ops {
            match i % 5 {
                0 => ops::axpy(&mut self.y, alpha, &self.x)?,
                1 => ops::scale_in_place(&mut self.y, 0.5)?,
                2 => ops::add(&mut self.z, &self.y, &self.x)?,
                3 => ops::mul(&mut self.w, &self.z, &self.y)?,
                _ => ops::axpby(&mut self.x, 0.25, &self.w, 0.5)?,
            }
        }
        Ok(())
    }
}

impl Vectors {
    /// The same step as items of one executor batch.
    fn batch<'a>(&'a self, b: &mut Batch<'a>, alpha: f32) -> Result<()> {
        self.batch_of(b, OPS, alpha)
    }

    /// The first `ops` items of a step.
    fn batch_of<'a>(&'a self, b: &mut Batch<'a>, ops: usize, alpha: f32) -> Result<()> {
        for i in 0..ops {
            match i % 5 {
                0 => b.axpy(&self.y, alpha, &self.x)?,
                1 => b.scale(&self.y, 0.5, &self.y)?,
                2 => b.add(&self.z, &self.y, &self.x)?,
                3 => b.mul(&self.w, &self.z, &self.y)?,
                _ => b.axpby(&self.x, 0.25, &self.w, 0.5)?,
            }
        }
        Ok(())
    }
}

/// Where a worker block's time went between two profiles of an executor, per step of `OPS` items.
fn device_line(label: &str, before: &BlockProfile, after: &BlockProfile) {
    let items = after.items.saturating_sub(before.items).max(1) as f64;
    let per =
        |a: std::time::Duration, b: std::time::Duration| a.saturating_sub(b).as_secs_f64() * 1e6 / items * OPS as f64;
    println!(
        "{label}, per {OPS} items (a worker block): their own work {:.1} us, the executor's {:.1} us \
         (refills {:.1}, barriers {:.1}), idle waiting for items {:.1} us",
        per(after.running, before.running),
        per(after.copying + after.barriers, before.copying + before.barriers),
        per(after.copying, before.copying),
        per(after.barriers, before.barriers),
        per(after.waiting, before.waiting)
    );
}

/// Median wall time per step of `steps` executor batches, each filled by `fill`, submitted back
/// to back (up to the queue's room ahead) and then waited for, over `trials` runs after one that
/// warms up.
fn executor_wall<'a>(
    exec: &'a Executor,
    trials: usize,
    steps: usize,
    fill: impl Fn(&mut Batch<'a>) -> Result<()>,
) -> Result<f64> {
    let mut times = Vec::new();
    for _ in 0..trials + 1 {
        let t = Instant::now();
        let mut tickets = Vec::with_capacity(steps);
        for _ in 0..steps {
            let mut b = exec.batch();
            fill(&mut b)?;
            tickets.push(b.submit()?);
        }
        for ticket in tickets {
            ticket.wait()?;
        }
        times.push(t.elapsed().as_secs_f64() / steps as f64);
    }
    times.remove(0);
    Ok(crate::timing::median(times))
}

/// Wall time per step of the chain as executor batches.
fn executor_step(exec: &Executor, v: &Vectors, trials: usize, steps: usize) -> Result<f64> {
    executor_wall(exec, trials, steps, |b| v.batch(b, 1.0))
}

/// Wall time per step of 170 items that touch no memory: the executor's own cost of taking,
/// decoding and sequencing items, with the queue and completion round trip.
fn dispatch_only(exec: &Executor, trials: usize) -> Result<f64> {
    executor_wall(exec, trials, 50, |b| {
        for _ in 0..OPS {
            b.sleep(std::time::Duration::ZERO);
        }
        Ok(())
    })
}

/// The executor's and a replayed graph's cost per step when the kernels have no work (one
/// element per vector): what each adds beyond the kernels' own time.
fn empty_steps(stream: &Arc<Stream>, exec: &Executor, trials: usize) -> Result<(f64, Timing)> {
    let mut tiny = Vectors::with_len(stream, 1.0, 1)?;
    let ex = executor_step(exec, &tiny, trials, 50)?;
    let graph = stream.capture(|_| tiny.step(1.0))?;
    let replay = time(stream, trials, || graph.launch(stream))?;
    Ok((ex, replay))
}

pub fn run(trials: usize) -> Result<bool> {
    let ctx = cudrv::Context::new(0)?;
    let stream = ctx.new_stream()?;
    println!(
        "bench graph on {} (driver CUDA {}): one step = {OPS} dependent elementwise kernels over \
         {LEN} f32; time per step = device time between events around a batch of steps (the host \
         enqueues ahead), median of {trials} batches",
        ctx.device().name()?,
        cudrv::driver_version()?
    );
    let mut a = Vectors::new(&stream, 1.0)?;
    let mut b = Vectors::new(&stream, 2.0)?;

    let plain = time(&stream, trials, || a.step(1.0))?;
    let recapture = time(&stream, trials, || {
        let g = stream.capture(|_| a.step(1.0))?;
        g.launch(&stream)
    })?;
    let mut graph = stream.capture(|_| a.step(1.0))?;
    let ctx = stream.context().clone();
    let mut flip = false;
    let mut rebuilt = 0usize;
    let update = time(&stream, trials, || {
        // Alternate the buffers and the scalar, so that every update changes every node.
        flip = !flip;
        let (v, alpha) = if flip { (&mut b, 0.75) } else { (&mut a, 1.0) };
        if !graph.update(&stream, |_| v.step(alpha))?.in_place() {
            rebuilt += 1;
        }
        graph.launch(&stream)
    })?;
    graph.update(&stream, |_| a.step(1.0))?;
    let replay = time(&stream, trials, || graph.launch(&stream))?;
    // The scalars of the first and last kernels change every step, patched without recording.
    let axpy = ctx.kernel("axpy_f32")?;
    let axpby = ctx.kernel("axpby_f32")?;
    let last = graph.kernel_nodes()?.len() - 1;
    let n = LEN;
    let mut step = 0u32;
    let patch = time(&stream, trials, || {
        step += 1;
        let alpha = 1.0 + (step % 7) as f32 * 0.01;
        let (beta, keep) = (0.25 - (step % 3) as f32 * 0.01, 0.5f32);
        // SAFETY: node 0 is axpy_f32(float* y, const float* x, float alpha, size_t n) and the
        // last node axpby_f32(float* y, const float* x, float alpha, float beta, size_t n), both
        // as recorded by Vectors::step on `a`, whose buffers outlive the graph.
        unsafe {
            graph.set_kernel_args(0, &axpy, &[&a.y, &a.x, &alpha, &n])?;
            graph.set_kernel_args(last, &axpby, &[&a.x, &a.w, &beta, &keep, &n])?;
        }
        graph.launch(&stream)
    })?;
    let exec = Executor::builder(&ctx).start()?;
    let with_fetcher = exec.has_fetcher();
    let executor = executor_step(&exec, &a, trials, 50)?;
    let profile = exec.profile()?;
    // The host's share: building (checking, ordering, encoding) one step's batch.
    let t = Instant::now();
    for _ in 0..200 {
        let mut b = exec.batch();
        a.batch(&mut b, 1.0)?;
        std::hint::black_box(b.len());
    }
    let encode = t.elapsed().as_secs_f64() / 200.0;
    let before_empty = exec.profile()?.worker;
    let (empty_exec, empty_graph) = empty_steps(&stream, &exec, trials)?;
    let after_empty = exec.profile()?.worker;
    let dispatch = dispatch_only(&exec, trials)?;
    let after_dispatch = exec.profile()?.worker;
    // Where a graph wins: few kernels with much work each (10 kernels over 16M elements).
    let mut large = Vectors::with_len(&stream, 1.0, LARGE)?;
    let large_graph = stream.capture(|_| large.step_of(LARGE_OPS, 1.0))?;
    let large_replay = time(&stream, trials, || large_graph.launch(&stream))?;
    let large_exec = executor_wall(&exec, trials, 1, |b| large.batch_of(b, LARGE_OPS, 1.0))?;
    drop(large_graph);
    drop(large);
    exec.shutdown()?;
    // By resident worker blocks, with and without the fetcher block (alternating, same run).
    let mut by_blocks = Vec::new();
    for bps in [1u32, 2, 4] {
        for fetcher in [true, false] {
            let e = Executor::builder(&ctx).blocks_per_sm(bps).fetcher(fetcher).start()?;
            if fetcher && !e.has_fetcher() {
                // A device of one multiprocessor has no fetcher: the run without it covers this.
                e.shutdown()?;
                continue;
            }
            let full = executor_step(&e, &a, trials, 50)?;
            let nop = dispatch_only(&e, trials)?;
            e.shutdown()?;
            by_blocks.push((bps, fetcher, full, nop));
        }
    }

    if rebuilt > 0 {
        return Err(cudrv::Error::InvalidArgument(format!(
            "{rebuilt} updates rebuilt the graph instead of patching it"
        )));
    }

    let row = |name: &str, t: Timing| {
        println!(
            "{name:<44} {:>9.1} us/step {:>9.1} us host {:>7.2} us/kernel",
            t.device * 1e6,
            t.host * 1e6,
            t.device * 1e6 / OPS as f64
        )
    };
    println!();
    row("plain launches", plain);
    row("graph recorded + instantiated every step", recapture);
    row("graph updated in place every step", update);
    row("graph with 2 kernels' arguments patched", patch);
    row("graph replayed unchanged", replay);
    let wall = |name: &str, t: f64| {
        println!(
            "{name:<44} {:>9.1} us/step {:>17} {:>7.2} us/kernel",
            t * 1e6,
            "(wall time)",
            t * 1e6 / OPS as f64
        )
    };
    wall(
        if with_fetcher {
            "persistent executor (fetcher block), one batch per step"
        } else {
            "persistent executor, one batch per step"
        },
        executor,
    );
    println!(
        "{:<44} {:>9.1} us/step (host: checks, barriers, encoding)",
        "  of which building the batch",
        encode * 1e6
    );
    // The profile counts every batch this executor ran (steps of the real chain and earlier ones).
    device_line("  on the device", &BlockProfile::default(), &profile.worker);
    println!();
    println!("with one element per vector (the kernels do no work: the cost of running the chain):");
    wall("  persistent executor", empty_exec);
    device_line("    on the device", &before_empty, &after_empty);
    row("  graph replayed unchanged", empty_graph);
    wall("  executor, 170 items touching no memory", dispatch);
    device_line("    on the device", &after_empty, &after_dispatch);
    println!();
    println!("{LARGE_OPS} kernels over {LARGE} elements (much work per kernel):");
    println!(
        "{:<44} {:>9.1} us/step",
        "  graph replayed unchanged",
        large_replay.device * 1e6
    );
    println!(
        "{:<44} {:>9.1} us/step (wall time, one batch)",
        "  persistent executor",
        large_exec * 1e6
    );
    println!();
    for (bps, fetcher, full, nop) in &by_blocks {
        println!(
            "executor with {bps} block(s) of 256 per SM, {}: step {:.1} us, 170 items touching no memory {:.1} us",
            if *fetcher { "fetcher block" } else { "block 0 fetches" },
            full * 1e6,
            nop * 1e6
        );
    }
    // The fetcher against block 0 fetching, per block count measured both ways (same run).
    for (bps, _, with, _) in by_blocks.iter().filter(|r| r.1) {
        if let Some((_, _, without, _)) = by_blocks.iter().find(|r| r.0 == *bps && !r.1) {
            println!(
                "fetcher block vs block 0 fetching, {bps} block(s) per SM: {:.3}x",
                without / with
            );
        }
    }
    println!();
    println!("executor vs plain launches          {:>6.2}x", plain.device / executor);
    println!(
        "executor vs record + instantiate    {:>6.2}x",
        recapture.device / executor
    );
    println!("executor vs graph replay            {:>6.2}x", replay.device / executor);
    println!(
        "replay vs plain launches            {:>6.2}x",
        plain.device / replay.device
    );
    println!(
        "update vs record + instantiate      {:>6.2}x",
        recapture.device / update.device
    );
    println!(
        "update vs plain launches            {:>6.2}x",
        plain.device / update.device
    );
    println!(
        "patch vs record + instantiate       {:>6.2}x",
        recapture.device / patch.device
    );
    Ok(true)
}
