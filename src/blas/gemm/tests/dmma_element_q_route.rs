//! Where the DMMA tiles' element variants (operands read one element at a time) run the 64 x 64
//! tile three blocks per multiprocessor (`qu`) rather than two (`su`): k up to 512 where that
//! takes the busiest multiprocessor fewer rounds (`element_q`; H200, 2026-12-03,
//! docs/kernels/gemm-dmma.md).

use super::*;

/// The automatic (or `tile`-forced) kernel for a column-major NN `m x n x k` on an H100.
fn kernel<T: GemmType + Copy + From<u8> + Into<f64>>((m, n, k): (usize, usize, usize), tile: Tile) -> String {
    choose_on_h100(&Gemm::<T>::new(Transpose::N, Transpose::N, m, n, k).tile(tile), 0, true).name
}

#[test]
fn element_variants_take_q_over_short_k_where_it_saves_rounds() {
    // An odd k leaves B's leading dimension unaligned (the element variants); m and n give
    // the 64 x 64 tiles' count.
    for (dims, f64_want, f32_want) in [
        // 360 tiles (3 on the busiest SM: 2 rounds of s, 1 of q): f32 +35-39%, f64 +19-26%.
        ((3826, 373, 195), "qu", "qu"),
        // 1035 tiles (8 on the busiest SM: 4 rounds of s, 3 of q) at k = 427: f32 +16%, f64 +7%.
        ((2895, 1287, 427), "qu", "qu"),
        // k = 601: past Q_ELEMENT_MAX_K (f32 copies its operands aligned from k = 512).
        ((3826, 373, 601), "su", "s"),
        // 400 tiles: 4 on the busiest SM, two rounds either way.
        ((1001, 1537, 195), "su", "su"),
    ] {
        for (name, want) in [
            (kernel::<f64>(dims, Tile::Auto), f64_want),
            (kernel::<f32>(dims, Tile::Auto), f32_want),
        ] {
            let letters = name.rsplit('_').nth(1).unwrap_or("");
            assert_eq!(letters, want, "{dims:?}: {name}");
        }
    }
    // Aligned operands keep s from k = 129 (q within -4% to +7% there).
    assert_eq!(kernel::<f64>((3840, 384, 192), Tile::Auto), "gemm_dmma90_f64_s_nn");
    // A forced tile keeps its letter.
    assert_eq!(kernel::<f64>((3826, 373, 195), Tile::Small), "gemm_dmma90_f64_su_nn");
}
