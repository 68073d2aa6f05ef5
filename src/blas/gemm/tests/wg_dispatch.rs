//! The wgmma kernels' choice on an H100 (132 multiprocessors): the k split over few tiles (and
//! not where it adds few blocks over short parts), the 128 x 192 tile, an activation's effect
//! on it, 128 x 128 on rows an odd multiple of 16 bytes apart (tf32 too), the 64-row tiles, the
//! pairs, and batches of matrices of at most 64 rows or columns.

use super::*;

/// The choice for `ty` (`"f32"`: tf32 math) on an H100 (132 multiprocessors), aligned operands
/// the TMA can address, batch 1.
fn hopper_choice(
    ty: &str,
    (ta, tb): (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
    tile: Tile,
    split: SplitK,
) -> Result<Choice> {
    let p = plan(&Gemm::<f32>::new(ta, tb, m, n, k), [1 << 30; 3]).unwrap();
    let ty = if ty == "f32" { "tf32" } else { ty };
    on_h100_batched(ty, Kernel::Auto, tile, split, &p, 1, false)
}

#[test]
fn wgmma_splits_k_over_few_tiles_and_takes_a_wave_of_large_tiles() {
    use Transpose::{N, T};
    let pick =
        |ty: &str, ops, dims, tile, split| hopper_choice(ty, ops, dims, tile, split).map(|ch| (ch.name, ch.split_k));
    let auto = |ty, ops, dims| pick(ty, ops, dims, Tile::Auto, SplitK::Auto).unwrap();
    let named = |name: &str, split| (name.to_string(), split);
    // One 128 x 64 tile, 1024 k-tiles: 16 parts (the most an automatic split takes).
    assert_eq!(
        auto("f16", (N, N), (64, 64, 65536)),
        named("gemm_wg_f16_n_nn", Some(16))
    );
    // 8 tiles: 16 parts (128 blocks).
    assert_eq!(
        auto("bf16", (N, N), (256, 256, 65536)),
        named("gemm_wg_bf16_n_nn", Some(16))
    );
    assert_eq!(
        auto("f32", (T, N), (256, 256, 65536)),
        named("gemm_wg_tf32_n_tn", Some(16))
    );
    // Each part keeps at least 16 k-tiles: 256 x 256 x 4096 (64 k-tiles) in 4, x 1024 not.
    assert_eq!(
        auto("f16", (N, N), (256, 256, 4096)),
        named("gemm_wg_f16_n_nn", Some(4))
    );
    // 256 x 256 x 1024: too short to split; 16 tiles of 64 x 64 rather than 8 of 128 x 64.
    assert_eq!(auto("f16", (N, N), (256, 256, 1024)), named("gemm_wg_f16_h_nn", None));
    // 128 tiles of 128 x 64 with long k: 64 tiles of 128 x 128 in 2 parts; with short k, as is.
    assert_eq!(
        auto("f16", (T, N), (1024, 1024, 32768)),
        named("gemm_wg_f16_l_tn", Some(2))
    );
    assert_eq!(auto("f16", (T, N), (1024, 1024, 1024)), named("gemm_wg_f16_n_tn", None));
    // Decode steps of 16 tokens: the thin mma.sync tiles, not wgmma (tc_thin). TN: 16 x 64 at
    // any length; 16 x N with N-wide columns: 64 x 16 from 3/4 of a wave of its tiles, except
    // tf32 nn (wgmma's swapped kernel).
    for (ty, t) in [("f16", "f16"), ("bf16", "bf16"), ("f32", "tf32")] {
        for dims in [(4096, 16, 4096), (4096, 16, 11008), (8192, 16, 8192), (11008, 16, 4096)] {
            assert_eq!(auto(ty, (T, N), dims), named(&format!("gemm_tc_{t}_t_tn"), None));
        }
        assert_eq!(auto(ty, (T, T), (4096, 8, 4096)).0, format!("gemm_tc_{t}_t_tt"));
        assert_eq!(auto(ty, (N, T), (16, 11008, 4096)).0, format!("gemm_tc_{t}_h_nt"));
        assert!(auto(ty, (N, T), (16, 4096, 4096)).0.starts_with("gemm_wg_"));
    }
    assert_eq!(auto("f16", (N, N), (16, 11008, 4096)).0, "gemm_tc_f16_h_nn");
    assert!(auto("f32", (N, N), (16, 11008, 4096)).0.starts_with("gemm_wg_tf32"));
    // 16 x 64 needs Y k-contiguous: column-major NN / NT with 16 columns stay on wgmma.
    assert!(auto("f16", (N, N), (4096, 16, 4096)).0.starts_with("gemm_wg_"));
    // A forced split keeps wgmma; 17 tokens are not thin.
    assert_eq!(
        pick("f16", (T, N), (4096, 16, 4096), Tile::Auto, SplitK::Parts(2))
            .unwrap()
            .0,
        "gemm_wg_f16_n_tn"
    );
    assert!(auto("f16", (T, N), (4096, 17, 4096)).0.starts_with("gemm_wg_"));
    // 64 tiles of 128 x 64 in 2 parts: 128 of 64 x 64 unsplit (the 64-row tiles' rule).
    assert_eq!(auto("f16", (T, N), (4096, 128, 4096)), named("gemm_wg_f16_h_tn", None));
    // The 128 x 128 tile only where it covers more than 128 x 64: 64 columns stay on 128 x 64
    // in 2 parts, and that is 128 tiles of 64 x 64 unsplit.
    assert_eq!(auto("f16", (N, N), (64, 8192, 8192)), named("gemm_wg_f16_h_nn", None));
    assert_eq!(
        pick("f16", (N, N), (64, 8192, 8192), Tile::Auto, SplitK::Parts(2)).unwrap(),
        named("gemm_wg_f16_n_nn", Some(2))
    );
    // Large problems never split.
    assert_eq!(
        auto("f16", (N, N), (4096, 4096, 65536)),
        named("gemm_wg_f16_w_nn", None)
    );
    // Forced: parts capped by the k-tiles (k = 700: 11 k-tiles of 64), a wide Auto tile
    // narrowed to 128 x 128, Off, and the limits.
    let forced = |dims, tile, parts| pick("f16", (N, N), dims, tile, SplitK::Parts(parts));
    assert_eq!(
        forced((130, 70, 700), Tile::Narrow, 64).unwrap(),
        named("gemm_wg_f16_n_nn", Some(11))
    );
    assert_eq!(
        forced((130, 70, 700), Tile::Narrow, 5).unwrap(),
        named("gemm_wg_f16_n_nn", Some(4))
    );
    assert_eq!(
        forced((8192, 8192, 4096), Tile::Auto, 2).unwrap(),
        named("gemm_wg_f16_l_nn", Some(2))
    );
    // Off: one tile, of 64 x 64 (the 64-row tiles' rule).
    assert_eq!(
        pick("f16", (N, N), (64, 64, 65536), Tile::Auto, SplitK::Off).unwrap(),
        named("gemm_wg_f16_h_nn", None)
    );
    assert!(forced((130, 70, 700), Tile::Wide, 2).is_err());
    assert!(forced((130, 70, 700), Tile::Narrow, WG_MAX_PARTS + 1).is_err());
}

/// The fuzz test's wave draw (`random_wave_case`) reaches f32's `v` split past a wave of its
/// tiles often enough for a few cases per seed to run it on the GPU.

#[test]
fn wgmma_takes_the_128_x_192_tile_where_its_busiest_multiprocessor_does_less() {
    use Transpose::{N, T};
    let pick = |ty: &str, ops, dims, tile, split| {
        hopper_choice(ty, ops, dims, tile, split).map(|c| (c.name, c.tile, c.split_k))
    };
    let auto = |ty, ops, dims| pick(ty, ops, dims, Tile::Auto, SplitK::Auto).unwrap().0;
    // One round of 108 tiles of 192 columns against one of 72 of 256 (gpt2's QKV at 1024 tokens).
    assert_eq!(auto("f16", (T, N), (2304, 1024, 768)), "gemm_wg_f16_b_tn");
    assert_eq!(auto("bf16", (N, N), (3072, 1024, 4096)), "gemm_wg_bf16_b_nn");
    assert_eq!(auto("f32", (N, N), (1024, 3072, 768)), "gemm_wg_tf32_b_nn");
    assert_eq!(auto("f16", (N, N), (3072, 3072, 4096)), "gemm_wg_f16_b_nn");
    // 144 tiles of 192 columns take two rounds where 96 wide ones take one.
    assert_eq!(auto("f16", (N, N), (1024, 3072, 768)), "gemm_wg_f16_w_nn");
    // Many rounds: the wide tile.
    assert_eq!(auto("f16", (N, N), (4096, 4096, 4096)), "gemm_wg_f16_w_nn");
    assert_eq!(auto("f32", (N, N), (8192, 8192, 1024)), "gemm_wg_tf32_w_nn");
    // Forced, and never split.
    let forced = pick("f16", (N, N), (4096, 4096, 4096), Tile::Broad, SplitK::Auto).unwrap();
    assert_eq!(forced, ("gemm_wg_f16_b_nn".to_string(), (128, 192), None));
    assert!(pick("f16", (N, N), (512, 512, 8192), Tile::Broad, SplitK::Parts(2)).is_err());
}

#[test]
fn an_activation_keeps_the_wide_wgmma_tile_where_the_rule_takes_128_x_192() {
    use crate::blas::gemm::dispatch::choose_on;
    use crate::blas::Activation;
    let name = |act: Activation, tile: Tile| {
        let g = Gemm::<half::f16>::new(Transpose::T, Transpose::N, 2304, 1024, 768)
            .activation(act)
            .tile(tile);
        let p = g.plan([usize::MAX / 64; 3], None).unwrap();
        let params = g.params(&p, [0x1000_0000, 0x2000_0000, 0x3000_0000], 0);
        choose_on::<half::f16, half::f16>(&g, &p, &params, (9, 0), 132, false)
            .unwrap()
            .name
    };
    assert_eq!(name(Activation::None, Tile::Auto), "gemm_wg_f16_b_tn");
    assert_eq!(name(Activation::Gelu, Tile::Auto), "gemm_wg_f16_w_tn");
    // Forced, it runs with the activation in its rolled epilogue.
    assert_eq!(name(Activation::Gelu, Tile::Broad), "gemm_wg_f16_b_tn");
}

#[test]
fn wgmma_takes_128_x_128_over_128_x_64_on_rows_an_odd_multiple_of_16_bytes_apart() {
    use Transpose::{N, T};
    let auto = |ty: &str, ops, dims| {
        hopper_choice(ty, ops, dims, Tile::Auto, SplitK::Auto)
            .map(|c| (c.name, c.split_k))
            .unwrap()
    };
    let named = |n: &str| (n.to_string(), None);
    // 2000-byte rows: pairs (wgmma_pairs_where_rows_straddle_lines), 128 x 128 with an
    // activation.
    assert_eq!(auto("f16", (N, N), (1000, 1000, 1000)), named("gemm_wg_f16_q_nn"));
    assert_eq!(auto("bf16", (T, N), (1000, 1000, 1000)), named("gemm_wg_bf16_q_tn"));
    assert_eq!(auto("f16", (N, N), (1024, 776, 1000)), named("gemm_wg_f16_q_nn"));
    let g = Gemm::<half::f16>::new(N, N, 1000, 1000, 1000).activation(crate::blas::Activation::Relu);
    let p = g.plan([usize::MAX / 64; 3], None).unwrap();
    let params = g.params(&p, [0x1000_0000, 0x2000_0000, 0x3000_0000], 0);
    let relu = crate::blas::gemm::dispatch::choose_on::<half::f16, half::f16>(&g, &p, &params, (9, 0), 132, false);
    assert_eq!(relu.unwrap().name, "gemm_wg_f16_l_nn");
    // Aligned rows, rows 64 bytes off every other line, too few tiles, too little k, tf32: as
    // before.
    assert_eq!(auto("f16", (N, N), (1024, 1024, 1024)), named("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f16", (N, N), (800, 800, 800)), named("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f16", (N, N), (504, 1000, 1000)), named("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f16", (N, N), (1000, 1000, 248)), named("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f32", (N, N), (1000, 1000, 1000)).0, "gemm_wg_tf32_n_nn");
    // tf32 where both operands are read where they lie (rows 16-byte multiples, none packed):
    // 4016-byte rows straddle lines.
    assert_eq!(auto("f32", (N, N), (1004, 1004, 1004)), named("gemm_wg_tf32_l_nn"));
    assert_eq!(auto("f32", (T, T), (1004, 1004, 3004)), named("gemm_wg_tf32_l_tt"));
    assert_eq!(auto("f32", (N, N), (1004, 1004, 500)), named("gemm_wg_tf32_l_nn"));
    // 12000- and 4000-byte rows do not; 4008-byte rows are copied aligned or read in place
    // by 128 x 64; `nt` packs an operand.
    assert_eq!(auto("f32", (N, N), (1000, 1000, 3000)), named("gemm_wg_tf32_n_nn"));
    assert_ne!(auto("f32", (N, N), (1002, 1002, 1002)).0, "gemm_wg_tf32_l_nn");
    assert_ne!(auto("f32", (N, T), (1004, 1004, 1004)).0, "gemm_wg_tf32_l_tt");
    assert_ne!(auto("f32", (N, T), (1004, 1004, 1004)).0, "gemm_wg_tf32_l_nn");
    // A forced tile stays forced.
    let n = hopper_choice("f16", (N, N), (1000, 1000, 1000), Tile::Narrow, SplitK::Auto);
    assert_eq!(n.unwrap().name, "gemm_wg_f16_n_nn");
}

#[test]
fn wgmma_takes_a_64_row_tile_where_it_covers_the_problem_in_one_round_with_less_work() {
    use crate::blas::gemm::dispatch::choose_on;
    use crate::blas::Activation;
    use Transpose::{N, T};
    let auto = |ty: &str, ops, dims| {
        hopper_choice(ty, ops, dims, Tile::Auto, SplitK::Auto)
            .map(|c| (c.name, c.split_k, c.threads))
            .unwrap()
    };
    let one = |n: &str| (n.to_string(), None, 256);
    // f16 / bf16: 64 x 64 for 128 of them against 64 of 128 x 64 in 2 parts, or 65 against 33
    // unsplit (k too short to split).
    assert_eq!(auto("f16", (N, N), (4096, 128, 4096)), one("gemm_wg_f16_h_nn"));
    assert_eq!(auto("bf16", (N, N), (128, 4096, 4096)), one("gemm_wg_bf16_h_nn"));
    // Y k-contiguous: of 86 tiles of 64 x 96 and 128 of 64 x 64, both one round, the smaller
    // tile; 64 x 96 where 64 x 64 needs more than a round.
    assert_eq!(auto("f16", (T, N), (4096, 128, 4096)), one("gemm_wg_f16_h_tn"));
    assert_eq!(auto("bf16", (T, N), (4096, 128, 11008)), one("gemm_wg_bf16_h_tn"));
    // 96 rows, not whole 64-row tiles: the L2's share weighs, and 64 x 96 loads fewer rows.
    assert_eq!(auto("f16", (T, N), (4096, 96, 4096)), one("gemm_wg_f16_m_tn"));
    assert_eq!(auto("f16", (N, N), (31, 4099, 257)), one("gemm_wg_f16_h_nn"));
    // 64 x 96 where Y is k-contiguous (tf32 always): 132 or 128 tiles against 96 of 128 x 64.
    assert_eq!(auto("f32", (N, N), (768, 1024, 3072)), one("gemm_wg_tf32_m_nn"));
    assert_eq!(auto("f32", (T, N), (768, 1024, 768)), one("gemm_wg_tf32_m_tn"));
    assert_eq!(auto("f16", (T, N), (768, 1024, 3072)), one("gemm_wg_f16_m_tn"));
    // tf32's 64 x 64 against a split whose parts keep under 32 k-tiles.
    assert_eq!(auto("f32", (N, N), (256, 256, 1024)), one("gemm_wg_tf32_h_nn"));
    // Not where the 64-row tiles need two rounds (1000^3, 768 x 1024 x 3072 f16: as much work),
    // where the split leaves less work (512 x 512 x 4096 in 4 parts), nor tf32 over 9 k-tiles.
    let kept = |ty: &str, dims, name: &str, split| {
        let (n, s, threads) = auto(ty, (N, N), dims);
        assert_eq!((n.as_str(), s, threads), (name, split, 384), "{ty} {dims:?}");
    };
    kept("f16", (1000, 1000, 1000), "gemm_wg_f16_q_nn", None);
    kept("f16", (768, 1024, 3072), "gemm_wg_f16_n_nn", None);
    kept("f16", (512, 512, 4096), "gemm_wg_f16_n_nn", Some(4));
    kept("f32", (31, 4099, 257), "gemm_wg_tf32_n_nn", None);
    kept("f32", (4096, 128, 4096), "gemm_wg_tf32_n_nn", Some(2));
    kept("f32", (128, 4096, 4096), "gemm_wg_tf32_n_nn", Some(2));
    // Y n-contiguous (f16 NN): no 64 x 96; rows 2000 bytes apart: no 64-row tile.
    kept("f16", (768, 768, 3072), "gemm_wg_f16_l_nn", Some(3));
    kept("f16", (1000, 504, 1000), "gemm_wg_f16_n_nn", None);
    // With an activation the tile keeps its twin in the activation modules.
    let g = Gemm::<half::f16>::new(N, N, 4096, 128, 4096).activation(Activation::Relu);
    let p = g.plan([usize::MAX / 64; 3], None).unwrap();
    let params = g.params(&p, [0x1000_0000, 0x2000_0000, 0x3000_0000], 0);
    let ch = choose_on::<half::f16, half::f16>(&g, &p, &params, (9, 0), 132, false).unwrap();
    assert_eq!((ch.name.as_str(), ch.split_k), ("gemm_wg_f16_n_nn", Some(2)));
    // Forced, they run (without a k split).
    let forced = hopper_choice("f16", (N, N), (1000, 1000, 1000), Tile::Medium, SplitK::Auto).unwrap();
    assert_eq!((forced.name.as_str(), forced.threads), ("gemm_wg_f16_m_nn", 256));
    assert!(hopper_choice("f16", (N, N), (1000, 1000, 1000), Tile::Half, SplitK::Parts(2)).is_err());
}

#[test]
fn wgmma_takes_a_64_row_tile_for_batches_of_matrices_of_at_most_64_rows() {
    use Transpose::{N, T};
    // `batch` products on an H100 (132 multiprocessors).
    let pick = |ty: &str, ops: (Transpose, Transpose), (m, n, k): (usize, usize, usize), batch, act| {
        let p = plan(&Gemm::<f32>::new(ops.0, ops.1, m, n, k), [1 << 30; 3]).unwrap();
        let ch = on_h100_batched(ty, Kernel::Auto, Tile::Auto, SplitK::Auto, &p, batch, act).unwrap();
        (ch.name, ch.split_k)
    };
    let name = |n: &str| (n.to_string(), None);
    // cuBLAS's m x n is the kernels' n x m (tf32 NN runs swapped: m x n).
    // 33-64 rows: the 64 x 64 tile.
    assert_eq!(
        pick("tf32", (N, N), (64, 64, 64), 512, false),
        name("gemm_wg_tf32_h_nn")
    );
    assert_eq!(pick("f16", (N, N), (64, 64, 64), 512, false), name("gemm_wg_f16_h_nn"));
    assert_eq!(
        pick("bf16", (T, N), (40, 48, 256), 300, false),
        name("gemm_wg_bf16_h_tn")
    );
    assert_eq!(
        pick("tf32", (N, N), (64, 512, 512), 96, false),
        name("gemm_wg_tf32_h_nn")
    );
    // At most 64 columns, more rows: 128 x 64 rather than 128 x 192 or 128 x 256.
    assert_eq!(pick("f16", (N, N), (64, 512, 512), 96, false), name("gemm_wg_f16_n_nn"));
    assert_eq!(
        pick("f16", (N, N), (64, 128, 128), 384, false),
        name("gemm_wg_f16_n_nn")
    );
    // With an activation the 64 x 64 tile gives way to 128 x 64 (it has no activation twin).
    assert_eq!(pick("f16", (N, N), (64, 64, 64), 512, true), name("gemm_wg_f16_n_nn"));
    // Not for 65 rows and columns and more, nor for 32 rows and fewer.
    let kept = |ty: &str, dims, batch| pick(ty, (N, N), dims, batch, false).0;
    assert_eq!(kept("f16", (128, 128, 64), 384), "gemm_wg_f16_b_nn");
    assert_eq!(kept("f16", (80, 80, 64), 512), "gemm_wg_f16_b_nn");
    assert_eq!(kept("f16", (64, 32, 64), 512), "gemm_wg_f16_n_nn");
    // Within a wave: the 64 x 64 tile where the wide tiles were taken, not where the split
    // tiles were (4096 of k on 128 x 64 in 4 parts).
    assert_eq!(kept("f16", (64, 64, 64), 100), "gemm_wg_f16_h_nn");
    assert_eq!(
        pick("f16", (N, N), (64, 64, 4096), 16, false),
        ("gemm_wg_f16_n_nn".into(), Some(4))
    );
}

#[test]
fn wgmma_pairs_where_a_pair_kernel_exists() {
    use Transpose::{N, T};
    let pick = |ty: &str, ops, tile, split| {
        let ch = hopper_choice(ty, ops, (1000, 1000, 1000), tile, split).unwrap();
        (ch.name, ch.pair, ch.split_k)
    };
    let named = |name: &str, pair| (name.to_string(), pair, None);
    // f16 and bf16 in every op, 128 x 128 (p) and 128 x 64 (q).
    for (ta, tb, ops) in [(N, N, "nn"), (N, T, "nt"), (T, N, "tn"), (T, T, "tt")] {
        for ty in ["f16", "bf16"] {
            let p = pick(ty, (ta, tb), Tile::LargePair, SplitK::Auto);
            assert_eq!(p, named(&format!("gemm_wg_{ty}_p_{ops}"), true));
            let q = pick(ty, (ta, tb), Tile::NarrowPair, SplitK::Off);
            assert_eq!(q, named(&format!("gemm_wg_{ty}_q_{ops}"), true));
        }
    }
    // tf32: tn only; its other ops run the tile alone.
    assert_eq!(
        pick("f32", (T, N), Tile::LargePair, SplitK::Auto),
        named("gemm_wg_tf32_p_tn", true)
    );
    assert_eq!(
        pick("f32", (T, T), Tile::LargePair, SplitK::Auto),
        named("gemm_wg_tf32_l_tt", false)
    );
    assert_eq!(
        pick("f32", (N, N), Tile::NarrowPair, SplitK::Auto),
        named("gemm_wg_tf32_n_nn", false)
    );
    // A forced split runs the tile alone, split.
    let split = hopper_choice("f16", (N, N), (1000, 1000, 1000), Tile::LargePair, SplitK::Parts(2)).unwrap();
    assert_eq!(
        (split.name.as_str(), split.pair, split.split_k),
        ("gemm_wg_f16_l_nn", false, Some(2))
    );
    // Every other kernel family takes the tile alone: 128 x 128 on mma.sync.
    let p = plan(&Gemm::<f32>::new(N, N, 1000, 1000, 1000), [1 << 30; 3]).unwrap();
    let mma = on_h100_batched("f16", Kernel::MmaSync, Tile::LargePair, SplitK::Auto, &p, 1, false).unwrap();
    assert_eq!((mma.name.as_str(), mma.pair), ("gemm_tc_f16_l_nn", false));
}

#[test]
fn wgmma_pairs_where_rows_straddle_lines() {
    use Transpose::{N, T};
    let auto = |ty: &str, ops, dims| {
        let ch = hopper_choice(ty, ops, dims, Tile::Auto, SplitK::Auto).unwrap();
        (ch.name, ch.pair, ch.split_k)
    };
    let pair = |n: &str| (n.to_string(), true, None);
    // q where one cluster per 128 x 128 of D fits a wave (64 or 56 of them), p past it (128).
    assert_eq!(auto("f16", (N, N), (1000, 1000, 3000)), pair("gemm_wg_f16_q_nn"));
    assert_eq!(auto("bf16", (T, N), (1000, 1000, 3000)), pair("gemm_wg_bf16_q_tn"));
    assert_eq!(auto("f16", (N, N), (2000, 1000, 1000)), pair("gemm_wg_f16_p_nn"));
    assert_eq!(auto("f16", (T, N), (2000, 1000, 1000)), pair("gemm_wg_f16_p_tn"));
    assert_eq!(auto("f16", (N, N), (1000, 2000, 2000)), pair("gemm_wg_f16_p_nn"));
    // No operand's rows straddle lines (4000-byte rows; 1024, 1280): the tile alone.
    assert_eq!(
        auto("f16", (T, N), (1000, 2000, 2000)),
        ("gemm_wg_f16_l_tn".to_string(), false, None)
    );
    assert!(!auto("f16", (N, N), (1024, 1024, 1024)).1);
    assert!(!auto("f16", (N, N), (1280, 1280, 2048)).1);
    // tf32: tn on rows an odd multiple of 16 bytes apart (1004 and 3004 elements), not on 4000
    // bytes, nor in its other ops (no pair kernel).
    assert_eq!(auto("f32", (T, N), (1004, 1004, 3004)), pair("gemm_wg_tf32_q_tn"));
    assert_eq!(auto("f32", (T, N), (1004, 1004, 1004)), pair("gemm_wg_tf32_q_tn"));
    assert_eq!(auto("f32", (T, N), (2004, 1004, 1004)), pair("gemm_wg_tf32_p_tn"));
    assert!(!auto("f32", (T, N), (1000, 1000, 3000)).1);
    assert!(!auto("f32", (N, N), (1004, 1004, 3004)).1);
    assert!(!auto("f32", (T, T), (1004, 1004, 3004)).1);
    // A split, too few tiles or k-tiles: no pair.
    assert!(!auto("f16", (N, N), (768, 768, 3072)).1);
    assert!(!auto("f16", (N, N), (504, 1000, 1000)).1);
    assert!(!auto("f16", (N, N), (1000, 1000, 248)).1);
}

#[test]
fn wgmma_splits_that_add_few_blocks_only_over_long_parts() {
    use Transpose::{N, T};
    let auto = |ty: &str, ops, dims| {
        let c = hopper_choice(ty, ops, dims, Tile::Auto, SplitK::Auto).unwrap();
        (c.name, c.split_k)
    };
    let one = |n: &str| (n.to_string(), None);
    // 128 x 128 in 2 parts would fill 112 blocks against 104 of 128 x 64 unsplit, over 16
    // k-tiles a part: unsplit.
    assert_eq!(auto("f16", (N, N), (772, 1024, 2048)), one("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f16", (T, N), (772, 1024, 2048)), one("gemm_wg_f16_n_tn"));
    assert_eq!(auto("f16", (N, N), (900, 520, 2048)), one("gemm_wg_f16_n_nn"));
    assert_eq!(auto("f32", (T, N), (772, 1024, 2048)), one("gemm_wg_tf32_n_tn"));
    // Unsplit, then 128 x 128 (alone, or its pair) for rows that straddle lines.
    assert_eq!(auto("f32", (T, T), (772, 1004, 1004)), one("gemm_wg_tf32_l_tt"));
    assert_eq!(auto("f16", (N, N), (776, 776, 4096)), one("gemm_wg_f16_q_nn"));
    // The near tie runs what the rule chose unsplit, as a split turned off would.
    for (ty, ops, dims) in [
        ("f16", (T, N), (776, 776, 4096)),
        ("f16", (T, N), (900, 772, 2048)),
        ("f32", (N, N), (900, 772, 2048)),
        ("f32", (T, N), (772, 1004, 1004)),
    ] {
        let off = hopper_choice(ty, ops, dims, Tile::Auto, SplitK::Off).unwrap();
        assert_eq!(auto(ty, ops, dims), (off.name, None), "{ty} {ops:?} {dims:?}");
    }
    // Over 64 k-tiles a part the split stays.
    let two = |n: &str| (n.to_string(), Some(2));
    assert_eq!(auto("f16", (N, N), (1152, 776, 8192)), two("gemm_wg_f16_l_nn"));
    assert_eq!(auto("f16", (N, N), (1004, 772, 8192)), two("gemm_wg_f16_l_nn"));
    assert_eq!(auto("f32", (N, N), (1004, 772, 8192)).1, Some(2));
}
