//! `cudrv`: show the device, check every bundled kernel, and measure the runtime's costs.
//!
//! ```text
//! cudrv info [--memory]       driver, devices and their limits (and the caching pool's state)
//! cudrv selftest [--seed N]   every bundled kernel against its CPU reference; exit 1 on a failure
//! cudrv bench [WHAT]          launch, alloc, copy (default: all), gemm, gemv; each beside its reference
//! ```
//! Errors (no driver, no device) print one line and exit with status 1.

mod bench;
mod bench_blas;

use std::process::ExitCode;

use cudrv::{Context, Device, Result};

const USAGE: &str = "usage: cudrv <info [--memory] | selftest [--seed N] | bench [launch|alloc|copy|all|gemm|gemv]>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("info") => match &args[1..] {
            [] => info(false),
            [flag] if flag == "--memory" => info(true),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        },
        Some("selftest") => selftest(&args[1..]),
        Some("bench") => match args.get(1).map(String::as_str) {
            Some(what @ ("gemm" | "gemv")) => bench_blas::run(what, &args[2..]),
            what => bench::run(what.unwrap_or("all")),
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(true)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
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
                let kernels = ctx.registry().kernel_names();
                println!("  bundled kernels      {} usable on this device", kernels.len());
                if memory {
                    memory_report(&ctx)?;
                }
            }
            Err(e) => println!("  context              unavailable: {}", one_line(&e)),
        }
        println!("  multiprocessors      {}", l.multiprocessor_count);
        println!("  warp size            {}", l.warp_size);
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

fn selftest(args: &[String]) -> Result<bool> {
    let seed = match args {
        [] => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
        [flag, n] if flag == "--seed" => n
            .parse()
            .map_err(|_| cudrv::Error::InvalidArgument(format!("--seed takes a number, not {n:?}")))?,
        _ => {
            return Err(cudrv::Error::InvalidArgument(format!(
                "unexpected arguments {args:?}; {USAGE}"
            )))
        }
    };
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
