//! The persistent executor: one resident kernel that runs work items (bundled elementwise ops,
//! sums, fused kernels) from a queue the host fills through mapped memory, so a step of many
//! small dependent kernels costs no launch per item.
//!
//! **Ordering.** Items run in the order they were added, batches in the order they were
//! submitted. Every item sees the results of every earlier item: items that touch the same
//! elements through the same threads (elementwise work over buffers at the same addresses) follow
//! each other without waiting, anything else is preceded by a grid-wide barrier, which cudrv
//! inserts from the buffers each item reads and writes. A batch's [`Ticket`] completes when every
//! item of the batch, and of every earlier batch, has finished and its writes are visible to the
//! host and to other streams. Work the buffers' own streams had queued before [`Batch::submit`]
//! finishes before the batch starts.
//!
//! **Watchdog.** Waiting for a ticket, for room in the queue or for shutdown gives up after the
//! watchdog's time with [`Error::Timeout`] (naming the batch) instead of hanging; the executor is
//! then marked stuck and refuses new work.
//!
//! **Shutdown.** [`Executor::shutdown`] (and drop) queues a stop after the work already
//! submitted, waits for it (within the watchdog) and ends the kernel. An executor whose kernel
//! does not end keeps its memory (it is never freed under a running kernel).
//!
//! **Fetching.** A fetcher block, on a stream and a multiprocessor of its own, copies submitted
//! items from the host's queue to the device while the workers run earlier ones; with
//! [`ExecutorBuilder::fetcher`]`(false)` block 0 of the workers does it when it runs out of
//! items.
//!
//! **It stays resident while it runs**: its blocks (2 of 256 threads per multiprocessor by
//! default, on every multiprocessor but the fetcher's) spin between items, so kernels launched
//! on other streams share the multiprocessors with it and a kernel that needs a whole one waits
//! until shutdown (copies run as usual). Use it for a phase of many small steps, then shut it
//! down. Starting a second executor while one runs may not fit: that is an [`Error::Timeout`]
//! from [`ExecutorBuilder::start`], not a hang.
//!
//! ```no_run
//! use cudrv::exec::Executor;
//! use cudrv::{DeviceBuffer, DeviceSlice};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 100_000])?;
//! let y = DeviceBuffer::from_slice(&stream, &[0.0f32; 100_000])?;
//! let exec = Executor::builder(&ctx).start()?;
//! let mut step = exec.batch();
//! for _ in 0..170 {
//!     step.axpy(&y, 0.5, &x)?; // y += 0.5 x, 170 times, no launch
//! }
//! step.run()?;
//! exec.shutdown()?;
//! assert_eq!(y.to_vec()?[0], 85.0);
//! # Ok::<(), cudrv::Error>(())
//! ```

mod batch;
mod ring;
mod source;

use std::collections::VecDeque;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub use batch::{Batch, FusedItem, Ticket};

use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::fuse::{Fusion, Layout};
use crate::memory::{DeviceBuffer, DeviceSlice};
use crate::module::Function;
use crate::stream::Stream;
use ring::HostRing;
use source::{FETCH_KERNEL, FETCH_THREADS, ITEM_WORDS, KERNEL};

/// Threads per block of the executor kernel.
const BLOCK: u32 = 256;

/// Settings of an executor; [`ExecutorBuilder::start`] compiles and starts it.
///
/// ```no_run
/// use std::time::Duration;
/// use cudrv::exec::Executor;
/// let ctx = cudrv::Context::new(0)?;
/// let exec = Executor::builder(&ctx)
///     .capacity(1024)
///     .watchdog(Duration::from_secs(2))
///     .blocks_per_sm(2)
///     .start()?;
/// exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct ExecutorBuilder {
    ctx: Arc<Context>,
    fusions: Vec<Fusion>,
    capacity: usize,
    watchdog: Duration,
    blocks_per_sm: u32,
    fetcher: bool,
}

impl ExecutorBuilder {
    /// Makes `fusion` runnable as an item ([`Batch::fused`]); at most 15 words of arguments
    /// (2 + inputs + outputs, + 2 with whole reductions).
    ///
    /// ```no_run
    /// use cudrv::exec::Executor;
    /// use cudrv::fuse::{DType, Fusion};
    /// let ctx = cudrv::Context::new(0)?;
    /// let mut f = Fusion::new("relu_into", DType::F32);
    /// let x = f.input("x");
    /// f.output("y", x.relu());
    /// let exec = Executor::builder(&ctx).fusion(&f).start()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn fusion(mut self, fusion: &Fusion) -> Self {
        self.fusions.push(fusion.clone());
        self
    }

    /// Items the queue holds (default 4096); a batch may hold at most this many minus one.
    ///
    /// ```
    /// # fn f(b: cudrv::exec::ExecutorBuilder) -> cudrv::exec::ExecutorBuilder {
    /// b.capacity(256)
    /// # }
    /// ```
    pub fn capacity(mut self, items: usize) -> Self {
        self.capacity = items;
        self
    }

    /// How long a wait may take before it is an [`Error::Timeout`] (default 10 s).
    ///
    /// ```
    /// # fn f(b: cudrv::exec::ExecutorBuilder) -> cudrv::exec::ExecutorBuilder {
    /// b.watchdog(std::time::Duration::from_millis(500))
    /// # }
    /// ```
    pub fn watchdog(mut self, timeout: Duration) -> Self {
        self.watchdog = timeout;
        self
    }

    /// Resident blocks of 256 threads per multiprocessor (default 2, fewer if the kernel's
    /// occupancy allows fewer): more hides more memory latency, fewer makes barriers and the
    /// per-item dispatch (which every warp runs) cheaper.
    ///
    /// ```
    /// # fn f(b: cudrv::exec::ExecutorBuilder) -> cudrv::exec::ExecutorBuilder {
    /// b.blocks_per_sm(2)
    /// # }
    /// ```
    pub fn blocks_per_sm(mut self, blocks: u32) -> Self {
        self.blocks_per_sm = blocks;
        self
    }

    /// Whether a fetcher block on a stream and a multiprocessor of its own copies submitted
    /// items from the host to the device ahead of the workers (on devices of two
    /// multiprocessors or more; the workers get one multiprocessor fewer). On by default: a
    /// step of 170 small items took 1.034-1.056x less time with it at 1, 2 and 4 blocks per
    /// multiprocessor (H100, docs/kernels/exec.md). Without it, block 0 of the workers fetches
    /// when it runs out of items and the others wait for it: a PCIe round trip or more at the
    /// start of each batch.
    ///
    /// ```
    /// # fn f(b: cudrv::exec::ExecutorBuilder) -> cudrv::exec::ExecutorBuilder {
    /// b.fetcher(false)
    /// # }
    /// ```
    pub fn fetcher(mut self, fetcher: bool) -> Self {
        self.fetcher = fetcher;
        self
    }

    /// The CUDA C++ of the executor kernel these settings make (the fusions' bodies and the
    /// item loop), e.g. to read or to version it.
    ///
    /// ```
    /// let src = cudrv::exec::ExecutorBuilder::source_for(&[]);
    /// assert!(src.contains("cudrv_executor"));
    /// ```
    pub fn source_for(fusions: &[Fusion]) -> String {
        source::generate(fusions)
    }

    /// Generates the kernel with the fusions, compiles it (NVRTC; cached like any program),
    /// allocates the queue and starts the kernel on a stream of its own.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn start(self) -> Result<Executor> {
        let bad = |m: String| Err(Error::InvalidArgument(format!("executor: {m}")));
        if self.capacity < 2 || self.capacity > 1 << 24 {
            return bad(format!("a capacity of {} items; use 2 to {}", self.capacity, 1 << 24));
        }
        if self.blocks_per_sm == 0 {
            return bad("blocks_per_sm must be at least 1".into());
        }
        let mut layouts = Vec::new();
        for (i, f) in self.fusions.iter().enumerate() {
            f.source()?;
            if self.fusions[..i].iter().any(|g| g.name() == f.name()) {
                return bad(format!("two fusions are named `{}`", f.name()));
            }
            let layout = Layout::of(f);
            if layout.words > ITEM_WORDS - 1 {
                return bad(format!(
                    "fusion `{}` needs {} argument words; an item holds {}",
                    f.name(),
                    layout.words,
                    ITEM_WORDS - 1
                ));
            }
            layouts.push(layout);
        }
        let module = crate::fuse::compile_module(&self.ctx, Self::source_for(&self.fusions), KERNEL)?;
        let function = module.function(KERNEL)?;
        let mut per_sm = 0i32;
        self.ctx.bind_to_thread()?;
        // SAFETY: writes one int; the function is live.
        unsafe {
            cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut per_sm,
                function.raw(),
                BLOCK as i32,
                0
            ))?
        };
        let sms = self.ctx.limits().multiprocessor_count;
        // The fetcher takes a multiprocessor of its own (all the shared memory a block may ask
        // for, so no worker block fits beside it: one sharing its multiprocessor with PCIe
        // copies runs slower, and every batch waits for the slowest block); the workers get the
        // others.
        let fetcher = self.fetcher && sms >= 2;
        let grid = (sms - u32::from(fetcher)) * self.blocks_per_sm.min(per_sm.max(1) as u32);
        let stream = self.ctx.new_stream()?;
        let fetch_stream = if fetcher { Some(self.ctx.new_stream()?) } else { None };
        let ring = HostRing::new(&self.ctx, self.capacity)?;
        // SAFETY: the kernel writes every slot before reading it (the tail guards it).
        let dev_ring = unsafe { DeviceBuffer::<u64>::uninit(&stream, self.capacity * ITEM_WORDS)? };
        let ctl = DeviceBuffer::<u64>::zeroed(&stream, 2)?;
        let partials = DeviceBuffer::<f32>::zeroed(&stream, grid as usize)?;
        let mut scratch = Vec::new();
        for layout in &layouts {
            scratch.push(match layout.scratch_words(grid as usize) {
                0 => None,
                words => Some(DeviceBuffer::<u64>::zeroed(&stream, words)?),
            });
        }
        if let Err(e) = stream.synchronize_timeout(self.watchdog) {
            // The setup still waits behind whatever holds the GPU: dropping the stream would
            // wait for it too, and the memory is still to be written. Leave all of it.
            std::mem::forget((stream, ring, dev_ring, ctl, partials, scratch));
            return Err(match e {
                Error::Timeout { waited_ms, .. } => Error::Timeout {
                    what: "the executor's setup (is another resident kernel, such as another \
                           executor, holding the GPU?)"
                        .into(),
                    waited_ms,
                },
                other => other,
            });
        }
        let (host_counters, host_items) = ring.device_pointers();
        let (p_ring, p_ctl, p_partials) = (dev_ring.device_ptr(), ctl.device_ptr(), partials.device_ptr());
        let capacity = self.capacity as u64;
        let fetcher_flag = u32::from(fetcher);
        // The workers' parameters; the fetcher's are the first five.
        let mut params: [*mut c_void; 7] = [
            &host_items as *const u64 as *mut c_void,
            &host_counters as *const u64 as *mut c_void,
            &p_ring as *const u64 as *mut c_void,
            &p_ctl as *const u64 as *mut c_void,
            &capacity as *const u64 as *mut c_void,
            &p_partials as *const u64 as *mut c_void,
            &fetcher_flag as *const u32 as *mut c_void,
        ];
        if let Some(fs) = &fetch_stream {
            let fetch = module.function(FETCH_KERNEL)?;
            let whole = self
                .ctx
                .limits()
                .max_shared_per_block_optin
                .saturating_sub(fetch.attributes().shared_size_bytes);
            fetch.set_max_dynamic_shared_memory(whole)?;
            // SAFETY: the first five parameters match the fetcher's (pointers and a u64, by
            // value, living until the call returns; the driver reads as many as the kernel
            // has); one block of FETCH_THREADS with the shared memory it was allowed above.
            unsafe {
                cu!(cuLaunchKernel(
                    fetch.raw(),
                    1,
                    1,
                    1,
                    FETCH_THREADS,
                    1,
                    1,
                    whole,
                    fs.raw(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut()
                ))?
            };
        }
        // SAFETY: the seven parameters match the kernel's (pointers, a u64 and a u32, by value,
        // living until the call returns); the grid fits the device at this occupancy, which the
        // cooperative launch checks.
        let launched = unsafe {
            cu!(cuLaunchCooperativeKernel(
                function.raw(),
                grid,
                1,
                1,
                BLOCK,
                1,
                1,
                0,
                stream.raw(),
                params.as_mut_ptr()
            ))
        };
        if let Err(e) = launched {
            // A running fetcher ends once it has copied a stop item; until then it reads the
            // queue, so everything is left alive unless it ends within the watchdog.
            if let Some(fs) = fetch_stream {
                ring.publish(&[source::stop_item(false)]);
                if fs.synchronize_timeout(self.watchdog).is_err() {
                    std::mem::forget((fs, stream, ring, dev_ring, ctl, partials, scratch));
                }
            }
            return Err(e);
        }
        let exec = Executor {
            function,
            fusions: self.fusions,
            layouts,
            grid,
            watchdog: self.watchdog,
            state: Mutex::new(State::default()),
            stream: ManuallyDrop::new(stream),
            fetch_stream: ManuallyDrop::new(fetch_stream),
            ring: ManuallyDrop::new(ring),
            scratch: ManuallyDrop::new(scratch),
            device: ManuallyDrop::new(DeviceMemory {
                _ring: dev_ring,
                _ctl: ctl,
                _partials: partials,
            }),
        };
        // A kernel already resident (another executor) keeps this one from starting: an error
        // rather than a wait without end. Should it start later, a stop is queued first.
        let deadline = Instant::now() + exec.watchdog;
        while !(exec.ring.started() && (!fetcher || exec.ring.fetcher_started())) {
            if Instant::now() >= deadline {
                // Should the kernel start later it finds a stop and ends; until then it may use
                // everything the executor owns, so all of it is left alive.
                exec.ring.publish(&[source::stop_item(false)]);
                std::mem::forget(exec);
                return Err(Error::Timeout {
                    what: "the executor's kernel to start (is another resident kernel, such as \
                           another executor, holding the GPU?)"
                        .into(),
                    waited_ms: self.watchdog.as_millis() as u64,
                });
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        Ok(exec)
    }
}

/// Where one block's time went, from [`Executor::profile`].
///
/// ```
/// use std::time::Duration;
/// let p = cudrv::exec::BlockProfile {
///     items: 100, refills: 1, waiting: Duration::from_micros(3), copying: Duration::from_micros(1),
///     running: Duration::from_micros(50), barriers: Duration::from_micros(1),
/// };
/// assert_eq!(p.overhead_per_item(), Duration::from_nanos(20)); // (1 + 1) us over 100 items
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockProfile {
    /// Items the block ran.
    pub items: u64,
    /// Times it read items into shared memory.
    pub refills: u64,
    /// Waiting for items (from the host, or for block 0 to fetch them).
    pub waiting: Duration,
    /// Copying items into shared memory.
    pub copying: Duration,
    /// Running items (their own work and the per-item steps of the loop that runs them), barriers
    /// excluded: the time not spent waiting, copying or in barriers.
    pub running: Duration,
    /// In grid barriers (before items that need one, and at the end of each batch).
    pub barriers: Duration,
}

impl BlockProfile {
    /// What the executor itself cost per item: copying and barriers (waiting for work that had
    /// not been submitted yet is idle time, not cost).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let p = cudrv::exec::BlockProfile { items: 0, refills: 0, waiting: Duration::ZERO,
    ///     copying: Duration::ZERO, running: Duration::ZERO, barriers: Duration::ZERO };
    /// assert_eq!(p.overhead_per_item(), Duration::ZERO);
    /// ```
    pub fn overhead_per_item(&self) -> Duration {
        Duration::from_secs_f64((self.copying + self.barriers).as_secs_f64() / self.items.max(1) as f64)
    }
}

/// Where the executor's time went, from [`Executor::profile`].
///
/// ```no_run
/// # let ctx = cudrv::Context::new(0)?;
/// # let exec = cudrv::exec::Executor::builder(&ctx).start()?;
/// let p = exec.profile()?;
/// println!("block 0 waited {:?} for items, ran them for {:?}", p.fetcher.waiting, p.fetcher.running);
/// # exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorProfile {
    /// Block 0 of the workers (which also copies new items from the host when there is no
    /// fetcher block).
    pub fetcher: BlockProfile,
    /// Block 1 (block 0 again when there is one block).
    pub worker: BlockProfile,
}

/// Device memory the kernel uses for as long as it runs.
#[derive(Debug)]
struct DeviceMemory {
    _ring: DeviceBuffer<u64>,
    _ctl: DeviceBuffer<u64>,
    _partials: DeviceBuffer<f32>,
}

#[derive(Debug, Default)]
struct State {
    /// Number of the last batch submitted (batches count from 1).
    submitted: u64,
    /// Submitted batches not yet seen finished: (number, queue position after its last item).
    pending: VecDeque<(u64, u64)>,
    /// Queue position after the last item of the last batch seen finished.
    done_items: u64,
    /// Why the executor refuses work (stuck, stopped).
    refused: Option<String>,
    /// Whether the stop item was published, and whether the kernel has ended.
    stop_sent: bool,
    ended: bool,
}

/// A running persistent executor; see the [module](self) for its rules.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
/// println!("{} resident blocks", exec.blocks());
/// exec.shutdown()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub struct Executor {
    function: Function,
    fusions: Vec<Fusion>,
    layouts: Vec<Layout>,
    grid: u32,
    watchdog: Duration,
    state: Mutex<State>,
    /// What the kernel uses while it runs: dropped only once it has ended (see Drop).
    stream: ManuallyDrop<Arc<Stream>>,
    /// The fetcher's stream, when it runs.
    fetch_stream: ManuallyDrop<Option<Arc<Stream>>>,
    ring: ManuallyDrop<HostRing>,
    scratch: ManuallyDrop<Vec<Option<DeviceBuffer<u64>>>>,
    device: ManuallyDrop<DeviceMemory>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("blocks", &self.grid)
            .field("capacity", &self.ring.capacity())
            .field("fusions", &self.fusions.iter().map(|f| f.name()).collect::<Vec<_>>())
            .finish()
    }
}

impl Executor {
    /// Settings for a new executor in `ctx`.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn builder(ctx: &Arc<Context>) -> ExecutorBuilder {
        ExecutorBuilder {
            ctx: ctx.clone(),
            fusions: Vec::new(),
            capacity: 4096,
            watchdog: Duration::from_secs(10),
            blocks_per_sm: 2,
            fetcher: true,
        }
    }

    /// Where the kernel's time went so far (as of about the last finished batch): for block 0
    /// (which also fetches items from the host when there is no fetcher block) and for block 1,
    /// a plain worker. Times are SM clock
    /// cycles at the device's maximum clock, so approximate.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// exec.batch().run()?;
    /// let p = exec.profile()?;
    /// println!("{:?} per item beyond the items' own work", p.worker.overhead_per_item());
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn profile(&self) -> Result<ExecutorProfile> {
        let khz = self
            .function
            .context()
            .device()
            .attribute(crate::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?
            .max(1) as f64;
        let block = |b: usize| {
            let [wait, copy, items, bar, n, refills] = self.ring.profile(b);
            let t = |cycles: u64| Duration::from_secs_f64(cycles as f64 / (khz * 1e3));
            BlockProfile {
                items: n,
                refills,
                waiting: t(wait),
                copying: t(copy),
                running: t(items.saturating_sub(bar)),
                barriers: t(bar),
            }
        };
        Ok(ExecutorProfile {
            fetcher: block(0),
            worker: block(if self.grid > 1 { 1 } else { 0 }),
        })
    }

    /// Whether a fetcher block copies submitted items to the device ahead of the workers
    /// ([`ExecutorBuilder::fetcher`]).
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).fetcher(true).start()?;
    /// assert_eq!(exec.has_fetcher(), ctx.limits().multiprocessor_count > 1);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn has_fetcher(&self) -> bool {
        self.fetch_stream.is_some()
    }

    /// Resident blocks of the kernel (workers; the fetcher is not counted).
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).blocks_per_sm(1).start()?;
    /// let sms = ctx.limits().multiprocessor_count;
    /// assert_eq!(exec.blocks(), sms - u32::from(exec.has_fetcher())); // the fetcher has an SM to itself
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn blocks(&self) -> u32 {
        self.grid
    }

    /// The kernel function (for its attributes).
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// println!("{} registers", exec.function().attributes().num_regs);
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// A new, empty batch of items.
    ///
    /// ```no_run
    /// # use cudrv::DeviceBuffer;
    /// # let ctx = cudrv::Context::new(0)?;
    /// # let s = ctx.new_stream()?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// let y = DeviceBuffer::<f32>::zeroed(&s, 10)?;
    /// let mut b = exec.batch();
    /// b.fill(&y, 3.0)?;
    /// b.run()?;
    /// # exec.shutdown()?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn batch(&self) -> Batch<'_> {
        Batch::new(self)
    }

    /// Queues a stop after the work already submitted, waits for the kernel to end (within the
    /// watchdog) and refuses further work.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let exec = cudrv::exec::Executor::builder(&ctx).start()?;
    /// exec.shutdown()?;
    /// assert!(exec.batch().run().is_err()); // stopped
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn shutdown(&self) -> Result<()> {
        {
            let mut state = self.state.lock();
            if state.ended {
                return Ok(());
            }
            if !state.stop_sent {
                self.wait_for_room(&mut state, 1)?;
                self.ring.publish(&[source::stop_item(true)]);
                state.stop_sent = true;
                state.refused = Some("stopped: the executor was shut down".into());
            }
        }
        self.stream.synchronize_timeout(self.watchdog)?;
        if let Some(fs) = self.fetch_stream.as_ref() {
            fs.synchronize_timeout(self.watchdog)?;
        }
        self.state.lock().ended = true;
        Ok(())
    }

    /// Publishes `items` (ending with `END_BATCH`) as the next batch; its number.
    fn publish(&self, items: &mut [[u64; ITEM_WORDS]]) -> Result<u64> {
        let mut state = self.state.lock();
        if let Some(why) = &state.refused {
            return Err(Error::InvalidArgument(format!("executor refuses work: {why}")));
        }
        if items.len() >= self.ring.capacity() {
            return Err(Error::InvalidArgument(format!(
                "executor queue overrun: a batch of {} items (with its end marker) does not fit a \
                 queue of {}; split the batch or raise ExecutorBuilder::capacity",
                items.len(),
                self.ring.capacity()
            )));
        }
        self.wait_for_room(&mut state, items.len())?;
        let seq = state.submitted + 1;
        if let Some(last) = items.last_mut() {
            last[1] = seq;
        }
        self.ring.publish(items);
        state.submitted = seq;
        let end = self.ring.tail();
        state.pending.push_back((seq, end));
        Ok(seq)
    }

    /// Waits (within the watchdog) until the queue has room for `n` more items.
    fn wait_for_room(&self, state: &mut State, n: usize) -> Result<()> {
        let capacity = self.ring.capacity() as u64;
        let deadline = Instant::now() + self.watchdog;
        loop {
            self.retire(state);
            if self.ring.tail() - state.done_items + n as u64 <= capacity {
                return Ok(());
            }
            if Instant::now() >= deadline {
                state.refused = Some("stuck: the queue stayed full".into());
                return Err(Error::Timeout {
                    what: format!("room for {n} items in the executor's queue"),
                    waited_ms: self.watchdog.as_millis() as u64,
                });
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    /// Drops finished batches from the pending list.
    fn retire(&self, state: &mut State) {
        let completed = self.ring.completed();
        while let Some(&(seq, end)) = state.pending.front() {
            if seq > completed {
                break;
            }
            state.done_items = end;
            state.pending.pop_front();
        }
    }

    /// Waits until batch `seq` has finished: spinning at first (completion takes microseconds),
    /// then sleeping; an error after the watchdog's time or if the kernel ended.
    fn wait(&self, seq: u64) -> Result<()> {
        let start = Instant::now();
        let mut spins = 0u32;
        while self.ring.completed() < seq {
            spins += 1;
            if spins % 1024 == 0 {
                let waited = start.elapsed();
                if waited > self.watchdog {
                    self.state.lock().refused = Some(format!("stuck: batch {seq} did not finish"));
                    return Err(Error::Timeout {
                        what: format!("the executor's batch {seq}"),
                        waited_ms: self.watchdog.as_millis() as u64,
                    });
                }
                if self.stream.query()? {
                    return Err(Error::InvalidArgument(format!(
                        "the executor's kernel ended before batch {seq} finished"
                    )));
                }
                if waited > Duration::from_micros(200) {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
            std::hint::spin_loop();
        }
        Ok(())
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        let ended = self.shutdown().is_ok();
        if ended {
            // SAFETY: each field is dropped once, here, after the kernel that used it ended.
            unsafe {
                ManuallyDrop::drop(&mut self.device);
                ManuallyDrop::drop(&mut self.scratch);
                ManuallyDrop::drop(&mut self.ring);
                ManuallyDrop::drop(&mut self.stream);
                ManuallyDrop::drop(&mut self.fetch_stream);
            }
        }
        // Otherwise the kernel may still run and read the queue and its device memory, and the
        // stream would wait for it when dropped: all four are left alone (leaked).
    }
}
