//! GPU tests of the Hopper GEMM kernels (compute capability 9.0; skipped elsewhere) against a
//! CPU reference in f64, as tests/gpu_blas.rs does for the others: the wgmma + TMA kernels of
//! every type, tile, op and epilogue (TMA stores, activations, batches), their k split, and
//! mma.sync forced on a Hopper device.
//!
//! Bounds on ‖C − ref‖ / ‖ref‖: f32 < 1e-5, TF32 < 5e-3, f16/bf16 < 2e-2, f64 < 1e-12; NaN fails.

#[path = "support/blas.rs"]
#[allow(dead_code)] // each test binary uses its own part
mod common;
#[path = "support/gpu.rs"]
mod gpu;

use common::*;
use cudrv::blas::{Activation, Kernel, Layout, MathMode, SplitK, Tile, Transpose};
use cudrv::selftest::Rng;
use half::{bf16, f16};

/// The sm_90a kernels (wgmma + TMA) for f16 and bf16, forced, on each of their tiles. Compute
/// capability 9.0 only.
#[test]
fn gemm_wgmma_hopper() {
    let Some(ctx) = gpu::sm90("gemm_wgmma_hopper", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(&stream, &mut Rng::new(21), &wg_cases(MathMode::Exact, 8));
    sweep::<f16>(&stream, &mut Rng::new(26), &odd_c_stride_cases());
    sweep::<bf16>(&stream, &mut Rng::new(22), &wg_cases(MathMode::Exact, 8));
    sweep::<f16>(&stream, &mut Rng::new(33), &c_row_store_cases(MathMode::Exact));
    sweep::<bf16>(&stream, &mut Rng::new(34), &c_row_store_cases(MathMode::Exact));
    for (seed, acts) in [(28, false), (31, true)] {
        let cases = tma_store_wg_cases(MathMode::Exact, 8, acts);
        sweep::<f16>(&stream, &mut Rng::new(seed), &cases);
        sweep::<bf16>(&stream, &mut Rng::new(seed + 1), &cases);
    }
}

/// k split over the blocks of a wgmma tile (`split_rule` in ptx/gemm_wg.cuh): forced splits of
/// the 128 x 64 and 128 x 128 tiles in 2 to 64 parts (more parts than k-tiles, a short last part,
/// a single row tile whose second consumer has no rows), every op and layout, beta, bias,
/// activations, batches, tf32's transposed store; and the automatic split of decode-shaped and
/// long-k problems. Compute capability 9.0 only.
#[test]
fn gemm_wgmma_split_k() {
    let Some(ctx) = gpu::sm90("gemm_wgmma_split_k", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    for (ty, math, ld_align) in [
        ("f16", MathMode::Exact, 8),
        ("bf16", MathMode::Exact, 8),
        ("tf32", MathMode::Tf32, 4),
    ] {
        let cases = wg_split_cases(math, ld_align);
        let seed = 40 + ty.len() as u64;
        match ty {
            "f16" => sweep::<f16>(&stream, &mut Rng::new(seed), &cases),
            "bf16" => sweep::<bf16>(&stream, &mut Rng::new(seed), &cases),
            _ => sweep::<f32>(&stream, &mut Rng::new(seed), &cases),
        }
    }
}

fn wg_split_cases(math: MathMode, ld_align: usize) -> Vec<Case> {
    let acts = [Activation::None, Activation::Relu, Activation::Gelu, Activation::Tanh];
    // (m, n, k, tile, parts, batch)
    let shapes = [
        (100, 90, 3000, Tile::Narrow, 5, 1),
        (300, 40, 1111, Tile::Large, 3, 1),
        (60, 200, 2049, Tile::Auto, 16, 1),
        (130, 70, 700, Tile::Narrow, 64, 1),
        (72, 136, 900, Tile::Auto, 2, 3),
        (16, 1000, 4096, Tile::Auto, 0, 1),
        (1000, 16, 4096, Tile::Auto, 0, 1),
        (64, 64, 20000, Tile::Auto, 0, 1),
    ];
    let mut v = Vec::new();
    for (s, &(m, n, k, tile, parts, batch)) in shapes.iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            let mut c = Case::new(ta, tb, m, n, k);
            (c.kernel, c.math, c.ld_align, c.tile, c.batch) = (Kernel::Wgmma, math, ld_align, tile, batch);
            c.split = if parts == 0 { SplitK::Auto } else { SplitK::Parts(parts) };
            c.layout = if (s + i) % 2 == 0 {
                Layout::ColMajor
            } else {
                Layout::RowMajor
            };
            c.alpha = if i % 2 == 0 { 1.0 } else { 0.75 };
            c.beta = if (s + i) % 3 == 1 { -0.5 } else { 0.0 };
            c.bias = (s + i) % 2 == 1;
            c.act = acts[(s + 2 * i) % 4];
            off_wgmma_where_tf32_packs(&mut c);
            if c.kernel != Kernel::Wgmma {
                c.split = SplitK::Auto;
            }
            v.push(c);
        }
    }
    v
}

/// The f16 mma.sync kernels forced on a Hopper device (where wgmma is the default), both tiles.
#[test]
fn gemm_mma_sync_f16_on_hopper() {
    let Some(ctx) = gpu::sm90(
        "gemm_mma_sync_f16_on_hopper",
        "a Hopper device, where wgmma is the default",
    ) else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(
        &stream,
        &mut Rng::new(24),
        &tile_cases(Kernel::MmaSync, MathMode::Exact, 8),
    );
    // Whole tiles of the mma.sync kernels (plain C = alpha A B stores from the accumulators) and
    // of the sm_80 f64 DMMA kernel, with the second C of a batch misaligned.
    let tc_tiles = [Tile::Small, Tile::Large];
    sweep::<f16>(
        &stream,
        &mut Rng::new(25),
        &whole_tile_cases(Kernel::MmaSync, 8, &tc_tiles),
    );
    let mut tf32 = whole_tile_cases(Kernel::MmaSync, 8, &tc_tiles);
    tf32.iter_mut().for_each(|c| c.math = MathMode::Tf32);
    sweep::<f32>(&stream, &mut Rng::new(26), &tf32);
    sweep::<f64>(
        &stream,
        &mut Rng::new(27),
        &whole_tile_cases(Kernel::MmaSync, 2, &[Tile::Auto]),
    );
}

/// tf32 with both operands m/n-contiguous (column-major op(A) = A, op(B) = B^T; in row-major
/// storage op(A) = A^T, op(B) = B) packs B, for batch 1 only: such batches take the best
/// tensor-core kernel that applies instead of wgmma. The other op combinations run batched on
/// wgmma.
fn off_wgmma_where_tf32_packs(c: &mut Case) {
    let (ta, tb) = match c.layout {
        Layout::ColMajor => (Transpose::N, Transpose::T),
        Layout::RowMajor => (Transpose::T, Transpose::N),
    };
    if c.math == MathMode::Tf32 && c.batch > 1 && c.ta == ta && c.tb == tb {
        c.kernel = Kernel::TensorCore;
    }
}

/// The wgmma tiles a test can force.
const WG_TILES: [Tile; 8] = [
    Tile::Half,
    Tile::Medium,
    Tile::Narrow,
    Tile::Large,
    Tile::Broad,
    Tile::Wide,
    Tile::NarrowPair,
    Tile::LargePair,
];

/// Every case on every forced wgmma tile (h, m, n, l, b, w, and the pairs q, p).
fn wg_cases(math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut v = Vec::new();
    for tile in WG_TILES {
        let mut cs = all_cases(Kernel::Wgmma, math, ld_align);
        for c in &mut cs {
            c.tile = tile;
            off_wgmma_where_tf32_packs(c);
        }
        v.extend(cs);
    }
    v
}

/// C = act(alpha A B (+ beta C, + bias)) on every wgmma tile, which leaves through TMA stores
/// where C's rows are 16-byte aligned and a multiple of 16 bytes long (C loaded by the TMA when
/// beta != 0; the transposed tf32 kernels add the bias by row): whole tiles and edge tiles
/// (clipped by the TMA; 200 and 1000 long rows end inside a box, 300 and 65 take the thread
/// stores), single matrices and batches of 3 whose C matrices are 0 or 1 element apart beyond a
/// multiple of 8 (1: the later matrices are misaligned and take the thread stores), every op,
/// both layouts, plain, beta, bias, and both. With `acts` every case also has an activation
/// (relu, gelu, sigmoid, tanh in turn): the kernels of the activation modules where the TMA
/// stores, the rolled epilogue of the others elsewhere.
fn tma_store_wg_cases(math: MathMode, ld_align: usize, acts: bool) -> Vec<Case> {
    let nonlinear = [
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];
    let shapes = [(256, 512, 64), (200, 300, 72), (136, 65, 100), (1000, 600, 40)];
    let mut v = Vec::new();
    for (t, tile) in WG_TILES.into_iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
                for c_gap in [0, 1] {
                    let (m, n, k) = shapes[(t + i + j) % 4];
                    let mut c = Case::new(ta, tb, m, n, k);
                    (c.kernel, c.tile, c.math, c.ld_align, c.layout, c.c_gap) =
                        (Kernel::Wgmma, tile, math, ld_align, layout, c_gap);
                    c.batch = if c_gap == 1 || i % 2 == 0 { 3 } else { 1 };
                    c.alpha = if j == 0 { 0.75 } else { 1.0 };
                    c.pad = (i + t) % 3;
                    // plain, beta, bias, beta and bias
                    let e = (t + 2 * i + j + c_gap) % 4;
                    c.beta = if e % 2 == 1 { -0.5 } else { 0.0 };
                    c.bias = e >= 2;
                    if acts {
                        c.act = nonlinear[(t + i + 2 * j + c_gap) % 4];
                    }
                    v.push(c);
                }
            }
        }
    }
    v
}

/// C whose rows are not 16 bytes apart, on every wgmma tile: C's leading dimension a multiple
/// of 4 elements but not 8 (100: 16-bit types store 4 elements at a time), of 2 but not 4 (98:
/// two at a time), and odd (99: one), the stores of `store_rows` and, for tf32 nn,
/// `store_cols_t` (ptx/gemm_wg_epilogue.cuh). C's contiguous side is 97, 93 and 99 long, so that
/// a lane's last group of columns runs past C (97 - 64 = 33 = 8 * 4 + 1); single matrices and
/// batches of 3 whose C matrices start 0, 1 or 2 elements past a multiple of 8 (which narrows the
/// stores again), every op, both layouts (one leading dimension per tile, op and layout, in
/// turn); plain C, beta C, a bias, and both with an activation (C read before the stores).
fn c_row_store_cases(math: MathMode) -> Vec<Case> {
    let mut v = Vec::new();
    for (t, tile) in WG_TILES.into_iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
                // One of the three leading dimensions per tile, op and layout, each in turn.
                let l = (t + i + j) % 3;
                let (side, pad) = [(97, 3), (93, 5), (99, 0)][l];
                let (m, n) = match layout {
                    Layout::ColMajor => (side, 40),
                    Layout::RowMajor => (40, side),
                };
                let mut c = Case::new(ta, tb, m, n, 64);
                (c.kernel, c.tile, c.math, c.layout, c.pad) = (Kernel::Wgmma, tile, math, layout, pad);
                c.alpha = if (t + l) % 2 == 0 { 1.0 } else { 0.75 };
                let b = (t + i + j + l) % 3;
                (c.batch, c.c_gap) = if b == 0 { (1, 0) } else { (3, b - 1 + (t % 2)) };
                match (t + 2 * i + j + l) % 4 {
                    0 => {}
                    1 => c.beta = -0.5,
                    2 => c.bias = true,
                    _ => (c.beta, c.bias, c.act) = (1.25, true, Activation::Gelu),
                }
                off_wgmma_where_tf32_packs(&mut c);
                v.push(c);
            }
        }
    }
    v
}

/// A batch stride of C that is not a multiple of 16 bytes: the epilogue's 16-byte stores must
/// fall back for the misaligned batch entries.
fn odd_c_stride_cases() -> Vec<Case> {
    OPS.iter()
        .map(|&(ta, tb)| {
            let mut c = Case::new(ta, tb, 72, 40, 64);
            (c.batch, c.c_gap, c.ld_align, c.kernel) = (3, 3, 8, Kernel::Wgmma);
            c
        })
        .collect()
}

/// tf32 on the wgmma kernels (register-fed A for tt and nn, nn stored transposed, nt packed)
/// and on mma.sync forced on the same device. Compute capability 9.0 only.
#[test]
fn gemm_wgmma_hopper_tf32() {
    let Some(ctx) = gpu::sm90("gemm_wgmma_hopper_tf32", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f32>(
        &stream,
        &mut Rng::new(27),
        &odd_c_stride_cases()
            .iter()
            .map(|c| Case {
                math: MathMode::Tf32,
                ld_align: 4,
                kernel: Kernel::TensorCore,
                ..c.clone()
            })
            .collect::<Vec<_>>(),
    );
    sweep::<f32>(&stream, &mut Rng::new(23), &wg_cases(MathMode::Tf32, 4));
    sweep::<f32>(&stream, &mut Rng::new(35), &c_row_store_cases(MathMode::Tf32));
    for (seed, acts) in [(30, false), (31, true)] {
        let mut cases = tma_store_wg_cases(MathMode::Tf32, 4, acts);
        cases.iter_mut().for_each(off_wgmma_where_tf32_packs);
        sweep::<f32>(&stream, &mut Rng::new(seed), &cases);
    }
    sweep::<f32>(
        &stream,
        &mut Rng::new(25),
        &tile_cases(Kernel::MmaSync, MathMode::Tf32, 4),
    );
}

/// `gemm_skinny90` recorded in a graph: each replay after new inputs gives the new product, on
/// both of its grids (whole tiles; stream-k, whose blocks hand partial sums over through flags
/// that a replay must not find already set by the previous one). f16 TN decode steps, fresh
/// inputs, C poisoned before each replay, 256 sampled entries against an f64 reference.
#[test]
fn gemm_skinny90_replays_in_a_graph() {
    use cudrv::blas::Gemm;
    use cudrv::memory::{DeviceSlice, DeviceSliceMut};
    use cudrv::DeviceBuffer;
    let Some(ctx) = gpu::sm90("gemm_skinny90_replays_in_a_graph", "gemm_skinny90") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let mut rng = Rng::new(seed);
    let mut draw = |len: usize| -> Vec<f16> { rng.vec(len, -1.0, 1.0) };
    // (m, n, k): 96 tiles (whole tiles on 132 SMs), 64 and 32 tiles (stream-k).
    for (m, n, k) in [(12, 6144, 1000), (16, 4096, 4096), (16, 2000, 8192)] {
        let mut a = DeviceBuffer::from_slice(&stream, &draw(k * m)).unwrap();
        let mut b = DeviceBuffer::from_slice(&stream, &draw(k * n)).unwrap();
        let mut c = DeviceBuffer::from_slice(&stream, &vec![f16::NAN; m * n]).unwrap();
        let g = Gemm::new(Transpose::T, Transpose::N, m, n, k);
        let name = g.kernel_name(&a, &b, &c).unwrap();
        assert!(name.starts_with("gemm_skinny90_"), "{m}x{n}x{k}: {name}");
        let graph = stream.capture(|_| g.run(&a, &b, &mut c)).unwrap();
        for round in 0..3 {
            let (ha, hb) = (draw(k * m), draw(k * n));
            a.copy_from_slice(&ha).unwrap();
            b.copy_from_slice(&hb).unwrap();
            c.copy_from_slice(&vec![f16::NAN; m * n]).unwrap();
            graph.launch(&stream).unwrap();
            let out = c.to_vec().unwrap();
            for s in 0..256 {
                let (i, j) = ((s * 7 + round) % m, (s * 7919 + round * 31) % n);
                let (mut sum, mut abs) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = ha[p + i * k].to_f64() * hb[p + j * k].to_f64();
                    sum += x;
                    abs += x.abs();
                }
                let got = out[i + j * m].to_f64();
                let bound = 2e-3 * sum.abs() + 2e-4 * abs + 1e-3;
                assert!(
                    (got - sum).abs() <= bound,
                    "seed {seed:#x}: {m}x{n}x{k} ({name}) replay {round}: C[{i},{j}] = {got}, expected {sum} (bound {bound})"
                );
            }
        }
    }
}

/// Chained `gemm_skinny90` launches, each allowed to begin while the previous kernel finishes
/// (programmatic dependent launch): a decode step's `y1 = x W1^T`, then `y2 = y1 W2^T` reading y1
/// as its short operand, both row-major, y1 and y2 poisoned before every round. A launch that
/// read before the previous kernel's writes were visible would see the poison. Three rounds
/// with new inputs, whole tiles (6144 outputs) and stream-k (2048), 256 sampled entries of y2
/// against an f64 reference of the chain (y1 rounded to f16 as the GPU stores it).
#[test]
fn gemm_skinny90_chains_overlap() {
    use cudrv::blas::Gemm;
    use cudrv::memory::{DeviceSlice, DeviceSliceMut};
    use cudrv::DeviceBuffer;
    let Some(ctx) = gpu::sm90("gemm_skinny90_chains_overlap", "gemm_skinny90") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let seed = gpu::fresh_seed();
    let mut rng = Rng::new(seed);
    let mut draw = |len: usize, scale: f64| -> Vec<f16> { rng.vec(len, -scale, scale) };
    let (s, k1) = (16, 4096);
    // Which decode steps take the kernel depends on the memory (blas::gemm::skinny90's route):
    // on an H200 (4 TB/s and more) every step from 12 MiB of weights; on an H100 16 x 4096 x
    // 4096 and 16 x 4096 x 6144 (the thin tiles would split them through partial products)
    // but not 16 x 6144 x 4096 or 16 x 2048 x 4096, which run the thin tiles (H100,
    // 2026-12-07: `gemm_tc_f16_t_tn`). So the chain of 4096-wide steps runs everywhere, the
    // others where the memory is fast.
    let widths: &[usize] = if gpu::fast_memory(&ctx) {
        &[4096, 6144, 2048]
    } else {
        &[4096]
    };
    for &n1 in widths {
        let n2 = 4096;
        // x (s x k1), W1 (n1 x k1), y1 (s x n1), W2 (n2 x n1), y2 (s x n2), all row-major.
        let mut x = DeviceBuffer::from_slice(&stream, &draw(s * k1, 1.0)).unwrap();
        let mut w1 = DeviceBuffer::from_slice(&stream, &draw(n1 * k1, 1.0 / 64.0)).unwrap();
        let mut w2 = DeviceBuffer::from_slice(&stream, &draw(n2 * n1, 1.0)).unwrap();
        let mut y1 = DeviceBuffer::from_slice(&stream, &vec![f16::NAN; s * n1]).unwrap();
        let mut y2 = DeviceBuffer::from_slice(&stream, &vec![f16::NAN; s * n2]).unwrap();
        let g1 = Gemm::new(Transpose::N, Transpose::T, s, n1, k1).layout(Layout::RowMajor);
        let g2 = Gemm::new(Transpose::N, Transpose::T, s, n2, n1).layout(Layout::RowMajor);
        for (g, (a, b, c)) in [(&g1, (&x, &w1, &y1)), (&g2, (&y1, &w2, &y2))] {
            let name = g.kernel_name(a, b, c).unwrap();
            assert!(name.starts_with("gemm_skinny90_"), "{name}");
        }
        for round in 0..3 {
            let (hx, hw1, hw2) = (draw(s * k1, 1.0), draw(n1 * k1, 1.0 / 64.0), draw(n2 * n1, 1.0));
            x.copy_from_slice(&hx).unwrap();
            w1.copy_from_slice(&hw1).unwrap();
            w2.copy_from_slice(&hw2).unwrap();
            y1.copy_from_slice(&vec![f16::NAN; s * n1]).unwrap();
            y2.copy_from_slice(&vec![f16::NAN; s * n2]).unwrap();
            // Back to back on one stream, twice: the second pair overlaps the first's tail too.
            for _ in 0..2 {
                g1.run(&x, &w1, &mut y1).unwrap();
                g2.run(&y1, &w2, &mut y2).unwrap();
            }
            let out = y2.to_vec().unwrap();
            let y1_ref: Vec<Vec<f64>> = (0..s)
                .map(|i| {
                    (0..n1)
                        .map(|j| {
                            let v: f64 = (0..k1)
                                .map(|p| hx[i * k1 + p].to_f64() * hw1[j * k1 + p].to_f64())
                                .sum();
                            f16::from_f64(v).to_f64()
                        })
                        .collect()
                })
                .collect();
            for e in 0..256 {
                let (i, j) = ((e * 5 + round) % s, (e * 7919 + round * 13) % n2);
                let (mut sum, mut abs) = (0.0f64, 0.0f64);
                for p in 0..n1 {
                    let v = y1_ref[i][p] * hw2[j * n1 + p].to_f64();
                    sum += v;
                    abs += v.abs();
                }
                let got = out[i * n2 + j].to_f64();
                let bound = 4e-3 * sum.abs() + 2e-3 * abs + 1e-3;
                assert!(
                    (got - sum).abs() <= bound,
                    "seed {seed:#x}: chain 16x{n1}x{k1} -> 16x{n2}x{n1} round {round}: y2[{i},{j}] = {got}, expected {sum} (bound {bound})"
                );
            }
        }
    }
}
