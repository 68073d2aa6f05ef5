//! `cudrv bench fuse`: fused elementwise and reduction chains on 16M elements against the same
//! chains run as one kernel per operation, and against the device's copy bandwidth, in one run;
//! and the time to get a compiled fusion (from the kernel cache after the first process).

use std::time::Instant;

use cudrv::fuse::{DType, FusedKernel, Fusion};
use cudrv::sys;
use cudrv::{DeviceBuffer, DeviceSlice, Result};

use crate::timing::time;

const N: usize = 16 << 20;

fn compile(ctx: &std::sync::Arc<cudrv::Context>, f: &Fusion) -> Result<(FusedKernel, f64)> {
    let t = Instant::now();
    let k = f.compile(ctx)?;
    Ok((k, t.elapsed().as_secs_f64() * 1e3))
}

pub fn run(trials: usize) -> Result<bool> {
    let ctx = cudrv::Context::new(0)?;
    let s = ctx.new_stream()?;
    println!(
        "bench fuse on {} (driver CUDA {}): {N} f32 elements; device time per chain, median of {trials} batches",
        ctx.device().name()?,
        cudrv::driver_version()?
    );
    // y = relu(a x + b) c: four operations.
    let mut f = Fusion::new("bench_axpb_relu_scale", DType::F32);
    let (x, a, b, c) = (f.input("x"), f.scalar("a"), f.scalar("b"), f.scalar("c"));
    f.output("y", (a * x + b).relu() * c);
    let (fused, first_ms) = compile(&ctx, &f)?;
    let (_, again_ms) = compile(&ctx, &f)?;
    // sum(p ln(p / q)): a map and a whole reduction.
    let mut g = Fusion::new("bench_kl_sum", DType::F32);
    let (p, q) = (g.input("p"), g.input("q"));
    g.sum("kl", &p * (&p / &q).ln());
    let (kl, _) = compile(&ctx, &g)?;
    // The same chains one operation per kernel.
    let one = |name: &str, build: &dyn Fn(&mut Fusion)| -> Result<FusedKernel> {
        let mut f = Fusion::new(name, DType::F32);
        build(&mut f);
        f.compile(&ctx)
    };
    let scale = one("bench_scale", &|f| {
        let (x, a) = (f.input("x"), f.scalar("a"));
        f.output("y", x * a);
    })?;
    let shift = one("bench_shift", &|f| {
        let (x, a) = (f.input("x"), f.scalar("a"));
        f.output("y", x + a);
    })?;
    let relu = one("bench_relu", &|f| {
        let x = f.input("x");
        f.output("y", x.relu());
    })?;
    let ratio = one("bench_ratio", &|f| {
        let (p, q) = (f.input("p"), f.input("q"));
        f.output("y", &p / &q);
    })?;
    let ln_mul = one("bench_p_ln", &|f| {
        let (p, r) = (f.input("p"), f.input("r"));
        f.output("y", p * r.ln());
    })?;
    let sum = one("bench_sum", &|f| {
        let x = f.input("x");
        f.sum("s", x);
    })?;

    let xs = DeviceBuffer::from_slice(&s, &vec![0.5f32; N])?;
    let qs = DeviceBuffer::from_slice(&s, &vec![0.25f32; N])?;
    let mut y = DeviceBuffer::<f32>::zeroed(&s, N)?;
    let mut t1 = DeviceBuffer::<f32>::zeroed(&s, N)?;
    let mut t2 = DeviceBuffer::<f32>::zeroed(&s, N)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&s, 1)?;

    let t_fused = time(&s, trials, || {
        fused
            .launch(&s, 1, N)
            .input("x", &xs)
            .scalar("a", 1.5)
            .scalar("b", -0.25)
            .scalar("c", 2.0)
            .output("y", &mut y)
            .run()
    })?;
    let t_unfused = time(&s, trials, || {
        scale
            .launch(&s, 1, N)
            .input("x", &xs)
            .scalar("a", 1.5)
            .output("y", &mut t1)
            .run()?;
        shift
            .launch(&s, 1, N)
            .input("x", &t1)
            .scalar("a", -0.25)
            .output("y", &mut t2)
            .run()?;
        relu.launch(&s, 1, N).input("x", &t2).output("y", &mut t1).run()?;
        scale
            .launch(&s, 1, N)
            .input("x", &t1)
            .scalar("a", 2.0)
            .output("y", &mut y)
            .run()
    })?;
    let t_kl = time(&s, trials, || {
        kl.launch(&s, 1, N)
            .input("p", &xs)
            .input("q", &qs)
            .output("kl", &mut out)
            .run()
    })?;
    let t_kl_unfused = time(&s, trials, || {
        ratio
            .launch(&s, 1, N)
            .input("p", &xs)
            .input("q", &qs)
            .output("y", &mut t1)
            .run()?;
        ln_mul
            .launch(&s, 1, N)
            .input("p", &xs)
            .input("r", &t1)
            .output("y", &mut t2)
            .run()?;
        sum.launch(&s, 1, N).input("x", &t2).output("s", &mut out).run()
    })?;
    let copy = sys::resolve::cuMemcpyDtoDAsync_v2()?;
    let (dst, src, bytes) = (t1.device_ptr(), xs.device_ptr(), N * 4);
    let t_copy = time(&s, trials, || {
        // SAFETY: both buffers hold N f32; the copy is ordered on the stream.
        let code = unsafe { copy(dst, src, bytes, s.raw()) };
        if code == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(cudrv::Error::InvalidArgument(format!(
                "cuMemcpyDtoDAsync failed: {}",
                code.0
            )))
        }
    })?;
    let copy_bw = 2.0 * bytes as f64 / t_copy.device;
    let gbs = |moved: f64, t: f64| moved / t / 1e9;
    println!();
    println!("{:<44} {:>10} {:>10} {:>12}", "chain", "us", "GB/s", "of copy BW");
    let row = |name: &str, moved: f64, t: f64| {
        println!(
            "{name:<44} {:>10.1} {:>10.0} {:>11.1}%",
            t * 1e6,
            gbs(moved, t),
            100.0 * moved / t / copy_bw
        )
    };
    let b = bytes as f64;
    row("device copy (read + write)", 2.0 * b, t_copy.device);
    row("relu(a x + b) c fused (1 kernel)", 2.0 * b, t_fused.device);
    row("relu(a x + b) c unfused (4 kernels)", 2.0 * b, t_unfused.device);
    row("sum(p ln(p / q)) fused (1 kernel)", 2.0 * b, t_kl.device);
    row("sum(p ln(p / q)) unfused (3 kernels)", 2.0 * b, t_kl_unfused.device);
    println!();
    println!(
        "fused vs unfused: relu chain {:.2}x, kl chain {:.2}x",
        t_unfused.device / t_fused.device,
        t_kl_unfused.device / t_kl.device
    );
    println!(
        "compile a fusion: {first_ms:.2} ms the first time in this process, {again_ms:.2} ms again (kernel cache)"
    );
    let want = 0.5f64 * (0.5f64 / 0.25).ln() * N as f64;
    let got = out.to_vec()?[0] as f64;
    let ys = y.to_vec()?;
    let y_want = ((1.5f32 * 0.5 - 0.25).max(0.0) * 2.0) as f64;
    if (got - want).abs() > 1e-4 * want || ys.iter().any(|&v| (v as f64 - y_want).abs() > 1e-6) {
        println!("MISMATCH: kl {got} (want {want}), y[0] {} (want {y_want})", ys[0]);
        return Ok(false);
    }
    Ok(true)
}
