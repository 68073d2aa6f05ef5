//! Where the DMMA tiles split k in 2 on the 32 x 32 tile (`u2`) rather than the 64 x 64 one
//! (`s2`): the pairs' model with its margin per type, on the shapes of the A/B that set it
//! (H200, 2026-12-03; docs/kernels/gemm.md).

use super::*;

/// The kernel the automatic choice runs for `m x n x k` in `T` on an H100 (exact f32 on the f64
/// tensor cores), operands aligned.
fn kernel<T: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
) -> String {
    choose_on_h100(&Gemm::<T>::new(ops.0, ops.1, m, n, k), 0, true).name
}

/// The shapes, with the split the rule gives f64 and f32 (NN); in brackets what the A/B
/// measured for u2 against s2 (f64 NN / TT, f32 NN).
const CASES: [((usize, usize, usize), &str, &str); 10] = [
    // Modelled 1.47x ahead: +48% / +49%, +60%.
    ((600, 400, 2500), "u2", "u2"),
    // 1.50x (a short side of 17 over 64-wide tiles): +36% / +38%, +34%.
    ((17, 28672, 4096), "u2", "u2"),
    // 1.87x: +53% / +80%, +47%.
    ((28, 4386, 3703), "u2", "u2"),
    // 1.29x: +22% / +20%, +6%.
    ((155, 2833, 6222), "u2", "u2"),
    // 1.14x: f64 -13% / +1%, f32 +27%.
    ((1691, 162, 1636), "s2", "u2"),
    // 1.14x: f64 -6% / +3%, f32 +35%.
    ((498, 555, 3085), "s2", "u2"),
    // 1.16x: f64 -22% / -11%, f32 -11%.
    ((5252, 92, 5790), "s2", "u2"),
    // 1.16x: f64 +4% / +8%, f32 +17%.
    ((497, 1026, 1757), "s2", "u2"),
    // 0.98x (a tie): s2 in both.
    ((512, 768, 2048), "s2", "s2"),
    // 0.74x: s2 in both.
    ((270, 1663, 1580), "s2", "s2"),
];

#[test]
fn u2_takes_over_from_s2_by_the_model_and_its_margin_per_type() {
    let nn = (Transpose::N, Transpose::N);
    for (dims, f64_split, f32_split) in CASES {
        let (m, n, k) = dims;
        let f64_kernel = kernel::<f64>(nn, dims);
        let f32_kernel = kernel::<f32>(nn, dims);
        assert!(
            f64_kernel.starts_with(&format!("gemm_dmma90_f64_{f64_split}")),
            "f64 {m}x{n}x{k}: {f64_kernel}"
        );
        assert!(
            f32_kernel.starts_with(&format!("gemm_dmma90_f32_{f32_split}")),
            "f32 {m}x{n}x{k}: {f32_kernel}"
        );
        // The op pair does not enter the rule (the element variant, `u2u`, may differ).
        let tt = kernel::<f64>((Transpose::T, Transpose::T), dims);
        assert!(
            tt.starts_with(&format!("gemm_dmma90_f64_{f64_split}")),
            "f64 TT {m}x{n}x{k}: {tt}"
        );
    }
}

#[test]
fn u2_stays_out_of_the_rest_of_the_dmma_rule() {
    // Shapes on the other branches keep their tiles: l, m, s, q, the thin tiles, and the
    // tail's u2 below a wave of u tiles.
    let nn = (Transpose::N, Transpose::N);
    for (dims, want) in [
        ((4096, 4096, 4096), "gemm_dmma90_f64_l_nn"),
        ((1024, 1024, 1024), "gemm_dmma90_f64_m_nn"),
        ((1536, 1536, 1536), "gemm_dmma90_f64_s2_nn"),
        ((1536, 1536, 96), "gemm_dmma90_f64_q_nn"),
        ((4096, 16, 4096), "gemm_dmma90_f64_t_nn"),
        ((256, 256, 256), "gemm_dmma90_f64_u2_nn"),
        ((768, 1024, 3072), "gemm_dmma90_f64_s2_nn"),
    ] {
        assert_eq!(kernel::<f64>(nn, dims), want, "{dims:?}");
    }
}
