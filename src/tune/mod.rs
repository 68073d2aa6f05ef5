//! The launch-configuration autotuner: for a kernel and a problem size, it times every block
//! size the kernel allows (starting from the occupancy API's suggestion; the grid follows from
//! the size) and remembers the fastest per (kernel, its code, device, launch rule, size
//! bucket) in memory and in a file that later processes read, so they do not tune again.
//!
//! The kernel must be correct with every block size it is tried with: by default every multiple
//! of the warp size; [`BlockSizes::PowersOfTwo`] or [`BlockSizes::Only`] for kernels that need
//! particular ones.
//!
//! Buckets are decimal orders of magnitude ([`bucket_of`]). Remembered choices are tuned
//! again when the kernel's code or the device changes (they are keyed by both), after
//! [`TuneOptions::retune_every`] cache hits, or when the moving average of observed times
//! ([`TunedKernel::observe`]) drifts [`TuneOptions::drift`] above the tuned time. A cache hit,
//! [`TunedKernel::config`], takes no lock: a logarithm and three atomic operations.
//!
//! The file is `tune.json` in `CUDRV_CACHE_DIR` when set, otherwise in the user's cache
//! directory (`~/.cache/cudrv/` on Linux); `CUDRV_CACHE_DISABLE=1` keeps it in memory. A
//! damaged file is ignored with a warning and rewritten.
//!
//! ```no_run
//! use cudrv::tune::{Autotuner, TuneOptions};
//! use cudrv::{DeviceBuffer, LaunchConfig};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let f = ctx.kernel("fill_f32")?;
//! let n = 1usize << 24;
//! let out = DeviceBuffer::<f32>::zeroed(&stream, n)?;
//! let tuned = Autotuner::global().kernel(&f, TuneOptions::default())?;
//! let mut launch = |cfg: &LaunchConfig| {
//!     let mut l = stream.launch_builder(&f);
//!     l.arg(&out).arg(&1.0f32).arg(&n);
//!     // SAFETY: fill_f32(float* out, float value, size_t n) matches the arguments.
//!     unsafe { l.launch(*cfg) }
//! };
//! // The first call in the first process searches; later calls, and later processes, hit.
//! let cfg = tuned.config_or_tune(&stream, n as u64, &mut launch)?;
//! launch(&cfg)?;
//! # Ok::<(), cudrv::Error>(())
//! ```

mod options;
mod search;
mod store;
mod table;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde::Serialize;

pub use options::{BlockSizes, GridRule, SharedRule, TuneOptions};
pub use search::Candidate;
pub use table::{bucket_floor, bucket_of, BUCKETS};

use crate::error::Result;
use crate::kernel_cache::cache_dir;
use crate::launch::LaunchConfig;
use crate::module::Function;
use crate::stream::Stream;
use store::{Store, StoredEntry};
use table::Table;

/// The tuning file's name in the cache directory.
pub const TUNE_FILE: &str = "tune.json";

/// The autotuner's counters.
///
/// ```
/// let s = cudrv::tune::Autotuner::in_memory().stats();
/// assert_eq!((s.searches, s.loaded, s.corrupt_files), (0, 0, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TuneStats {
    /// Searches run (each times every candidate block size).
    pub searches: u64,
    /// Bucket choices taken from the file when a kernel was registered.
    pub loaded: u64,
    /// Damaged files found (ignored and rewritten).
    pub corrupt_files: u64,
    /// Remembered choices, in memory and in the file.
    pub entries: usize,
    /// The file, `None` when the tuner keeps its choices in memory only.
    pub file: Option<PathBuf>,
    /// Why there is no file.
    pub why_memory_only: Option<String>,
}

struct Inner {
    store: Mutex<Store>,
    searches: AtomicU64,
    loaded: AtomicU64,
}

/// Remembers the best launch configuration per kernel, device and size bucket; cheap to clone
/// (clones share their memory and file).
///
/// ```
/// use cudrv::tune::Autotuner;
/// let dir = std::env::temp_dir().join(format!("cudrv-doc-tuner-{}", std::process::id()));
/// let tuner = Autotuner::with_file(dir.join("tune.json"));
/// assert_eq!(tuner.stats().file, Some(dir.join("tune.json")));
/// # let _ = std::fs::remove_dir_all(&dir);
/// ```
#[derive(Clone)]
pub struct Autotuner {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Autotuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Autotuner").field("stats", &self.stats()).finish()
    }
}

impl Autotuner {
    /// The process's tuner, configured from the environment ([`Autotuner::from_env`]).
    ///
    /// ```
    /// println!("tuning cache: {:?}", cudrv::tune::Autotuner::global().stats().file);
    /// ```
    pub fn global() -> &'static Autotuner {
        static GLOBAL: OnceLock<Autotuner> = OnceLock::new();
        GLOBAL.get_or_init(Autotuner::from_env)
    }

    /// A tuner whose file is `tune.json` in `CUDRV_CACHE_DIR`, or in the user's cache
    /// directory; in memory only with `CUDRV_CACHE_DISABLE=1` or when there is no cache
    /// directory.
    ///
    /// ```
    /// let tuner = cudrv::tune::Autotuner::from_env();
    /// assert!(tuner.stats().file.is_some() || tuner.stats().why_memory_only.is_some());
    /// ```
    pub fn from_env() -> Autotuner {
        Autotuner::new(Store::new(cache_dir(None).map(|dir| dir.join(TUNE_FILE))))
    }

    /// A tuner kept in the file `path` (created at the first tuning).
    ///
    /// ```
    /// let path = std::env::temp_dir().join("cudrv-doc-tune.json");
    /// let tuner = cudrv::tune::Autotuner::with_file(&path);
    /// assert_eq!(tuner.stats().entries, 0);
    /// ```
    pub fn with_file(path: impl Into<PathBuf>) -> Autotuner {
        Autotuner::new(Store::new(Ok(path.into())))
    }

    /// A tuner with no file: its choices last as long as the process.
    ///
    /// ```
    /// let tuner = cudrv::tune::Autotuner::in_memory();
    /// assert!(tuner.stats().file.is_none());
    /// ```
    pub fn in_memory() -> Autotuner {
        Autotuner::new(Store::new(Err("in memory by request".into())))
    }

    fn new(store: Store) -> Autotuner {
        Autotuner {
            inner: Arc::new(Inner {
                store: Mutex::new(store),
                searches: AtomicU64::new(0),
                loaded: AtomicU64::new(0),
            }),
        }
    }

    /// The counters, the file and the number of remembered choices.
    ///
    /// ```
    /// let s = cudrv::tune::Autotuner::in_memory().stats();
    /// assert_eq!(s.entries, 0);
    /// ```
    pub fn stats(&self) -> TuneStats {
        let mut store = self.inner.store.lock();
        TuneStats {
            searches: self.inner.searches.load(Ordering::Relaxed),
            loaded: self.inner.loaded.load(Ordering::Relaxed),
            corrupt_files: store.corrupt,
            entries: store.len(),
            file: store.path().map(PathBuf::from),
            why_memory_only: store.why_memory_only.clone(),
        }
    }

    /// Forgets every remembered choice, in memory and in the file (kernels already registered
    /// keep theirs until they are tuned again).
    ///
    /// ```
    /// cudrv::tune::Autotuner::in_memory().clear()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn clear(&self) -> std::io::Result<()> {
        self.inner.store.lock().clear()
    }

    /// Registers `function` with the launch rule `options`: its remembered choices (from this
    /// process or the file) are loaded, so that [`TunedKernel::config`] hits at once.
    ///
    /// ```no_run
    /// use cudrv::tune::{Autotuner, TuneOptions};
    /// let ctx = cudrv::Context::new(0)?;
    /// let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// assert!(tuned.config(1000).is_none()); // not tuned yet
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel(&self, function: &Function, options: TuneOptions) -> Result<TunedKernel> {
        let device = function.context().device().uuid_string()?;
        let prefix = format!(
            "{}/{}|{device}|{}",
            function.module().name(),
            function.name(),
            options.tag()
        );
        let digest: String = function.module().digest().iter().map(|b| format!("{b:02x}")).collect();
        let tuned = TunedKernel {
            tuner: self.clone(),
            function: function.clone(),
            options,
            prefix,
            digest,
            table: Table::default(),
            searching: Mutex::new(()),
        };
        let mut store = self.inner.store.lock();
        for b in 0..BUCKETS {
            if let Some(e) = store.get(&tuned.key(b)).filter(|e| e.digest == tuned.digest) {
                tuned.table.set(b, e.block, e.resident, e.micros);
                self.inner.loaded.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(tuned)
    }
}

/// What one tuning found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tuning {
    /// The size bucket it holds for ([`bucket_of`]).
    pub bucket: usize,
    /// The chosen launch, for the size tuned at.
    pub config: LaunchConfig,
    /// Its time, microseconds per launch.
    pub micros: f64,
    /// Every block size tried, in increasing order, with its time.
    pub candidates: Vec<Candidate>,
}

/// One size bucket's remembered choice, for reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketChoice {
    /// The bucket ([`bucket_of`]); its sizes start at [`bucket_floor`].
    pub bucket: usize,
    /// The chosen block size.
    pub block: u32,
    /// Microseconds per launch when tuned.
    pub tuned_us: f64,
    /// Moving average of observed times, if any were observed.
    pub ema_us: Option<f64>,
    /// Whether it will be tuned again at the next tuning call.
    pub stale: bool,
}

/// A kernel registered with an [`Autotuner`] under one launch rule.
pub struct TunedKernel {
    tuner: Autotuner,
    function: Function,
    options: TuneOptions,
    prefix: String,
    digest: String,
    table: Table,
    searching: Mutex<()>,
}

impl std::fmt::Debug for TunedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunedKernel")
            .field("kernel", &self.prefix)
            .field("buckets", &self.buckets())
            .finish()
    }
}

impl TunedKernel {
    fn key(&self, bucket: usize) -> String {
        format!("{}|b{bucket}", self.prefix)
    }

    /// The remembered launch for `size` items, or `None` when its bucket is untuned or due to
    /// be tuned again. Takes no lock.
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// if let Some(cfg) = tuned.config(1 << 20) {
    ///     assert_eq!(cfg.block_dim.0 % 32, 0);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    #[inline]
    pub fn config(&self, size: u64) -> Option<LaunchConfig> {
        let (block, resident) = self.table.hit(size, self.options.retune_every)?;
        Some(self.options.config(size, block, resident))
    }

    /// The remembered launch for `size`, tuning first when there is none: `launch` must enqueue
    /// one launch of this kernel on `stream` with the configuration it is given (it is called
    /// many times while tuning; the kernel's effects must be repeatable).
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # use cudrv::{DeviceBuffer, LaunchConfig};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let f = ctx.kernel("fill_f32")?;
    /// # let out = DeviceBuffer::<f32>::zeroed(&stream, 1000)?;
    /// let tuned = Autotuner::in_memory().kernel(&f, TuneOptions::default())?;
    /// let mut launch = |cfg: &LaunchConfig| {
    ///     let mut l = stream.launch_builder(&f);
    ///     l.arg(&out).arg(&0.0f32).arg(&1000usize);
    ///     // SAFETY: fill_f32(float* out, float value, size_t n).
    ///     unsafe { l.launch(*cfg) }
    /// };
    /// let cfg = tuned.config_or_tune(&stream, 1000, &mut launch)?;
    /// assert_eq!(tuned.config(1000), Some(cfg));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn config_or_tune(
        &self,
        stream: &Stream,
        size: u64,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<LaunchConfig> {
        if let Some(cfg) = self.config(size) {
            return Ok(cfg);
        }
        let _one = self.searching.lock();
        // Another thread may have tuned this bucket while this one waited.
        if let Some(state) = self.table.state(bucket_of(size)).filter(|s| !s.stale) {
            return Ok(self.options.config(size, state.block, state.resident));
        }
        Ok(self.search(stream, size, launch)?.config)
    }

    /// Tunes the bucket of `size` now, whatever is remembered, and remembers the result (in
    /// the file too); returns every candidate's time. `launch` as for
    /// [`TunedKernel::config_or_tune`].
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # use cudrv::{DeviceBuffer, LaunchConfig};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let f = ctx.kernel("fill_f32")?;
    /// # let out = DeviceBuffer::<f32>::zeroed(&stream, 1 << 20)?;
    /// # let tuned = Autotuner::in_memory().kernel(&f, TuneOptions::default())?;
    /// let t = tuned.tune(&stream, 1 << 20, &mut |cfg: &LaunchConfig| {
    ///     let mut l = stream.launch_builder(&f);
    ///     l.arg(&out).arg(&0.0f32).arg(&(1usize << 20));
    ///     // SAFETY: fill_f32(float* out, float value, size_t n).
    ///     unsafe { l.launch(*cfg) }
    /// })?;
    /// for c in &t.candidates {
    ///     println!("{:5} threads: {:.2} us", c.block, c.micros);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn tune(
        &self,
        stream: &Stream,
        size: u64,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<Tuning> {
        let _one = self.searching.lock();
        self.search(stream, size, launch)
    }

    fn search(
        &self,
        stream: &Stream,
        size: u64,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<Tuning> {
        let found = search::search(&self.function, stream, size, &self.options, launch)?;
        self.tuner.inner.searches.fetch_add(1, Ordering::Relaxed);
        let bucket = bucket_of(size);
        self.table.set(bucket, found.block, found.resident, found.micros);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.tuner.inner.store.lock().put(
            self.key(bucket),
            StoredEntry {
                digest: self.digest.clone(),
                block: found.block,
                resident: found.resident,
                micros: found.micros,
                tuned_unix: now,
            },
        );
        Ok(Tuning {
            bucket,
            config: self.options.config(size, found.block, found.resident),
            micros: found.micros,
            candidates: found.candidates,
        })
    }

    /// Times every block size the kernel allows for `size` over [`TuneOptions::rounds`]
    /// interleaved rounds (each figure a median), without changing what is remembered: the
    /// whole curve a search chooses from. `launch` as for [`TunedKernel::config_or_tune`].
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # use cudrv::{DeviceBuffer, LaunchConfig};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let stream = ctx.new_stream()?;
    /// # let f = ctx.kernel("fill_f32")?;
    /// # let out = DeviceBuffer::<f32>::zeroed(&stream, 1 << 20)?;
    /// # let tuned = Autotuner::in_memory().kernel(&f, TuneOptions::default())?;
    /// let curve = tuned.sweep(&stream, 1 << 20, &mut |cfg: &LaunchConfig| {
    ///     let mut l = stream.launch_builder(&f);
    ///     l.arg(&out).arg(&0.0f32).arg(&(1usize << 20));
    ///     // SAFETY: fill_f32(float* out, float value, size_t n).
    ///     unsafe { l.launch(*cfg) }
    /// })?;
    /// let best = curve.iter().min_by(|a, b| a.micros.total_cmp(&b.micros)).unwrap();
    /// println!("fastest: {} threads, {:.2} us", best.block, best.micros);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn sweep(
        &self,
        stream: &Stream,
        size: u64,
        launch: &mut dyn FnMut(&LaunchConfig) -> Result<()>,
    ) -> Result<Vec<Candidate>> {
        search::sweep(&self.function, stream, size, &self.options, launch)
    }

    /// Folds an observed launch time (microseconds, e.g. from the profiler) for `size` into its
    /// bucket's moving average; the bucket is tuned again at the next
    /// [`config_or_tune`](TunedKernel::config_or_tune) once the average drifts past
    /// [`TuneOptions::drift`]. Returns the average (`None` for an untuned bucket).
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// assert_eq!(tuned.observe(1000, 12.0), None); // untuned bucket
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn observe(&self, size: u64, micros: f64) -> Option<f64> {
        self.table
            .observe(size, micros, self.options.ema_alpha, self.options.drift)
    }

    /// Marks every bucket to be tuned again at its next tuning call.
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// tuned.invalidate();
    /// assert!(tuned.config(1000).is_none());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn invalidate(&self) {
        self.table.invalidate();
    }

    /// Every tuned bucket's choice.
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// for b in tuned.buckets() {
    ///     println!("sizes from {}: {} threads", cudrv::tune::bucket_floor(b.bucket), b.block);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn buckets(&self) -> Vec<BucketChoice> {
        (0..BUCKETS)
            .filter_map(|b| {
                self.table.state(b).map(|s| BucketChoice {
                    bucket: b,
                    block: s.block,
                    tuned_us: s.tuned_us,
                    ema_us: s.ema_us,
                    stale: s.stale,
                })
            })
            .collect()
    }

    /// The kernel.
    ///
    /// ```no_run
    /// # use cudrv::tune::{Autotuner, TuneOptions};
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let tuned = Autotuner::in_memory().kernel(&ctx.kernel("fill_f32")?, TuneOptions::default())?;
    /// assert_eq!(tuned.function().name(), "fill_f32");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn function(&self) -> &Function {
        &self.function
    }
}
