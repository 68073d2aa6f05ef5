//! Unit tests of GEMM planning and dispatch (no GPU).

use super::builder::Plan;
use super::dispatch::{choose_kernel, Choice, Family, WG_MAX_PARTS};
use super::*;
use crate::blas::{Activation, Layout, MathMode, Transpose};
use crate::error::Result;

#[test]
fn wgmma_activation_modules_are_in_the_manifest() {
    use crate::blas::Activation;
    let manifest = include_str!("../../../ptx/MANIFEST");
    assert!(Activation::None.op().is_none());
    for a in [
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ] {
        let name = a.op().unwrap().name();
        assert_eq!(format!("{a:?}").to_lowercase(), name);
        for t in ["f16", "bf16", "tf32"] {
            let module = format!("gemm_wg_{name}_{t}");
            assert!(
                manifest
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(module.as_str())),
                "{module} is not in ptx/MANIFEST"
            );
        }
    }
}

/// `choose_kernel` on an H100 (compute capability 9.0, 132 multiprocessors), one batch,
/// automatic k split.
#[allow(clippy::too_many_arguments)]
fn on_h100(
    type_name: &str,
    tensor_type: bool,
    math: MathMode,
    forced: Kernel,
    tile: Tile,
    plan: &Plan,
    aligned: bool,
    wgmma_ok: bool,
) -> Result<Choice> {
    choose_kernel(
        type_name,
        tensor_type,
        math,
        forced,
        tile,
        SplitK::Auto,
        plan,
        aligned,
        wgmma_ok,
        (9, 0),
        132,
        1,
    )
}

fn plan(g: &Gemm<f32>, lens: [usize; 3]) -> Result<Plan> {
    g.plan(lens, None)
}

#[test]
fn tight_leading_dimensions_follow_the_layout() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::T, 3, 4, 5);
    assert_eq!(g.lds(), [3, 4, 3]);
    let g = g.layout(Layout::RowMajor);
    assert_eq!(g.lds(), [5, 5, 4]);
}

#[test]
fn short_buffers_and_small_leading_dimensions_are_rejected_with_numbers() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
    assert!(plan(&g, [15, 20, 12]).is_ok());
    let e = plan(&g, [14, 20, 12]).unwrap_err().to_string();
    assert!(e.contains("A has 14 elements") && e.contains("needs 15"), "{e}");
    let e = plan(&g, [15, 20, 11]).unwrap_err().to_string();
    assert!(e.contains("C has 11 elements"), "{e}");
    let e = plan(&g.ld(2, 5, 3), [100, 100, 100]).unwrap_err().to_string();
    assert!(
        e.contains("ldA = 2") && e.contains("(3,") || e.contains("rows of A (3"),
        "{e}"
    );
    let e = plan(&g.ld(3, 5, 2), [100, 100, 100]).unwrap_err().to_string();
    assert!(e.contains("ldC = 2"), "{e}");
    // ld > rows: the last column ends at (cols - 1) * ld + rows.
    assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 3, 20, 12]).is_ok());
    assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 2, 20, 12]).is_err());
}

#[test]
fn batches_need_room_and_disjoint_outputs() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 2, 2, 2).batched(3, 4, 0, 4);
    assert!(plan(&g, [12, 4, 12]).is_ok());
    let e = plan(&g, [11, 4, 12]).unwrap_err().to_string();
    assert!(e.contains("3 matrices") && e.contains("need 12"), "{e}");
    let g = g.batched(3, 4, 0, 3);
    let e = plan(&g, [12, 4, 12]).unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");
}

#[test]
fn empty_problems_need_no_memory() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 0, 5, 7);
    assert!(plan(&g, [0, 35, 0]).is_ok());
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 2, 0);
    assert!(plan(&g, [0, 0, 6]).is_ok());
}

#[test]
fn overflow_is_an_error_not_a_panic() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, usize::MAX / 2, 4, 5);
    assert!(plan(&g, [1, 1, 1]).is_err());
}

#[test]
fn bias_length_is_checked() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
    assert!(g.plan([15, 20, 12], Some(3)).is_ok());
    assert!(g.plan([15, 20, 12], Some(2)).is_err());
    let g = g.layout(Layout::RowMajor);
    assert!(g.plan([15, 20, 12], Some(3)).is_err());
    assert!(g.plan([15, 20, 12], Some(4)).is_ok());
}

#[test]
fn the_row_major_problem_maps_onto_the_kernels_form() {
    let g = Gemm::<f32>::new(Transpose::T, Transpose::N, 3, 4, 5);
    let p = plan(&g, [100, 100, 100]).unwrap();
    assert_eq!((p.ops.as_str(), p.m, p.n, p.swapped), ("tn", 4, 3, true));
    let p = plan(&g.layout(Layout::RowMajor), [100, 100, 100]).unwrap();
    assert_eq!((p.ops.as_str(), p.m, p.n, p.swapped), ("nt", 3, 4, false));
}

#[test]
fn dispatch_by_type_alignment_and_size() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096);
    let p = plan(&g, [1 << 24, 1 << 24, 1 << 24]).unwrap();
    let c = |t, tc, math, forced, aligned| on_h100(t, tc, math, forced, Tile::Auto, &p, aligned, false);
    assert_eq!(
        c("f32", false, MathMode::Exact, Kernel::Auto, true).unwrap().name,
        "gemm_simt_f32_w_nn"
    );
    assert_eq!(
        c("f32", false, MathMode::Exact, Kernel::Auto, false).unwrap().name,
        "gemm_simt_f32_l_nn"
    );
    assert_eq!(
        c("f32", false, MathMode::Tf32, Kernel::Auto, true).unwrap().name,
        "gemm_tc_tf32_l_nn"
    );
    assert_eq!(
        c("f32", false, MathMode::Tf32, Kernel::Auto, false).unwrap().name,
        "gemm_simt_f32_l_nn"
    );
    assert_eq!(
        c("f16", true, MathMode::Exact, Kernel::Auto, true).unwrap().name,
        "gemm_tc_f16_l_nn"
    );
    assert_eq!(
        c("bf16", true, MathMode::Exact, Kernel::Auto, false).unwrap().name,
        "gemm_simt_bf16_s_nn"
    );
    assert_eq!(
        c("f64", true, MathMode::Exact, Kernel::Auto, true).unwrap().name,
        "gemm_dmma90_f64_l_nn"
    );
    assert_eq!(
        c("f64", true, MathMode::Exact, Kernel::Auto, false).unwrap().name,
        "gemm_simt_f64_s_nn"
    );
    assert!(c("f32", false, MathMode::Exact, Kernel::TensorCore, true).is_err());
    assert!(c("f16", true, MathMode::Exact, Kernel::TensorCore, false).is_err());
    let small = plan(
        &Gemm::<f32>::new(Transpose::N, Transpose::N, 256, 256, 256),
        [1 << 20; 3],
    )
    .unwrap();
    let pick = |t, tile, cc| {
        choose_kernel(
            t,
            true,
            MathMode::Exact,
            Kernel::Auto,
            tile,
            SplitK::Auto,
            &small,
            true,
            false,
            cc,
            132,
            1,
        )
    };
    assert_eq!(pick("f16", Tile::Auto, (9, 0)).unwrap().name, "gemm_tc_f16_s_nn");
    assert_eq!(pick("f16", Tile::Auto, (7, 5)).unwrap().name, "gemm_simt_f16_s_nn");
    // f32 on the CUDA cores: u below one wave of 64 x 64 tiles, s below 9/10 of a wave of
    // 128 x 256 (aligned) or a wave of 128 x 128 tiles (unaligned), then w or l; a forced
    // Wide splits k over blocks where that fills 3/4 of a wave.
    let f32 = |n: usize, tile, aligned| {
        let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, n, n, n), [1 << 28; 3]).unwrap();
        let ch = on_h100("f32", false, MathMode::Exact, Kernel::Auto, tile, &p, aligned, false);
        let ch = ch.unwrap();
        (ch.name, ch.tile, ch.threads, ch.smem, ch.split_k)
    };
    let k = |name: &str, tile, threads, smem, split| (format!("gemm_simt_f32_{name}_nn"), tile, threads, smem, split);
    let w = |split| k("w", (128, 256), 256, 150_528, Some(split));
    let s = k("s", (64, 64), 128, 0, None);
    let u = k("u", (32, 64), 128, 0, None);
    let l = k("l", (128, 128), 256, 0, None);
    assert_eq!(f32(256, Tile::Auto, true), u);
    // 512: 8 tiles of 128 x 256, split in 2 (k / 256) would fill only 16 multiprocessors.
    assert_eq!(f32(512, Tile::Auto, true), u);
    assert_eq!(f32(512, Tile::Small, true), s);
    // 1024: 32 tiles of 128 x 256; a forced Wide splits k in 4 (128 blocks), Large does not.
    assert_eq!(f32(1024, Tile::Auto, true), s);
    assert_eq!(f32(1024, Tile::Auto, false), s);
    assert_eq!(f32(1024, Tile::Narrow, false), u);
    assert_eq!(f32(1024, Tile::Large, true), w(1));
    assert_eq!(f32(1024, Tile::Wide, true), w(4));
    assert_eq!(f32(1024, Tile::Wide, false), l);
    // 512: k / 256 = 2 parts of 8 tiles would fill 16 multiprocessors: no split.
    assert_eq!(f32(512, Tile::Wide, true), w(1));
    // 1536: 72 tiles of 128 x 256 (less than 9/10 of 132, and no room to split), 144 of
    // 128 x 128.
    assert_eq!(f32(1536, Tile::Auto, true), s);
    assert_eq!(f32(1536, Tile::Auto, false), l);
    // s against u by the blocks on the busiest SM: 768 and 896 (144 / 196 s tiles, 2 per
    // SM, against 288 / 392 u tiles, 3 per SM) take u; 1024 and 1536 keep s.
    assert_eq!(f32(768, Tile::Auto, true), u);
    assert_eq!(f32(896, Tile::Auto, false), u);
    // Long k over few w tiles: the automatic choice splits once every block keeps 1024 of k
    // (1024 x 1024 x 4096: 32 tiles, k in 4), not below (x 2048: 512 per block).
    let f32k = |m: usize, n: usize, k: usize| {
        let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, m, n, k), [1 << 28; 3]).unwrap();
        let ch = on_h100("f32", false, MathMode::Exact, Kernel::Auto, Tile::Auto, &p, true, false).unwrap();
        (ch.name, ch.split_k)
    };
    let wk = |split| ("gemm_simt_f32_w_nn".to_string(), Some(split));
    assert_eq!(f32k(1024, 1024, 4096), wk(4));
    assert_eq!(f32k(256, 8192, 8192), wk(2));
    // 1024 x 1024 x 2048 (128 v tiles, k in 2: 2 blocks of 128 x 64 x 1024 per SM against 2
    // s blocks of 64 x 64 x 2048) and 128 columns (half of each 256-column w tile would be
    // empty) take v; so does 100 x 6000 x 6000, in 4 parts (94 v tiles in 2 would put 2
    // blocks on some SMs, where 3 u blocks of 32 x 64 do less).
    let vk = |split| ("gemm_simt_f32_v_nn".to_string(), Some(split));
    assert_eq!(f32k(1024, 1024, 2048), vk(2));
    assert_eq!(f32k(64, 8192, 8192), vk(4));
    // tests/gpu_blas.rs `v_split_cases`.
    assert_eq!(f32k(52, 8200, 2100), vk(2));
    assert_eq!(f32k(52, 8200, 4100), vk(4));
    // A forced split runs v: 2-4 parts, Tile::Auto or Narrow, batch 1.
    let forced = |tile, parts, batch| {
        let p = plan(&Gemm::<f32>::new(Transpose::N, Transpose::N, 136, 72, 48), [1 << 28; 3]).unwrap();
        let ch = choose_kernel(
            "f32",
            false,
            MathMode::Exact,
            Kernel::Auto,
            tile,
            SplitK::Parts(parts),
            &p,
            false,
            false,
            (9, 0),
            132,
            batch,
        )?;
        Ok::<_, crate::Error>((ch.name, ch.split_k))
    };
    assert_eq!(forced(Tile::Narrow, 2, 1).unwrap(), vk(2));
    assert_eq!(forced(Tile::Auto, 4, 1).unwrap(), vk(4));
    for (tile, parts, batch) in [(Tile::Small, 2, 1), (Tile::Narrow, 5, 1), (Tile::Narrow, 2, 2)] {
        let e = forced(tile, parts, batch).unwrap_err();
        assert!(e.to_string().contains("2-4 parts on its 128 x 64 tile"), "{e}");
    }
    assert_eq!(f32k(100, 6000, 6000), vk(4));
    assert_eq!(f32k(128, 8192, 8192), vk(4));
    // w needs its tiles 3/4 full: 300 columns of 512 in two w tiles take s.
    assert_eq!(f32k(300, 16384, 2048), ("gemm_simt_f32_s_nn".to_string(), None));
    // 2048: 128 tiles of 128 x 256, at least 9/10 of 132.
    assert_eq!(f32(2048, Tile::Auto, true), w(1));
    assert_eq!(f32(2048, Tile::Wide, true), w(1));
    assert_eq!(f32(2048, Tile::Auto, false), l);
    assert_eq!(f32(8192, Tile::Auto, true), w(1));
    let l = pick("bf16", Tile::Large, (9, 0)).unwrap();
    assert_eq!(
        (l.name.as_str(), l.tile, l.threads, l.smem),
        ("gemm_tc_bf16_l_nn", (128, 128), 128, 81920)
    );
}

#[test]
fn f64_takes_the_sm90_dmma_kernels_by_capability_and_size() {
    let pick_mnk = |(m, n, k): (usize, usize, usize), split| {
        let g = Gemm::<f64>::new(Transpose::N, Transpose::T, m, n, k);
        let p = g.plan([1 << 28; 3], None).unwrap();
        let ch = choose_kernel(
            "f64",
            true,
            MathMode::Exact,
            Kernel::Auto,
            Tile::Auto,
            split,
            &p,
            true,
            false,
            (9, 0),
            132,
            1,
        );
        ch.unwrap().name
    };
    let pick_split = |n: usize, k: usize, batch: usize, forced, tile, split, cc| {
        let g = Gemm::<f64>::new(Transpose::N, Transpose::T, n, n, k);
        let p = g.plan([1 << 26; 3], None).unwrap();
        let ch = choose_kernel(
            "f64",
            true,
            MathMode::Exact,
            forced,
            tile,
            split,
            &p,
            true,
            false,
            cc,
            132,
            batch,
        )?;
        Ok::<_, crate::Error>((ch.name, ch.tile, ch.smem, ch.threads, ch.cluster_k))
    };
    let pick = |n: usize, batch: usize, forced, tile, cc| {
        let (name, tile, smem, threads, _) = pick_split(n, n, batch, forced, tile, SplitK::Auto, cc).unwrap();
        (name, tile, smem, threads)
    };
    let h = (9, 0);
    // Automatic tiles on 132 SMs (the measured table in docs/kernels/gemm.md): l from a wave of
    // 128 x 128 tiles whose last wave is 3/4 full (2048: 256 tiles in 2 waves of 132).
    assert_eq!(
        pick(4096, 1, Kernel::Auto, Tile::Auto, h),
        ("gemm_dmma90_f64_l_nt".into(), (128, 128), 163840, 256)
    );
    assert_eq!(pick(2048, 1, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_l_nt");
    // 1536: 144 tiles of 128 x 128 leave the second wave 1/10 full; 576 of 64 x 64 fill
    // 0.73 of their last wave of 264 (two per SM), split in 2 (1152 blocks) 0.87.
    assert_eq!(
        pick_split(1536, 1536, 1, Kernel::Auto, Tile::Auto, SplitK::Auto, h).unwrap(),
        ("gemm_dmma90_f64_s2_nt".into(), (64, 64), 61440, 128, 2)
    );
    assert_eq!(pick_mnk((1536, 1536, 1536), SplitK::Off), "gemm_dmma90_f64_s_nt");
    assert_eq!(pick_mnk((1536, 1536, 500), SplitK::Auto), "gemm_dmma90_f64_s_nt");
    // Long k over few output tiles: s split in 2 (64 x 8192 x 8192: 128 tiles of 64 x 64 in
    // 256 blocks; 64 x 4096 x 4096 and 100 x 6000 x 6000: k >= 4096); 128 x 8192 x 8192
    // fills a wave of 128 x 64.
    assert_eq!(pick_mnk((64, 8192, 8192), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
    assert_eq!(pick_mnk((64, 4096, 4096), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
    assert_eq!(pick_mnk((64, 4096, 1000), SplitK::Auto), "gemm_dmma90_f64_u_nt");
    assert_eq!(pick_mnk((100, 6000, 6000), SplitK::Auto), "gemm_dmma90_f64_s2_nt");
    assert_eq!(pick_mnk((100, 6000, 6000), SplitK::Off), "gemm_dmma90_f64_u_nt");
    assert_eq!(pick_mnk((128, 8192, 8192), SplitK::Auto), "gemm_dmma90_f64_m_nt");
    assert_eq!(pick_mnk((8192, 8192, 64), SplitK::Auto), "gemm_dmma90_f64_l_nt");
    // 1024: 128 tiles of 128 x 64, one wave.
    assert_eq!(
        pick(1024, 1, Kernel::Auto, Tile::Auto, h),
        ("gemm_dmma90_f64_m_nt".into(), (128, 64), 122880, 256)
    );
    // 768 and 512: u from a wave of its tiles; 256: u split in 2 (64 tiles, 128 blocks).
    assert_eq!(pick(768, 1, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_u_nt");
    assert_eq!(
        pick(512, 1, Kernel::Auto, Tile::Auto, h),
        ("gemm_dmma90_f64_u_nt".into(), (32, 32), 40960, 128)
    );
    assert_eq!(
        pick_split(256, 256, 1, Kernel::Auto, Tile::Auto, SplitK::Auto, h).unwrap(),
        ("gemm_dmma90_f64_u2_nt".into(), (32, 32), 40960, 128, 2)
    );
    assert_eq!(pick_mnk((256, 256, 200), SplitK::Auto), "gemm_dmma90_f64_u_nt");
    assert_eq!(pick_mnk((256, 256, 256), SplitK::Off), "gemm_dmma90_f64_u_nt");
    // A batch counts its tiles: 4 x 512^2 is 256 of 64 x 64, 0.97 of a wave of 128 x 64.
    assert_eq!(pick(512, 4, Kernel::Auto, Tile::Auto, h).0, "gemm_dmma90_f64_m_nt");
    // Forced tiles and splits, and forced families.
    assert_eq!(
        pick(256, 1, Kernel::TensorCore, Tile::Small, h).0,
        "gemm_dmma90_f64_s_nt"
    );
    assert_eq!(pick(256, 1, Kernel::Auto, Tile::Narrow, h).0, "gemm_dmma90_f64_m_nt");
    assert_eq!(pick(256, 1, Kernel::Auto, Tile::Large, h).0, "gemm_dmma90_f64_l_nt");
    assert_eq!(pick(256, 1, Kernel::Auto, Tile::Wide, h).0, "gemm_dmma90_f64_l_nt");
    let forced = |n, tile, parts| pick_split(n, n, 1, Kernel::Auto, tile, SplitK::Parts(parts), h);
    assert_eq!(forced(4096, Tile::Small, 2).unwrap().0, "gemm_dmma90_f64_s2_nt");
    assert_eq!(forced(4096, Tile::Auto, 2).unwrap().0, "gemm_dmma90_f64_s2_nt");
    assert_eq!(forced(256, Tile::Auto, 2).unwrap().0, "gemm_dmma90_f64_u2_nt");
    for (tile, parts) in [
        (Tile::Large, 2),
        (Tile::Wide, 2),
        (Tile::Narrow, 2),
        (Tile::Small, 4),
        (Tile::Auto, 3),
    ] {
        let e = forced(1024, tile, parts).unwrap_err();
        assert!(matches!(e, crate::Error::InvalidArgument(_)), "{tile:?} {parts}: {e}");
    }
    // Only the sm_90 DMMA kernels split.
    let e = pick_split(1024, 1024, 1, Kernel::MmaSync, Tile::Auto, SplitK::Parts(2), h).unwrap_err();
    assert!(e.to_string().contains("only for f64 on the sm_90 DMMA kernels"), "{e}");
    assert_eq!(
        pick(4096, 1, Kernel::MmaSync, Tile::Auto, h),
        ("gemm_dmma_f64_s_nt".into(), (64, 64), 61440, 128)
    );
    // Before Hopper: the m8n8k4 kernel.
    assert_eq!(pick(4096, 1, Kernel::Auto, Tile::Auto, (8, 0)).0, "gemm_dmma_f64_s_nt");
    assert_eq!(pick(4096, 1, Kernel::Auto, Tile::Large, (8, 9)).0, "gemm_dmma_f64_s_nt");
    assert_eq!(
        pick(4096, 1, Kernel::Auto, Tile::Auto, (10, 0)).0,
        "gemm_dmma90_f64_l_nt"
    );
}

#[test]
fn hopper_dispatch_prefers_wgmma_and_packs_tf32() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096);
    let p = plan(&g, [1 << 24, 1 << 24, 1 << 24]).unwrap();
    let c = |t, math, forced, tile, ok, cc| {
        choose_kernel(
            t,
            t != "f32",
            math,
            forced,
            tile,
            SplitK::Auto,
            &p,
            true,
            ok,
            cc,
            132,
            1,
        )
    };
    let e = MathMode::Exact;
    let w = c("f16", e, Kernel::Auto, Tile::Auto, true, (9, 0)).unwrap();
    assert_eq!(
        (w.name.as_str(), w.family, w.threads, w.tile),
        ("gemm_wg_f16_w_nn", Family::Wgmma, 384, (128, 256))
    );
    assert_eq!(
        c("bf16", e, Kernel::Auto, Tile::Large, true, (9, 0)).unwrap().name,
        "gemm_wg_bf16_l_nn"
    );
    assert_eq!(
        c("bf16", e, Kernel::Auto, Tile::Small, true, (9, 0)).unwrap().name,
        "gemm_tc_bf16_s_nn"
    );
    assert_eq!(
        c("f16", e, Kernel::MmaSync, Tile::Auto, true, (9, 0)).unwrap().name,
        "gemm_tc_f16_l_nn"
    );
    // Not on other devices, and not when the operands do not suit the TMA.
    assert_eq!(
        c("f16", e, Kernel::Auto, Tile::Auto, true, (8, 0)).unwrap().name,
        "gemm_tc_f16_l_nn"
    );
    assert_eq!(
        c("f16", e, Kernel::Auto, Tile::Auto, false, (9, 0)).unwrap().name,
        "gemm_tc_f16_l_nn"
    );
    assert!(c("f16", e, Kernel::Wgmma, Tile::Auto, false, (9, 0)).is_err());
    assert!(c("f16", e, Kernel::Wgmma, Tile::Small, true, (9, 0)).is_err());
    assert!(c("f64", e, Kernel::Wgmma, Tile::Auto, true, (9, 0)).is_err());
    // tf32 is read from shared memory k-contiguous only: nn runs transposed (swap) with the
    // m-contiguous operand in registers, tt reads X into registers as it is, nt packs Y and
    // runs tt, tn needs nothing.
    let t = c("f32", MathMode::Tf32, Kernel::Wgmma, Tile::Wide, true, (9, 0)).unwrap();
    assert_eq!(
        (t.name.as_str(), t.pack, t.swap),
        ("gemm_wg_tf32_w_nn", [false, false], true)
    );
    let tf32 = |ta, tb, tile| {
        let p = plan(&Gemm::<f32>::new(ta, tb, 64, 64, 64), [1 << 20; 3]).unwrap();
        let t = on_h100("f32", false, MathMode::Tf32, Kernel::Wgmma, tile, &p, true, true).unwrap();
        (t.name, t.pack, t.swap)
    };
    use Transpose::{N, T};
    assert_eq!(
        tf32(T, N, Tile::Large),
        ("gemm_wg_tf32_l_tn".into(), [false, false], false)
    );
    assert_eq!(
        tf32(T, T, Tile::Large),
        ("gemm_wg_tf32_l_tt".into(), [false, false], false)
    );
    assert_eq!(
        tf32(N, T, Tile::Narrow),
        ("gemm_wg_tf32_n_tt".into(), [false, true], false)
    );
    assert_eq!(
        tf32(N, N, Tile::Narrow),
        ("gemm_wg_tf32_n_nn".into(), [false, false], true)
    );
    // The swapped problem picks its tile from its own m and n: C of 64 x 8448 is 33 tiles of
    // 128 x 256 and 66 of 128 x 128 (too few for either: 128 x 64), where the unswapped
    // 8448 x 64 would count 66 wide tiles.
    let skinny = plan(&Gemm::<f32>::new(N, N, 64, 8448, 256), [1 << 26; 3]).unwrap();
    let t = on_h100(
        "f32",
        false,
        MathMode::Tf32,
        Kernel::Auto,
        Tile::Auto,
        &skinny,
        true,
        true,
    )
    .unwrap();
    assert_eq!((t.name.as_str(), t.swap), ("gemm_wg_tf32_n_nn", true));
    // Short k (at most 128): tf32 takes 128 x 128 where f16 keeps 128 x 256.
    let short_k = |t: &str, k| {
        let math = if t == "f32" { MathMode::Tf32 } else { e };
        let p = plan(&Gemm::<f32>::new(T, N, 8192, 8192, k), [1 << 28; 3]).unwrap();
        let ch = on_h100(t, t != "f32", math, Kernel::Auto, Tile::Auto, &p, true, true);
        ch.unwrap().name
    };
    assert_eq!(short_k("f32", 64), "gemm_wg_tf32_l_tn");
    assert_eq!(short_k("f32", 128), "gemm_wg_tf32_l_tn");
    assert_eq!(short_k("f32", 129), "gemm_wg_tf32_w_tn");
    assert_eq!(short_k("f32", 256), "gemm_wg_tf32_w_tn");
    assert_eq!(short_k("f16", 64), "gemm_wg_f16_w_tn");
    // Small problems take the 128 x 64 wgmma tile.
    let small = plan(
        &Gemm::<f32>::new(Transpose::N, Transpose::N, 256, 256, 256),
        [1 << 20; 3],
    )
    .unwrap();
    let s = on_h100("f16", true, e, Kernel::Auto, Tile::Auto, &small, true, true).unwrap();
    assert_eq!(s.name, "gemm_wg_f16_n_nn");
}

#[test]
fn small_matrices_take_one_block_each() {
    use Transpose::{N, T};
    let pick = |ty: &str, (m, n, k): (usize, usize, usize), forced, tile, split, batch| {
        let p = plan(&Gemm::<f32>::new(N, T, m, n, k), [1 << 30; 3]).unwrap();
        let math = if ty == "tf32" { MathMode::Tf32 } else { MathMode::Exact };
        let ty = if ty == "tf32" { "f32" } else { ty };
        let ch = choose_kernel(
            ty,
            ty != "f32",
            math,
            forced,
            tile,
            split,
            &p,
            true,
            true,
            (9, 0),
            132,
            batch,
        )
        .unwrap();
        ch.name
    };
    let auto = |ty, dims, batch| pick(ty, dims, Kernel::Auto, Tile::Auto, SplitK::Auto, batch);
    for (ty, name) in [
        ("f32", "f32"),
        ("tf32", "f32"),
        ("f64", "f64"),
        ("f16", "f16"),
        ("bf16", "bf16"),
    ] {
        assert_eq!(auto(ty, (16, 16, 16), 4096), format!("gemm_small_{name}"));
        assert_eq!(auto(ty, (32, 32, 32), 1), format!("gemm_small_{name}"));
        assert_eq!(auto(ty, (2, 2, 2), 1), format!("gemm_small_{name}"));
        // 33 in any dimension: the tiled kernels.
        for dims in [(33, 32, 32), (32, 33, 32), (32, 32, 33)] {
            assert!(!auto(ty, dims, 7).starts_with("gemm_small"), "{ty} {dims:?}");
        }
        // Any forced knob keeps the tiled kernels.
        assert!(!pick(ty, (16, 16, 16), Kernel::Simt, Tile::Auto, SplitK::Auto, 1).starts_with("gemm_small"));
        assert!(!pick(ty, (16, 16, 16), Kernel::Auto, Tile::Small, SplitK::Auto, 1).starts_with("gemm_small"));
        assert!(!pick(ty, (16, 16, 16), Kernel::Auto, Tile::Auto, SplitK::Off, 1).starts_with("gemm_small"));
    }
}

#[test]
fn wgmma_splits_k_over_few_tiles_and_takes_a_wave_of_large_tiles() {
    use Transpose::{N, T};
    let pick = |ty: &str, (ta, tb), (m, n, k): (usize, usize, usize), tile, split| {
        let p = plan(&Gemm::<f32>::new(ta, tb, m, n, k), [1 << 30; 3]).unwrap();
        let math = if ty == "f32" { MathMode::Tf32 } else { MathMode::Exact };
        let ch = choose_kernel(
            ty,
            ty != "f32",
            math,
            Kernel::Auto,
            tile,
            split,
            &p,
            true,
            true,
            (9, 0),
            132,
            1,
        )?;
        Ok::<_, crate::Error>((ch.name, ch.split_k))
    };
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
    assert_eq!(auto("f16", (N, N), (256, 256, 1024)), named("gemm_wg_f16_n_nn", None));
    // 128 tiles of 128 x 64 with long k: 64 tiles of 128 x 128 in 2 parts; with short k, as is.
    assert_eq!(
        auto("f16", (T, N), (1024, 1024, 32768)),
        named("gemm_wg_f16_l_tn", Some(2))
    );
    assert_eq!(auto("f16", (T, N), (1024, 1024, 1024)), named("gemm_wg_f16_n_tn", None));
    // Decode: 64 tiles of 16 x 64 in 2 parts, or for long parts 32 of 16 x 128 in 4; 172 of
    // 128 x 64 (more than a wave) become 86 of 128 x 128.
    assert_eq!(
        auto("f16", (T, N), (4096, 16, 4096)),
        named("gemm_wg_f16_n_tn", Some(2))
    );
    assert_eq!(
        auto("f16", (T, N), (4096, 16, 11008)),
        named("gemm_wg_f16_n_tn", Some(2))
    );
    assert_eq!(
        auto("f32", (T, N), (4096, 16, 11008)),
        named("gemm_wg_tf32_l_tn", Some(4))
    );
    assert_eq!(
        auto("f16", (T, N), (8192, 16, 8192)),
        named("gemm_wg_f16_l_tn", Some(2))
    );
    assert_eq!(
        auto("f16", (T, N), (4096, 128, 4096)),
        named("gemm_wg_f16_n_tn", Some(2))
    );
    assert_eq!(auto("f16", (T, N), (11008, 16, 4096)), named("gemm_wg_f16_l_tn", None));
    // The 128 x 128 tile only where it covers more than 128 x 64: 64 columns stay on 128 x 64.
    assert_eq!(
        auto("f16", (N, N), (64, 8192, 8192)),
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
    assert_eq!(
        pick("f16", (N, N), (64, 64, 65536), Tile::Auto, SplitK::Off).unwrap(),
        named("gemm_wg_f16_n_nn", None)
    );
    assert!(forced((130, 70, 700), Tile::Wide, 2).is_err());
    assert!(forced((130, 70, 700), Tile::Narrow, WG_MAX_PARTS + 1).is_err());
}

mod degenerate {
    use super::*;

    #[test]
    fn k_zero_plans_with_empty_operands() {
        for ta in [Transpose::N, Transpose::T] {
            for tb in [Transpose::N, Transpose::T] {
                for layout in [Layout::ColMajor, Layout::RowMajor] {
                    let g = Gemm::<f32>::new(ta, tb, 3, 4, 0).layout(layout);
                    let r = g.plan([0, 0, 12], None);
                    assert!(r.is_ok(), "{ta:?}{tb:?} {layout:?}: {r:?}");
                }
            }
        }
    }
}

mod aligned_copies {
    use super::super::dispatch::{aligned_params, operand_storage};
    use super::super::params::GemmParams;
    use super::*;

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
}

mod vector_route {
    use super::super::vector::route;
    use super::*;
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
}
