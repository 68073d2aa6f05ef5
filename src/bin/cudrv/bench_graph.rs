//! `cudrv bench graph`: a step of many small dependent kernels, run as plain launches, as a graph
//! recorded and instantiated anew every step, as a graph updated in place every step, and as a
//! graph replayed unchanged; all in one run, with ratios.

use std::sync::Arc;

use cudrv::{ops, DeviceBuffer, Result, Stream};

use crate::timing::{time, Timing};

/// Kernels per step and elements per vector: the shape of the pipelines this measures.
const OPS: usize = 170;
const LEN: usize = 100_000;

/// The four vectors one step works on.
struct Vectors {
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    z: DeviceBuffer<f32>,
    w: DeviceBuffer<f32>,
}

impl Vectors {
    fn new(stream: &Arc<Stream>, seed: f32) -> Result<Self> {
        let v = |k: f32| DeviceBuffer::from_slice(stream, &vec![seed * k; LEN]);
        Ok(Vectors {
            x: v(1.0)?,
            y: v(0.5)?,
            z: v(0.25)?,
            w: v(0.125)?,
        })
    }

    /// One step: OPS dependent elementwise kernels (each reads what an earlier one wrote).
    fn step(&mut self, alpha: f32) -> Result<()> {
        for i in 0..OPS {
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
    println!();
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
