//! The automatic part count of a split of k through partial products (no GPU: the rule's
//! arithmetic on an H100's 132 multiprocessors), against the best forced counts measured there
//! (docs/kernels/gemm-common.md, "Partial products").

use super::*;
use crate::blas::gemm::partials::{auto_parts, sum_launch};

fn parts<T: GemmType>(g: &Gemm<T::Scalar>) -> Option<usize> {
    let plan = g.plan([1 << 30; 3], None).expect("plan");
    auto_parts::<T, T::Scalar>(g, &plan, 132, false, (9, 0))
}

fn nn<S: Copy + From<u8>>(m: usize, n: usize, k: usize) -> Gemm<S> {
    Gemm::new(Transpose::N, Transpose::N, m, n, k)
}

#[test]
fn f64_makes_about_two_blocks_per_multiprocessor() {
    // 1, 8, 16 and 64 tiles of 64 x 64: 64, 32, 16 and 4 parts (each the measured best).
    assert_eq!(parts::<f64>(&nn(64, 64, 65536)), Some(64));
    assert_eq!(parts::<f64>(&nn(128, 256, 32768)), Some(32));
    assert_eq!(parts::<f64>(&nn(256, 256, 65536)), Some(16));
    assert_eq!(parts::<f64>(&nn(512, 512, 16384)), Some(4));
    // Tiles that fill the GPU stay on the DMMA kernels.
    assert_eq!(parts::<f64>(&nn(64, 8192, 8192)), None);
    assert_eq!(parts::<f64>(&nn(1024, 1024, 32768)), None);
}

#[test]
fn f64_decode_steps_split_only_under_half_a_wave_of_thin_tiles() {
    // A 16-token decode step (TN) runs 16 x 64 thin tiles, as many as 64 x 64 ones: 4096
    // outputs are 64 tiles, 4 parts (0.98-0.99x cuBLAS on the H200, unsplit 0.87); 6144 (96
    // tiles) and 8192 (128) ran at 1.00-1.02x unsplit, faster than any split; 2048 in 8 parts.
    let tn = |m, k| Gemm::<f64>::new(Transpose::T, Transpose::N, m, 16, k);
    assert_eq!(parts::<f64>(&tn(4096, 4096)), Some(4));
    assert_eq!(parts::<f64>(&tn(4096, 11008)), Some(4));
    assert_eq!(parts::<f64>(&tn(2048, 8192)), Some(8));
    assert_eq!(parts::<f64>(&tn(6144, 4096)), None);
    assert_eq!(parts::<f64>(&tn(8192, 28672)), None);
}

#[test]
fn f32_splits_from_sixteen_parts() {
    assert_eq!(parts::<f32>(&nn(64, 64, 65536)), Some(128));
    assert_eq!(parts::<f32>(&nn(128, 128, 65536)), Some(64));
    // 20 tiles of 64 x 64 (8 parts): the CUDA-core kernels' own split.
    assert_eq!(parts::<f32>(&nn(300, 200, 20000)), None);
    // Both sides at least 256 and k from 8192: the 128 x 128 tiles two per SM, rounded to a
    // power of two, each part keeping 1024 of k.
    for ((m, n, k), want) in [
        ((256, 256, 65536), Some(64)),
        ((256, 256, 16384), Some(16)),
        ((384, 256, 65536), Some(32)),
        ((512, 512, 16384), Some(16)),
        ((512, 512, 8192), Some(8)),
        ((768, 768, 16384), Some(8)),
        ((300, 260, 9000), Some(8)),
        ((1024, 1024, 32768), Some(4)),
        ((2048, 2048, 16384), None),
        ((512, 512, 4096), None),
        ((256, 8192, 16384), None),
    ] {
        assert_eq!(parts::<f32>(&nn(m, n, k)), want, "{m} x {n} x {k}");
    }
}

#[test]
fn tf32_wants_fewer_parts_as_its_tiles_grow() {
    let tf32 = |m, n, k| parts::<f32>(&nn(m, n, k).math(MathMode::Tf32));
    // 1, 2 and 16 tiles of 128 x 128.
    assert_eq!(tf32(64, 64, 65536), Some(64));
    assert_eq!(tf32(128, 256, 32768), Some(32));
    assert_eq!(tf32(512, 512, 16384), Some(8));
    // 64 tiles: the formula's 4 parts become 8 at k >= 16384 (the measured best).
    assert_eq!(tf32(1024, 1024, 32768), Some(8));
    assert_eq!(tf32(1024, 1024, 8192), None);
    // From 8 parts at k >= 16384, from 32 below: the wgmma kernels' own split was as fast.
    assert_eq!(tf32(64, 8192, 8192), None);
    assert_eq!(tf32(8192, 16, 28672), None);
    assert_eq!(tf32(512, 512, 4096), None);
    assert_eq!(tf32(256, 256, 8192), Some(32));
}

#[test]
fn the_dmma_tiles_split_few_tiles_from_k_2048_in_16_parts_or_more() {
    // H200, 2026-12-03: where the formula gives 16 parts or more at k of 2048-4095 (at most 16
    // tiles of 64 x 64) the split ran faster than the kernels' own (`u2`); where it gives fewer,
    // slower. Exact f32 on the f64 tensor cores takes the same count.
    let f32_on_f64 = |m, n, k| {
        let g = nn::<f32>(m, n, k);
        let plan = g.plan([1 << 30; 3], None).expect("plan");
        auto_parts::<f32, f32>(&g, &plan, 132, true, (9, 0))
    };
    for ((m, n, k), want) in [
        ((219, 94, 3744), Some(29)),
        ((128, 128, 2048), Some(16)),
        ((150, 200, 3000), Some(16)),
        ((96, 320, 2500), Some(16)),
        ((64, 500, 3000), Some(23)),
        ((256, 192, 3000), Some(16)),
        ((64, 64, 4095), Some(31)),
        ((472, 248, 2352), None),
        ((400, 300, 3500), None),
        ((281, 133, 1797), None),
        ((64, 64, 2047), None),
    ] {
        assert_eq!(parts::<f64>(&nn(m, n, k)), want, "f64 {m} x {n} x {k}");
        assert_eq!(f32_on_f64(m, n, k), want, "f32 {m} x {n} x {k}");
    }
    // f32 on the CUDA cores keeps k >= 4096, and so does f64 before compute capability 9.0.
    assert_eq!(parts::<f32>(&nn(128, 128, 2048)), None);
    let g = nn::<f64>(128, 128, 2048);
    let plan = g.plan([1 << 30; 3], None).expect("plan");
    assert_eq!(auto_parts::<f64, f64>(&g, &plan, 108, false, (8, 0)), None);
    assert_eq!(auto_parts::<f64, f64>(&g, &plan, 108, false, (9, 0)), Some(16));
}

#[test]
fn short_k_and_forced_knobs_are_left_alone() {
    // Each part keeps at least 128 of k, k at least 4096 (2048 on the DMMA tiles, above).
    assert_eq!(parts::<f64>(&nn(64, 64, 4096)), Some(32));
    assert_eq!(parts::<f32>(&nn(64, 64, 4095)), None);
    assert_eq!(parts::<f64>(&nn(64, 64, 65536).tile(Tile::Small)), None);
    assert_eq!(parts::<f64>(&nn(64, 64, 65536).kernel(Kernel::TensorCore)), None);
}

#[test]
fn sixteen_bit_types_split_decode_steps_and_a_few_tiles() {
    // Measured on an H200 (docs/kernels/gemm-mma-sync.md, "f16 and bf16 through partial products").
    let f16 = |g: &Gemm<f32>| parts::<half::f16>(g);
    let tn = |m, n, k| Gemm::<f32>::new(Transpose::T, Transpose::N, m, n, k);
    // 16-token decode steps (TN: 16 x 64 thin tiles): 64 tiles in 4 parts, 32 in 8, 16 in 16.
    assert_eq!(f16(&tn(4096, 16, 4096)), Some(4));
    assert_eq!(f16(&tn(4096, 16, 11008)), Some(4));
    assert_eq!(f16(&tn(2048, 16, 8192)), Some(8));
    assert_eq!(f16(&tn(1024, 16, 4096)), Some(16));
    // 96 and 128 tiles ran fastest unsplit (6144 x 16 x 4096: 0.80x, 0.60-0.63x in 2-8 parts).
    assert_eq!(f16(&tn(6144, 16, 4096)), None);
    assert_eq!(f16(&tn(8192, 16, 28672)), None);
    // 16 columns (64 x 16 thin tiles): from 8 parts (wgmma's own split won in 4, 16 x 4096 x
    // 4096), and 16 rows with Y not k-contiguous (64 x 64 tiles).
    assert_eq!(f16(&nn(16, 4096, 4096)), None);
    assert_eq!(f16(&nn(16, 2048, 8192)), Some(8));
    assert_eq!(f16(&nn(16, 1024, 4096)), Some(16));
    assert_eq!(f16(&nn(16, 6144, 4096)), None);
    assert_eq!(f16(&nn(4096, 16, 4096)), Some(4));
    assert_eq!(parts::<half::bf16>(&nn(2048, 16, 8192)), Some(8));
    // Without a short side: up to 4 tiles of 64 x 64; more stay on wgmma's own split.
    assert_eq!(f16(&nn(64, 64, 65536)), Some(64));
    assert_eq!(f16(&nn(128, 128, 65536)), Some(64));
    assert_eq!(parts::<half::bf16>(&nn(64, 64, 65536)), Some(64));
    assert_eq!(f16(&nn(256, 256, 65536)), None);
    assert_eq!(f16(&nn(512, 512, 4096)), None);
    assert_eq!(f16(&nn(64, 64, 4095)), None);
}

#[test]
fn tf32_decode_steps_split_under_half_a_wave_and_over_uneven_waves_of_thin_tiles() {
    // H100, 2026-11-27 (docs/kernels/gemm-mma-sync.md, "Thin mma.sync tiles on unaligned operands"):
    // 4096 outputs (64 thin tiles) in 4 parts, 0.79-0.82 -> 0.85-0.96x cuBLAS; 6144 (96 tiles)
    // in 2 parts lost (0.959 -> 0.793x), so it stays unsplit.
    let tn = |m, k| parts::<f32>(&Gemm::<f32>::new(Transpose::T, Transpose::N, m, 16, k).math(MathMode::Tf32));
    assert_eq!(tn(4096, 4096), Some(4));
    assert_eq!(tn(4096, 11008), Some(4));
    assert_eq!(tn(4096, 14336), Some(4));
    assert_eq!(tn(2048, 8192), Some(8));
    assert_eq!(tn(6144, 4096), None);
    assert_eq!(tn(28672, 4096), None);
    assert_eq!(tn(4096, 4095), None);
    // More tiles than SMs (H100, 2026-11-28): 4 parts where they even out the busiest SM's
    // share (136, 172, 192 and 320 tiles: +2 to +12%), none where it is even already (208,
    // 264, 344, 448 and 2004 tiles; 128 is under a wave).
    for (m, want) in [
        (8704, Some(4)),
        (11008, Some(4)),
        (12288, Some(4)),
        (20480, Some(4)),
        (13312, None),
        (16896, None),
        (22016, None),
        (28672, None),
        (128256, None),
        (8192, None),
    ] {
        assert_eq!(tn(m, 4096), want, "{m} x 16 x 4096");
    }
}

#[test]
fn sixteen_bit_types_with_more_tiles_split_on_wgmma() {
    use crate::blas::gemm::partials::auto_wgmma_parts;
    // `fast`: memory of 4 TB/s and more (blas/memory_class.rs).
    let wg_on = |m, n, k, fast| {
        let g = nn::<f32>(m, n, k);
        let plan = g.plan([1 << 30; 3], None).expect("plan");
        // Only where the mma.sync rule leaves the GEMM alone.
        assert_eq!(parts::<half::f16>(&g), None, "{m} x {n} x {k}");
        auto_wgmma_parts(&g, &plan, "f16", 132, fast)
    };
    let wg = |m, n, k| wg_on(m, n, k, false);
    // Sides that are multiples of 64: the fewest parts whose blocks (on the tile the parts'
    // batch takes, not 128 x 256 nor 128 x 192) fill 0.45 of a wave and at most one; each part
    // keeps 1024 of k (H100, 2026-11-28: the measured best but for 384 x 256, 2% off 16 parts).
    assert_eq!(wg(256, 256, 65536), Some(8));
    assert_eq!(wg(256, 256, 16384), Some(8));
    assert_eq!(wg(256, 128, 65536), Some(16));
    assert_eq!(wg(128, 256, 32768), Some(16));
    assert_eq!(wg(192, 320, 65536), Some(8));
    assert_eq!(wg(384, 256, 65536), Some(8));
    assert_eq!(wg(320, 320, 32768), Some(8));
    assert_eq!(wg(256, 512, 65536), Some(8));
    assert_eq!(wg(512, 256, 32768), Some(8));
    // 13-25 tiles of 128 x 128 from k = 16384: 8 parts (512 x 512 x 32768: 0.72x cuBLAS on the
    // wgmma kernels' own split, 0.88-0.91x; 768 x 512 x 16384 0.60x -> 0.82x; 640 x 640 x 16384,
    // 200 blocks, 0.61x -> 0.76x).
    assert_eq!(wg(512, 512, 32768), Some(8));
    assert_eq!(wg(768, 512, 16384), Some(8));
    assert_eq!(wg(640, 640, 16384), Some(8));
    assert_eq!(wg(512, 512, 8192), None);
    assert_eq!(wg(768, 768, 16384), None);
    // Sides that end inside a tile: only from k = 65536, the most parts whose blocks fill more
    // than half a wave and at most one (200 x 200 x 65536: 0.80x in 8 parts, 0.97x in 16-32).
    assert_eq!(wg(200, 200, 65536), Some(32));
    assert_eq!(wg(200, 120, 40000), None);
    assert_eq!(wg(300, 200, 30000), None);
    // On fast memory, sides that are multiples of 128: first the fewest parts whose 128 x 128
    // blocks fill 0.45 of a wave and at most one (H200, 2026-11-28); elsewhere the rule above.
    let fast = |m, n, k| wg_on(m, n, k, true);
    assert_eq!(fast(256, 256, 65536), Some(32));
    assert_eq!(fast(384, 256, 65536), Some(16));
    assert_eq!(fast(256, 512, 65536), Some(16));
    assert_eq!(fast(512, 256, 32768), Some(16));
    assert_eq!(fast(192, 320, 65536), Some(8));
    assert_eq!(fast(512, 512, 32768), Some(8));
    assert_eq!(fast(256, 128, 65536), Some(16));
    assert_eq!(fast(128, 256, 32768), Some(16));
    assert_eq!(fast(256, 256, 16384), Some(8));
    assert_eq!(fast(200, 200, 65536), Some(32));
    assert_eq!(fast(512, 512, 8192), None);
    // On every memory, 26 tiles to a wave from k = 16384: 2 parts (4 from k = 65536) where 2
    // parts' blocks make 0.7 to 1.5 waves (H200, 2026-12-02 23:46 UTC; H100, 2026-12-07), and
    // where they make fewer, 4 parts of at least 8192 of k whose blocks make 0.7 to 1.5 waves
    // (H100, 768 x 768 x 32768).
    for on_fast in [true, false] {
        let side = |m, n, k| wg_on(m, n, k, on_fast);
        assert_eq!(side(1024, 1024, 32768), Some(2));
        assert_eq!(side(1024, 1024, 16384), Some(2));
        assert_eq!(side(1024, 1024, 65536), Some(4));
        assert_eq!(side(1024, 768, 32768), Some(2));
        assert_eq!(side(1152, 1152, 32768), Some(2));
        assert_eq!(side(1536, 1024, 32768), Some(2));
        assert_eq!(side(1280, 1024, 16384), Some(2));
        assert_eq!(side(768, 768, 32768), Some(4));
        assert_eq!(side(768, 768, 16384), None);
        assert_eq!(side(2048, 1024, 32768), None);
        assert_eq!(side(1024, 1024, 8192), None);
        assert_eq!(side(1000, 1000, 32768), None);
    }
    // k too short for 8 parts, forced knobs: no split here.
    assert_eq!(wg(256, 256, 4096), None);
    let plan = nn::<f32>(256, 256, 65536).plan([1 << 30; 3], None).expect("plan");
    assert_eq!(
        auto_wgmma_parts(&nn::<f32>(256, 256, 65536).tile(Tile::Large), &plan, "f16", 132, false),
        None
    );
}

#[test]
fn the_sum_spreads_few_outputs_of_many_parts_over_lanes() {
    // (block, grid, shared memory) of gemm_partials on 132 multiprocessors.
    let launch = |m, n, parts, size| {
        let l = sum_launch(m, n, parts, size, 132);
        (l.block_dim, l.grid_dim.0, l.shared_mem_bytes)
    };
    // 64 x 64 f32 in 64 parts: 1024 chunks of 4, 8 lanes of 8 parts each.
    assert_eq!(launch(64, 64, 64, 4), ((16, 8, 1), 64, 2048));
    // A decode step, 4096 x 16 in 4 parts (f16's f32 sums): a lane per part.
    assert_eq!(launch(4096, 16, 4, 4), ((32, 4, 1), 512, 2048));
    // 256 x 256 in 32 parts: 8 lanes of 4 parts.
    assert_eq!(launch(256, 256, 32, 4), ((16, 8, 1), 1024, 2048));
    // Enough outputs: one lane, no shared memory, the grid capped at 16 blocks per multiprocessor.
    assert_eq!(launch(4096, 4096, 2, 4), ((128, 1, 1), 132 * 16, 0));
    // f64 chunks hold 2; n = 3 makes 2 chunks per row, the lanes stop at the parts.
    assert_eq!(launch(10, 3, 2, 8), ((64, 2, 1), 1, 2048));
}

#[test]
fn every_sum_launch_keeps_the_kernels_contract() {
    // Random sums: 128 threads of whole lanes, lanes a power of two up to 8 and the parts,
    // shared memory for the lanes' sums exactly when there are several, and a grid that covers
    // the chunks (grid-stride beyond 16 blocks per multiprocessor).
    let mut rng = crate::selftest::Rng::new(0x5a11_u64 ^ std::process::id() as u64);
    for _ in 0..2000 {
        let m = 1 + (rng.next_u64() % 70_000) as usize;
        let n = 1 + (rng.next_u64() % 3_000) as usize;
        let parts = 2 + (rng.next_u64() % 255) as usize;
        let size = if rng.next_u64() % 2 == 0 { 4 } else { 8 };
        let sms = 1 + (rng.next_u64() % 200) as usize;
        let l = sum_launch(m, n, parts, size, sms);
        let (w, lanes) = (l.block_dim.0 as usize, l.block_dim.1 as usize);
        let what = format!("{m}x{n} in {parts} parts of {size} bytes on {sms} SMs: {l:?}");
        assert_eq!((w * lanes, l.block_dim.2), (128, 1), "{what}");
        assert!(lanes.is_power_of_two() && lanes <= 8 && lanes <= parts, "{what}");
        assert_eq!(l.shared_mem_bytes, if lanes > 1 { 2048 } else { 0 }, "{what}");
        let chunks = m * n.div_ceil(16 / size);
        let grid = l.grid_dim.0 as usize;
        assert!(grid >= 1 && grid <= (sms * 16).max(1), "{what}");
        assert!(grid == sms * 16 || grid * w >= chunks, "{what}");
        assert_eq!((l.grid_dim.1, l.grid_dim.2), (1, 1), "{what}");
    }
}
