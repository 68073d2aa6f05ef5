//! Exact f32 on the f64 tensor cores (ptx/gemm_dmma90_f32.cu): which devices and calls take it,
//! the tile rule it shares with f64 (but for the margin of `u2` over `s2`), its element variants
//! and shared memory.

use super::*;
use crate::blas::gemm::dmma90::{dmma90_smem, element_variant, f32_on_f64_cores};

/// The choice for an f32 `g` (A at 0, B at `b`) on an H100 whose f64 tensor cores take exact
/// f32 when `f64_cores`.
fn h100(g: &Gemm<f32>, b: u64, f64_cores: bool) -> Choice {
    choose_on_h100(g, b, f64_cores)
}

#[test]
fn only_hopper_with_fast_f64_units_takes_them() {
    assert!(f32_on_f64_cores((9, 0), 2));
    assert!(f32_on_f64_cores((9, 0), 1));
    // f64 units cut down (a larger single-to-double ratio), not reported, or not Hopper.
    assert!(!f32_on_f64_cores((9, 0), 64));
    assert!(!f32_on_f64_cores((9, 0), 0));
    assert!(!f32_on_f64_cores((8, 0), 2));
    assert!(!f32_on_f64_cores((10, 0), 2));
    assert!(!f32_on_f64_cores((8, 9), 64));
}

#[test]
fn automatic_f32_runs_the_f64_tiles_rule() {
    let sq = |m, n, k| Gemm::<f32>::new(Transpose::N, Transpose::N, m, n, k);
    // The f64 rule's tiles: l for full waves of 128 x 128, m, s, q, u and the thin tiles and the cluster split below.
    for ((m, n, k), kernel) in [
        ((4096, 4096, 4096), "gemm_dmma90_f32_l_nn"),
        ((1536, 1536, 96), "gemm_dmma90_f32_q_nn"),
        ((1536, 1536, 1536), "gemm_dmma90_f32_s2_nn"),
        ((768, 1024, 768), "gemm_dmma90_f32_m_nn"),
        ((4096, 24, 4096), "gemm_dmma90_f32_u2_nn"),
        ((4096, 16, 4096), "gemm_dmma90_f32_t_nn"),
    ] {
        let c = h100(&sq(m, n, k), 0, true);
        assert_eq!(c.name, kernel, "{m} x {n} x {k}");
        assert_eq!(c.family, Family::Dmma);
        // The same choice as f64's, by name.
        let f64_choice = choose_on_h100(&Gemm::<f64>::new(Transpose::N, Transpose::N, m, n, k), 0, true);
        assert_eq!(f64_choice.name.replace("_f64_", "_f32_"), c.name);
        assert_eq!((f64_choice.tile, f64_choice.threads), (c.tile, c.threads));
        assert_eq!(f64_choice.cluster_k, c.cluster_k);
    }
    // Without fast f64 units the CUDA cores, as before.
    assert_eq!(h100(&sq(4096, 4096, 4096), 0, false).name, "gemm_simt_f32_w_nn");
}

#[test]
fn unaligned_operands_are_copied_from_k_512_unless_a_side_is_short() {
    let g = |k| Gemm::<f32>::new(Transpose::T, Transpose::N, 1000, 1000, k);
    // B one element in: its rows are not 16 bytes apart from the base. From k = 512 it is copied
    // aligned first (the CUDA cores if that copy finds no memory).
    let c = h100(&g(1000), 4, true);
    assert_eq!(c.name, "gemm_dmma90_f32_m_tn");
    assert_eq!(c.align.iter().filter(|&&a| a).count(), 1);
    assert!(c
        .fallback
        .as_deref()
        .is_some_and(|f| f.name.starts_with("gemm_simt_f32_")));
    // Below, the 4-byte element variant reads it in place.
    let c = h100(&g(511), 4, true);
    assert!(
        c.name.starts_with("gemm_dmma90_f32_") && c.name.contains("u_"),
        "{}",
        c.name
    );
    assert_eq!((c.align, c.fallback.is_none()), ([false; 2], true));
    // An odd leading dimension alike; the thin tiles always read in place.
    let odd = Gemm::<f32>::new(Transpose::N, Transpose::N, 1000, 1000, 300).ld(1001, 300, 1000);
    assert_eq!(h100(&odd, 0, true).name, "gemm_dmma90_f32_mu_nn");
    let thin = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 16, 4096).ld(4097, 4096, 4096);
    assert_eq!(h100(&thin, 0, true).name, "gemm_dmma90_f32_tu_nn");
    // A short side (1/m + 1/n >= 1/128) reads in place at any k: 26 and 127 rows, 63 columns;
    // not 160 rows (tight leading dimensions, k odd: B's rows are not 16 bytes apart).
    for (dims, reads_in_place) in [
        ((26, 6083, 1439), true),
        ((127, 4097, 2049), true),
        ((4099, 63, 2047), true),
        ((160, 4001, 3001), false),
        ((3827, 262, 3075), false),
    ] {
        let (m, n, k) = dims;
        let c = h100(&Gemm::<f32>::new(Transpose::N, Transpose::N, m, n, k), 0, true);
        assert_eq!(
            c.align == [false; 2],
            reads_in_place,
            "{dims:?}: {} {:?}",
            c.name,
            c.align
        );
        assert!(c.name.starts_with("gemm_dmma90_f32_"), "{dims:?}: {}", c.name);
    }
    assert_eq!(
        element_variant("gemm_dmma90_f32_s2_tn").as_deref(),
        Some("gemm_dmma90_f32_s2u_tn")
    );
    assert_eq!(
        element_variant("gemm_dmma90_f64_q_nt").as_deref(),
        Some("gemm_dmma90_f64_qu_nt")
    );
    assert_eq!(element_variant("gemm_dmma90_f32_su_nn"), None);
    assert_eq!(element_variant("gemm_simt_f32_s_nn"), None);
}

#[test]
fn knobs_and_tiny_products_keep_their_kernels() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 2048, 2048, 2048);
    // A forced tile, split or family keeps its meaning on the CUDA cores.
    assert!(h100(&g.tile(Tile::Wide), 0, true).name.starts_with("gemm_simt_f32_w_"));
    assert!(h100(&g.split_k(SplitK::Parts(4)), 0, true)
        .name
        .starts_with("gemm_simt_f32_v_"));
    assert!(h100(&g.kernel(Kernel::Simt), 0, true)
        .name
        .starts_with("gemm_simt_f32_"));
    // Tf32 math keeps its own kernels.
    assert!(h100(&g.math(MathMode::Tf32), 0, true).name.starts_with("gemm_wg_tf32_"));
    // Tiny products stay on the one-block kernel.
    let tiny = Gemm::<f32>::new(Transpose::N, Transpose::N, 32, 32, 32);
    assert_eq!(h100(&tiny, 0, true).name, "gemm_small_f32");
    // Forced onto the tensor cores with a tile: the DMMA tile of that name.
    let forced = g.kernel(Kernel::TensorCore).tile(Tile::Broad);
    assert_eq!(h100(&forced, 0, false).name, "gemm_dmma90_f32_p_nn");
    let forced = g.kernel(Kernel::TensorCore).tile(Tile::Small).split_k(SplitK::Parts(2));
    assert_eq!(h100(&forced, 0, false).name, "gemm_dmma90_f32_s2_nn");
}

#[test]
fn f32_tiles_shared_memory_is_the_larger_of_stages_and_c_tile() {
    // f64: the stages (ptx/gemm_dmma90.cu's figures).
    assert_eq!(dmma90_smem((128, 128), 16, 4, 8), 163840);
    assert_eq!(dmma90_smem((128, 64), 16, 3, 8), 92160);
    assert_eq!(dmma90_smem((64, 64), 16, 3, 8), 61440);
    // f32: 4 stages of 128 x 20 floats per operand (81920) against the f64 C tile 128 x 136 x 8.
    assert_eq!(dmma90_smem((128, 128), 16, 4, 4), 128 * 136 * 8);
    // 16 x 64 at BK 32: X's slot 32 x 24 floats, Y's 64 x 36, 4 stages: 49152 against 9216.
    assert_eq!(dmma90_smem((16, 64), 32, 4, 4), 4 * 4 * (32 * 24 + 64 * 36));
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096);
    assert_eq!(h100(&g, 0, true).smem, 128 * 136 * 8);
}
