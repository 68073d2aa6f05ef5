//! Where the DMMA tiles split k in 2 on the 32 x 32 tile (`u2`) rather than the 64 x 64 one
//! (`s2`): the pairs' model with its margin per type, on the shapes of the A/B that set it
//! (H200, 2026-12-03; docs/kernels/gemm-dmma.md).

use super::*;

/// The kernel the automatic choice runs for `m x n x k` in `T` on an H100 (exact f32 on the f64
/// tensor cores), operands aligned.
fn kernel<T: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
) -> String {
    choose_on_h100(&Gemm::<T>::new(ops.0, ops.1, m, n, k), 0, true).name
}

/// The tile letter of a DMMA kernel's name (`u2` of `gemm_dmma90_f64_u2u_tt`: the element
/// variant's `u` dropped where the tile has no `u` of its own).
fn tile(name: &str) -> &str {
    let rest = name
        .strip_prefix("gemm_dmma90_")
        .and_then(|r| r.split_once('_'))
        .map_or("", |r| r.1);
    let letters = rest.split('_').next().unwrap_or("");
    match letters {
        "uu" | "u2u" | "s2u" | "su" | "mu" | "lu" | "qu" | "pu" | "tu" | "hu" => &letters[..letters.len() - 1],
        l => l,
    }
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
    // 0.98x (a tie): s2 in f64; f32 runs u unsplit (384 tiles, 3 per multiprocessor; s2's
    // round 0.73 full): +30-32% NN and TT.
    ((512, 768, 2048), "s2", "u"),
    // 0.74x: s2 in both (s2's round 0.98 full: f32 u unsplit +2-5% NN, -2% TT, -22% TN).
    ((270, 1663, 1580), "s2", "s2"),
];

#[test]
fn u2_takes_over_from_s2_by_the_model_and_its_margin_per_type() {
    let nn = (Transpose::N, Transpose::N);
    for (dims, f64_split, f32_split) in CASES {
        let (m, n, k) = dims;
        let f64_kernel = kernel::<f64>(nn, dims);
        let f32_kernel = kernel::<f32>(nn, dims);
        assert_eq!(tile(&f64_kernel), f64_split, "f64 {m}x{n}x{k}: {f64_kernel}");
        assert_eq!(tile(&f32_kernel), f32_split, "f32 {m}x{n}x{k}: {f32_kernel}");
        // The op pair does not enter the rule (the element variant, `u2u`, may differ).
        let tt = kernel::<f64>((Transpose::T, Transpose::T), dims);
        assert_eq!(tile(&tt), f64_split, "f64 TT {m}x{n}x{k}: {tt}");
    }
}

/// One to one and a half waves of 32 x 32 tiles (133-198 on 132 multiprocessors) split k in 2
/// from k = 1024, in both types; at 199-264 tiles (4 split blocks on the busiest
/// multiprocessor, its work unchanged) and below k = 1024 they stay whole. The A/B's shapes
/// (H200, 2026-12-03; f64 / f32 NN gain in brackets).
#[test]
fn u2_splits_one_to_one_and_a_half_waves_of_u_tiles() {
    for (dims, want) in [
        // 147 tiles: +17% / +12%.
        ((216, 665, 3590), "u2"),
        // 160: +28% / +33%.
        ((300, 500, 3000), "u2"),
        // 180, an odd m (the element variant): +17% / +4-7%.
        ((619, 275, 1130), "u2"),
        // 133: +17% / +10%.
        ((607, 208, 3048), "u2"),
        // 222 tiles: -2% / 0%.
        ((1156, 181, 2145), "u"),
        // 208: -5% / -1%.
        ((804, 228, 1919), "u"),
        // 160 tiles at k = 1000.
        ((300, 500, 1000), "u"),
    ] {
        let nn = (Transpose::N, Transpose::N);
        let (f64_kernel, f32_kernel) = (kernel::<f64>(nn, dims), kernel::<f32>(nn, dims));
        assert_eq!(tile(&f64_kernel), want, "f64 {dims:?}: {f64_kernel}");
        assert_eq!(tile(&f32_kernel), want, "f32 {dims:?}: {f32_kernel}");
    }
}

/// Exact f32 runs the 32 x 32 tile unsplit where the `s2` rule splits the 64 x 64 one and the
/// model leaves `u2` behind, for one to five waves of `u` tiles; f64 keeps `s2`, `u2` stays
/// where the model puts it ahead, and past five waves `s2` stays.
#[test]
fn exact_f32_runs_u_unsplit_over_s2() {
    let nn = (Transpose::N, Transpose::N);
    for (dims, f64_want, f32_want) in [
        // 354 u tiles: f32 +29% NN.
        ((64, 5664, 1776), "s2", "u"),
        // 360: f32 +14% / +27% (TT); f64 s2 26.8 TFLOP/s against u 23.5.
        ((1249, 271, 2524), "s2", "u"),
        // 646: f32 +19-20%.
        ((514, 1209, 1666), "s2", "u"),
        // The model puts u2 ahead in f32 (not by f64's margin): u2 stays (u unsplit 0.91-1.12x).
        ((922, 531, 1595), "s2", "u2"),
        // 2304 u tiles (17 waves): s2.
        ((1536, 1536, 1536), "s2", "s2"),
    ] {
        let (f64_kernel, f32_kernel) = (kernel::<f64>(nn, dims), kernel::<f32>(nn, dims));
        assert_eq!(tile(&f64_kernel), f64_want, "f64 {dims:?}: {f64_kernel}");
        assert_eq!(tile(&f32_kernel), f32_want, "f32 {dims:?}: {f32_kernel}");
        // TN (both operands k-contiguous: 0.68-1.00x unsplit) keeps the s2 rule's split.
        let tn = kernel::<f32>((Transpose::T, Transpose::N), dims);
        let tn_want = if f32_want == "u" { "s2" } else { f32_want };
        assert_eq!(tile(&tn), tn_want, "f32 TN {dims:?}: {tn}");
    }
    // s2's round of pairs all but full (256 blocks for 264 slots): s2 in every op (u unsplit
    // NN 0.82-0.93x, TT 0.80-0.98x).
    for ops in [(Transpose::N, Transpose::N), (Transpose::T, Transpose::T)] {
        for dims in [(4096, 128, 4096), (64, 8192, 8192)] {
            let name = kernel::<f32>(ops, dims);
            assert_eq!(tile(&name), "s2", "f32 {ops:?} {dims:?}: {name}");
        }
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
