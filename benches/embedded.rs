//! Criterion bench of the embedded kernels' decompression (CPU only): the largest module, which
//! the first call of one of its kernels pays once per process, and all modules together. The
//! figure to hold is the largest module under 10 ms (docs/PERFORMANCE.md).
//!
//! Run: `cargo bench --bench embedded`.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, Criterion, Throughput};
use cudrv::registry::EMBEDDED_MODULES;

fn decompress(c: &mut Criterion) {
    let largest = EMBEDDED_MODULES.iter().max_by_key(|m| m.ptx_len).expect("modules");
    let mut group = c.benchmark_group("decompress");
    group.throughput(Throughput::Bytes(largest.ptx_len as u64));
    group.bench_function(
        format!(
            "largest ({}, {} -> {} bytes)",
            largest.name,
            largest.compressed.len(),
            largest.ptx_len
        ),
        |b| b.iter(|| largest.decompress().expect("decompress")),
    );
    let total: usize = EMBEDDED_MODULES.iter().map(|m| m.ptx_len).sum();
    group.throughput(Throughput::Bytes(total as u64));
    group.sample_size(10);
    group.bench_function(format!("all {} modules ({total} bytes)", EMBEDDED_MODULES.len()), |b| {
        b.iter(|| {
            for m in &EMBEDDED_MODULES {
                m.decompress().expect("decompress");
            }
        })
    });
    group.finish();
}

criterion_group!(benches, decompress);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
