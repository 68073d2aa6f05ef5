//! Compiles a CUDA C++ kernel with `cudrv::nvrtc` and says how long it took: the first run of
//! this example compiles it (NVRTC), every later run takes it from cudrv's kernel cache without
//! loading libnvrtc at all (run it with `CUDRV_LIBNVRTC=/nonexistent` the second time to see).
//! No GPU is needed.
//!
//! ```text
//! cargo run --release --example nvrtc_cached
//! ```

use std::time::Instant;

fn main() -> Result<(), cudrv::Error> {
    let program = cudrv::nvrtc::Program::new(
        r#"template <typename T> __global__ void axpy(T a, const T* x, T* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] += a * x[i];
        }"#,
    )
    .name("axpy.cu")
    .arch("compute_80")
    .name_expression("axpy<float>");
    let cache = cudrv::kernel_cache::KernelCache::global();
    let hits = cache.stats().hits;
    let t = Instant::now();
    let compiled = program.compile()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let how = if cache.stats().hits > hits {
        "from the kernel cache"
    } else {
        "compiled by NVRTC"
    };
    println!(
        "axpy<float> = {}: {} bytes of PTX, {how} in {ms:.2} ms",
        compiled.lowered_name("axpy<float>").unwrap_or("?"),
        compiled.ptx().len()
    );
    Ok(())
}
