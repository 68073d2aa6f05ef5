//! A CPU simulation of the GPU stress workload (`tests/gpu_memory.rs`,
//! `stress_many_threads_many_streams`) against the caching pool, in virtual time.
//!
//! Eight simulated host threads, each with four streams, run the stress test's program with the
//! same random sequence: log-uniform sizes from 1 B to 4 MiB with a 32 MiB request every 997th
//! operation, a tag memset on the buffer's stream, every 50th buffer copied to another stream
//! (the copy's stream waits for the source's stream, the source is marked as used there and
//! freed at once), at most 16 live buffers per thread, and a synchronous read-back of a random
//! victim before it is freed. Host calls cost virtual time; device work runs in order on each
//! stream and takes time proportional to its bytes (memset 2.5 TB/s, copy 1.5 TB/s, read-back
//! 10 GB/s, as on an H100), so a fence completes when its stream has
//! drained the work queued before it, and a stream made to wait on a fence starts its later work
//! no sooner. The threads are interleaved one host call at a time, by virtual clock.
//!
//! Every block handed out is checked against the simulated device: no two live blocks overlap,
//! and memory another stream used is reused only once that use is finished, or once the new
//! stream's work is ordered after it. The run reports peak reserved / peak allocated.
//!
//! `CUDRV_SIM_OPS` sets the operation count (default 2*10^5; the GPU test does 10^6),
//! `CUDRV_SIM_HOST` and `CUDRV_SIM_DEVICE` scale host and device costs (default 1.0),
//! `CUDRV_SIM_START_US` is the mean spread of the threads' starts (default 3000 us),
//! `CUDRV_SIM_BUDGET` sets the pool's reserve budget multiple (or `none`; default: the pool's
//! default, and then the test asserts a ratio of at most 1.25), and `CUDRV_SIM_TRACE` prints
//! every segment reserved or released.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudrv::memory::pool::{Backing, BackingError, Block, CachingPool, Fence, FenceSource, ReserveBudget, StreamId};
use cudrv::selftest::Rng;

const MIB: usize = 1 << 20;

/// Time in nanoseconds, shared by the host threads, the streams and the fences: virtual, or
/// read from a real clock when the threads are real.
#[derive(Default)]
struct Device {
    now: AtomicU64,
    /// Set when the threads are real: time is what this clock says.
    real: Option<Instant>,
    /// Held by a real thread while its driver allocation or free runs.
    driver_lock: Mutex<()>,
    /// Per stream: when the work queued on it so far will have finished.
    busy: Mutex<HashMap<StreamId, u64>>,
    /// When the driver's allocation lock is free again (cuMemAlloc calls run one at a time).
    driver: AtomicU64,
    device_scale: f64,
}

impl Device {
    fn now(&self) -> u64 {
        match self.real {
            Some(start) => start.elapsed().as_nanos() as u64,
            None => self.now.load(Relaxed),
        }
    }

    /// Spends `ns` of a real thread's time (sleeping when long enough for the timer).
    fn pause(&self, ns: u64) {
        let until = self.now() + ns;
        if ns > 60_000 {
            std::thread::sleep(Duration::from_nanos(ns - 50_000));
        }
        while self.now() < until {
            std::thread::yield_now();
        }
    }

    fn busy(&self, s: StreamId) -> u64 {
        self.busy.lock().unwrap().get(&s).copied().unwrap_or(0)
    }

    /// Queues `ns` of work on `s`; returns when it finishes.
    fn enqueue(&self, s: StreamId, ns: f64) -> u64 {
        let now = self.now();
        let mut busy = self.busy.lock().unwrap();
        let b = busy.entry(s).or_default();
        *b = (*b).max(now) + (ns * self.device_scale) as u64;
        *b
    }

    /// Later work on `s` starts no sooner than `at`.
    fn order_after(&self, s: StreamId, at: u64) {
        let mut busy = self.busy.lock().unwrap();
        let b = busy.entry(s).or_default();
        *b = (*b).max(at);
    }
}

/// Segments from a bump pointer; counts reservations by size.
struct SimBacking {
    next: AtomicU64,
    device: Arc<Device>,
    by_size: Mutex<BTreeMap<usize, u64>>,
    reserves: AtomicU64,
    releases: AtomicU64,
}

impl Backing for SimBacking {
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
        // cuMemAlloc: serialised in the driver, tens of microseconds.
        let cost = 40_000 + (bytes / MIB) as u64 * 2_000;
        if self.device.real.is_some() {
            let _driver = self.device.driver_lock.lock().unwrap();
            self.device.pause(cost);
        } else {
            let start = self.device.driver.load(Relaxed).max(self.device.now());
            self.device.driver.store(start + cost, Relaxed);
        }
        *self.by_size.lock().unwrap().entry(bytes).or_default() += 1;
        self.reserves.fetch_add(1, Relaxed);
        Ok(self.next.fetch_add(bytes as u64 + 4096, Relaxed))
    }

    fn release(&self, _addr: u64, bytes: usize) {
        if self.device.real.is_some() {
            // cuMemFree: waits for the device to go idle.
            let _driver = self.device.driver_lock.lock().unwrap();
            let idle = self.device.busy.lock().unwrap().values().copied().max().unwrap_or(0);
            self.device.pause(idle.saturating_sub(self.device.now()) + 30_000);
        }
        *self.by_size.lock().unwrap().entry(bytes).or_default() -= 1;
        self.releases.fetch_add(1, Relaxed);
        if std::env::var("CUDRV_SIM_TRACE").is_ok() {
            eprintln!("release: t={:.3} ms bytes {bytes}", self.device.now() as f64 * 1e-6);
        }
    }
}

/// An event: complete once virtual time passes the end of the work queued before it.
struct SimFence {
    done_at: u64,
    device: Arc<Device>,
}

impl Fence for SimFence {
    fn is_complete(&self) -> bool {
        self.device.now() >= self.done_at
    }
}

struct SimFences {
    device: Arc<Device>,
    records: AtomicU64,
    waits: AtomicU64,
}

impl FenceSource for SimFences {
    type F = SimFence;

    fn record(&self, stream: StreamId) -> SimFence {
        self.records.fetch_add(1, Relaxed);
        SimFence {
            done_at: self.device.busy(stream),
            device: self.device.clone(),
        }
    }

    fn wait(&self, fence: &SimFence, stream: StreamId) {
        self.waits.fetch_add(1, Relaxed);
        self.device.order_after(stream, fence.done_at);
    }
}

type Pool = CachingPool<SimBacking, SimFences>;

/// Memory freed while streams may still use it: reusable on stream S once, for every user
/// (u, done), u == S or done <= max(now, when S's queued work ends).
struct Dirty {
    end: u64,
    users: Vec<(StreamId, u64)>,
}

/// The checks against the simulated device, and the peak figures.
#[derive(Default)]
struct Books {
    live: BTreeMap<u64, u64>,
    dirty: BTreeMap<(u64, u64), Dirty>,
    next_dirty: u64,
    peak_allocated: usize,
    allocated: usize,
    peak_large_allocated: usize,
    peak_huge_allocated: usize,
    large_allocated: usize,
    huge_allocated: usize,
    early_reuses: u64,
    /// The most bytes allocated at once in blocks of at most 1 MiB, up to 10 MiB, and above.
    max_by_class: [usize; 3],
    by_class: [usize; 3],
}

fn class(size: usize) -> usize {
    match size {
        s if s > 10 * MIB => 2,
        s if s > MIB => 1,
        _ => 0,
    }
}

impl Books {
    fn handed(&mut self, b: &Block, device: &Device) {
        let (start, end) = (b.addr(), b.addr() + b.size() as u64);
        if let Some((&s, &e)) = self.live.range(..end).next_back() {
            assert!(
                e <= start,
                "live blocks overlap: [{start:#x},{end:#x}) and [{s:#x},{e:#x})"
            );
        }
        self.live.insert(start, end);
        let now = device.now();
        let ready = now.max(device.busy(b.stream()));
        let lo = start.saturating_sub(64 * MIB as u64);
        for (_, d) in self.dirty.range((lo, 0)..(end, 0)) {
            if d.end <= start {
                continue;
            }
            for &(u, done) in &d.users {
                if u != b.stream() && done > ready {
                    self.early_reuses += 1;
                }
            }
        }
        self.allocated += b.size();
        let c = class(b.size());
        self.by_class[c] += b.size();
        self.max_by_class[c] = self.max_by_class[c].max(self.by_class[c]);
        match b.size() {
            s if s > 10 * MIB => self.huge_allocated += s,
            s if s > MIB => self.large_allocated += s,
            _ => {}
        }
        if self.allocated > self.peak_allocated {
            self.peak_allocated = self.allocated;
            self.peak_large_allocated = self.large_allocated;
            self.peak_huge_allocated = self.huge_allocated;
        }
    }

    fn freed(&mut self, b: &Block, users: &[StreamId], device: &Device) {
        assert!(self.live.remove(&b.addr()).is_some());
        self.allocated -= b.size();
        self.by_class[class(b.size())] -= b.size();
        match b.size() {
            s if s > 10 * MIB => self.huge_allocated -= s,
            s if s > MIB => self.large_allocated -= s,
            _ => {}
        }
        let now = device.now();
        let users: Vec<_> = users
            .iter()
            .map(|&u| (u, device.busy(u)))
            .filter(|&(_, done)| done > now)
            .collect();
        if !users.is_empty() {
            self.next_dirty += 1;
            self.dirty.insert(
                (b.addr(), self.next_dirty),
                Dirty {
                    end: b.addr() + b.size() as u64,
                    users,
                },
            );
        }
        if self.next_dirty % 4096 == 0 {
            self.dirty.retain(|_, d| d.users.iter().any(|&(_, done)| done > now));
        }
    }
}

/// A live buffer of a simulated thread.
struct Buf {
    block: Block,
    users: Vec<StreamId>,
}

/// Where a simulated thread is in its current operation.
enum Step {
    AllocSource,
    Fill,
    AllocCopy,
    Copy,
    FreeSource,
    Check,
    FreeVictim,
    Drain,
    Done,
}

struct Thread {
    t: usize,
    rng: Rng,
    streams: [StreamId; 4],
    op: usize,
    ops: usize,
    step: Step,
    bytes: usize,
    stream: StreamId,
    other: StreamId,
    source: Option<Buf>,
    copy: Option<Buf>,
    victim: Option<Buf>,
    live: Vec<Buf>,
}

/// Costs, in virtual nanoseconds, of the host calls (scaled by `CUDRV_SIM_HOST`). The stress test
/// on an H100 runs about 230 us per operation per thread, most of it in driver calls that
/// contend across the eight threads; the jitter spreads the threads apart as that does.
struct Costs {
    host: f64,
}

impl Costs {
    fn host(&self, rng: &mut Rng, mean_us: f64) -> u64 {
        (mean_us * 1000.0 * self.host * (0.25 + 1.5 * rng.uniform(0.0, 1.0))) as u64
    }
}

/// One simulated host call of thread `th`; returns its host cost.
fn step(th: &mut Thread, pool: &Pool, device: &Device, books: &Mutex<Books>, costs: &Costs, jitter: &mut Rng) -> u64 {
    let reserves_before = pool.backing().reserves.load(Relaxed);
    let mut cost = match th.step {
        Step::AllocSource => {
            if th.op == th.ops {
                th.step = Step::Drain;
                return 0;
            }
            th.bytes = if th.op % 997 == 0 {
                32 * MIB
            } else {
                th.rng.uniform(0.0, 22.0).exp2() as usize + 1
            };
            th.stream = th.streams[th.rng.next_u64() as usize % 4];
            let _tag = th.rng.next_u64();
            let block = pool.allocate(th.bytes, th.stream).unwrap();
            books.lock().unwrap().handed(&block, device);
            th.source = Some(Buf {
                block,
                users: vec![th.stream],
            });
            th.step = Step::Fill;
            costs.host(jitter, 3.0)
        }
        Step::Fill => {
            device.enqueue(th.stream, 2_000.0 + th.bytes as f64 / 2500.0);
            th.step = if th.op % 50 == 0 { Step::AllocCopy } else { Step::Check };
            costs.host(jitter, 20.0)
        }
        Step::AllocCopy => {
            th.other = th.streams[th.rng.next_u64() as usize % 4];
            let block = pool.allocate(th.bytes, th.other).unwrap();
            books.lock().unwrap().handed(&block, device);
            device.enqueue(th.other, 2_000.0 + th.bytes as f64 / 2500.0);
            th.copy = Some(Buf {
                block,
                users: vec![th.other],
            });
            th.step = Step::Copy;
            costs.host(jitter, 20.0)
        }
        Step::Copy => {
            // The copy's stream waits for an event on the source's stream, then copies.
            let src = th.source.as_mut().unwrap();
            if th.other != th.stream {
                device.order_after(th.other, device.busy(th.stream));
                pool.record_stream(&src.block, th.other);
                src.users.push(th.other);
            }
            device.enqueue(th.other, 2_000.0 + th.bytes as f64 / 1500.0);
            th.step = Step::FreeSource;
            costs.host(jitter, 25.0)
        }
        Step::FreeSource => {
            let src = th.source.take().unwrap();
            books.lock().unwrap().freed(&src.block, &src.users, device);
            pool.free(src.block);
            th.source = th.copy.take();
            th.step = Step::Check;
            costs.host(jitter, 3.0)
        }
        Step::Check => {
            th.live.push(th.source.take().unwrap());
            if th.live.len() > 16 {
                let i = th.rng.next_u64() as usize % th.live.len();
                let victim = th.live.swap_remove(i);
                let _at = th.rng.next_u64();
                // A synchronous read-back on the victim's stream: the host waits for the stream.
                let s = victim.block.stream();
                let mut done = device.enqueue(s, 5_000.0);
                if th.op % 1000 == 0 {
                    done = device.enqueue(s, victim.block.requested() as f64 / 10.0);
                }
                th.victim = Some(victim);
                th.step = Step::FreeVictim;
                done.saturating_sub(device.now()) + costs.host(jitter, 150.0)
            } else {
                th.op += 1;
                th.step = Step::AllocSource;
                costs.host(jitter, 5.0)
            }
        }
        Step::FreeVictim => {
            let victim = th.victim.take().unwrap();
            books.lock().unwrap().freed(&victim.block, &victim.users, device);
            pool.free(victim.block);
            th.op += 1;
            th.step = Step::AllocSource;
            costs.host(jitter, 3.0)
        }
        Step::Drain => {
            for buf in th.live.drain(..) {
                books.lock().unwrap().freed(&buf.block, &buf.users, device);
                pool.free(buf.block);
            }
            th.step = Step::Done;
            0
        }
        Step::Done => unreachable!(),
    };
    if pool.backing().reserves.load(Relaxed) > reserves_before {
        if std::env::var("CUDRV_SIM_TRACE").is_ok() {
            let st = pool.stats();
            eprintln!(
                "reserve: t={:.3} ms thread {} op {} bytes {} -> reserved {:.1} MB allocated {:.1} MB",
                device.now() as f64 * 1e-6,
                th.t,
                th.op,
                th.bytes,
                st.reserved_bytes as f64 / 1e6,
                st.allocated_bytes as f64 / 1e6
            );
        }
        // The allocation went to the driver: wait for its lock, then the call itself (real
        // threads spent that time in the call).
        if device.real.is_none() {
            cost += device.driver.load(Relaxed).saturating_sub(device.now());
        }
    }
    cost
}

/// What a run found.
#[derive(Debug)]
struct Outcome {
    ratio: f64,
    peak_reserved: u64,
    peak_allocated: u64,
    segments: BTreeMap<usize, u64>,
    early_reuses: u64,
    hit_rate: f64,
    cross_stream: u64,
    waited: u64,
    stream_waits: u64,
    reserves: u64,
    releases: u64,
    fences: u64,
    virtual_s: f64,
    /// Large and huge bytes allocated at the peak.
    peak_mix: (usize, usize),
    max_by_class: [usize; 3],
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// How a simulation runs.
#[derive(Clone, Copy, Debug)]
struct Setup {
    ops: usize,
    /// Host and device cost scales.
    host: f64,
    device: f64,
    /// Mean spread of the threads' starts, in microseconds.
    start_us: f64,
    budget: Option<ReserveBudget>,
    /// Real threads in real time (preempted anywhere, racing for the driver), instead of
    /// virtual time interleaved one host call at a time.
    real: bool,
}

fn simulate(setup: Setup) -> Outcome {
    let device = Arc::new(Device {
        device_scale: setup.device,
        real: setup.real.then(Instant::now),
        ..Device::default()
    });
    let pool = CachingPool::new(
        SimBacking {
            next: AtomicU64::new(1 << 32),
            device: device.clone(),
            by_size: Mutex::new(BTreeMap::new()),
            reserves: AtomicU64::new(0),
            releases: AtomicU64::new(0),
        },
        SimFences {
            device: device.clone(),
            records: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        },
    );
    pool.set_reserve_budget(setup.budget);
    let threads = 8;
    let mut ths: Vec<Thread> = (0..threads)
        .map(|t| Thread {
            t,
            rng: Rng::new(1000 + t as u64),
            streams: std::array::from_fn(|k| StreamId((t * 4 + k + 1) as u64)),
            op: 0,
            ops: setup.ops / threads,
            step: Step::AllocSource,
            bytes: 0,
            stream: StreamId(0),
            other: StreamId(0),
            source: None,
            copy: None,
            victim: None,
            live: Vec::new(),
        })
        .collect();
    let costs = Costs { host: setup.host };
    let books = Mutex::new(Books::default());
    if setup.real {
        std::thread::scope(|scope| {
            for th in &mut ths {
                let (pool, device, books, costs) = (&pool, &*device, &books, &costs);
                scope.spawn(move || {
                    let mut jitter = Rng::new(77 + th.t as u64);
                    device.pause(costs.host(&mut jitter, setup.start_us));
                    while !matches!(th.step, Step::Done) {
                        let cost = step(th, pool, device, books, costs, &mut jitter);
                        device.pause(cost);
                    }
                });
            }
        });
    } else {
        let mut jitter = Rng::new(77);
        // Threads start apart (spawning, creating streams), `start_us` on average.
        let mut queue: BinaryHeap<Reverse<(u64, usize)>> = (0..threads)
            .map(|t| Reverse((costs.host(&mut jitter, setup.start_us), t)))
            .collect();
        while let Some(Reverse((at, t))) = queue.pop() {
            device.now.store(at, Relaxed);
            let th = &mut ths[t];
            let cost = step(th, &pool, &device, &books, &costs, &mut jitter);
            if !matches!(th.step, Step::Done) {
                queue.push(Reverse((at + cost.max(1), th.t)));
            }
        }
    }
    let books = books.into_inner().unwrap();
    pool.check_invariants();
    let st = pool.stats();
    assert_eq!(st.allocated_bytes, 0);
    if !setup.real {
        // (Real threads update the two books at slightly different moments.)
        assert_eq!(st.peak_allocated_bytes, books.peak_allocated as u64);
    }
    let segments = pool.backing().by_size.lock().unwrap().clone();
    Outcome {
        ratio: st.peak_reserved_bytes as f64 / st.peak_allocated_bytes as f64,
        peak_reserved: st.peak_reserved_bytes,
        peak_allocated: st.peak_allocated_bytes,
        segments: segments.into_iter().filter(|&(_, n)| n > 0).collect(),
        early_reuses: books.early_reuses,
        hit_rate: st.hit_rate,
        cross_stream: st.cross_stream_reuses,
        waited: st.waited_reuses,
        stream_waits: pool.fence_source().waits.load(Relaxed),
        reserves: pool.backing().reserves.load(Relaxed),
        releases: pool.backing().releases.load(Relaxed),
        fences: pool.fence_source().records.load(Relaxed),
        virtual_s: device.now() as f64 * 1e-9,
        peak_mix: (books.peak_large_allocated, books.peak_huge_allocated),
        max_by_class: books.max_by_class,
    }
}

/// The setup from the environment (see the top of this file).
fn setup_from_env(real: bool) -> (Setup, bool) {
    let budget_var = std::env::var("CUDRV_SIM_BUDGET").ok();
    let budget = match budget_var.as_deref() {
        None => Some(ReserveBudget::default()),
        Some("none") => None,
        Some(m) => Some(ReserveBudget {
            multiple: m.parse().expect("CUDRV_SIM_BUDGET: a number or none"),
            ..ReserveBudget::default()
        }),
    };
    let budget = budget.map(|b| ReserveBudget {
        slack: (env_f64("CUDRV_SIM_SLACK_MIB", (b.slack / MIB) as f64) as usize) * MIB,
        ..b
    });
    let setup = Setup {
        ops: env_f64("CUDRV_SIM_OPS", if real { 1e5 } else { 2e5 }) as usize,
        host: env_f64("CUDRV_SIM_HOST", 1.0),
        device: env_f64("CUDRV_SIM_DEVICE", 1.0),
        start_us: env_f64("CUDRV_SIM_START_US", 3000.0),
        budget,
        real,
    };
    (setup, budget_var.is_none())
}

/// Runs and reports one simulation; asserts no early reuse.
fn run_and_report(setup: Setup) -> Outcome {
    let out = simulate(setup);
    let line = format!(
        "pool simulation ({}): {} ops, host x{}, device x{}, start {} us, budget {:?}, {:.1} s: peak reserved \
         {:.1} MB / peak allocated {:.1} MB = {:.3}; {} reserves, {} releases; segments by size {:?}; hit rate \
         {:.5}, cross-stream {} ({} waited, {} stream waits), fences {}, early reuses {}; at the peak {:.1} MB \
         large, {:.1} MB huge; most allocated at once: {:.1} MB small, {:.1} MB large, {:.1} MB huge\n",
        if setup.real { "real threads" } else { "virtual time" },
        setup.ops,
        setup.host,
        setup.device,
        setup.start_us,
        setup.budget.map(|b| b.multiple),
        out.virtual_s,
        out.peak_reserved as f64 / 1e6,
        out.peak_allocated as f64 / 1e6,
        out.ratio,
        out.reserves,
        out.releases,
        out.segments
            .iter()
            .map(|(&s, &n)| (format!("{} KiB", s >> 10), n))
            .collect::<Vec<_>>(),
        out.hit_rate,
        out.cross_stream,
        out.waited,
        out.stream_waits,
        out.fences,
        out.early_reuses,
        out.peak_mix.0 as f64 / 1e6,
        out.peak_mix.1 as f64 / 1e6,
        out.max_by_class[0] as f64 / 1e6,
        out.max_by_class[1] as f64 / 1e6,
        out.max_by_class[2] as f64 / 1e6,
    );
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    assert_eq!(
        out.early_reuses, 0,
        "memory reused before another stream finished with it"
    );
    out
}

#[test]
fn stress_workload_overhead_in_virtual_time() {
    let (setup, default_budget) = setup_from_env(false);
    let out = run_and_report(setup);
    if default_budget {
        assert!(out.ratio <= 1.25, "peak reserved / peak allocated {:.3}", out.ratio);
    }
}

/// The same with real threads: timing-dependent, so it only reports (and checks reuse).
#[test]
fn stress_workload_with_real_threads() {
    run_and_report(setup_from_env(true).0);
}
