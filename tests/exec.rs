//! The persistent executor's kernel without a GPU: it compiles with NVRTC with and without
//! fusions of every kind (skipped without libnvrtc; REQUIRE_NVRTC=1 fails then).

#[path = "support/fuse_chains.rs"]
mod chains;
#[path = "support/nvrtc.rs"]
mod support_nvrtc;

use cudrv::exec::ExecutorBuilder;
use support_nvrtc::nvrtc_or_skip;

#[test]
fn executor_kernel_compiles_with_every_chain() {
    if !nvrtc_or_skip("executor_kernel_compiles_with_every_chain") {
        return;
    }
    let mut fusions = Vec::new();
    for t in chains::TYPES {
        for mut f in chains::all(t) {
            // One namespace per fusion: the same chain in four types needs four names.
            let name = format!("{}_{}", f.name(), t.name());
            f.set_name(&name);
            fusions.push(f);
        }
    }
    for set in [&[][..], &fusions[..]] {
        let source = ExecutorBuilder::source_for(set);
        let c = cudrv::nvrtc::Program::new(source.clone())
            .arch("compute_80")
            .no_cache()
            .compile()
            .unwrap_or_else(|e| panic!("{e}\n{source}"));
        assert!(c.ptx().contains(".entry cudrv_executor("));
        assert!(c.ptx().contains(".entry cudrv_executor_fetch("));
    }
}
