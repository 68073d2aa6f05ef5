//! The chains fused in the tests (and their unfused stages): kl_divergence -> sum;
//! prediction_error -> accuracy -> sum; prediction_error -> gemv -> belief_update;
//! distances -> neighbour counts -> sum; distances -> k-th neighbour -> neighbour counts -> sum.

#![allow(dead_code)] // each test file uses part of it

use cudrv::fuse::{DType, Fusion};

/// sum(p * ln(p / q)) over p, q of 1 x n.
pub fn kl_sum(t: DType) -> Fusion {
    let mut f = Fusion::new("kl_sum", t);
    let (p, q) = (f.input("p"), f.input("q"));
    f.sum("kl", &p * (&p / &q).ln());
    f
}

/// err = pred - target (stored); correct = sum(|err| < tol).
pub fn accuracy(t: DType) -> Fusion {
    let mut f = Fusion::new("accuracy", t);
    let (pred, target, tol) = (f.input("pred"), f.input("target"), f.scalar("tol"));
    let err = &pred - &target;
    f.output("err", err.clone());
    f.sum("correct", err.abs().lt(tol));
    f
}

/// belief' = belief + lr * W (obs - pred): W rows x cols, obs and pred per column, belief per row.
pub fn belief_update(t: DType) -> Fusion {
    let mut f = Fusion::new("belief_update", t);
    let (w, obs, pred) = (f.input("w"), f.row_input("obs"), f.row_input("pred"));
    let (belief, lr) = (f.col_input("belief"), f.scalar("lr"));
    let err = &obs - &pred;
    f.output("belief_new", belief + lr * (w * err).sum_rows());
    f
}

/// Points (x, y) per row against points per column: counts of neighbours within r per row, and
/// their total.
pub fn neighbours(t: DType) -> Fusion {
    let mut f = Fusion::new("neighbours", t);
    let (xi, yi) = (f.col_input("xi"), f.col_input("yi"));
    let (xj, yj) = (f.row_input("xj"), f.row_input("yj"));
    let r = f.scalar("r");
    let (dx, dy) = (&xi - &xj, &yi - &yj);
    let d = (&dx * &dx + &dy * &dy).sqrt();
    let counts = d.lt(r).sum_rows();
    f.output("counts", counts.clone());
    f.sum("total", counts);
    f
}

/// Points per row against points per column: each row's k-th nearest distance, the number of
/// points within 1.5 times it (a density-adaptive neighbour count), and their total.
pub fn knn_counts(t: DType) -> Fusion {
    let mut f = Fusion::new("knn_counts", t);
    let (xi, yi) = (f.col_input("xi"), f.col_input("yi"));
    let (xj, yj) = (f.row_input("xj"), f.row_input("yj"));
    let k = f.scalar("k");
    let (dx, dy) = (&xi - &xj, &yi - &yj);
    let d = (&dx * &dx + &dy * &dy).sqrt();
    let kth = d.kth_smallest_rows(k);
    let counts = d.le(kth.clone() * 1.5).sum_rows();
    f.output("kth", kth);
    f.output("counts", counts.clone());
    f.sum("total", counts);
    f
}

/// A 4-op elementwise chain: y = relu(a * x + b) * c, and its sum (the bandwidth bench).
pub fn axpb_relu_scale(t: DType) -> Fusion {
    let mut f = Fusion::new("axpb_relu_scale", t);
    let (x, a, b, c) = (f.input("x"), f.scalar("a"), f.scalar("b"), f.scalar("c"));
    f.output("y", (a * x + b).relu() * c);
    f
}

/// Row softmax (row reductions feeding later ones).
pub fn softmax(t: DType) -> Fusion {
    let mut f = Fusion::new("softmax_rows", t);
    let x = f.input("x");
    let e = (&x - x.max_rows()).exp();
    f.output("y", &e / e.sum_rows());
    f
}

pub const TYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

/// Every chain of this file, for each type.
pub fn all(t: DType) -> Vec<Fusion> {
    vec![
        kl_sum(t),
        accuracy(t),
        belief_update(t),
        neighbours(t),
        knn_counts(t),
        axpb_relu_scale(t),
        softmax(t),
    ]
}
