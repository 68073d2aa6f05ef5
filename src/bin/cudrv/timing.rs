//! Event-timed batches of calls for the benches: device time between two events around a batch,
//! host time to enqueue it, medians over trials, two sides alternating.

use std::sync::Arc;
use std::time::Instant;

use cudrv::{Event, Result, Stream};

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Seconds per call: on the device (between two events around a batch) and on the host (the
/// time the calls of the batch took to return, i.e. to enqueue their work).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    pub device: f64,
    pub host: f64,
}

/// Calls `f` enough times (after two warm-up calls) to choose a batch that takes about 2 ms.
pub(crate) fn batch_size(
    stream: &Arc<Stream>,
    events: &(Event, Event),
    f: &mut impl FnMut() -> Result<()>,
) -> Result<usize> {
    f()?;
    f()?;
    let once = time_batch(stream, events, 1, f)?.device.max(1e-7);
    Ok(((2e-3 / once).ceil() as usize).clamp(1, 200))
}

/// Seconds per call of one batch of `reps` calls of `f`.
pub(crate) fn time_batch(
    stream: &Arc<Stream>,
    (e0, e1): &(Event, Event),
    reps: usize,
    f: &mut impl FnMut() -> Result<()>,
) -> Result<Timing> {
    e0.record(stream)?;
    let t = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    let host = t.elapsed().as_secs_f64() / reps as f64;
    e1.record(stream)?;
    e1.synchronize()?;
    Ok(Timing {
        device: e0.elapsed_ms(e1)? as f64 * 1e-3 / reps as f64,
        host,
    })
}

/// The medians of `batches`' device and host times.
pub(crate) fn medians(batches: Vec<Timing>) -> Timing {
    Timing {
        device: median(batches.iter().map(|t| t.device).collect()),
        host: median(batches.iter().map(|t| t.host).collect()),
    }
}

/// Median seconds per call of `f`, over `trials` batches of about 2 ms each.
pub(crate) fn time(stream: &Arc<Stream>, trials: usize, mut f: impl FnMut() -> Result<()>) -> Result<Timing> {
    let ctx = stream.context();
    let events = (Event::new(ctx, true)?, Event::new(ctx, true)?);
    let reps = batch_size(stream, &events, &mut f)?;
    let v = (0..trials)
        .map(|_| time_batch(stream, &events, reps, &mut f))
        .collect::<Result<Vec<_>>>()?;
    Ok(medians(v))
}

/// Median seconds per call of `ours` and of `theirs`, over `trials` batches each, the two
/// sides' batches alternating so that both see the same state of the machine (clocks, the host's
/// load: at small sizes the host's time per call is most of the figure).
pub(crate) fn time_pair(
    stream: &Arc<Stream>,
    trials: usize,
    mut ours: impl FnMut() -> Result<()>,
    mut theirs: impl FnMut() -> Result<()>,
) -> Result<(Timing, Timing)> {
    let ctx = stream.context();
    let events = (Event::new(ctx, true)?, Event::new(ctx, true)?);
    let (reps_ours, reps_theirs) = (
        batch_size(stream, &events, &mut ours)?,
        batch_size(stream, &events, &mut theirs)?,
    );
    let (mut a, mut b) = (Vec::with_capacity(trials), Vec::with_capacity(trials));
    for _ in 0..trials {
        a.push(time_batch(stream, &events, reps_ours, &mut ours)?);
        b.push(time_batch(stream, &events, reps_theirs, &mut theirs)?);
    }
    Ok((medians(a), medians(b)))
}
