//! GPU tests of `cudrv::blas::gemv` against a CPU reference in f64: fresh random inputs (the
//! seed printed), outputs poisoned before each run, both ops, every type, sizes around the
//! kernels' tiles and splits (thread block clusters on sm_90), leading dimensions longer than
//! the matrix, strided and negative increments, alpha = 0 (A and x not read), and the error
//! paths (y untouched).
//!
//! Bounds on ‖y − ref‖ / ‖ref‖: f32 < 1e-5, f16/bf16 < 2e-2, f64 < 1e-12; NaN fails.

#[path = "support/blas.rs"]
#[allow(dead_code)] // each test binary uses its own part
mod common;
#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::blas::{self, GemmType, Transpose};
use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice, Stream};
use half::{bf16, f16};

use common::*;

trait GemvEl: blas::GemvType + El {
    /// The error bound of a GEMV result.
    const GEMV_BOUND: f64;
}
impl GemvEl for f32 {
    const GEMV_BOUND: f64 = 1e-5;
}
impl GemvEl for f64 {
    const GEMV_BOUND: f64 = 1e-12;
}
impl GemvEl for f16 {
    const GEMV_BOUND: f64 = 2e-2;
}
impl GemvEl for bf16 {
    const GEMV_BOUND: f64 = 2e-2;
}

#[allow(clippy::too_many_arguments)]
fn gemv_case<T: GemvEl>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    trans: Transpose,
    m: usize,
    n: usize,
    lda: usize,
    incx: isize,
    incy: isize,
    alpha: f64,
    beta: f64,
) -> f64 {
    let (lx, ly) = if trans == Transpose::N { (n, m) } else { (m, n) };
    let a_len = if m == 0 || n == 0 { 1 } else { (n - 1) * lda + m };
    let a: Vec<T> = (0..a_len).map(|_| T::from_f64(rng.uniform(-1.0, 1.0))).collect();
    let sx = ((lx.max(1) - 1) * incx.unsigned_abs() + 1).max(1);
    let sy = ((ly.max(1) - 1) * incy.unsigned_abs() + 1).max(1);
    let x: Vec<T> = (0..sx).map(|_| T::from_f64(rng.uniform(-1.0, 1.0))).collect();
    let mut y0: Vec<T> = vec![T::from_f64(f64::NAN); sy];
    let yi = |i: usize, inc: isize, len: usize| {
        if inc > 0 {
            i * inc as usize
        } else {
            (len - 1 - i) * inc.unsigned_abs()
        }
    };
    if beta != 0.0 {
        for i in 0..ly {
            y0[yi(i, incy, ly)] = T::from_f64(rng.uniform(-1.0, 1.0));
        }
    }
    let a_dev = DeviceBuffer::from_slice(stream, &a).unwrap();
    let x_dev = DeviceBuffer::from_slice(stream, &x).unwrap();
    let mut y_dev = DeviceBuffer::from_slice(stream, &y0).unwrap();
    blas::gemv(
        trans,
        m,
        n,
        T::from_f64(alpha),
        &a_dev,
        lda,
        &x_dev,
        incx,
        T::from_f64(beta),
        &mut y_dev,
        incy,
    )
    .unwrap();
    let y = y_dev.to_vec().unwrap();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for i in 0..ly {
        let mut s = 0.0;
        for p in 0..lx {
            let av = if trans == Transpose::N {
                a[i + p * lda]
            } else {
                a[p + i * lda]
            };
            s += av.to_f64() * x[yi(p, incx, lx)].to_f64();
        }
        let mut v = alpha * s;
        if beta != 0.0 {
            v += beta * y0[yi(i, incy, ly)].to_f64();
        }
        want.push(v);
        got.push(y[yi(i, incy, ly)].to_f64());
    }
    // Elements between the strided entries stay poisoned.
    let touched: std::collections::HashSet<usize> = (0..ly).map(|i| yi(i, incy, ly)).collect();
    for (i, v) in y.iter().enumerate() {
        if !touched.contains(&i) {
            assert!(v.to_f64().is_nan(), "gemv wrote y[{i}] outside the vector");
        }
    }
    rel_err(&got, &want)
}

fn gemv_sweep<T: GemvEl>(stream: &Arc<Stream>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut worst = 0.0f64;
    let shapes = [
        (1, 1),
        (7, 33),
        (1000, 129),
        (129, 5000),
        (4096, 300),
        // A split reduction (1000 columns over 32 row tiles) with a partial last tile.
        (4001, 1000),
        (33, 70000),
        (70000, 33),
        (2048, 2048),
    ];
    let bound = T::GEMV_BOUND;
    let name = <T as GemmType>::NAME;
    for (si, &(m, n)) in shapes.iter().enumerate() {
        for trans in [Transpose::N, Transpose::T] {
            for (ii, &(incx, incy)) in [(1, 1), (2, -3), (-1, 2)].iter().enumerate() {
                let lda = m + if (si + ii) % 2 == 0 { 0 } else { 3 };
                let (alpha, beta) = if (si + ii) % 2 == 0 { (1.0, 0.0) } else { (-0.75, 0.5) };
                let e = gemv_case::<T>(stream, &mut rng, trans, m, n, lda, incx, incy, alpha, beta);
                assert!(
                    e < bound,
                    "gemv {name} {trans:?} {m}x{n} lda {lda} inc {incx},{incy}: error {e:e} (seed {seed:#x})"
                );
                worst = worst.max(e);
            }
        }
    }
    // 16-byte-aligned columns (lda a multiple of 8 elements) with a row count that is not: the
    // 16-byte kernels' partial vectors at the end of each column, for N and for T, whose row
    // splits (a few columns, many rows) end in one.
    for (m, n, lda) in [(8197, 40, 8200), (8197, 3000, 8200), (13, 9, 16)] {
        for trans in [Transpose::N, Transpose::T] {
            let e = gemv_case::<T>(stream, &mut rng, trans, m, n, lda, 1, 1, -0.75, 0.5);
            assert!(
                e < bound,
                "gemv {name} {trans:?} {m}x{n} lda {lda}: error {e:e} (seed {seed:#x})"
            );
            worst = worst.max(e);
        }
    }
    // N cases with strided vectors and beta. N reductions split 8-16 ways over aligned columns:
    // on sm_90 the 8 blocks of a thread block cluster (gemv_nvc) add their partial sums in
    // shared memory; a partial last row tile, strided vectors, beta.
    // Row strips on a large GPU (one block of 16 warps per 32 lanes x 4, 8 or 16 bytes of rows,
    // every column, for an A larger than L2, or on fast memory each strip's columns over the
    // blocks of a cluster), with a partial last strip.
    for (m, n, lda) in [
        // The element-wise N kernel's reduction split 2-10 ways (odd leading dimensions): on
        // sm_90 the 16 blocks of a cluster over 64-row tiles (gemv_nc16: 1023 x 1025, 777 x 2301)
        // or the 8 of one over 128-row tiles (gemv_nc: 2999 x 999, 5001 x 333) where the
        // clusters fit on the device at once.
        (1023, 1025, 1023),
        (2999, 999, 3001),
        (777, 2301, 779),
        (5001, 333, 5003),
        (4100, 4000, 4104),
        (2048, 2048, 2048),
        (4285, 4000, 4288),
        (6141, 4500, 6144),
        (12669, 2100, 12672),
        // Larger than an H200's L2 in every type: there the strips split their columns over
        // the 2 or 4 blocks of a cluster where all the clusters fit (8189 rows: a partial last
        // strip at every lane width; 11008 columns: unequal ranges per block and warp).
        (8189, 8192, 8192),
        (4093, 11008, 4096),
        // f32 at an odd lda: one element per lane (other types: their element-wise kernels).
        (4095, 4097, 4095),
        (3001, 4500, 3003),
    ] {
        let e = gemv_case::<T>(stream, &mut rng, Transpose::N, m, n, lda, 2, -3, -0.75, 0.5);
        assert!(
            e < bound,
            "gemv {name} N {m}x{n} lda {lda} inc 2,-3: error {e:e} (seed {seed:#x})"
        );
        worst = worst.max(e);
    }
    println!("gemv {name}: worst error {worst:.3e} (seed {seed:#x})");
}

#[test]
fn gemv_every_type() {
    let Some(ctx) = gpu!("gemv_every_type") else { return };
    let stream = ctx.new_stream().unwrap();
    // Fresh inputs every run (each type's seed printed, and named on a failure).
    let seed = gpu::fresh_seed();
    gemv_sweep::<f32>(&stream, seed ^ 11);
    gemv_sweep::<f64>(&stream, seed ^ 12);
    gemv_sweep::<f16>(&stream, seed ^ 13);
    gemv_sweep::<bf16>(&stream, seed ^ 14);
    // alpha = 0: A and x not read.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 4]).unwrap();
    let mut y = DeviceBuffer::from_slice(&stream, &[2.0f32; 2]).unwrap();
    blas::gemv(Transpose::N, 2, 2, 0.0, &a, 2, &a, 1, 0.5, &mut y, 1).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 2]);
    // Errors: lda < m, short x, zero increment; y untouched.
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 4]).unwrap();
    for e in [
        blas::gemv(Transpose::N, 2, 2, 1.0, &b, 1, &b, 1, 0.0, &mut y, 1).unwrap_err(),
        blas::gemv(Transpose::N, 2, 2, 1.0, &b, 2, &b, 4, 0.0, &mut y, 1).unwrap_err(),
        blas::gemv(Transpose::T, 2, 2, 1.0, &b, 2, &b, 0, 0.0, &mut y, 1).unwrap_err(),
    ] {
        assert!(matches!(e, cudrv::Error::InvalidArgument(_)), "{e}");
    }
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 2]);
}
