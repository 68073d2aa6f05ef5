//! GPU tests of fused kernels: each chain fused, the same chain run as separate kernels with
//! intermediate buffers, and a CPU reference in f64 on fresh random inputs, for f32, f64, f16
//! and bf16; repeated launches give the same bits; bad arguments are refused. Each skips visibly
//! without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

#[path = "support/fuse_chains.rs"]
mod chains;

use std::sync::Arc;

use cudrv::fuse::{DType, FuseType, FusedKernel, FusedLaunch, Fusion};
use cudrv::selftest::{rel_error, FromF64, Rng};
use cudrv::{Context, DeviceBuffer, DeviceSlice, Stream};

fn seed() -> u64 {
    gpu::fresh_seed()
}

/// Relative error allowed between a result stored in `t` and the f64 reference.
fn tolerance(t: DType) -> f64 {
    match t {
        DType::F64 => 1e-10,
        DType::F32 => 1e-5,
        DType::F16 => 2e-3,
        DType::BF16 => 1.6e-2,
    }
}

/// Values of type T drawn in [lo, hi), and their exact f64 values.
fn draw<T: FromF64>(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> (Vec<T>, Vec<f64>) {
    let v: Vec<T> = rng.vec(n, lo, hi);
    let exact = v.iter().map(|x| x.to_f64()).collect();
    (v, exact)
}

/// A device buffer of NaN (its type's), to be overwritten.
fn poisoned<T: FromF64 + FuseType>(s: &Arc<Stream>, n: usize) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(s, &vec![T::from_f64(f64::NAN); n]).unwrap()
}

fn get<T: FromF64 + FuseType>(b: &DeviceBuffer<T>) -> Vec<f64> {
    b.to_vec().unwrap().iter().map(|x| x.to_f64()).collect()
}

/// One-stage fusions the unfused chains are built from.
fn stage(ctx: &Arc<Context>, t: DType, name: &str, build: impl FnOnce(&mut Fusion)) -> FusedKernel {
    let mut f = Fusion::new(name, t);
    build(&mut f);
    f.compile(ctx).unwrap()
}

/// The unfused stage `s = sum of x`.
fn sum_all(ctx: &Arc<Context>, t: DType) -> FusedKernel {
    stage(ctx, t, "sum_all", |f| {
        let x = f.input("x");
        f.sum("s", x);
    })
}

/// The unfused stage `y = a - b`.
fn difference(ctx: &Arc<Context>, t: DType) -> FusedKernel {
    stage(ctx, t, "sub", |f| {
        let (a, b) = (f.input("a"), f.input("b"));
        f.output("y", a - b);
    })
}

/// The unfused stage `d = |p_i - p_j|`: points per row (`xi`, `yi`) against points per column
/// (`xj`, `yj`).
fn distances(ctx: &Arc<Context>, t: DType, name: &str) -> FusedKernel {
    stage(ctx, t, name, |f| {
        let (xi, yi, xj, yj) = (
            f.col_input("xi"),
            f.col_input("yi"),
            f.row_input("xj"),
            f.row_input("yj"),
        );
        let (dx, dy) = (&xi - &xj, &yi - &yj);
        f.output("d", (&dx * &dx + &dy * &dy).sqrt());
    })
}

/// Binds the four point buffers `[xi, yi, xj, yj]` of the neighbour chains.
fn points<'a, T: FuseType>(l: FusedLaunch<'a>, p: &'a [DeviceBuffer<T>; 4]) -> FusedLaunch<'a> {
    l.input("xi", &p[0])
        .input("yi", &p[1])
        .input("xj", &p[2])
        .input("yj", &p[3])
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64, seed: u64) {
    let e = rel_error(got, want);
    assert!(e <= tol, "{what}: relative error {e:e} > {tol:e} (seed {seed:#x})");
}

/// Counts compared with the reference: a distance or error within rounding of the threshold may
/// fall on either side, so each count may differ by one.
fn check_counts(what: &str, got: &[f64], want: &[f64], seed: u64) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1.0, "{what}[{i}]: {g} vs {w} (seed {seed:#x})");
    }
}

fn kl_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    let n = if rng.uniform(0.0, 1.0) < 0.2 {
        1
    } else {
        rng.uniform(2.0, 300_000.0) as usize
    };
    let (p, pe) = draw::<T>(rng, n, 0.05, 1.0);
    let (q, qe) = draw::<T>(rng, n, 0.05, 1.0);
    let want: f64 = pe.iter().zip(&qe).map(|(p, q)| p * (p / q).ln()).sum();
    let (p, q) = (
        DeviceBuffer::from_slice(s, &p).unwrap(),
        DeviceBuffer::from_slice(s, &q).unwrap(),
    );
    let fused = chains::kl_sum(t).compile(ctx).unwrap();
    let mut out = [poisoned::<T>(s, 1), poisoned::<T>(s, 1)];
    for o in &mut out {
        fused
            .launch(s, 1, n)
            .input("p", &p)
            .input("q", &q)
            .output("kl", o)
            .run()
            .unwrap();
    }
    let (a, b) = (get(&out[0]), get(&out[1]));
    assert_eq!(a, b, "kl_sum {t:?}: two launches differ (seed {seed:#x})");
    // Unfused: the elementwise term into a buffer, then its sum.
    let term = stage(ctx, t, "kl_term", |f| {
        let (p, q) = (f.input("p"), f.input("q"));
        f.output("y", &p * (&p / &q).ln());
    });
    let sum = sum_all(ctx, t);
    let mut mid = poisoned::<T>(s, n);
    term.launch(s, 1, n)
        .input("p", &p)
        .input("q", &q)
        .output("y", &mut mid)
        .run()
        .unwrap();
    let mut un = poisoned::<T>(s, 1);
    sum.launch(s, 1, n).input("x", &mid).output("s", &mut un).run().unwrap();
    // A sum of terms of both signs: measured against the sum of their magnitudes.
    let scale: f64 = pe
        .iter()
        .zip(&qe)
        .map(|(p, q)| (p * (p / q).ln()).abs())
        .sum::<f64>()
        .max(1e-30);
    let err = (a[0] - want).abs() / scale;
    assert!(
        err <= tolerance(t),
        "kl_sum {t:?} n={n}: {} vs {want} (seed {seed:#x})",
        a[0]
    );
    let unfused_tol = if matches!(t, DType::F16 | DType::BF16) {
        4.0 * tolerance(t)
    } else {
        1e-4
    };
    let err = (a[0] - get(&un)[0]).abs() / scale;
    assert!(
        err <= unfused_tol,
        "kl_sum {t:?}: fused {} vs unfused {} (seed {seed:#x})",
        a[0],
        get(&un)[0]
    );
}

fn accuracy_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    // A count past 65504 does not fit an f16 (it becomes infinity): keep f16 sizes below that.
    let most = if t == DType::F16 { 60_000.0 } else { 200_000.0 };
    let n = rng.uniform(1.0, most) as usize;
    let (pred, pe) = draw::<T>(rng, n, -1.0, 1.0);
    let (target, te) = draw::<T>(rng, n, -1.0, 1.0);
    let tol = 0.37;
    let err_want: Vec<f64> = pe.iter().zip(&te).map(|(p, q)| p - q).collect();
    let correct_want = err_want.iter().filter(|e| e.abs() < tol).count() as f64;
    let (pred, target) = (
        DeviceBuffer::from_slice(s, &pred).unwrap(),
        DeviceBuffer::from_slice(s, &target).unwrap(),
    );
    let fused = chains::accuracy(t).compile(ctx).unwrap();
    let (mut err, mut correct) = (poisoned::<T>(s, n), poisoned::<T>(s, 1));
    fused
        .launch(s, 1, n)
        .input("pred", &pred)
        .input("target", &target)
        .scalar("tol", tol)
        .output("err", &mut err)
        .output("correct", &mut correct)
        .run()
        .unwrap();
    check(
        &format!("accuracy.err {t:?}"),
        &get(&err),
        &err_want,
        tolerance(t),
        seed,
    );
    // Counts in f16/bf16 are exact only up to 2048 / 256.
    let exact_to = match t {
        DType::F16 => 2048.0,
        DType::BF16 => 256.0,
        _ => f64::MAX,
    };
    let got = get(&correct)[0];
    if correct_want < exact_to {
        check_counts(&format!("accuracy.correct {t:?}"), &[got], &[correct_want], seed);
    } else {
        check(
            &format!("accuracy.correct {t:?}"),
            &[got],
            &[correct_want],
            tolerance(t),
            seed,
        );
    }
    // Unfused: error, then the indicator, then the sum.
    let sub = difference(ctx, t);
    let below = stage(ctx, t, "below", |f| {
        let (x, tol) = (f.input("x"), f.scalar("tol"));
        f.output("y", x.abs().lt(tol));
    });
    let sum = sum_all(ctx, t);
    let (mut e1, mut ind, mut c1) = (poisoned::<T>(s, n), poisoned::<T>(s, n), poisoned::<T>(s, 1));
    sub.launch(s, 1, n)
        .input("a", &pred)
        .input("b", &target)
        .output("y", &mut e1)
        .run()
        .unwrap();
    below
        .launch(s, 1, n)
        .input("x", &e1)
        .scalar("tol", tol)
        .output("y", &mut ind)
        .run()
        .unwrap();
    sum.launch(s, 1, n).input("x", &ind).output("s", &mut c1).run().unwrap();
    assert_eq!(
        get(&e1),
        get(&err),
        "accuracy.err {t:?}: fused and unfused differ (seed {seed:#x})"
    );
    let unfused = get(&c1)[0];
    if matches!(t, DType::F32 | DType::F64) {
        assert_eq!(
            unfused, got,
            "accuracy.correct {t:?}: fused and unfused differ (seed {seed:#x})"
        );
    } else {
        // The unfused chain compares the error after storing it in f16/bf16, the fused one before:
        // errors within half a unit of `tol` (2^-12 for f16, 2^-9 for bf16 near 0.37) may fall on
        // either side, and the counts themselves are rounded to the type.
        let ulp = if t == DType::F16 { 2f64.powi(-12) } else { 2f64.powi(-9) };
        let allowed = 3.0 + 2.0 * n as f64 * ulp + got.abs() * tolerance(t);
        assert!(
            (unfused - got).abs() <= allowed,
            "accuracy.correct {t:?}: fused {got} vs unfused {unfused} (seed {seed:#x})"
        );
    }
}

fn belief_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    let rows = rng.uniform(1.0, 700.0) as usize;
    let cols = rng.uniform(1.0, 3000.0) as usize;
    let (w, we) = draw::<T>(rng, rows * cols, -1.0, 1.0);
    let (obs, oe) = draw::<T>(rng, cols, -1.0, 1.0);
    let (pred, pe) = draw::<T>(rng, cols, -1.0, 1.0);
    let (belief, be) = draw::<T>(rng, rows, -1.0, 1.0);
    let lr = 0.125;
    let want: Vec<f64> = (0..rows)
        .map(|i| be[i] + lr * (0..cols).map(|j| we[i * cols + j] * (oe[j] - pe[j])).sum::<f64>())
        .collect();
    let up = |v: &[T]| DeviceBuffer::from_slice(s, v).unwrap();
    let (w, obs, pred, belief) = (up(&w), up(&obs), up(&pred), up(&belief));
    let fused = chains::belief_update(t).compile(ctx).unwrap();
    let mut out = poisoned::<T>(s, rows);
    fused
        .launch(s, rows, cols)
        .input("w", &w)
        .input("obs", &obs)
        .input("pred", &pred)
        .input("belief", &belief)
        .scalar("lr", lr)
        .output("belief_new", &mut out)
        .run()
        .unwrap();
    // The dot products are sums of terms of both signs: judged against the sums of magnitudes.
    let scale: Vec<f64> = (0..rows)
        .map(|i| {
            be[i].abs()
                + lr * (0..cols)
                    .map(|j| (we[i * cols + j] * (oe[j] - pe[j])).abs())
                    .sum::<f64>()
        })
        .collect();
    let got = get(&out);
    for i in 0..rows {
        let e = (got[i] - want[i]).abs() / scale[i].max(1e-30);
        assert!(
            e <= tolerance(t),
            "belief {t:?} {rows}x{cols} row {i}: {} vs {} (seed {seed:#x})",
            got[i],
            want[i]
        );
    }
    // Unfused: error vector, GEMV, update.
    let sub = difference(ctx, t);
    let gemv = stage(ctx, t, "gemv", |f| {
        let (w, x) = (f.input("w"), f.row_input("x"));
        f.output("y", (w * x).sum_rows());
    });
    let axpy = stage(ctx, t, "axpy", |f| {
        let (y, x, a) = (f.input("y"), f.input("x"), f.scalar("a"));
        f.output("z", y + a * x);
    });
    let (mut err, mut g, mut un) = (poisoned::<T>(s, cols), poisoned::<T>(s, rows), poisoned::<T>(s, rows));
    sub.launch(s, 1, cols)
        .input("a", &obs)
        .input("b", &pred)
        .output("y", &mut err)
        .run()
        .unwrap();
    gemv.launch(s, rows, cols)
        .input("w", &w)
        .input("x", &err)
        .output("y", &mut g)
        .run()
        .unwrap();
    axpy.launch(s, 1, rows)
        .input("y", &belief)
        .input("x", &g)
        .scalar("a", lr)
        .output("z", &mut un)
        .run()
        .unwrap();
    let unfused = get(&un);
    let unfused_tol = if matches!(t, DType::F16 | DType::BF16) {
        4.0 * tolerance(t)
    } else {
        1e-4
    };
    for i in 0..rows {
        let e = (got[i] - unfused[i]).abs() / scale[i].max(1e-30);
        assert!(
            e <= unfused_tol,
            "belief {t:?} row {i}: fused {} vs unfused {} (seed {seed:#x})",
            got[i],
            unfused[i]
        );
    }
}

fn neighbour_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    let rows = rng.uniform(1.0, 400.0) as usize;
    let cols = rng.uniform(1.0, 900.0) as usize;
    let (xi, xie) = draw::<T>(rng, rows, 0.0, 1.0);
    let (yi, yie) = draw::<T>(rng, rows, 0.0, 1.0);
    let (xj, xje) = draw::<T>(rng, cols, 0.0, 1.0);
    let (yj, yje) = draw::<T>(rng, cols, 0.0, 1.0);
    let r = 0.3;
    let counts_want: Vec<f64> = (0..rows)
        .map(|i| {
            (0..cols)
                .filter(|&j| ((xie[i] - xje[j]).powi(2) + (yie[i] - yje[j]).powi(2)).sqrt() < r)
                .count() as f64
        })
        .collect();
    let up = |v: &[T]| DeviceBuffer::from_slice(s, v).unwrap();
    let pts = [up(&xi), up(&yi), up(&xj), up(&yj)];
    let fused = chains::neighbours(t).compile(ctx).unwrap();
    let (mut counts, mut total) = (poisoned::<T>(s, rows), poisoned::<T>(s, 1));
    points(fused.launch(s, rows, cols), &pts)
        .scalar("r", r)
        .output("counts", &mut counts)
        .output("total", &mut total)
        .run()
        .unwrap();
    let got = get(&counts);
    let exact = matches!(t, DType::F32 | DType::F64) || (t == DType::F16 && cols < 2048) || cols < 256;
    if exact {
        check_counts(&format!("neighbours.counts {t:?}"), &got, &counts_want, seed);
        let total_want: f64 = got.iter().sum();
        if total_want
            < if t == DType::F16 {
                2048.0
            } else if t == DType::BF16 {
                256.0
            } else {
                1e15
            }
        {
            assert_eq!(get(&total)[0], total_want, "neighbours.total {t:?} (seed {seed:#x})");
        }
    }
    // Unfused: distances into a rows x cols buffer, counts, total.
    let dist = distances(ctx, t, "dist");
    let count = stage(ctx, t, "count_below", |f| {
        let (d, r) = (f.input("d"), f.scalar("r"));
        f.output("c", d.lt(r).sum_rows());
    });
    let mut d = poisoned::<T>(s, rows * cols);
    let mut c = poisoned::<T>(s, rows);
    points(dist.launch(s, rows, cols), &pts)
        .output("d", &mut d)
        .run()
        .unwrap();
    count
        .launch(s, rows, cols)
        .input("d", &d)
        .scalar("r", r)
        .output("c", &mut c)
        .run()
        .unwrap();
    if matches!(t, DType::F32 | DType::F64) {
        // Same distances in the same precision: the same counts.
        assert_eq!(
            get(&c),
            got,
            "neighbours {t:?}: fused and unfused counts differ (seed {seed:#x})"
        );
    }
}

/// The k-th smallest of `row` (1-based) in f64.
fn kth_smallest(row: &[f64], k: usize) -> f64 {
    let mut v = row.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[k - 1]
}

fn knn_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    let rows = rng.uniform(1.0, 300.0) as usize;
    let cols = rng.uniform(1.0, 1500.0) as usize;
    // k from 1 to the row length, both ends included now and then.
    let k = match rng.uniform(0.0, 1.0) {
        u if u < 0.15 => 1,
        u if u < 0.3 => cols,
        _ => rng.uniform(1.0, cols as f64 + 1.0).min(cols as f64) as usize,
    };
    let (xi, xie) = draw::<T>(rng, rows, 0.0, 1.0);
    let (yi, yie) = draw::<T>(rng, rows, 0.0, 1.0);
    let (xj, xje) = draw::<T>(rng, cols, 0.0, 1.0);
    let (yj, yje) = draw::<T>(rng, cols, 0.0, 1.0);
    let dist = |i: usize, j: usize| ((xie[i] - xje[j]).powi(2) + (yie[i] - yje[j]).powi(2)).sqrt();
    let kth_want: Vec<f64> = (0..rows)
        .map(|i| kth_smallest(&(0..cols).map(|j| dist(i, j)).collect::<Vec<_>>(), k))
        .collect();
    let counts_want: Vec<f64> = (0..rows)
        .map(|i| (0..cols).filter(|&j| dist(i, j) <= 1.5 * kth_want[i]).count() as f64)
        .collect();
    let up = |v: &[T]| DeviceBuffer::from_slice(s, v).unwrap();
    let pts = [up(&xi), up(&yi), up(&xj), up(&yj)];
    let fused = chains::knn_counts(t).compile(ctx).unwrap();
    let run = || {
        let (mut kth, mut counts, mut total) = (poisoned::<T>(s, rows), poisoned::<T>(s, rows), poisoned::<T>(s, 1));
        points(fused.launch(s, rows, cols), &pts)
            .scalar("k", k as f64)
            .output("kth", &mut kth)
            .output("counts", &mut counts)
            .output("total", &mut total)
            .run()
            .unwrap();
        (get(&kth), get(&counts), get(&total)[0])
    };
    let (kth, counts, total) = run();
    assert_eq!(
        run(),
        (kth.clone(), counts.clone(), total),
        "knn {t:?}: two launches differ (seed {seed:#x})"
    );
    // Distances are computed in the accumulation type (f32 for f16 and bf16 inputs), then the
    // k-th is stored in T.
    let tol = match t {
        DType::F64 => 1e-12,
        _ => tolerance(t).max(1e-6),
    };
    check(
        &format!("knn.kth {t:?} {rows}x{cols} k={k}"),
        &kth,
        &kth_want,
        tol,
        seed,
    );
    if matches!(t, DType::F32 | DType::F64) || cols < 256 {
        check_counts(&format!("knn.counts {t:?} k={k}"), &counts, &counts_want, seed);
        assert!(
            counts.iter().all(|&c| c >= k as f64),
            "knn {t:?}: a count below k (seed {seed:#x})"
        );
    }
    if matches!(t, DType::F32 | DType::F64) {
        assert_eq!(total, counts.iter().sum::<f64>(), "knn.total {t:?} (seed {seed:#x})");
    }
    // Unfused: distances into a buffer, the k-th per row, the counts, the total.
    let dist_k = distances(ctx, t, "knn_dist");
    let kth_k = stage(ctx, t, "knn_kth", |f| {
        let (d, k) = (f.input("d"), f.scalar("k"));
        f.output("kth", d.kth_smallest_rows(k));
    });
    let count_k = stage(ctx, t, "knn_count", |f| {
        let (d, kth) = (f.input("d"), f.col_input("kth"));
        f.output("c", d.le(kth * 1.5).sum_rows());
    });
    let (mut d, mut kth_u, mut c, mut tot) = (
        poisoned::<T>(s, rows * cols),
        poisoned::<T>(s, rows),
        poisoned::<T>(s, rows),
        poisoned::<T>(s, 1),
    );
    points(dist_k.launch(s, rows, cols), &pts)
        .output("d", &mut d)
        .run()
        .unwrap();
    kth_k
        .launch(s, rows, cols)
        .input("d", &d)
        .scalar("k", k as f64)
        .output("kth", &mut kth_u)
        .run()
        .unwrap();
    count_k
        .launch(s, rows, cols)
        .input("d", &d)
        .input("kth", &kth_u)
        .output("c", &mut c)
        .run()
        .unwrap();
    sum_all(ctx, t)
        .launch(s, 1, rows)
        .input("x", &c)
        .output("s", &mut tot)
        .run()
        .unwrap();
    if matches!(t, DType::F32 | DType::F64) {
        // The same distances in the same precision: the same k-th values and counts.
        assert_eq!(
            get(&kth_u),
            kth,
            "knn {t:?}: fused and unfused k-th differ (seed {seed:#x})"
        );
        assert_eq!(
            get(&c),
            counts,
            "knn {t:?}: fused and unfused counts differ (seed {seed:#x})"
        );
        assert_eq!(get(&tot)[0], total, "knn {t:?}: totals differ (seed {seed:#x})");
    } else {
        check(
            &format!("knn {t:?} unfused k-th"),
            &get(&kth_u),
            &kth,
            2.0 * tolerance(t),
            seed,
        );
    }
    // A k outside 1..=cols gives NaN, not a wrong value.
    let mut bad = poisoned::<T>(s, rows);
    kth_k
        .launch(s, rows, cols)
        .input("d", &d)
        .scalar("k", (cols + 1) as f64)
        .output("kth", &mut bad)
        .run()
        .unwrap();
    assert!(get(&bad).iter().all(|v| v.is_nan()), "knn {t:?}: k past the row is NaN");
}

fn softmax_chain<T: FromF64 + FuseType>(ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64) {
    let t = T::DTYPE;
    let rows = rng.uniform(1.0, 300.0) as usize;
    let cols = rng.uniform(1.0, 5000.0) as usize;
    let (x, xe) = draw::<T>(rng, rows * cols, -8.0, 8.0);
    let mut want = vec![0.0; rows * cols];
    for i in 0..rows {
        let row = &xe[i * cols..(i + 1) * cols];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for j in 0..cols {
            want[i * cols + j] = (row[j] - m).exp() / z;
        }
    }
    let x = DeviceBuffer::from_slice(s, &x).unwrap();
    let k = chains::softmax(t).compile(ctx).unwrap();
    let mut y = poisoned::<T>(s, rows * cols);
    k.launch(s, rows, cols)
        .input("x", &x)
        .output("y", &mut y)
        .run()
        .unwrap();
    check(
        &format!("softmax {t:?} {rows}x{cols}"),
        &get(&y),
        &want,
        tolerance(t),
        seed,
    );
}

fn each_type(test: &str, f: fn(&Arc<Context>, &Arc<Stream>, &mut Rng, u64, DType)) {
    let Some(ctx) = gpu!(test) else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = seed();
    let mut rng = Rng::new(seed);
    for round in 0..3 {
        for t in chains::TYPES {
            let _ = round;
            f(&ctx, &s, &mut rng, seed, t);
        }
    }
}

macro_rules! typed {
    ($chain:ident) => {
        |ctx: &Arc<Context>, s: &Arc<Stream>, rng: &mut Rng, seed: u64, t: DType| match t {
            DType::F32 => $chain::<f32>(ctx, s, rng, seed),
            DType::F64 => $chain::<f64>(ctx, s, rng, seed),
            DType::F16 => $chain::<half::f16>(ctx, s, rng, seed),
            DType::BF16 => $chain::<half::bf16>(ctx, s, rng, seed),
        }
    };
}

#[test]
fn fused_kl_divergence_sum() {
    each_type("fused_kl_divergence_sum", typed!(kl_chain));
}

#[test]
fn fused_prediction_error_accuracy_sum() {
    each_type("fused_prediction_error_accuracy_sum", typed!(accuracy_chain));
}

#[test]
fn fused_prediction_error_gemv_belief_update() {
    each_type("fused_prediction_error_gemv_belief_update", typed!(belief_chain));
}

#[test]
fn fused_distances_neighbour_counts_sum() {
    each_type("fused_distances_neighbour_counts_sum", typed!(neighbour_chain));
}

#[test]
fn fused_distances_kth_neighbour_counts_sum() {
    each_type("fused_distances_kth_neighbour_counts_sum", typed!(knn_chain));
}

#[test]
fn fused_row_softmax() {
    each_type("fused_row_softmax", typed!(softmax_chain));
}

#[test]
fn fused_launches_refuse_bad_arguments() {
    let Some(ctx) = gpu!("fused_launches_refuse_bad_arguments") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let k = chains::accuracy(DType::F32).compile(&ctx).unwrap();
    let n = 100;
    let a = DeviceBuffer::from_slice(&s, &vec![1.0f32; n]).unwrap();
    let short = DeviceBuffer::from_slice(&s, &vec![1.0f32; n - 1]).unwrap();
    let wrong_type = DeviceBuffer::from_slice(&s, &vec![1.0f64; n]).unwrap();
    let mut err = poisoned::<f32>(&s, n);
    let mut correct = poisoned::<f32>(&s, 1);
    let e = |r: cudrv::Result<()>| r.unwrap_err().to_string();
    let msg = e(k.launch(&s, 1, n).input("pred", &short).run());
    assert!(msg.contains("99 elements") && msg.contains("needs 100"), "{msg}");
    let msg = e(k.launch(&s, 1, n).input("pred", &wrong_type).run());
    assert!(msg.contains("f64"), "{msg}");
    let msg = e(k.launch(&s, 1, n).input("nope", &a).run());
    assert!(msg.contains("no input named `nope`") && msg.contains("pred"), "{msg}");
    let msg = e(k.launch(&s, 1, n).input("tol", &a).run());
    assert!(msg.contains("scalar"), "{msg}");
    let msg = e(k.launch(&s, 1, n).scalar("pred", 1.0).run());
    assert!(msg.contains("buffer input"), "{msg}");
    let msg = e(k
        .launch(&s, 1, n)
        .input("pred", &a)
        .input("target", &a)
        .output("err", &mut err)
        .output("correct", &mut correct)
        .run());
    assert!(msg.contains("`tol`"), "{msg}");
    let msg = e(k.launch(&s, usize::MAX, 2).input("pred", &a).run());
    assert!(msg.contains("needs"), "{msg}");
    // Nothing ran: the outputs are still poisoned.
    assert!(err.to_vec().unwrap().iter().all(|v| v.is_nan()));
    // PTX from another description is refused.
    let other = chains::kl_sum(DType::F32);
    let ptx = "// cudrv fusion kl_sum 0000\n.version 8.0\n";
    let msg = FusedKernel::from_ptx(&ctx, &other, ptx).unwrap_err().to_string();
    assert!(msg.contains("emit_ptx"), "{msg}");
}
