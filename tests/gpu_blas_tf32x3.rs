//! GPU tests of f32 GEMMs in `MathMode::Tf32x3` (three tf32 products on the tensor cores):
//! every op, layout, padded and unaligned leading dimension, batch, epilogue and forced family
//! against the f64 reference within exact f32's bound (‖C − ref‖ / ‖ref‖ < 1e-5); infinities,
//! NaN, values near f32's largest and subnormal inputs give what exact f32 gives; accuracy beside
//! exact f32 on a long product; a pool with no room for the split runs exact f32 instead.
//! Fresh random inputs, outputs poisoned with NaN.

#[path = "support/blas.rs"]
#[allow(dead_code)] // each test binary uses its own part
mod common;
#[path = "support/gpu.rs"]
mod gpu;

use cudrv::blas::{Gemm, Kernel, Layout, MathMode, Transpose};
use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice};

use common::*;

/// The shapes, epilogues and batches of the other types' sweeps, split on the tensor cores
/// (forced) and by the automatic choice (which runs exact f32 on most of them), with leading
/// dimensions that are not 16 bytes apart; and products large enough for the automatic choice
/// to split, in every op and both layouts.
#[test]
fn gemm_tf32x3_matches_the_reference() {
    let Some(ctx) = gpu!("gemm_tf32x3_matches_the_reference") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    println!("seed {seed:#x}");
    let mut rng = Rng::new(seed);
    sweep::<f32>(&stream, &mut rng, &all_cases(Kernel::TensorCore, MathMode::Tf32x3, 1));
    sweep::<f32>(&stream, &mut rng, &shape_cases(Kernel::Auto, MathMode::Tf32x3, 1));
    let mut large = Vec::new();
    for (i, &(ta, tb)) in OPS.iter().enumerate() {
        for layout in [Layout::ColMajor, Layout::RowMajor] {
            let mut c = Case::new(ta, tb, 1031, 769, 1283);
            c.layout = layout;
            c.math = MathMode::Tf32x3;
            c.pad = if i % 2 == 0 { 0 } else { 3 };
            c.beta = if i < 2 { 0.0 } else { -0.5 };
            large.push(c);
        }
    }
    let mut batched = Case::new(Transpose::N, Transpose::T, 256, 192, 512);
    batched.math = MathMode::Tf32x3;
    batched.batch = 12;
    large.push(batched);
    sweep::<f32>(&stream, &mut rng, &large);
}

/// Which of the automatic choice's two routes a Tf32x3 product takes shows in its kernel name;
/// `Kernel::Simt` forces the exact kernels.
#[test]
fn gemm_tf32x3_names_its_route() {
    let Some(ctx) = gpu!("gemm_tf32x3_names_its_route") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let n = 2048;
    let buf = || DeviceBuffer::<f32>::zeroed(&stream, n * n).unwrap();
    let (a, b, c) = (buf(), buf(), buf());
    let name = |g: Gemm<f32>| g.kernel_name(&a, &b, &c).unwrap();
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, n, n, n).math(MathMode::Tf32x3);
    let big = name(g);
    assert!(big.starts_with("gemm_split_tf32x3+"), "{big}");
    let exact = name(g.kernel(Kernel::Simt));
    assert!(!exact.contains("tf32"), "{exact}");
    let small = name(Gemm::<f32>::new(Transpose::N, Transpose::N, 32, 32, 32).math(MathMode::Tf32x3));
    assert!(!small.contains("tf32"), "{small}");
    println!("2048^3: {big}; forced exact: {exact}; 32^3: {small}");
}

/// Infinities, NaN, subnormal values (times ordinary ones) and values within rounding of f32's
/// largest give what exact f32 gives: the same NaN and infinities (with their signs), finite results within exact
/// f32's bound of each other. (A value within 2^-12 of f32's largest would round up to
/// infinity as tf32: the split truncates it instead.)
#[test]
fn gemm_tf32x3_special_values_as_exact_f32() {
    let Some(ctx) = gpu!("gemm_tf32x3_special_values_as_exact_f32") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let mut rng = Rng::new(seed);
    let (m, n, k) = (96, 80, 72);
    // The tensor cores read subnormal tf32 inputs as zero (as Tf32 does): subnormal values only
    // where they meet B's values of at most 0.5, whose products are far below the result's
    // rounding.
    let special = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1.0e-40, -3.0e-39, 0.0];
    let special_b = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0];
    let huge = [f32::MAX, -f32::MAX, f32::MAX * 0.99999, -f32::MAX * 0.9999];
    // A: one element near f32's largest per stored column and the special values now and then;
    // B within [-0.5, 0.5] and the special values: no sum of finite terms overflows.
    let ha: Vec<f32> = (0..m * k)
        .map(|i| {
            if i % m == (i / m) % m {
                huge[(rng.next_u64() % huge.len() as u64) as usize]
            } else if rng.next_u64() % 40 == 0 {
                special[(rng.next_u64() % special.len() as u64) as usize]
            } else {
                rng.uniform(-1.0, 1.0) as f32
            }
        })
        .collect();
    let hb: Vec<f32> = (0..k * n)
        .map(|_| {
            if rng.next_u64() % 40 == 0 {
                special_b[(rng.next_u64() % special_b.len() as u64) as usize]
            } else {
                rng.uniform(-0.5, 0.5) as f32
            }
        })
        .collect();
    let a = DeviceBuffer::from_slice(&stream, &ha).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &hb).unwrap();
    let (ta_len, tb_len) = (ha.len(), hb.len());
    assert_eq!((ta_len, tb_len), (m * k, k * n));
    for (ta, tb) in OPS {
        let g = Gemm::<f32>::new(ta, tb, m, n, k);
        let run = |g: Gemm<f32>| {
            let mut c = DeviceBuffer::from_slice(&stream, &vec![f32::NAN; m * n]).unwrap();
            g.run(&a, &b, &mut c).unwrap();
            c.to_vec().unwrap()
        };
        let split = g.math(MathMode::Tf32x3).kernel(Kernel::TensorCore);
        let c0 = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
        let route = split.kernel_name(&a, &b, &c0).unwrap();
        assert!(route.starts_with("gemm_split_tf32x3+"), "{route}");
        let (want, got) = (run(g), run(split));
        let (mut nan, mut inf, mut big) = (0, 0, 0);
        for (i, (&w, &v)) in want.iter().zip(&got).enumerate() {
            let at = format!("{ta:?}{tb:?} C[{i}] (seed {seed:#x})");
            if w.is_nan() {
                assert!(v.is_nan(), "{at}: exact NaN, split {v:e}");
                nan += 1;
            } else if w.is_infinite() {
                assert_eq!(v, w, "{at}");
                inf += 1;
            } else {
                assert!(v.is_finite(), "{at}: exact {w:e}, split {v:e}");
                let (w, v) = (f64::from(w), f64::from(v));
                assert!(
                    (w - v).abs() <= 1e-5 * (w.abs() + 1.0),
                    "{at}: exact {w:e}, split {v:e}"
                );
                big += usize::from(w.abs() > 1e30);
            }
        }
        println!("{ta:?}{tb:?}: {nan} NaN, {inf} infinite and {big} finite entries above 1e30 alike");
        assert!(nan + inf > 0 && big > 0, "no special entry drawn (seed {seed:#x})");
    }
}

/// On a long product the split's error against the f64 reference is of exact f32's size.
#[test]
fn gemm_tf32x3_accuracy_beside_exact_f32() {
    let Some(ctx) = gpu!("gemm_tf32x3_accuracy_beside_exact_f32") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let mut rng = Rng::new(seed);
    let (m, n, k) = (512, 384, 8192);
    let ha: Vec<f32> = (0..m * k).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    let hb: Vec<f32> = (0..k * n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    let a = DeviceBuffer::from_slice(&stream, &ha).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &hb).unwrap();
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, m, n, k);
    let run = |g: Gemm<f32>| {
        let mut c = DeviceBuffer::from_slice(&stream, &vec![f32::NAN; m * n]).unwrap();
        g.run(&a, &b, &mut c).unwrap();
        c.to_vec().unwrap()
    };
    // Exact f32 arithmetic is the CUDA cores' (the automatic exact choice on an H100 or H200 sums
    // in f64 on its f64 tensor cores, closer still: compared below too).
    let (exact, split) = (
        run(g.kernel(Kernel::Simt)),
        run(g.math(MathMode::Tf32x3).kernel(Kernel::TensorCore)),
    );
    let auto = run(g);
    let (mut want, mut e, mut s, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..600 {
        let (i, j) = (
            (rng.next_u64() % m as u64) as usize,
            (rng.next_u64() % n as u64) as usize,
        );
        want.push(
            (0..k)
                .map(|p| f64::from(ha[i + p * m]) * f64::from(hb[p + j * k]))
                .sum::<f64>(),
        );
        e.push(f64::from(exact[i + j * m]));
        s.push(f64::from(split[i + j * m]));
        d.push(f64::from(auto[i + j * m]));
    }
    let (err_exact, err_split, err_auto) = (rel_err(&e, &want), rel_err(&s, &want), rel_err(&d, &want));
    println!(
        "{m} x {n} x {k}: error exact f32 {err_exact:.3e} (CUDA cores), {err_auto:.3e} (automatic), tf32x3 {err_split:.3e} (seed {seed:#x})"
    );
    assert!(
        err_auto <= err_exact * 1.5 + 1e-9,
        "automatic exact f32 error {err_auto:e} against the CUDA cores' {err_exact:e}"
    );
    assert!(err_split < 1e-5, "tf32x3 error {err_split:e}");
    assert!(
        err_split <= 4.0 * err_exact.max(1e-8),
        "tf32x3 error {err_split:e} against exact f32's {err_exact:e} (seed {seed:#x})"
    );
}

/// With no room in the pool for the split copies, the product runs on the exact kernels: it
/// reserves nothing more and matches the reference.
#[test]
fn gemm_tf32x3_without_memory_runs_exact() {
    let Some(ctx) = gpu!("gemm_tf32x3_without_memory_runs_exact") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng::new(gpu::fresh_seed());
    // The copies: (1536 + 1024) x 3 x 1024 f32, 31 MB, above the pool's threshold for a segment
    // of its own.
    let mut c = Case::new(Transpose::N, Transpose::N, 1536, 1024, 1024);
    c.math = MathMode::Tf32x3;
    c.full_pool = true;
    sweep::<f32>(&stream, &mut rng, &[c]);
}
