//! GPU tests of `cudrv::blas` against a CPU reference in f64: fresh random inputs (never zeros),
//! outputs poisoned (0xFF bytes, NaN in every float type) before each run, a shape sweep with odd
//! sizes, every op combination, both layouts, padded leading dimensions, batches, epilogues,
//! empty problems and error paths (C untouched). GEMV's tests are in tests/gpu_gemv.rs.
//!
//! Bounds on ‖C − ref‖ / ‖ref‖: f32 < 1e-5, TF32 < 5e-3, f16/bf16 < 2e-2, f64 < 1e-12; NaN fails.

#[path = "support/blas.rs"]
#[allow(dead_code)] // each test binary uses its own part
mod common;
#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::blas::{self, Activation, Gemm, Kernel, Layout, MathMode, SplitK, Tile, Transpose};
use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice, Stream};
use half::{bf16, f16};

use common::*;

#[test]
fn gemm_f32_exact() {
    let Some(ctx) = gpu!("gemm_f32_exact") else { return };
    let stream = ctx.new_stream().unwrap();
    // Every f32 kernel: Small = s, Narrow = u, Large and Broad = l here (unaligned leading
    // dimensions); below, on leading dimensions that are multiples of 4, Large = w, Broad = x.
    let f32_tiles = [Tile::Small, Tile::Narrow, Tile::Large, Tile::Broad];
    sweep::<f32>(&stream, &mut Rng::new(1), &all_cases(Kernel::Auto, MathMode::Exact, 1));
    sweep::<f32>(
        &stream,
        &mut Rng::new(13),
        &tile_cases_on(Kernel::Simt, MathMode::Exact, 1, &f32_tiles, true),
    );
    // Leading dimensions that are multiples of 4: the large tile then takes the kernel with
    // 16-byte copies (w), the automatic choice included.
    sweep::<f32>(&stream, &mut Rng::new(14), &all_cases(Kernel::Auto, MathMode::Exact, 4));
    sweep::<f32>(
        &stream,
        &mut Rng::new(15),
        &tile_cases_on(Kernel::Simt, MathMode::Exact, 4, &f32_tiles, true),
    );
    sweep::<f32>(&stream, &mut Rng::new(16), &split_k_cases());
    // Long k over few 128 x 256 tiles: the automatic choice splits k over 4 blocks per tile
    // (32 tiles, 1025 of k per block on 132 multiprocessors), with bias and beta.
    let mut long_k = Case::new(Transpose::N, Transpose::N, 1024, 1000, 4100);
    (long_k.ld_align, long_k.bias, long_k.beta) = (4, true, 0.5);
    sweep::<f32>(&stream, &mut Rng::new(21), &[long_k]);
    let all_f32 = [
        Tile::Auto,
        Tile::Small,
        Tile::Narrow,
        Tile::Large,
        Tile::Wide,
        Tile::Broad,
    ];
    sweep::<f32>(&stream, &mut Rng::new(20), &whole_tile_cases(Kernel::Simt, 4, &all_f32));
    sweep::<f32>(&stream, &mut Rng::new(22), &v_split_cases());
    sweep::<f32>(&stream, &mut Rng::new(23), &transposed_b_cases());
    sweep::<f32>(&stream, &mut Rng::new(24), &aligned_copy_cases());
    sweep::<f32>(&stream, &mut Rng::new(25), &u_split_cases());
    sweep::<f32>(&stream, &mut Rng::new(26), &wave_partials_cases());
}

/// Both sides at least 256 and k from 8192: the automatic choice splits k through partial
/// products, the parts' 128 x 128 tiles two per SM (src/blas/gemm/tests/partials_route.rs
/// asserts the counts): 8 parts (the last shorter) with bias and beta, 8 with relu in another
/// op pair and layout, unaligned leading dimensions.
fn wave_partials_cases() -> Vec<Case> {
    let mut a = Case::new(Transpose::N, Transpose::N, 300, 260, 9000);
    (a.ld_align, a.bias, a.beta) = (4, true, 0.5);
    let mut b = Case::new(Transpose::T, Transpose::N, 700, 520, 8200);
    (b.layout, b.act, b.ld_align) = (Layout::RowMajor, Activation::Relu, 1);
    vec![a, b]
}

/// The 32 x 64 tile (u, two k-slices of warps per block) with k split over blocks: the automatic
/// choice for 67 rows or columns over k = 1999 (99 u tiles in 4 parts on 132 multiprocessors;
/// src/blas/gemm/tests/dispatch.rs asserts it), every op, both layouts, aligned and unaligned
/// leading dimensions, bias, beta, alpha, an activation; forced 2-4 parts on edge-only
/// problems, one with more parts than k-tiles (k = 40: 3 k-tiles of 16, the last part empty).
fn u_split_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (i, &(ta, tb)) in OPS.iter().enumerate() {
        for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
            // The kernels' D is 67 x 2053 either way.
            let (m, n) = if j == 0 { (2053, 67) } else { (67, 2053) };
            let mut c = Case::new(ta, tb, m, n, 1999);
            // The CUDA cores' automatic choice (a Hopper's takes its f64 tensor cores).
            (c.layout, c.kernel) = (layout, Kernel::Simt);
            c.ld_align = if (i + j) % 2 == 0 { 4 } else { 1 };
            c.bias = i % 2 == 0;
            c.act = if i == 1 { Activation::Tanh } else { Activation::None };
            (c.alpha, c.beta) = if j == 1 { (-0.5, 0.75) } else { (1.0, 0.0) };
            v.push(c);
        }
        let (m, n, k, parts) = [(70, 130, 333, 2), (45, 77, 1000, 3), (33, 65, 40, 4), (100, 31, 517, 4)][i];
        let mut c = Case::new(ta, tb, m, n, k);
        (c.tile, c.split, c.bias, c.beta) = (Tile::Narrow, SplitK::Parts(parts), i % 2 == 1, 0.25);
        c.layout = if i % 2 == 0 { Layout::RowMajor } else { Layout::ColMajor };
        c.ld_align = if i < 2 { 1 } else { 4 };
        v.push(c);
    }
    v
}

/// Unaligned operands of 2048 x 2048 products (every op pair, leading dimensions
/// one past tight or not multiples of 4): copied into aligned buffers first, then w (k = 136) or
/// x (k = 40); TN / TT also copy B transposed (src/blas/gemm/tests/aligned_copies.rs asserts
/// the choices). Beta, bias and an activation on half of them.
fn aligned_copy_cases() -> Vec<Case> {
    OPS.iter()
        .enumerate()
        .map(|(i, &(ta, tb))| {
            let mut c = Case::new(ta, tb, 2048, 2048, if i % 2 == 0 { 136 } else { 40 });
            // The CUDA cores' automatic choice (a Hopper's takes its f64 tensor cores).
            (c.pad, c.kernel) = (1, Kernel::Simt);
            if i >= 2 {
                (c.bias, c.beta, c.act) = (true, 0.5, Activation::Gelu);
            }
            c
        })
        .collect()
}

/// A k-contiguous B (TN, TT) on the tiles with 16-byte copies (w, x), 1600 columns of C (1600
/// rows of the row-major C^T): B is copied transposed first (`gemm_transpose_b32`; src/blas/gemm/tests/dispatch.rs asserts the
/// choice), with beta, bias and an activation, both layouts, k a multiple of neither k-step.
fn transposed_b_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (ta, tb) in [(Transpose::T, Transpose::N), (Transpose::T, Transpose::T)] {
        for tile in [Tile::Large, Tile::Broad] {
            for ((layout, k), (m, n)) in [(Layout::ColMajor, 70), (Layout::RowMajor, 333)]
                .into_iter()
                .flat_map(|l| [(l, (203, 1600)), (l, (1600, 203))])
            {
                let mut c = Case::new(ta, tb, m, n, k);
                (c.ld_align, c.layout, c.tile, c.kernel) = (4, layout, tile, Kernel::Simt);
                (c.bias, c.beta, c.act) = (true, 0.5, Activation::Relu);
                out.push(c);
            }
        }
    }
    out
}

/// Long k over 8200 rows of 52 columns: on 132 multiprocessors the automatic choice takes the
/// 128 x 64 tile (v) with k split over 4 blocks per tile (k = 2100, a short last k-tile, and k =
/// 4100; src/blas/gemm/tests/dispatch.rs asserts the choice). Every op, both layouts, aligned and unaligned
/// leading dimensions (full tiles from the registers or through shared memory), bias, beta,
/// alpha, one activation; deep splits (8-64 parts) of few tiles over long k; and v forced in 3
/// parts on a small problem.
fn v_split_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (i, &(ta, tb)) in OPS.iter().enumerate() {
        for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
            let k = if i == 0 { 4100 } else { 2100 };
            // The kernels' D is 8200 x 52 either way (row-major C is the transposed problem).
            let (m, n) = if j == 0 { (52, 8200) } else { (8200, 52) };
            let mut c = Case::new(ta, tb, m, n, k);
            // The CUDA cores' automatic choice (a Hopper's takes its f64 tensor cores).
            (c.layout, c.kernel) = (layout, Kernel::Simt);
            c.ld_align = if (i + j) % 2 == 0 { 4 } else { 1 };
            c.bias = i % 2 == 1;
            c.act = if i == 2 { Activation::Gelu } else { Activation::None };
            (c.alpha, c.beta) = if j == 1 { (0.75, -0.5) } else { (1.0, 0.0) };
            v.push(c);
        }
        // Long k over few tiles (the automatic choice: partial products, or the v tile split in
        // 8-64 parts): one tile, a few, edges, both layouts.
        let (m, n, k) = [(64, 64, 40000), (96, 200, 20000), (257, 130, 16384), (33, 70, 30001)][i];
        let mut c = Case::new(ta, tb, m, n, k);
        c.layout = if i % 2 == 0 { Layout::ColMajor } else { Layout::RowMajor };
        c.ld_align = if i < 2 { 4 } else { 1 };
        c.bias = i == 1;
        (c.alpha, c.beta) = if i == 3 { (-1.5, 0.25) } else { (1.0, 0.0) };
        v.push(c);
        // Forced: 3 parts on an edge-only problem (k = 333: 21 k-tiles, 7 per block).
        let mut c = Case::new(ta, tb, 130, 70, 333);
        (c.tile, c.split, c.bias, c.beta) = (Tile::Auto, SplitK::Parts(3), true, 0.5);
        c.layout = if i % 2 == 0 { Layout::ColMajor } else { Layout::RowMajor };
        v.push(c);
    }
    v
}

#[test]
fn gemm_f64_dmma_and_simt() {
    let Some(ctx) = gpu!("gemm_f64_dmma_and_simt") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f64>(&stream, &mut Rng::new(2), &all_cases(Kernel::Auto, MathMode::Exact, 1));
    sweep::<f64>(
        &stream,
        &mut Rng::new(17),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 2),
    );
    sweep::<f64>(&stream, &mut Rng::new(18), &all_cases(Kernel::Simt, MathMode::Exact, 2));
    // The sm_80 m8n8k4 kernel, forced (on Hopper the tensor-core default is the sm_90 kernel).
    sweep::<f64>(
        &stream,
        &mut Rng::new(19),
        &all_cases(Kernel::MmaSync, MathMode::Exact, 2),
    );
    if ctx.compute_capability() < (9, 0) {
        println!("SKIPPED the sm_90 DMMA tiles: they need compute capability 9.0");
        return;
    }
    // The sm_90 DMMA kernels on every forced tile and k split (the split blocks of a tile add
    // their partial tiles through a thread block cluster's shared memory), with all shapes
    // (k = 1 leaves some parts without k), ops, layouts, epilogues and batches.
    sweep::<f64>(&stream, &mut Rng::new(39), &dmma_mid_cases(|_| 2));
    // Small = s, Large = l, Narrow = m; Auto split in 2 = u2 on the small cases, s2 on big ones.
    let forced = [
        (Tile::Small, SplitK::Off),
        (Tile::Large, SplitK::Off),
        (Tile::Narrow, SplitK::Off),
        (Tile::Small, SplitK::Parts(2)),
        (Tile::Auto, SplitK::Parts(2)),
    ];
    dmma_forced_sweeps::<f64>(&stream, 40, 2, &forced);
    let dmma90 = [Tile::Auto, Tile::Small, Tile::Narrow, Tile::Large];
    sweep::<f64>(
        &stream,
        &mut Rng::new(45),
        &whole_tile_cases(Kernel::TensorCore, 2, &dmma90),
    );
    // A split the tile does not have is an InvalidArgument.
    let (a, b) = (
        DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap(),
        DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap(),
    );
    let mut c = DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap();
    for (tile, parts, says) in [
        (Tile::Large, 2, "does not split"),
        (Tile::Narrow, 2, "does not split"),
        (Tile::Small, 3, "not 3"),
        (Tile::Auto, 4, "not 4"),
    ] {
        let r = Gemm::<f64>::new(Transpose::N, Transpose::N, 8, 8, 8)
            .tile(tile)
            .split_k(SplitK::Parts(parts))
            .run(&a, &b, &mut c);
        assert!(
            matches!(&r, Err(cudrv::Error::InvalidArgument(m)) if m.contains(says)),
            "{tile:?} in {parts} parts: {r:?}"
        );
    }
}

#[test]
fn gemm_tf32_tensor_cores() {
    let Some(ctx) = gpu!("gemm_tf32_tensor_cores") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f32>(
        &stream,
        &mut Rng::new(3),
        &all_cases(Kernel::TensorCore, MathMode::Tf32, 4),
    );
    sweep::<f32>(
        &stream,
        &mut Rng::new(14),
        &tile_cases(Kernel::TensorCore, MathMode::Tf32, 4),
    );
    // Unaligned leading dimensions fall back to the exact kernel.
    sweep::<f32>(&stream, &mut Rng::new(4), &shape_cases(Kernel::Auto, MathMode::Tf32, 1));
}

#[test]
fn gemm_f16_tensor_cores_and_fallback() {
    let Some(ctx) = gpu!("gemm_f16_tensor_cores_and_fallback") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(
        &stream,
        &mut Rng::new(5),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<f16>(
        &stream,
        &mut Rng::new(15),
        &tile_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<f16>(&stream, &mut Rng::new(6), &all_cases(Kernel::Simt, MathMode::Exact, 1));
}

#[test]
fn gemm_bf16_tensor_cores_and_fallback() {
    let Some(ctx) = gpu!("gemm_bf16_tensor_cores_and_fallback") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<bf16>(
        &stream,
        &mut Rng::new(7),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<bf16>(
        &stream,
        &mut Rng::new(16),
        &tile_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<bf16>(
        &stream,
        &mut Rng::new(8),
        &shape_cases(Kernel::Auto, MathMode::Exact, 1),
    );
}

/// m, n and k of at most 32 run one block per matrix (`gemm_small_<t>`): every type, op and
/// layout, single matrices and batches up to 4096 (with shared operands: stride 0), padded
/// leading dimensions, beta, bias, activations, k = 1 and k = 32, alpha = 0.
#[test]
fn gemm_small_matrices_and_batches() {
    let Some(ctx) = gpu!("gemm_small_matrices_and_batches") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let acts = [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];
    // (m, n, k, batch)
    let shapes = [
        (2, 2, 2, 1),
        (16, 16, 16, 4096),
        (32, 32, 32, 7),
        (5, 31, 1, 3),
        (17, 2, 29, 300),
        (32, 9, 32, 64),
        (3, 32, 20, 1000),
        (24, 24, 0, 2),
    ];
    let mut cases = Vec::new();
    for (s, &(m, n, k, batch)) in shapes.iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            let mut c = Case::new(ta, tb, m, n, k);
            c.batch = batch;
            c.layout = if (s + i) % 2 == 0 {
                Layout::ColMajor
            } else {
                Layout::RowMajor
            };
            c.pad = (s + i) % 3;
            c.alpha = [1.0, 0.75, -1.5, 1.0][i];
            c.beta = if (s + i) % 3 == 1 { -0.5 } else { 0.0 };
            c.bias = (s + 2 * i) % 3 == 0;
            c.act = acts[(s + i) % 5];
            cases.push(c);
        }
    }
    sweep::<f32>(&stream, &mut Rng::new(61), &cases);
    let tf32: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            math: MathMode::Tf32,
            ..c.clone()
        })
        .collect();
    sweep::<f32>(&stream, &mut Rng::new(62), &tf32);
    sweep::<f64>(&stream, &mut Rng::new(63), &cases);
    sweep::<f16>(&stream, &mut Rng::new(64), &cases);
    sweep::<bf16>(&stream, &mut Rng::new(65), &cases);
    // Shared operands (stride 0), alpha = 0 with NaN inputs (not read), through the public API.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 9]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[2.0f32; 18]).unwrap();
    Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 3, 3)
        .alpha(0.0)
        .beta(0.5)
        .batched(2, 0, 0, 9)
        .run(&a, &a, &mut cc)
        .unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![1.0; 18]);
    let ones = DeviceBuffer::from_slice(&stream, &[1.0f32; 9]).unwrap();
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 3, 3).batched(2, 0, 0, 9);
    assert_eq!(g.kernel_name::<f32>(&ones, &ones, &cc).unwrap(), "gemm_small_f32");
    g.run(&ones, &ones, &mut cc).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![3.0; 18]);
}

#[test]
fn gemm_f32_small_tiles_and_k_zero_and_alpha_zero() {
    let Some(ctx) = gpu!("gemm_f32_small_tiles_and_k_zero_and_alpha_zero") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng::new(9);
    // k = 0: C = beta * C.
    let mut c = Case::new(Transpose::N, Transpose::N, 17, 9, 0);
    c.beta = 0.5;
    assert!(run_case::<f32>(&stream, &mut rng, &c) < 1e-6);
    // alpha = 0 with NaN in A: A is not read.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 6]).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 6]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[2.0f32; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 2, 3, 0.0, &a, 2, &b, 3, 0.5, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![1.0; 4]);
    // beta = 0 with NaN in C: C is not read.
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 6]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[f32::NAN; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 2, 3, 1.0, &a, 2, &b, 3, 0.0, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![3.0; 4]);
    // Empty problems leave C alone.
    let mut cc = DeviceBuffer::from_slice(&stream, &[7.0f32; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 0, 2, 3, 1.0, &a, 1, &b, 3, 0.0, &mut cc, 1).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 0, 3, 1.0, &a, 2, &b, 3, 0.0, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![7.0; 4]);
    // The row-major convenience.
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap(); // 2 x 3
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap(); // 3 x 2
    let mut cc = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    blas::matmul(&a, &b, &mut cc, 2, 2, 3).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![4.0, 5.0, 10.0, 11.0]);
}

/// Mid-size problems forced onto the sm_90 DMMA kernels (f64, and exact f32 on them): the
/// automatic tile is m (128 x 64) at 1000^2 and, with k >= 512, s split in 2 at 1500^2 (on the
/// H100's 132 multiprocessors); every op, both layouts, beta, a bias on half; `ld_align(i)` for
/// the i-th op pair.
fn dmma_mid_cases(ld_align: impl Fn(usize) -> usize) -> Vec<Case> {
    OPS.iter()
        .enumerate()
        .flat_map(|(i, &(ta, tb))| {
            [(1000, 40 + 9 * i), (1000, 600 + 9 * i), (1500, 600 + 9 * i)].map(|(mn, k)| (i, ta, tb, mn, k))
        })
        .map(|(i, ta, tb, mn, k)| {
            let mut c = Case::new(ta, tb, mn, mn, k);
            (c.kernel, c.ld_align, c.beta, c.bias) = (Kernel::TensorCore, ld_align(i), 0.5, i % 2 == 0);
            c.layout = if i < 2 { Layout::ColMajor } else { Layout::RowMajor };
            c
        })
        .collect()
}

/// Every shape, op, layout, epilogue and batch of `all_cases` forced onto the sm_90 DMMA kernels
/// with each (tile, split) of `forced`, the i-th on seed `seed + i`.
fn dmma_forced_sweeps<T: El>(stream: &Arc<Stream>, seed: u64, ld_align: usize, forced: &[(Tile, SplitK)]) {
    for (seed, &(tile, split)) in (seed..).zip(forced) {
        let mut cs = all_cases(Kernel::TensorCore, MathMode::Exact, ld_align);
        for c in &mut cs {
            (c.tile, c.split) = (tile, split);
        }
        sweep::<T>(stream, &mut Rng::new(seed), &cs);
    }
}

/// Exact f32 on the f64 tensor cores (the gemm_dmma90_f32 kernels, compute capability 9.0):
/// every shape, op, layout, epilogue and batch of the sweep forced onto them, on leading
/// dimensions aligned to 4 (16-byte copies) and not (the aligned copy from k = 512, the 4-byte
/// element variants below), every forced tile and cluster split, mid-size problems on the
/// automatic tile, and full tiles of every DMMA tile.
#[test]
fn gemm_f32_on_f64_tensor_cores() {
    let Some(ctx) = gpu!("gemm_f32_on_f64_tensor_cores") else {
        return;
    };
    if ctx.compute_capability() < (9, 0) {
        println!(
            "SKIPPED gemm_f32_on_f64_tensor_cores: exact f32 takes the f64 tensor cores from compute capability 9.0"
        );
        return;
    }
    let stream = ctx.new_stream().unwrap();
    for (seed, align) in [(60, 1), (61, 4)] {
        sweep::<f32>(
            &stream,
            &mut Rng::new(seed),
            &all_cases(Kernel::TensorCore, MathMode::Exact, align),
        );
    }
    sweep::<f32>(
        &stream,
        &mut Rng::new(62),
        &dmma_mid_cases(|i| if i % 2 == 0 { 4 } else { 1 }),
    );
    let forced = [
        (Tile::Small, SplitK::Off),
        (Tile::Large, SplitK::Off),
        (Tile::Narrow, SplitK::Off),
        (Tile::Broad, SplitK::Off),
        (Tile::Half, SplitK::Off),
        (Tile::Thin, SplitK::Off),
        (Tile::Small, SplitK::Parts(2)),
        (Tile::Auto, SplitK::Parts(2)),
    ];
    dmma_forced_sweeps::<f32>(&stream, 63, 1, &forced);
    let tiles = [
        Tile::Auto,
        Tile::Small,
        Tile::Narrow,
        Tile::Large,
        Tile::Broad,
        Tile::Half,
    ];
    sweep::<f32>(
        &stream,
        &mut Rng::new(71),
        &whole_tile_cases(Kernel::TensorCore, 4, &tiles),
    );
}

#[test]
fn gemm_errors_leave_c_untouched() {
    let Some(ctx) = gpu!("gemm_errors_leave_c_untouched") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 12]).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 12]).unwrap();
    let mut c = DeviceBuffer::from_slice(&stream, &[5.0f32; 9]).unwrap();
    let check = |e: cudrv::Error, what: &str| {
        assert!(matches!(e, cudrv::Error::InvalidArgument(_)), "{e}");
        assert!(e.to_string().contains(what), "{e}");
    };
    // lda < m
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 2, &b, 4, 0.0, &mut c, 3).unwrap_err(),
        "ldA = 2",
    );
    // B too short: 4 x 3 with ldb 5 needs 14
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 3, &b, 5, 0.0, &mut c, 3).unwrap_err(),
        "needs 14",
    );
    // ldc < m
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 3, &b, 4, 0.0, &mut c, 2).unwrap_err(),
        "ldC = 2",
    );
    // bias too short
    let bias = DeviceBuffer::from_slice(&stream, &[1.0f32; 2]).unwrap();
    check(
        Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
            .run_with_bias(&a, &b, &bias, &mut c)
            .unwrap_err(),
        "bias has 2",
    );
    // overlapping batch outputs (C is long enough: the stride is the problem)
    let mut c2 = DeviceBuffer::from_slice(&stream, &[5.0f32; 20]).unwrap();
    check(
        Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
            .batched(2, 0, 0, 4)
            .run(&a, &b, &mut c2)
            .unwrap_err(),
        "overlap",
    );
    assert_eq!(c2.to_vec().unwrap(), vec![5.0; 20]);
    // Exact f32's tensor-core kernel is the f64 tensor cores' (compute capability 9.0 and later);
    // before, it has none.
    let forced = Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
        .kernel(Kernel::TensorCore)
        .run(&a, &b, &mut c);
    if ctx.compute_capability() >= (9, 0) {
        forced.unwrap();
        assert_eq!(c.to_vec().unwrap(), vec![4.0; 9]);
    } else {
        check(forced.unwrap_err(), "tensor-core");
        assert_eq!(c.to_vec().unwrap(), vec![5.0; 9]);
    }
    // A forced tensor-core f64 run with an odd lda (3 doubles: not a multiple of 16 bytes) is
    // not refused: a side this short runs on the thin tile that reads 8 bytes at a time (wider
    // products copy their operands into aligned buffers first: selftest's aligned copies).
    let a64 = DeviceBuffer::from_slice(&stream, &[1.0f64; 12]).unwrap();
    let mut c64 = DeviceBuffer::from_slice(&stream, &[5.0f64; 9]).unwrap();
    let g = Gemm::new(Transpose::N, Transpose::N, 3, 3, 4).kernel(Kernel::TensorCore);
    let name = g.kernel_name(&a64, &a64, &c64).unwrap();
    assert!(
        name == "gemm_dmma90_f64_tu_nn" || name.starts_with("gemm_pack_b64+gemm_dmma_f64"),
        "{name}"
    );
    g.run(&a64, &a64, &mut c64).unwrap();
    assert_eq!(c64.to_vec().unwrap(), vec![4.0; 9]);
}

/// The scratch a GEMM only needs for speed (B copied transposed for TN on w, the partial tiles
/// of a k split, an aligned copy of an unaligned operand) is given up when the pool has no memory for it: with the context's pool capped
/// at what it holds, the GEMM still runs (the TN kernel; the tile's whole k in one block; the
/// kernel for unaligned operands),
/// reserves nothing more, and matches the f64 reference on sampled entries; C is written whole
/// (poisoned with NaN before).
#[test]
fn gemm_f32_scratch_falls_back_without_memory() {
    let Some(ctx) = gpu!("gemm_f32_scratch_falls_back_without_memory") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let mut rng = Rng::new(seed);
    // TN with 1600 rows of C: B (11.5 MB) copied transposed; NN forced to u in 4 parts: 16.8 MB
    // of partial tiles. Both above the pool's 10 MiB threshold for a segment of their own.
    let (t, n) = (Transpose::T, Transpose::N);
    // NN 2049 x 2048 x 1600: A (13 MB) not whole 16-byte vectors apart, so copied aligned for w
    // where memory allows; here the unaligned kernel runs.
    let cases = [
        (t, (1600, 1024, 2800), Tile::Large, SplitK::Auto),
        (n, (1024, 1024, 4096), Tile::Narrow, SplitK::Parts(4)),
        (n, (2049, 2048, 1600), Tile::Auto, SplitK::Auto),
    ];
    for (ta, (m, nn, k), tile, split) in cases {
        let a_len = m * k;
        let a_host: Vec<f32> = (0..a_len).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        let b_host: Vec<f32> = (0..k * nn).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
        let a = DeviceBuffer::from_slice(&stream, &a_host).unwrap();
        let b = DeviceBuffer::from_slice(&stream, &b_host).unwrap();
        let mut c = DeviceBuffer::from_slice(&stream, &vec![f32::NAN; m * nn]).unwrap();
        let g = Gemm::<f32>::new(ta, Transpose::N, m, nn, k).tile(tile).split_k(split);
        let what = format!("{ta:?}N {m} x {nn} x {k} under a full pool (seed {seed:#x})");
        on_full_pool(&stream, &what, || g.run(&a, &b, &mut c)).unwrap_or_else(|e| panic!("{what}: {e}"));
        let out = c.to_vec().unwrap();
        assert!(
            out.iter().all(|v| v.is_finite()),
            "C not written whole (seed {seed:#x})"
        );
        let a_at = |i: usize, p: usize| {
            f64::from(if ta == Transpose::N {
                a_host[i + p * m]
            } else {
                a_host[p + i * k]
            })
        };
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..2000 {
            let (i, j) = (
                (rng.next_u64() % m as u64) as usize,
                (rng.next_u64() % nn as u64) as usize,
            );
            want.push((0..k).map(|p| a_at(i, p) * f64::from(b_host[p + j * k])).sum::<f64>());
            got.push(f64::from(out[i + j * m]));
        }
        let err = rel_err(&got, &want);
        assert!(
            err < 1e-5,
            "{ta:?}N {m} x {nn} x {k}: relative error {err:e} (seed {seed:#x})"
        );
    }
    // The tensor-core types' copies: f16's A (2049 x 2800, lda 2049: 11.5 MB) copied aligned, and
    // tf32's B (NT: 1024 x 2800, 11.5 MB) packed k-contiguous for wgmma; under the full pool
    // each runs the CUDA-core kernels on the operands as they are.
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut f16_case = Case::new(Transpose::N, Transpose::N, 2049, 64, 2800);
    (f16_case.full_pool, f16_case.beta, f16_case.bias) = (true, 0.5, true);
    sweep::<f16>(&stream, &mut rng, &[f16_case]);
    let mut tf32_case = Case::new(Transpose::N, Transpose::T, 64, 1024, 2800);
    (tf32_case.full_pool, tf32_case.math, tf32_case.ld_align) = (true, MathMode::Tf32, 4);
    sweep::<f32>(&stream, &mut rng, &[tf32_case]);
}
