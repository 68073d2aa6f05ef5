//! The device monitor: snapshots of a context's device (memory, the caching pool, the
//! profiler's kernel figures, and GPU utilization, clocks, temperature and power through NVML),
//! as JSON or in the Prometheus text format, and memory alerts delivered to a channel or a
//! callback when a threshold is crossed. `cudrv monitor` prints the same snapshots.
//!
//! NVML is optional: without libnvidia-ml (or in a build without the `nvml` feature) a
//! snapshot's [`GpuReadings`] say "not available" and why; everything else is there.
//!
//! ```no_run
//! use cudrv::monitor::{Monitor, MemoryThreshold};
//! let ctx = cudrv::Context::new(0)?;
//! let monitor = Monitor::new(&ctx);
//! let alerts = monitor.alert_channel(MemoryThreshold::DeviceUsedFraction(0.9));
//! let watch = monitor.watch(std::time::Duration::from_secs(1)); // snapshots in the background
//! // ... work ...
//! for alert in alerts.try_iter() {
//!     eprintln!("memory alert: {alert}");
//! }
//! let last = watch.stop()?; // the last snapshot
//! println!("{}", last.map(|s| s.to_prometheus()).unwrap_or_default());
//! # Ok::<(), cudrv::Error>(())
//! ```

mod alert;
mod nvml;
mod snapshot;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

pub use alert::{Crossing, MemoryAlert, MemoryThreshold};
pub use nvml::{GpuReadings, LIBNVML_ENV};
pub use snapshot::{prometheus, DeviceId, DeviceMemory, Snapshot};

use crate::context::Context;
use crate::error::Result;
use alert::{Rule, Sink};

/// Takes snapshots of a context's device and checks memory thresholds against them; cheap to
/// clone (clones share their thresholds).
#[derive(Clone)]
pub struct Monitor {
    ctx: Arc<Context>,
    device: DeviceId,
    rules: Arc<Mutex<Vec<Rule>>>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl Monitor {
    /// A monitor of `ctx`'s device.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::monitor::Monitor::new(&ctx);
    /// println!("{}", m.snapshot()?.to_json());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new(ctx: &Arc<Context>) -> Monitor {
        let dev = ctx.device();
        Monitor {
            device: DeviceId {
                ordinal: dev.ordinal(),
                name: dev.name().unwrap_or_else(|e| format!("<{e}>")),
                uuid: dev.uuid_string().unwrap_or_default(),
            },
            ctx: ctx.clone(),
            rules: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The device now; memory thresholds are checked against it and crossings delivered.
    /// Does not wait for queued work (the profiler's figures cover the launches finished so
    /// far).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let s = cudrv::monitor::Monitor::new(&ctx).snapshot()?;
    /// assert!(s.memory.used_bytes <= s.memory.total_bytes);
    /// if !s.gpu.is_available() {
    ///     println!("no NVML: {:?}", s.gpu);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn snapshot(&self) -> Result<Snapshot> {
        let (free, total) = self.ctx.memory_info()?;
        let profiler = self.ctx.profiler();
        let kernels = profiler.kernel_stats()?;
        let snapshot = Snapshot {
            unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            device: self.device.clone(),
            memory: DeviceMemory {
                total_bytes: total as u64,
                free_bytes: free as u64,
                used_bytes: total.saturating_sub(free) as u64,
            },
            pool: self.ctx.memory_stats(),
            profiling: profiler.enabled(),
            kernels,
            gpu: nvml::read(&self.device.uuid),
        };
        self.check(&snapshot);
        Ok(snapshot)
    }

    /// Checks every threshold against `snapshot` and delivers the crossings; thresholds whose
    /// receiver is gone are dropped.
    fn check(&self, snapshot: &Snapshot) {
        let mut rules = self.rules.lock();
        rules.retain_mut(|rule| match rule.evaluate(snapshot) {
            Some(alert) => rule.deliver(&alert),
            None => true,
        });
    }

    /// Alerts for `threshold` arrive on the returned channel (checked at every snapshot); the
    /// threshold is dropped with the receiver.
    ///
    /// ```no_run
    /// use cudrv::monitor::{Monitor, MemoryThreshold};
    /// let ctx = cudrv::Context::new(0)?;
    /// let m = Monitor::new(&ctx);
    /// let alerts = m.alert_channel(MemoryThreshold::PoolReservedBytes(8 << 30));
    /// m.snapshot()?;
    /// assert!(alerts.try_recv().is_err()); // nothing reserved yet
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn alert_channel(&self, threshold: MemoryThreshold) -> mpsc::Receiver<MemoryAlert> {
        let (tx, rx) = mpsc::channel();
        self.rules.lock().push(Rule::new(threshold, Sink::Channel(tx)));
        rx
    }

    /// Calls `callback` for each crossing of `threshold` (on the thread taking the snapshot).
    ///
    /// ```no_run
    /// use cudrv::monitor::{Monitor, MemoryThreshold};
    /// let ctx = cudrv::Context::new(0)?;
    /// let m = Monitor::new(&ctx);
    /// m.on_alert(MemoryThreshold::DeviceUsedFraction(0.95), |a| eprintln!("memory: {a}"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn on_alert(&self, threshold: MemoryThreshold, callback: impl Fn(&MemoryAlert) + Send + Sync + 'static) {
        self.rules
            .lock()
            .push(Rule::new(threshold, Sink::Callback(Box::new(callback))));
    }

    /// Takes a snapshot every `interval` on a background thread until [`Watch::stop`] (or the
    /// watch is dropped); alerts are delivered from that thread.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let watch = cudrv::monitor::Monitor::new(&ctx).watch(std::time::Duration::from_millis(100));
    /// std::thread::sleep(std::time::Duration::from_millis(350));
    /// let last = watch.stop()?;
    /// assert!(last.is_some());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn watch(&self, interval: Duration) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let monitor = self.clone();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("cudrv-monitor".into())
            .spawn(move || -> Result<Option<Snapshot>> {
                let mut last = None;
                while !flag.load(Ordering::Relaxed) {
                    last = Some(monitor.snapshot()?);
                    let mut left = interval;
                    while !left.is_zero() && !flag.load(Ordering::Relaxed) {
                        let step = left.min(Duration::from_millis(20));
                        std::thread::sleep(step);
                        left -= step;
                    }
                }
                Ok(last)
            })
            .ok();
        Watch { stop, thread }
    }
}

/// A background monitor ([`Monitor::watch`]); dropping it stops the thread.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Option<Snapshot>>>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Watch {
    /// Stops the thread and returns its last snapshot (`None` if it took none), or the error
    /// that stopped it early.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let last = cudrv::monitor::Monitor::new(&ctx).watch(std::time::Duration::from_secs(1)).stop()?;
    /// # let _ = last;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn stop(mut self) -> Result<Option<Snapshot>> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Option<Snapshot>> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(crate::Error::InvalidArgument("the monitor thread panicked".into()))),
            None => Ok(None),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
