//! The aligned copies of unaligned operands: their storage, padding and strides.

use super::*;
use crate::blas::gemm::dispatch::{aligned_params, operand_storage};
use crate::blas::gemm::params::GemmParams;

/// The kernels' form of `g` on buffers of the given lengths, A at address `a`, B at `b`.
fn params(g: &Gemm<f32>, lens: [usize; 3], a: u64, b: u64) -> (Plan, GemmParams) {
    let plan = g.plan(lens, None).unwrap();
    let p = g.params(&plan, [a, b, 0], 0);
    (plan, p)
}

#[test]
fn storage_follows_the_operands_contiguous_side() {
    // Column-major problems in the kernels' row-major form D = C^T = op(B)^T op(A)^T.
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
    ] {
        let g = Gemm::<f32>::new(ta, tb, 5, 7, 3);
        let (plan, p) = params(&g, [64, 64, 64], 0, 0);
        let [(xr, xc), (yr, yc)] = operand_storage(&plan, &p);
        // Each operand's rows x cols covers its m x k (or n x k) extent exactly once.
        assert_eq!(xr * xc, p.m * p.k, "{ta:?}{tb:?}");
        assert_eq!(yr * yc, p.n * p.k, "{ta:?}{tb:?}");
        // Its contiguous side fits its leading dimension.
        assert!(
            xc <= p.ldx && yc <= p.ldy,
            "{ta:?}{tb:?}: {xc} <= {}, {yc} <= {}",
            p.ldx,
            p.ldy
        );
    }
}

#[test]
fn copies_are_tight_padded_to_whole_vectors_or_lines_and_keep_shared_operands_shared() {
    // 4095 x 4097 x 1023 f16 (8 elements per 16 bytes), batch 3, B shared (stride 0).
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4095, 4097, 1023).batched(3, 4095 * 1023, 0, 4095 * 4097);
    let (plan, p) = params(&g, [3 * 4095 * 1023, 1023 * 4097, 3 * 4095 * 4097], 2, 6);
    let q = aligned_params(&plan, &p, [true, true], 8);
    let [(xr, xc), (yr, yc)] = operand_storage(&plan, &p);
    assert_eq!((q.x, q.y), (0, 0));
    // Rows of 1 KiB or more are padded to whole 128-byte lines, shorter ones to 16 bytes.
    let line = |c: i64| {
        if c * 2 >= 1024 {
            (c + 63) / 64 * 64
        } else {
            (c + 7) / 8 * 8
        }
    };
    assert_eq!(q.ldx, line(xc));
    assert_eq!(q.ldy, line(yc));
    // X is B (k-contiguous, 4097 x 1023), Y is A (m-contiguous, 1023 x 4095).
    assert_eq!((xc, yc), (1023, 4095));
    assert_eq!((q.ldx, q.ldy), (1024, 4096));
    // X (from B) is shared by the batch: one copy; Y (from A) gets back-to-back copies.
    assert_eq!(q.sx, if p.sx == 0 { 0 } else { xr * q.ldx });
    assert_eq!(q.sy, if p.sy == 0 { 0 } else { yr * q.ldy });
    assert_eq!((p.sx, p.sy), (0, 4095 * 1023));
    // Unmarked operands and everything else stay as they were.
    let r = aligned_params(&plan, &p, [false, true], 8);
    assert_eq!((r.x, r.ldx, r.sx), (p.x, p.ldx, p.sx));
    assert_eq!((r.m, r.n, r.k, r.ldd, r.sd), (p.m, p.n, p.k, p.ldd, p.sd));
}
