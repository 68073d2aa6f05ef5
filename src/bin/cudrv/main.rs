//! `cudrv`: show the device, check every bundled kernel, and measure the runtime's costs.
//!
//! ```text
//! cudrv info [--memory]       driver, devices and their limits (and the caching pool's state)
//! cudrv selftest [--seed N]   every bundled kernel against its CPU reference; exit 1 on a failure
//! cudrv bench [WHAT]          launch, alloc, copy (default: all), gemm, gemv; each beside its reference
//! cudrv profile [OPTIONS]     the bundled operations, or a user's kernel, under the profiler
//! cudrv monitor [OPTIONS]     device memory, the pool, and NVML's readings, as text, JSON or Prometheus
//! cudrv help                  every command and the bench options (also -h / --help anywhere)
//! ```
//! Errors (no driver, no device) print one line and exit with status 1. Bad usage (an unknown
//! command, option, bench or type) is found before any driver call, prints one line and exits
//! with status 2.

mod bench;
mod bench_blas;
mod bench_compare;
mod bench_fuse;
mod bench_graph;
mod bench_suite;
mod bench_tune;
mod cache;
mod cublas;
mod monitor;
mod profile;
mod timing;

use std::process::ExitCode;

use cudrv::{Context, Device, Result};

const USAGE: &str =
    "usage: cudrv <info [--memory] | selftest [--seed N] | bench [launch|alloc|copy|all|gemm|gemv|graph|fuse|tune] | profile [OPTIONS] | monitor [OPTIONS] | cache [info|clear|warm]>";

const HELP: &str = "\
usage: cudrv <info [--memory] | selftest [--seed N] | bench [launch|alloc|copy|all|gemm|gemv|graph|fuse|tune] | profile [OPTIONS] | monitor [OPTIONS] | cache [info|clear|warm]>

  cudrv info [--memory]      the driver, every device and its limits; --memory adds the caching
                             pool's statistics
  cudrv selftest [--seed N]  every bundled kernel on fresh random inputs against its CPU
                             reference; exit status 1 if any check fails
  cudrv bench [WHAT]         launch, alloc, copy or all (the default): cudrv's runtime costs
                             beside the raw driver calls
  cudrv bench gemm [OPTIONS] GEMM TFLOP/s beside cuBLAS (loaded for the comparison only)
  cudrv bench gemv [OPTIONS] GEMV GB/s beside cuBLAS and the device copy bandwidth
  cudrv bench graph [--trials N] a step of 170 small dependent kernels: plain launches, graphs
                             recorded, updated in place and replayed
  cudrv bench fuse [--trials N] fused chains on 16M elements beside one kernel per operation and
                             the device copy bandwidth
  cudrv bench tune           the autotuner on three block-size-sensitive kernels: its choice
                             beside an exhaustive sweep and the occupancy API's suggestion
  cudrv profile [OPTIONS]    the bundled operations and BLAS at a range of sizes (or a user's
                             kernel) under the profiler: per-kernel count, total, mean, std,
                             min, max, p99, CV, TFLOP/s, GB/s, flags and advice
  cudrv monitor [OPTIONS]    a snapshot of a device (or all) every interval: memory, the caching
                             pool, GPU utilization, clocks, temperature and power (NVML)
  cudrv cache [info]         cudrv's compiled-kernel cache: where it is, its entries and size;
                             and the autotuner's file of tuned launch configurations
  cudrv cache clear          remove every entry (and every tuned launch configuration)
  cudrv cache warm           compile every bundled kernel this GPU runs into the cache, on all
                             cores, so that no later process compiles one (tensor-core kernels
                             need ptxas: CUDRV_PTXAS, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH)
  cudrv help                 this text (also -h or --help after any command)

bench gemm / gemv options (lists are comma-separated; every combination is one row):
  --types LIST      gemm: f32, tf32, f16, bf16, f64 (default: all);
                    gemv: f32, f64, f16, bf16 (default: f32)
  --sizes LIST      square sizes (gemm: 256..8192; gemv: 1024..32768)
  --suite           gemm: the shape suite (74 shapes per type from model layers, attention,
                    odd sizes, leading dimensions, op pairs, long k), then geomean and worst
                    ratio per type; exits 1 on a mismatch. gemv: sizes 1024..32768 in N
                    and T, odd and decode shapes, every type unless --types
  --only LIST       gemm --suite: only the cases whose group or MxNxK contains an item
                    (e.g. attention,768x1024); with --tiles, --kernels or --splits each case
                    runs once per forced choice (the sel column)
  --names           gemm --suite: end each row with the kernels cudrv ran (after the sel
                    column, where there is one)
  --shapes LIST     gemm: MxNxK shapes instead of the sizes and the skinny shapes; with
                    --suite, MxNxK or MxNxKxB (a strided batch of B) in place of the
                    suite's cases, each op of --ops; gemv: MxN or MxNxLDA (lda >= m),
                    each in N and T, instead of the sizes
  --no-skinny       leave out the skinny shapes that follow the square ones
  --trials N        batches per figure; the figure is their median (default 15)
  --ops LIST        gemm: nn, nt, tn, tt: op(A), op(B) (default nn)
  --beta X          gemm: C = A B + X C in both libraries (default 0; not with --suite)
  --epilogue LIST   gemm: none, bias, relu, gelu, sigmoid, tanh: cudrv's fused bias and
                    activation, timed against cuBLAS's plain product (needs --beta 0;
                    not with --suite)
  --tiles LIST      gemm: auto, s, h / m (64 x 64 / 64 x 96, wgmma), n, l, b (128 x 192, wgmma), w, t
                    (thin): force a tile (default auto)
  --kernels LIST    gemm: auto, simt, tc, mma, wgmma: force a kernel family (default auto);
                    f32 with a forced tile or split takes the CUDA cores unless tc is given
  --splits LIST     gemm: auto, off, a part count, or pN (N partial products): force the split of k (default auto)

profile options:
  --runs N          profiled runs of each launch (default 20), after
  --warmup N        unprofiled runs (default 3)
  --json            the report as JSON instead of a table
  --sync            wait for each profiled run before the next (no launch queued behind another)
  --trace FILE      write the launches as a Chrome trace (ui.perfetto.dev, chrome://tracing)
  --ptx FILE --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--smem BYTES] [--arg SPEC]...
                    profile one kernel of a PTX (or cubin) file instead; each --arg is
                    TYPE:VALUE (i32, u32, i64, u64, f32, f64), buf:TYPE:N (a device buffer of N
                    random floats or zero integers: f32, f64, f16, bf16, i32, u32, i64, u64, u8)
                    or zeros:TYPE:N, in the kernel's parameter order

monitor options:
  --device N|all    which device (default 0), or every device
  --interval S      seconds between snapshots (default 1)
  --count N         stop after N snapshots (default: run until interrupted)
  --json            one JSON object per snapshot
  --prometheus      the Prometheus text exposition format

Environment: CUDRV_LIBCUDA (the driver library to load), CUDRV_LIBCUBLAS (the cuBLAS the
benches compare with), CUDRV_CACHE_DIR (the kernel cache's directory), CUDRV_CACHE_DISABLE=1
(no kernel cache), CUDRV_CACHE_MAX_BYTES (its size bound, default 1 GiB), CUDRV_LIBNVML (the NVML library),
CUDRV_PROFILE=1 (profile every context; 1/N times one launch in N), CUDRV_NVTX=1 (NVTX ranges without a tool attached).";

/// What the command line asks for; bad usage is found before any driver call.
enum Command {
    Help,
    Info { memory: bool },
    Selftest { seed: Option<u64> },
    Bench(&'static str),
    BenchBlas(&'static str, Box<bench_blas::Options>),
    BenchGraph { trials: usize },
    BenchFuse { trials: usize },
    BenchTune,
    Profile(Box<profile::Options>),
    Monitor(monitor::Options),
    Cache(&'static str),
}

/// `bench graph` or `bench fuse` with `trials` batches.
fn timed(what: &str, trials: usize) -> Command {
    if what == "graph" {
        Command::BenchGraph { trials }
    } else {
        Command::BenchFuse { trials }
    }
}

/// The command, or the usage error to print (exit status 2).
fn command(args: &[String]) -> std::result::Result<Command, String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Command::Help);
    }
    let bad = |what: String| format!("cudrv: {what} (see `cudrv help`)");
    match args.first().map(String::as_str) {
        Some("help") if args.len() == 1 => Ok(Command::Help),
        Some("info") => match &args[1..] {
            [] => Ok(Command::Info { memory: false }),
            [flag] if flag == "--memory" => Ok(Command::Info { memory: true }),
            _ => Err(USAGE.to_string()),
        },
        Some("selftest") => match &args[1..] {
            [] => Ok(Command::Selftest { seed: None }),
            [flag, n] if flag == "--seed" => n
                .parse()
                .map(|seed| Command::Selftest { seed: Some(seed) })
                .map_err(|_| bad(format!("--seed takes a number, not {n:?}"))),
            rest => Err(bad(format!("unexpected arguments {rest:?} to selftest"))),
        },
        Some("bench") => match (args.get(1).map(String::as_str), &args[args.len().min(2)..]) {
            (Some(what @ ("gemm" | "gemv")), rest) => {
                let what = if what == "gemm" { "gemm" } else { "gemv" };
                bench_blas::options(what, rest)
                    .map(|o| Command::BenchBlas(what, Box::new(o)))
                    .map_err(|e| match e {
                        cudrv::Error::InvalidArgument(why) => bad(why),
                        other => bad(other.to_string()),
                    })
            }
            (Some(what @ ("graph" | "fuse")), rest) => match rest {
                [] => Ok(timed(what, 9)),
                [flag, n] if flag == "--trials" => n
                    .parse::<usize>()
                    .ok()
                    .filter(|&t| t > 0)
                    .map(|trials| timed(what, trials))
                    .ok_or_else(|| bad(format!("--trials takes a positive number, not {n:?}"))),
                rest => Err(bad(format!("unexpected arguments {rest:?} to bench {what}"))),
            },
            (Some("tune"), []) => Ok(Command::BenchTune),
            (None, _) => Ok(Command::Bench("all")),
            (Some(what), []) => ["launch", "alloc", "copy", "all"]
                .into_iter()
                .find(|w| *w == what)
                .map(Command::Bench)
                .ok_or_else(|| {
                    bad(format!(
                        "unknown bench {what:?}; choose launch, alloc, copy, all, gemm, gemv, graph, fuse or tune"
                    ))
                }),
            (Some(what), rest) => Err(bad(format!("unexpected arguments {rest:?} to bench {what}"))),
        },
        Some("profile") => profile::options(&args[1..])
            .map(|o| Command::Profile(Box::new(o)))
            .map_err(bad),
        Some("monitor") => monitor::options(&args[1..]).map(Command::Monitor).map_err(bad),
        Some("cache") => match &args[1..] {
            [] => Ok(Command::Cache("info")),
            [what] => ["info", "clear", "warm"]
                .into_iter()
                .find(|w| w == what)
                .map(Command::Cache)
                .ok_or_else(|| bad(format!("unknown cache command {what:?}; choose info, clear or warm"))),
            rest => Err(bad(format!("unexpected arguments {rest:?} to cache"))),
        },
        _ => Err(USAGE.to_string()),
    }
}

/// Lets a closed stdout end the process quietly, as it ends other command-line tools
/// (`cudrv info | head -3`), instead of `println!` panicking on the broken pipe: the Rust
/// runtime ignores SIGPIPE, this restores the default action.
#[cfg(unix)]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: signal(2) from the C library, with SIGPIPE and SIG_DFL (both 13 and 0 on Linux
    // and macOS); called once at start, before any other thread exists.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}
#[cfg(not(unix))]
fn default_sigpipe() {}

fn main() -> ExitCode {
    default_sigpipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match command(&args) {
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
        Ok(Command::Help) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Info { memory }) => info(memory),
        Ok(Command::Selftest { seed }) => selftest(seed),
        Ok(Command::Bench(what)) => bench::run(what),
        Ok(Command::BenchGraph { trials }) => bench_graph::run(trials),
        Ok(Command::BenchFuse { trials }) => bench_fuse::run(trials),
        Ok(Command::BenchBlas(what, options)) => bench_blas::run(what, *options),
        Ok(Command::BenchTune) => bench_tune::run(),
        Ok(Command::Profile(options)) => profile::run(&options),
        Ok(Command::Monitor(options)) => monitor::run(&options),
        Ok(Command::Cache(what)) => cache::run(what),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cudrv: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// Owned command-line words, for the option parsers' tests.
#[cfg(test)]
pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The error on one line (module-load errors carry a multi-line JIT log).
fn one_line(e: &cudrv::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
}

fn info(memory: bool) -> Result<bool> {
    let version = cudrv::driver_version()?;
    let library = cudrv::sys::loader::DriverLibrary::global()?;
    let count = Device::count()?;
    println!("driver: CUDA {version} ({})", library.path());
    println!("devices: {count}");
    for ordinal in 0..count {
        let dev = Device::get(ordinal)?;
        let (major, minor) = dev.compute_capability()?;
        let l = dev.limits()?;
        println!("\ndevice {ordinal}: {}", dev.name()?);
        println!("  uuid                 {}", dev.uuid_string()?);
        println!("  compute capability   {major}.{minor}");
        println!("  memory               {}", mib(dev.total_memory()?));
        match Context::new(ordinal) {
            Ok(ctx) => {
                let (free, _) = ctx.memory_info()?;
                println!("  memory free          {}", mib(free));
                // The registry's, and those of the modules linked on use (added on first launch).
                let on_use: usize = cudrv::registry::ON_USE_MODULES
                    .iter()
                    .filter(|m| m.runs_on(ctx.compute_capability()))
                    .map(|m| m.kernels.len())
                    .sum();
                let kernels = ctx.registry().kernel_names().len() + on_use;
                println!("  bundled kernels      {kernels} usable on this device");
                if memory {
                    memory_report(&ctx)?;
                }
            }
            Err(e) => println!("  context              unavailable: {}", one_line(&e)),
        }
        println!("  multiprocessors      {}", l.multiprocessor_count);
        println!("  warp size            {}", l.warp_size);
        if l.l2_cache_bytes > 0 {
            println!("  L2 cache             {}", mib(l.l2_cache_bytes as usize));
        }
        if let Some(bw) = l.peak_memory_bandwidth() {
            println!(
                "  memory bandwidth     {:.0} GB/s peak ({} MHz, {}-bit bus)",
                bw / 1e9,
                l.memory_clock_khz / 1000,
                l.memory_bus_bits
            );
        }
        if l.single_to_double_ratio > 0 {
            println!("  f32 : f64 rate       {} : 1 (CUDA cores)", l.single_to_double_ratio);
        }
        println!("  threads per block    {}", l.max_threads_per_block);
        println!("  block dims           {:?}", l.max_block_dim);
        println!("  grid dims            {:?}", l.max_grid_dim);
        println!(
            "  shared per block     {} B ({} B opt-in)",
            l.max_shared_per_block, l.max_shared_per_block_optin
        );
    }
    Ok(true)
}

/// The caching pool's settings and statistics, after a short warm-up that allocates and frees
/// a few buffers, so the figures show the pool at work.
fn memory_report(ctx: &std::sync::Arc<Context>) -> Result<()> {
    use cudrv::DeviceBuffer;
    let stream = ctx.new_stream()?;
    for bytes in [4usize << 10, 1 << 20, 64 << 20] {
        for _ in 0..2 {
            // SAFETY: never read; allocated and freed to exercise the pool.
            drop(unsafe { DeviceBuffer::<u8>::uninit(&stream, bytes)? });
        }
    }
    stream.synchronize()?;
    let pool = ctx.memory_pool();
    let show = |v: Option<usize>| v.map(|b| format!("{b} B")).unwrap_or_else(|| "none".into());
    println!("  caching allocator    {}", if ctx.caching() { "on" } else { "off" });
    println!("  pool limit           {}", show(pool.limit()));
    println!("  release threshold    {}", show(pool.release_threshold()));
    let budget = pool
        .reserve_budget()
        .map(|b| format!("{}x peak allocated, at least {} B above it", b.multiple, b.slack))
        .unwrap_or_else(|| "none".into());
    println!("  reserve budget       {budget}");
    println!("  pool stats (after allocating and freeing 4 KiB, 1 MiB, 64 MiB twice each):");
    println!("  {}", ctx.memory_stats().to_json());
    Ok(())
}

fn selftest(seed: Option<u64>) -> Result<bool> {
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let ctx = Context::new(0)?;
    println!("selftest on {} (seed {seed})", ctx.device().name()?);
    let checks = cudrv::selftest::run_all(&ctx, seed)?;
    println!(
        "{:<32} {:<14} {:>10} {:>9}  result",
        "kernel", "case", "rel.error", "bound"
    );
    for c in &checks {
        println!(
            "{:<32} {:<14} {:>10.2e} {:>9.0e}  {}{}",
            c.kernel,
            c.case,
            c.error,
            c.tolerance,
            if c.passed { "pass" } else { "FAIL" },
            if c.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", c.detail)
            }
        );
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    println!("{} passed, {} failed", checks.len() - failed, failed);
    Ok(failed == 0)
}
