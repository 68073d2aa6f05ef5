//! `cudrv cache [info|clear|warm]`: cudrv's compiled-kernel cache (src/kernel_cache.rs).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cudrv::kernel_cache::KernelCache;
use cudrv::registry::EMBEDDED_MODULES;
use cudrv::{Context, Module, Result};

/// Runs `cudrv cache <what>`.
pub fn run(what: &str) -> Result<bool> {
    let cache = KernelCache::global();
    match what {
        "info" => {
            println!("{}", cache.info());
            if !cache.enabled() {
                println!("(CUDRV_CACHE_DISABLE=1: kernels are compiled by the driver, as without the cache)");
            }
            Ok(true)
        }
        "clear" => {
            let removed = cache.clear().map_err(|e| cudrv::Error::Io {
                path: cache.dir().map(|d| d.display().to_string()).unwrap_or_default(),
                message: e.to_string(),
            })?;
            println!("removed {removed} entries; {}", cache.info());
            Ok(true)
        }
        "warm" => warm(cache),
        _ => unreachable!("checked by the command line parser"),
    }
}

/// Compiles every bundled kernel this device can run into the cache, on every core.
fn warm(cache: &KernelCache) -> Result<bool> {
    if !cache.enabled() {
        println!("the kernel cache is disabled (CUDRV_CACHE_DISABLE=1); nothing to warm");
        return Ok(true);
    }
    let ctx = Context::new(0)?;
    let cc = ctx.compute_capability();
    // Kernels with tensor-core instructions are not cached (the JIT linker makes slower code of
    // them); the driver compiles and caches those itself.
    let runnable: Vec<_> = EMBEDDED_MODULES.iter().filter(|m| m.runs_on(cc)).collect();
    let left_to_driver: usize = runnable
        .iter()
        .filter(|m| m.tensor_cores)
        .map(|m| m.kernels.len())
        .sum();
    let work: Vec<_> = runnable
        .iter()
        .filter(|m| !m.tensor_cores)
        .flat_map(|m| m.kernels.iter().map(move |k| (*m, *k)))
        .collect();
    let bar = indicatif::ProgressBar::new(work.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let before = cache.stats();
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(work.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((module, kernel)) = work.get(i) else { break };
                bar.set_message(format!("{}:{kernel}", module.name));
                if let Err(e) = Module::from_embedded(&ctx, module, kernel) {
                    let failure = format!("{}:{kernel}: {e}", module.name);
                    failures.lock().unwrap_or_else(|p| p.into_inner()).push(failure);
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let after = cache.stats();
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    println!(
        "{} kernels for compute capability {}.{} in {:.1} s: {} compiled, {} already cached, {} failed",
        work.len(),
        cc.0,
        cc.1,
        start.elapsed().as_secs_f64(),
        after.misses - before.misses,
        after.hits - before.hits,
        failures.len()
    );
    for f in &failures {
        println!("  {}", f.lines().next().unwrap_or_default());
    }
    println!(
        "{left_to_driver} kernels with tensor-core instructions are left to the driver's own JIT cache \
         (the JIT linker compiles them 10-24% slower)"
    );
    println!("{}", cache.info());
    Ok(failures.is_empty())
}
