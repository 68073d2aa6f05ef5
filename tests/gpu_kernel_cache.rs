//! cudrv's compiled-kernel cache across processes: a second process finds what the first
//! compiled, corrupt entries are ignored and rewritten, an unusable directory degrades to memory,
//! and several processes can fill one directory at once.
//!
//! Each check runs this test binary again as a child (`child_workload`, selected by an
//! environment variable) with its own `CUDRV_CACHE_DIR` and the driver's JIT cache off
//! (`CUDA_CACHE_DISABLE=1`), and reads the child's counters from its output. The child computes
//! a GEMM on the CUDA cores and an AXPY on fresh random data against an f64 CPU reference, so a
//! cached kernel is also a correct one. Without a GPU the tests say they skipped; under `REQUIRE_GPU=1` they fail.

#[path = "support/gpu.rs"]
#[macro_use]
mod gpu;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cudrv::blas::{Gemm, Kernel, Transpose};
use cudrv::kernel_cache::KernelCache;
use cudrv::{ops, DeviceBuffer, DeviceSlice};

const CHILD: &str = "CUDRV_KERNEL_CACHE_TEST_CHILD";

/// The counters a child printed.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    hits: u64,
    misses: u64,
    stores: u64,
    corrupt: u64,
}

struct Run {
    stats: Stats,
    text: String,
}

fn child(dir: &Path, seed: u64) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args(["--exact", "child_workload", "--nocapture", "--test-threads=1"])
        .env(CHILD, seed.to_string())
        .env("CUDRV_CACHE_DIR", dir)
        .env("CUDA_CACHE_DISABLE", "1")
        .env_remove("CUDRV_CACHE_DISABLE");
    cmd
}

fn finish(out: Output) -> Run {
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("CHILD RESULTS OK"), "{text}");
    // libtest may print the test's name on the same line first.
    let line = text
        .lines()
        .find_map(|l| l.find("CHILD STATS").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no stats:\n{text}"));
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    Run {
        stats: Stats {
            hits: field("hits"),
            misses: field("misses"),
            stores: field("stores"),
            corrupt: field("corrupt"),
        },
        text,
    }
}

fn run_child(dir: &Path, seed: u64) -> Run {
    finish(child(dir, seed).output().expect("spawn the child"))
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("SEED {s}");
    s
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudrv-kernel-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_second_process_loads_what_the_first_compiled() {
    let Some(_ctx) = gpu!("a_second_process_loads_what_the_first_compiled") else {
        return;
    };
    let dir = fresh_dir("second");
    let seed = seed();
    let first = run_child(&dir, seed);
    println!("first process:  {:?}", first.stats);
    assert!(first.stats.misses >= 2 && first.stats.hits == 0, "{:?}", first.stats);
    assert_eq!(first.stats.stores, first.stats.misses);
    assert_eq!(entries(&dir).len() as u64, first.stats.stores);
    let second = run_child(&dir, seed ^ 0x9e37);
    println!("second process: {:?}", second.stats);
    assert_eq!(second.stats.misses, 0, "{:?}\n{}", second.stats, second.text);
    assert_eq!(second.stats.hits, first.stats.misses);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_entries_are_ignored_and_rewritten() {
    let Some(_ctx) = gpu!("corrupt_entries_are_ignored_and_rewritten") else {
        return;
    };
    let dir = fresh_dir("corrupt");
    let seed = seed();
    let first = run_child(&dir, seed);
    let files = entries(&dir);
    assert!(files.len() >= 2, "{files:?}");
    // One entry truncated, every other one with a flipped byte in its cubin.
    for (i, f) in files.iter().enumerate() {
        let mut bytes = std::fs::read(f).unwrap();
        if i == 0 {
            bytes.truncate(bytes.len() / 2);
        } else {
            let at = bytes.len() - 1 - (seed as usize % 64);
            bytes[at] ^= 0x5a;
        }
        std::fs::write(f, bytes).unwrap();
    }
    let damaged = run_child(&dir, seed ^ 1);
    println!("after damage: {:?}", damaged.stats);
    assert_eq!(damaged.stats.corrupt, files.len() as u64, "{}", damaged.text);
    assert_eq!(
        damaged.stats.misses, first.stats.misses,
        "every damaged entry was compiled again"
    );
    assert!(
        damaged.text.contains("is corrupt") || damaged.text.contains("truncated"),
        "{}",
        damaged.text
    );
    let healed = run_child(&dir, seed ^ 2);
    assert_eq!(
        (healed.stats.corrupt, healed.stats.misses),
        (0, 0),
        "{:?}",
        healed.stats
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unusable_directory_degrades_to_memory() {
    let Some(_ctx) = gpu!("an_unusable_directory_degrades_to_memory") else {
        return;
    };
    // Below a regular file, so that no user (root included) can create it.
    let file = fresh_dir("file");
    std::fs::write(&file, b"a file, not a directory").unwrap();
    let run = run_child(&file.join("kernels"), seed());
    println!("unusable directory: {:?}", run.stats);
    assert_eq!(run.stats.stores, 0);
    assert!(run.stats.misses >= 2);
    assert!(run.text.contains("continuing in memory"), "{}", run.text);
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn several_processes_fill_one_directory_at_once() {
    let Some(_ctx) = gpu!("several_processes_fill_one_directory_at_once") else {
        return;
    };
    let dir = fresh_dir("concurrent");
    let seed = seed();
    let children: Vec<_> = (0..4)
        .map(|i| {
            child(&dir, seed ^ i)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|c| finish(c.wait_with_output().unwrap()))
        .collect();
    for r in &runs {
        println!("concurrent: {:?}", r.stats);
        assert_eq!(r.stats.corrupt, 0, "{}", r.text);
    }
    let files = entries(&dir);
    assert!(
        files.iter().all(|f| f.extension().is_some_and(|e| e == "cubin")),
        "temporary files left: {files:?}"
    );
    let after = run_child(&dir, seed ^ 99);
    assert_eq!((after.stats.misses, after.stats.corrupt), (0, 0), "{:?}", after.stats);
    assert_eq!(after.stats.hits as usize, files.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    cudrv::selftest::Rng::new(seed).vec(n, -1.0, 1.0)
}

/// The workload of a child process: a GEMM and an AXPY against f64 references, twice each.
#[test]
fn child_workload() {
    let Ok(seed) = std::env::var(CHILD).map(|s| s.parse::<u64>().expect("a seed")) else {
        return;
    };
    let ctx = cudrv::Context::new(0).expect("context");
    let stream = ctx.default_stream();
    let (m, n, k) = (67usize, 45usize, 129usize);
    let a = random(m * k, seed);
    let b = random(k * n, seed.rotate_left(7));
    let x = random(1000, seed.rotate_left(13));
    let mut want = vec![0f64; m * n];
    for j in 0..n {
        for i in 0..m {
            want[i + j * m] = (0..k).map(|p| a[i + p * m] as f64 * b[p + j * k] as f64).sum();
        }
    }
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (da, db) = (
            DeviceBuffer::from_slice(&stream, &a).unwrap(),
            DeviceBuffer::from_slice(&stream, &b).unwrap(),
        );
        let mut dc = DeviceBuffer::from_slice(&stream, &vec![f32::NAN; m * n]).unwrap();
        // On the CUDA cores: the cache compiles and stores those kernels (tensor-core PTX is
        // the driver's to load unless `cudrv cache warm` put it there, and exact f32 runs on
        // the f64 tensor cores on Hopper).
        Gemm::new(Transpose::N, Transpose::N, m, n, k)
            .kernel(Kernel::Simt)
            .run(&da, &db, &mut dc)
            .unwrap();
        let c = dc.to_vec().unwrap();
        for (got, want) in c.iter().zip(&want) {
            assert!(
                (*got as f64 - want).abs() <= 1e-5 * k as f64 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
        let dx = DeviceBuffer::from_slice(&stream, &x).unwrap();
        let mut dy = DeviceBuffer::from_slice(&stream, &x).unwrap();
        ops::axpy(&mut dy, 2.0f32, &dx).unwrap();
        let y = dy.to_vec().unwrap();
        for (got, x) in y.iter().zip(&x) {
            assert_eq!(*got, 3.0 * x);
        }
        runs.push((c, y));
    }
    assert_eq!(runs[0], runs[1], "two runs agree");
    let s = KernelCache::global().stats();
    println!(
        "CHILD STATS hits={} misses={} stores={} corrupt={}",
        s.hits, s.misses, s.stores, s.corrupt
    );
    println!("CHILD RESULTS OK");
}

#[test]
fn the_cache_is_off_when_disabled() {
    let Some(_ctx) = gpu!("the_cache_is_off_when_disabled") else {
        return;
    };
    let dir = fresh_dir("disabled");
    let out = child(&dir, seed()).env("CUDRV_CACHE_DISABLE", "1").output().unwrap();
    let run = finish(out);
    assert_eq!(
        (run.stats.hits, run.stats.misses, run.stats.stores),
        (0, 0, 0),
        "{:?}",
        run.stats
    );
    assert!(!dir.exists(), "the disabled cache wrote {}", dir.display());
}
