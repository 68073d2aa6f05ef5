//! GPU tests of the autotuner on three kernels whose speed depends on the block size
//! (tests/data/tune_fixtures.cu): its choice against an exhaustive sweep, the tuned launch's
//! output against an f64 reference, the file read by a second process that does not tune again,
//! a damaged file, and changed code tuned afresh. Each skips visibly without a GPU (and fails
//! under REQUIRE_GPU=1).

#[path = "support/child.rs"]
mod child;
#[path = "support/gpu.rs"]
mod gpu;
#[path = "support/tune_fixtures.rs"]
mod tune_fixtures;

use std::path::{Path, PathBuf};

use cudrv::tune::{Autotuner, Candidate};
use tune_fixtures::{Loaded, FIXTURES};

/// Set in the child process that reads the parent's tuning file.
const CHILD: &str = "CUDRV_TUNE_TEST_CHILD";

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudrv-gpu-tune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("tune.json")
}

fn table(curve: &[Candidate]) -> String {
    curve
        .iter()
        .map(|c| format!("{}:{:.1}", c.block, c.micros))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_tuner_picks_within_3_percent_of_an_exhaustive_sweep_and_a_second_process_reuses_it() {
    // The sweep compares timings: no other test of this file runs beside it.
    let Some((ctx, _turn)) =
        gpu::alone("the_tuner_picks_within_3_percent_of_an_exhaustive_sweep_and_a_second_process_reuses_it")
    else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let path = temp_file("sweep");
    // A damaged file is ignored with a warning and rewritten.
    std::fs::write(&path, b"{\"format\": 1, \"entries\": [truncated").unwrap();
    let tuner = Autotuner::with_file(&path);
    let module = tune_fixtures::module(&s, "").unwrap();
    let mut chosen = Vec::new();
    for fixture in FIXTURES {
        let mut loaded = Loaded::new(fixture, &module, &s, seed).unwrap();
        let tuned = tuner.kernel(&loaded.function, fixture.options()).unwrap();
        assert!(
            tuned.config(fixture.size as u64).is_none(),
            "{}: nothing remembered yet",
            fixture.kernel
        );
        let mut launch = |cfg: &cudrv::LaunchConfig| loaded.launch(cfg);
        let tuning = tuned.tune(&s, fixture.size as u64, &mut launch).unwrap();
        let curve = tuned.sweep(&s, fixture.size as u64, &mut launch).unwrap();
        let best = curve.iter().min_by(|a, b| a.micros.total_cmp(&b.micros)).unwrap();
        let worst = curve.iter().max_by(|a, b| a.micros.total_cmp(&b.micros)).unwrap();
        let mine = curve.iter().find(|c| c.block == tuning.config.block_dim.0).unwrap();
        println!(
            "{}: chose {} threads ({:.1} us in the sweep), best {} ({:.1} us), worst {} ({:.1} us); sweep {}",
            fixture.kernel,
            mine.block,
            mine.micros,
            best.block,
            best.micros,
            worst.block,
            worst.micros,
            table(&curve)
        );
        assert!(
            worst.micros > 1.1 * best.micros,
            "{}: the fixture's speed should depend on the block size",
            fixture.kernel
        );
        assert!(
            mine.micros <= 1.03 * best.micros,
            "{}: the choice {} ({:.2} us) is more than 3% slower than the sweep's best {} ({:.2} us)",
            fixture.kernel,
            mine.block,
            mine.micros,
            best.block,
            best.micros
        );
        assert_eq!(tuned.config(fixture.size as u64), Some(tuning.config));
        assert_eq!(
            tuning.candidates.len(),
            curve.len(),
            "the search tries every block size the sweep does"
        );
        // The tuned launch computes the right thing, twice alike where the kernel is
        // deterministic.
        let first = loaded
            .check(&tuning.config)
            .unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        let second = loaded
            .check(&tuning.config)
            .unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        if fixture.kernel != "tune_block_sum" {
            assert!(
                first.iter().zip(&second).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{}: two runs differ",
                fixture.kernel
            );
        }
        chosen.push(format!("{}={}", fixture.kernel, tuning.config.block_dim.0));
    }
    let stats = tuner.stats();
    assert_eq!(
        (stats.searches, stats.corrupt_files, stats.entries),
        (3, 1, 3),
        "{stats:?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        "rewritten as JSON: {text}"
    );

    // A second process reads the file: every fixture hits, nothing is searched.
    let line = child::run("tune_cache_child", &[(CHILD, path.as_os_str())], &[]);
    assert_eq!(line, format!("searches=0 loaded=3 {}", chosen.join(" ")));

    // Changed code is tuned afresh: its digest differs, so the file's choices do not apply.
    let changed = tune_fixtures::module(&s, "\n// changed\n").unwrap();
    let loaded = Loaded::new(FIXTURES[0], &changed, &s, seed).unwrap();
    let before = tuner.stats().loaded;
    let tuned = tuner.kernel(&loaded.function, FIXTURES[0].options()).unwrap();
    assert!(tuned.config(FIXTURES[0].size as u64).is_none());
    assert_eq!(tuner.stats().loaded, before);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// Run by the test above in a second process: reads the tuning file and reports.
#[test]
fn tune_cache_child() {
    let Some(path) = std::env::var_os(CHILD) else {
        return; // only meaningful as the child of the test above
    };
    let ctx = cudrv::Context::new(0).unwrap();
    let s = ctx.new_stream().unwrap();
    let tuner = Autotuner::with_file(Path::new(&path));
    let module = tune_fixtures::module(&s, "").unwrap();
    let mut chosen = Vec::new();
    for fixture in FIXTURES {
        let loaded = Loaded::new(fixture, &module, &s, 1).unwrap();
        let tuned = tuner.kernel(&loaded.function, fixture.options()).unwrap();
        let cfg = tuned
            .config_or_tune(&s, fixture.size as u64, &mut |cfg| loaded.launch(cfg))
            .unwrap();
        chosen.push(format!("{}={}", fixture.kernel, cfg.block_dim.0));
    }
    let stats = tuner.stats();
    println!(
        "CHILD searches={} loaded={} {}",
        stats.searches,
        stats.loaded,
        chosen.join(" ")
    );
}

#[test]
fn tuning_refuses_what_cannot_be_timed_or_launched() {
    // Takes turns with the sweep, which compares timings.
    let Some((ctx, _turn)) = gpu::alone("tuning_refuses_what_cannot_be_timed_or_launched") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let module = tune_fixtures::module(&s, "").unwrap();
    let loaded = Loaded::new(FIXTURES[1], &module, &s, 7).unwrap();
    let tuner = Autotuner::in_memory();
    // A shared-memory rule no block size satisfies.
    let greedy = cudrv::tune::TuneOptions {
        shared: cudrv::tune::SharedRule {
            fixed: 1 << 30,
            per_thread: 0,
        },
        ..Default::default()
    };
    let tuned = tuner.kernel(&loaded.function, greedy).unwrap();
    let e = tuned.tune(&s, 1000, &mut |cfg| loaded.launch(cfg)).unwrap_err();
    assert!(e.to_string().contains("no block size fits"), "{e}");
    // Only sizes past the kernel's limit: nothing to try either.
    let too_big = cudrv::tune::TuneOptions {
        blocks: cudrv::tune::BlockSizes::Only(vec![4096]),
        ..FIXTURES[1].options()
    };
    let tuned = tuner.kernel(&loaded.function, too_big).unwrap();
    let e = tuned.tune(&s, 1000, &mut |cfg| loaded.launch(cfg)).unwrap_err();
    assert!(e.to_string().contains("no block size fits"), "{e}");
    // A launch that fails stops the search with its error.
    let tuned = tuner.kernel(&loaded.function, FIXTURES[1].options()).unwrap();
    let e = tuned
        .tune(&s, 1000, &mut |_| Err(cudrv::Error::InvalidArgument("refused".into())))
        .unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
    assert_eq!(tuner.stats().searches, 0);
    // While the stream captures, nothing is timed.
    let e = s
        .capture(|st| tuned.tune(st, 1000, &mut |cfg| loaded.launch(cfg)).map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("capturing"), "{e}");
    // A drift past the tuned time sends the bucket back to tuning.
    let t = tuned.tune(&s, 100_000, &mut |cfg| loaded.launch(cfg)).unwrap();
    assert!(tuned.config(100_000).is_some());
    tuned.observe(100_000, t.micros * 3.0);
    assert!(
        tuned.config(100_000).is_none(),
        "drifted 3x: tuned again at the next call"
    );
    tuned
        .config_or_tune(&s, 100_000, &mut |cfg| loaded.launch(cfg))
        .unwrap();
    assert_eq!(tuner.stats().searches, 2);
}
