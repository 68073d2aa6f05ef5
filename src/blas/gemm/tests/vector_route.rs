//! GEMMs with one row or column mapped onto the GEMV kernels.

use super::*;
use crate::blas::gemm::vector::route;
use crate::selftest::Rng;

/// `op(X)[i][j]` of a stored matrix in `layout` with leading dimension `ld`.
fn at(x: &[f64], layout: Layout, op: Transpose, ld: usize, i: usize, j: usize) -> f64 {
    let (r, c) = if op == Transpose::N { (i, j) } else { (j, i) };
    match layout {
        Layout::ColMajor => x[r + c * ld],
        Layout::RowMajor => x[r * ld + c],
    }
}

/// BLAS gemv on the host: y = alpha op(M) x + beta y, M column-major rows x cols at ld.
#[allow(clippy::too_many_arguments)]
fn gemv(
    op: Transpose,
    rows: usize,
    cols: usize,
    alpha: f64,
    m: &[f64],
    ld: usize,
    x: &[f64],
    incx: isize,
    beta: f64,
    y: &mut [f64],
    incy: isize,
) {
    let (len_x, len_y) = if op == Transpose::N { (cols, rows) } else { (rows, cols) };
    let idx = |i: usize, len: usize, inc: isize| {
        if inc > 0 {
            i * inc as usize
        } else {
            (len - 1 - i) * inc.unsigned_abs()
        }
    };
    for i in 0..len_y {
        let dot: f64 = (0..len_x)
            .map(|p| {
                let a = if op == Transpose::N {
                    m[i + p * ld]
                } else {
                    m[p + i * ld]
                };
                a * x[idx(p, len_x, incx)]
            })
            .sum();
        let yi = idx(i, len_y, incy);
        y[yi] = alpha * dot + beta * y[yi];
    }
}

#[test]
fn one_row_or_column_maps_onto_gemv_exactly() {
    let mut rng = Rng::new(17);
    let mut routed = 0;
    for case in 0..400 {
        let r = |rng: &mut Rng, hi: u64| 1 + (rng.next_u64() % hi) as usize;
        let (m, n) = if case % 2 == 0 {
            (1, r(&mut rng, 9))
        } else {
            (r(&mut rng, 9), 1)
        };
        let k = r(&mut rng, 7);
        let ops = [Transpose::N, Transpose::T];
        let (ta, tb) = (ops[case % 4 / 2], ops[case / 4 % 2]);
        let layout = if case / 8 % 2 == 0 {
            Layout::ColMajor
        } else {
            Layout::RowMajor
        };
        let stored = |op, rows, cols| if op == Transpose::N { (rows, cols) } else { (cols, rows) };
        let inner = |(r, c): (usize, usize)| if layout == Layout::ColMajor { r } else { c };
        let outer = |(r, c): (usize, usize)| if layout == Layout::ColMajor { c } else { r };
        let (sa, sb, sc) = (stored(ta, m, k), stored(tb, k, n), (m, n));
        let pad = |rng: &mut Rng| (rng.next_u64() % 3) as usize;
        let (lda, ldb, ldc) = (
            inner(sa) + pad(&mut rng),
            inner(sb) + pad(&mut rng),
            inner(sc) + pad(&mut rng),
        );
        let a: Vec<f64> = rng.vec(lda * outer(sa), -1.0, 1.0);
        let b: Vec<f64> = rng.vec(ldb * outer(sb), -1.0, 1.0);
        let c0: Vec<f64> = rng.vec(ldc * outer(sc), -1.0, 1.0);
        let (alpha, beta) = (1.5, -0.5);
        let g = Gemm::<f64>::new(ta, tb, m, n, k)
            .alpha(alpha)
            .beta(beta)
            .ld(lda, ldb, ldc)
            .layout(layout);
        let rt = route::<f64, f64>(&g, g.lds()).expect("m or n is 1");
        routed += 1;
        let mut want = c0.clone();
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|p| at(&a, layout, ta, lda, i, p) * at(&b, layout, tb, ldb, p, j))
                    .sum();
                let ci = if layout == Layout::ColMajor {
                    i + j * ldc
                } else {
                    i * ldc + j
                };
                want[ci] = alpha * dot + beta * c0[ci];
            }
        }
        let mut got = c0.clone();
        let (mat, x) = if rt.matrix_is_a { (&a, &b) } else { (&b, &a) };
        gemv(
            rt.trans, rt.rows, rt.cols, alpha, mat, rt.ld, x, rt.incx, beta, &mut got, rt.incy,
        );
        for (e, (w, g)) in want.iter().zip(&got).enumerate() {
            assert!((w - g).abs() < 1e-12, "case {case} {ta:?}{tb:?} {layout:?} {m}x{n}x{k} ld {lda},{ldb},{ldc}: element {e}: {g} != {w} ({rt:?})");
        }
    }
    assert_eq!(routed, 400);
}

#[test]
fn only_plain_single_products_take_the_gemv() {
    let g = || Gemm::<f32>::new(Transpose::N, Transpose::N, 512, 1, 256);
    let r = |g: &Gemm<f32>| route::<f32, f32>(g, g.lds()).is_some();
    assert!(r(&g()));
    assert!(!r(&Gemm::<f32>::new(Transpose::N, Transpose::N, 512, 2, 256)));
    assert!(!r(&g().batched(2, 512 * 256, 256, 512)));
    assert!(!r(&g().activation(Activation::Relu)));
    assert!(!r(&g().kernel(Kernel::Simt)));
    assert!(!r(&g().tile(Tile::Small)));
    assert!(!r(&Gemm::<f32>::new(Transpose::N, Transpose::N, 512, 1, 0)));
    // f16 takes its scalars in f16: alpha 0.1 is not exact there, 0.5 is.
    let h = |alpha: f32| {
        let g = Gemm::<f32>::new(Transpose::T, Transpose::N, 4096, 1, 4096).alpha(alpha);
        route::<half::f16, f32>(&g, g.lds()).is_some()
    };
    assert!(h(0.5) && !h(0.1));
}
