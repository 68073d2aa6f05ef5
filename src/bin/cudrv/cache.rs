//! `cudrv cache [info|clear|warm]`: cudrv's compiled-kernel cache (src/kernel_cache.rs), and the
//! autotuner's remembered launch configurations (src/tune/) beside it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use std::path::{Path, PathBuf};

use cudrv::kernel_cache::{CacheKey, KernelCache};
use cudrv::registry::{EmbeddedModule, EMBEDDED_MODULES, ON_USE_MODULES};
use cudrv::tune::Autotuner;
use cudrv::{ptx_info, Context, Module, Result};

/// Runs `cudrv cache <what>`.
pub fn run(what: &str) -> Result<bool> {
    let cache = KernelCache::global();
    match what {
        "info" => {
            println!("{}", cache.info());
            if !cache.enabled() {
                println!("(CUDRV_CACHE_DISABLE=1: kernels are compiled by the driver, as without the cache)");
            }
            println!("{}", tuner_line());
            Ok(true)
        }
        "clear" => {
            let removed = cache.clear().map_err(|e| cudrv::Error::Io {
                path: cache.dir().map(|d| d.display().to_string()).unwrap_or_default(),
                message: e.to_string(),
            })?;
            println!("removed {removed} entries; {}", cache.info());
            let tuner = Autotuner::global();
            let tuned = tuner.stats().entries;
            tuner.clear().map_err(|e| cudrv::Error::Io {
                path: tuner.stats().file.map(|f| f.display().to_string()).unwrap_or_default(),
                message: e.to_string(),
            })?;
            println!("forgot {tuned} tuned launch configurations; {}", tuner_line());
            Ok(true)
        }
        "warm" => warm(cache),
        _ => unreachable!("checked by the command line parser"),
    }
}

/// Where the autotuner keeps its choices and how many there are.
fn tuner_line() -> String {
    let s = Autotuner::global().stats();
    match (&s.file, &s.why_memory_only) {
        (Some(file), _) => format!(
            "autotuner: {} ({} tuned launch configurations)",
            file.display(),
            s.entries
        ),
        (None, why) => format!("autotuner: in memory only ({})", why.as_deref().unwrap_or("no file")),
    }
}

/// Compiles every bundled kernel this device can run into the cache, on every core: with the
/// driver's JIT linker, or, for kernels with tensor-core instructions (of which the linker makes
/// slower code, docs/kernels/loading.md), with ptxas when one is found.
fn warm(cache: &KernelCache) -> Result<bool> {
    if !cache.enabled() {
        println!("the kernel cache is disabled (CUDRV_CACHE_DISABLE=1); nothing to warm");
        return Ok(true);
    }
    let ctx = Context::new(0)?;
    let cc = ctx.compute_capability();
    let driver = cudrv::driver_version()?.0;
    let ptxas = find_ptxas();
    let runnable: Vec<_> = EMBEDDED_MODULES
        .iter()
        .chain(ON_USE_MODULES.iter().copied())
        .filter(|m| m.runs_on(cc))
        .collect();
    let left_to_driver: usize = if ptxas.is_some() {
        0
    } else {
        runnable
            .iter()
            .filter(|m| m.tensor_cores)
            .map(|m| m.kernels.len())
            .sum()
    };
    let work: Vec<_> = runnable
        .iter()
        .filter(|m| !m.tensor_cores || ptxas.is_some())
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
                let outcome = match (&ptxas, module.tensor_cores) {
                    (Some(ptxas), true) => with_ptxas(cache, ptxas, module, kernel, cc, driver),
                    _ => Module::from_embedded(&ctx, module, kernel)
                        .map(|_| ())
                        .map_err(|e| e.to_string()),
                };
                if let Err(e) = outcome {
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
    match &ptxas {
        Some(p) => println!("tensor-core kernels compiled by {}", p.display()),
        None => println!(
            "{left_to_driver} kernels with tensor-core instructions are left to the driver's own JIT cache: \
             no ptxas found (CUDRV_PTXAS, $CUDA_PATH/bin, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH)"
        ),
    }
    println!("{}", cache.info());
    Ok(failures.is_empty())
}

/// ptxas, for the tensor-core kernels: `$CUDRV_PTXAS`, then `bin/ptxas` of `$CUDA_PATH`,
/// `$CUDA_HOME` and `/usr/local/cuda`, then `ptxas` on the `PATH`.
fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CUDRV_PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let roots = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")]);
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("ptxas")).collect::<Vec<_>>())
        .unwrap_or_default();
    roots.map(|r| r.join("bin/ptxas")).chain(on_path).find(|p| p.is_file())
}

/// Compiles one tensor-core kernel with ptxas (whole-program code, as `cuModuleLoadData` makes)
/// and keeps it under the key the registry looks up.
fn with_ptxas(
    cache: &KernelCache,
    ptxas: &Path,
    module: &'static EmbeddedModule,
    kernel: &str,
    cc: (u32, u32),
    driver: i32,
) -> std::result::Result<(), String> {
    let key = CacheKey::for_embedded(&module.digest, kernel, cc, driver);
    if cache.get(&key).is_some() {
        return Ok(());
    }
    let ptx = module.ptx().map_err(|e| e.to_string())?;
    let one = ptx_info::entry_module(ptx, kernel).ok_or("no such kernel in its module")?;
    let arch = format!(
        "sm_{}{}{}",
        cc.0,
        cc.1,
        if module.arch.ends_with('a') { "a" } else { "" }
    );
    let dir = std::env::temp_dir();
    let stem = format!("cudrv-warm-{}-{}-{kernel}", std::process::id(), module.name);
    let (input, output) = (dir.join(format!("{stem}.ptx")), dir.join(format!("{stem}.cubin")));
    std::fs::write(&input, one.trim_end_matches('\0')).map_err(|e| e.to_string())?;
    let run = std::process::Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-O3")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let cubin = std::fs::read(&output);
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    let run = run.map_err(|e| format!("{}: {e}", ptxas.display()))?;
    if !run.status.success() {
        return Err(format!(
            "ptxas -arch={arch}: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    cache.put(&key, &cubin.map_err(|e| e.to_string())?);
    Ok(())
}
