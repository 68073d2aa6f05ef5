//! `cudrv bench tune`: the autotuner on three kernels whose speed depends on the block size
//! (tests/data/tune_fixtures.cu). For each: the tuned block's time against the best and worst of
//! an exhaustive sweep and against the occupancy API's suggestion, in one run; the search's
//! cost; a cache hit's cost; and the tuned launch's output checked against an f64 reference
//! (a mismatch exits 1).

#[path = "../../../tests/support/tune_fixtures.rs"]
#[allow(dead_code)] // the test-side helpers the bench does not call
mod tune_fixtures;

use std::hint::black_box;
use std::time::Instant;

use cudrv::tune::Autotuner;
use cudrv::Result;

use tune_fixtures::{Loaded, FIXTURES};

pub fn run() -> Result<bool> {
    let ctx = cudrv::Context::new(0)?;
    let s = ctx.new_stream()?;
    println!(
        "bench tune on {} (driver CUDA {}): microseconds per launch, medians of interleaved rounds",
        ctx.device().name()?,
        cudrv::driver_version()?
    );
    let module = tune_fixtures::module(&s, "")?;
    let tuner = Autotuner::in_memory();
    let mut ok = true;
    println!(
        "{:<16} {:>10} {:>7} {:>9} {:>7} {:>9} {:>7} {:>9} {:>8} {:>8} {:>9}",
        "kernel", "items", "chosen", "us", "best", "us", "occ.", "us", "chosen/", "occ./", "search"
    );
    println!(
        "{:<16} {:>10} {:>7} {:>9} {:>7} {:>9} {:>7} {:>9} {:>8} {:>8} {:>9}",
        "", "", "block", "", "block", "", "block", "", "best", "best", "ms"
    );
    let mut hit_ns = Vec::new();
    for fixture in FIXTURES {
        let mut loaded = Loaded::new(fixture, &module, &s, 0x7u64 ^ fixture.size as u64)?;
        let tuned = tuner.kernel(&loaded.function, fixture.options())?;
        let size = fixture.size as u64;
        let mut launch = |cfg: &cudrv::LaunchConfig| loaded.launch(cfg);
        let t = Instant::now();
        let tuning = tuned.tune(&s, size, &mut launch)?;
        let search_ms = t.elapsed().as_secs_f64() * 1e3;
        let curve = tuned.sweep(&s, size, &mut launch)?;
        let at = |block: u32| curve.iter().find(|c| c.block == block).map_or(f64::NAN, |c| c.micros);
        let best = curve.iter().min_by(|a, b| a.micros.total_cmp(&b.micros)).copied();
        let best = best.expect("a sweep has at least one candidate");
        let chosen = tuning.config.block_dim.0;
        let occ = loaded
            .function
            .max_potential_block_size(fixture.options().shared.fixed as usize)?
            .1;
        println!(
            "{:<16} {:>10} {:>7} {:>9.1} {:>7} {:>9.1} {:>7} {:>9.1} {:>8.3} {:>8.3} {:>9.1}",
            fixture.kernel,
            size,
            chosen,
            at(chosen),
            best.block,
            best.micros,
            occ,
            at(occ),
            at(chosen) / best.micros,
            at(occ) / best.micros,
            search_ms
        );
        if let Err(e) = loaded.check(&tuning.config) {
            println!("MISMATCH {}: {e}", fixture.kernel);
            ok = false;
        }
        // A cache hit: the lock-free lookup and the launch it gives.
        const HITS: u32 = 2_000_000;
        let t = Instant::now();
        for i in 0..HITS {
            black_box(tuned.config(black_box(size + u64::from(i & 1))));
        }
        hit_ns.push(t.elapsed().as_secs_f64() * 1e9 / f64::from(HITS));
    }
    println!(
        "cache hit (TunedKernel::config): {} ns per call",
        hit_ns.iter().map(|n| format!("{n:.1}")).collect::<Vec<_>>().join(" / ")
    );
    Ok(ok)
}
