//! Shared by the GPU test files: get a context or report the test as skipped.
//!
//! Without a GPU a test prints `SKIPPED (no GPU): <name>` and returns; with `REQUIRE_GPU=1` a
//! missing GPU fails the test instead.

use std::io::Write;
use std::sync::Arc;

use cudrv::Context;

/// Device 0's context, or `None` (after printing why) when there is no usable GPU.
pub fn context(test: &str) -> Option<Arc<Context>> {
    match Context::new(0) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("REQUIRE_GPU=1 but no GPU is usable for {test}: {e}");
            }
            // Written to the process's stdout directly: libtest captures println!, and a skip
            // must be visible in the test log.
            let line = format!(
                "SKIPPED (no GPU): {test}: {}\n",
                e.to_string().lines().next().unwrap_or("")
            );
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
            None
        }
    }
}

/// Device 0's context when it has compute capability 9.0 (the sm_90 / sm_90a kernels), else
/// `None` after printing `SKIPPED (needs compute capability 9.0): <test>: <why>` (or the no-GPU
/// skip of [`context`]). `REQUIRE_GPU=1` asks for a GPU, not for this one.
#[allow(dead_code)] // only the files with sm_90 tests call it
pub fn sm90(test: &str, why: &str) -> Option<Arc<Context>> {
    let ctx = context(test)?;
    if ctx.compute_capability() == (9, 0) {
        return Some(ctx);
    }
    let line = format!("SKIPPED (needs compute capability 9.0): {test}: {why}\n");
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    None
}

/// Whether the device's memory counts as fast: a peak of 4 TB/s and more (an H200, not an
/// H100), as src/blas/memory_class.rs counts it for the BLAS rules that differ between the two.
#[allow(dead_code)] // only the files whose checks depend on the memory class call it
pub fn fast_memory(ctx: &Context) -> bool {
    ctx.limits().peak_memory_bandwidth().is_some_and(|b| b >= 4.0e12)
}

/// `let Some(ctx) = gpu!("name") else { return };`
#[macro_export]
macro_rules! gpu {
    ($name:expr) => {
        $crate::gpu::context($name)
    };
}

/// The hand-written PTX test module (see tests/data/test_kernels.ptx).
#[allow(dead_code)] // not every test file launches the hand-written kernels
pub const TEST_PTX: &str = include_str!("../data/test_kernels.ptx");

/// A seed from the clock: every run draws fresh inputs (tests print it on failure).
#[allow(dead_code)] // not every test file draws random inputs
pub fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed)
}

/// Device 0's context for test `name` (`None`: the test reports itself skipped), with a lock
/// held for as long as the guard lives: the tests of one file that take it run one at a time.
/// The harness runs a file's tests on several threads, and some hold what cannot be shared (a
/// persistent executor's kernel keeps every SM; the profiler and the pool are one per context;
/// a deliberate fault, a timing comparison). A test that panicked does not block the others.
#[allow(dead_code)] // only some test files need it
pub fn alone(name: &str) -> Option<(Arc<Context>, std::sync::MutexGuard<'static, ()>)> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let ctx = context(name)?;
    Some((ctx, TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())))
}
