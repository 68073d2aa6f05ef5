//! The cost of the first GEMM in a process (loading its kernel: a JIT compile, a hit in the
//! driver's cache, or a hit in cudrv's kernel cache) beside a later call of the same GEMM.
//!
//! Run: `cargo run --release --example first_call -- f16 4096` (or `f32 1024`). It prints one
//! line, `first_call <type> <n>: first <ms> ms, later <ms> ms, context <ms> ms`; the caches in
//! play are set from outside (`CUDA_CACHE_DISABLE`, `CUDRV_CACHE_DIR`, `CUDRV_CACHE_DISABLE`),
//! since only a fresh process shows them (docs/PERFORMANCE.md, "First use of a kernel").

use std::time::Instant;

use cudrv::blas::{self, GemmType, Transpose};
use cudrv::{Context, DeviceBuffer, Stream};

fn time_gemm<T: GemmType + Copy>(stream: &std::sync::Arc<Stream>, n: usize, one: T) -> cudrv::Result<(f64, f64)> {
    let a = DeviceBuffer::from_slice(stream, &vec![one; n * n])?;
    let b = DeviceBuffer::from_slice(stream, &vec![one; n * n])?;
    let mut c = DeviceBuffer::from_slice(stream, &vec![one; n * n])?;
    let mut times = Vec::new();
    for _ in 0..6 {
        stream.synchronize()?;
        let start = Instant::now();
        blas::gemm(
            Transpose::N,
            Transpose::N,
            n,
            n,
            n,
            T::Scalar::from(1),
            &a,
            n,
            &b,
            n,
            T::Scalar::from(0),
            &mut c,
            n,
        )?;
        stream.synchronize()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    // The first call, and the median of the five after it.
    let first = times[0];
    let mut later = times[1..].to_vec();
    later.sort_by(f64::total_cmp);
    Ok((first, later[later.len() / 2]))
}

fn main() -> cudrv::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ty = args.first().map(String::as_str).unwrap_or("f32");
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let start = Instant::now();
    let ctx = Context::new(0)?;
    let stream = ctx.default_stream();
    let context_ms = start.elapsed().as_secs_f64() * 1e3;
    let (first, later) = match ty {
        "f16" => time_gemm(&stream, n, half::f16::ONE)?,
        "bf16" => time_gemm(&stream, n, half::bf16::ONE)?,
        "f64" => time_gemm(&stream, n, 1.0f64)?,
        _ => time_gemm(&stream, n, 1.0f32)?,
    };
    println!("first_call {ty} {n}: first {first:.2} ms, later {later:.2} ms, context {context_ms:.1} ms");
    Ok(())
}
