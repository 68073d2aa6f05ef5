//! Events: points in a stream's work, for ordering and timing.

use std::ptr;
use std::sync::Arc;

use crate::context::Context;
use crate::driver::{check, cu};
use crate::error::Result;
use crate::stream::Stream;
use crate::sys::{self, CUresult};

/// A marker recorded into a stream: wait on it, query it, or time between two of them.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let (start, end) = (cudrv::Event::new(&ctx, true)?, cudrv::Event::new(&ctx, true)?);
/// start.record(&stream)?;
/// // ... work ...
/// end.record(&stream)?;
/// println!("{} ms", start.elapsed_ms(&end)?);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct Event {
    raw: sys::CUevent,
    ctx: Arc<Context>,
}

// SAFETY: a CUevent handle may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above; `&Event` only passes the handle to the driver.
unsafe impl Sync for Event {}

impl Event {
    /// A new event; `timing` enables [`Event::elapsed_ms`] (timing-disabled events are cheaper).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let (start, end) = (cudrv::Event::new(&ctx, true)?, cudrv::Event::new(&ctx, true)?);
    /// start.record(&stream)?;
    /// let buf = cudrv::DeviceBuffer::<f32>::zeroed(&stream, 1 << 24)?;
    /// end.record(&stream)?;
    /// end.synchronize()?;
    /// println!("zeroing 64 MiB took {:.3} ms", start.elapsed_ms(&end)?);
    /// # drop(buf);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new(ctx: &Arc<Context>, timing: bool) -> Result<Event> {
        ctx.bind_to_thread()?;
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT.0
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0
        };
        let mut raw = ptr::null_mut();
        // SAFETY: writes one CUevent through a valid pointer; the context is current.
        unsafe { cu!(cuEventCreate(&mut raw, flags))? };
        Ok(Event { raw, ctx: ctx.clone() })
    }

    /// The driver's handle.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let e = cudrv::Event::new(&ctx, false)?;
    /// let raw: cudrv::sys::CUevent = e.raw(); // e.g. for cuStreamWaitEvent on a foreign stream
    /// assert!(!raw.is_null());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }

    /// Records the event at the current end of `stream`.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let (producer, consumer) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let ready = cudrv::Event::new(&ctx, false)?;
    /// ready.record(&producer)?;
    /// consumer.wait(&ready)?; // consumer's later work runs after producer's so far
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuEventRecord(self.raw, stream.raw())) }
    }

    /// Waits until the work before the event's last record has finished.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let e = cudrv::Event::new(&ctx, false)?;
    /// e.record(&stream)?;
    /// e.synchronize()?;
    /// assert!(e.query()?);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the handle is live.
        unsafe { cu!(cuEventSynchronize(self.raw)) }
    }

    /// Whether the work before the event's last record has finished, without waiting.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let e = cudrv::Event::new(&ctx, false)?;
    /// e.record(&stream)?;
    /// while !e.query()? {
    ///     std::thread::yield_now(); // do host work meanwhile
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn query(&self) -> Result<bool> {
        let f = sys::resolve::cuEventQuery()?;
        // SAFETY: the handle is live.
        match unsafe { f(self.raw) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => check(code, "cuEventQuery").map(|_| false),
        }
    }

    /// Waits until the work before the event's last record has finished, or `timeout` has
    /// passed: then [`Error::Timeout`](crate::Error::Timeout), with the work left running. Polls
    /// with a backoff (from a few microseconds up to 1 ms between queries), so a long wait costs
    /// little CPU. As for [`Stream::synchronize_timeout`], another thread's device-wide
    /// synchronizing call can hold a query up past the deadline.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// let done = stream.record_event()?;
    /// done.wait_timeout(std::time::Duration::from_secs(5))?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        poll_until("the event", timeout, || self.query())
    }

    /// Milliseconds from this event to `end`; both must have completed and have timing enabled.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let (a, b) = (cudrv::Event::new(&ctx, true)?, cudrv::Event::new(&ctx, true)?);
    /// a.record(&stream)?;
    /// b.record(&stream)?;
    /// b.synchronize()?;
    /// assert!(a.elapsed_ms(&b)? >= 0.0);
    /// // Events made without timing cannot be timed: an error, not a wrong number.
    /// let untimed = cudrv::Event::new(&ctx, false)?;
    /// untimed.record(&stream)?;
    /// untimed.synchronize()?;
    /// assert!(a.elapsed_ms(&untimed).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: writes one float through a valid pointer; both handles are live.
        unsafe { cu!(cuEventElapsedTime(&mut ms, self.raw, end.raw))? };
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event was created by this value; the driver defers the release until any
        // pending record completes.
        let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
    }
}

/// Calls `done` until it says true or `timeout` passes (then `Error::Timeout` naming `what`),
/// sleeping between calls with a backoff from 5 us to 1 ms. A failing query ends the wait with
/// its error.
pub(crate) fn poll_until(
    what: &str,
    timeout: std::time::Duration,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(5);
    loop {
        if done()? {
            return Ok(());
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(crate::Error::Timeout {
                what: what.to_string(),
                waited_ms: timeout.as_millis() as u64,
            });
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(std::time::Duration::from_millis(1));
    }
}
