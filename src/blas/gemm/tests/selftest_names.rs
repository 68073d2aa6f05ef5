//! `cudrv selftest` counts a kernel as checked when its sweep entry passes, by the name the
//! entry gives it: each entry must pick that kernel. The f64 DMMA sweep (`DMMA90_SWEEP`, its
//! 8-byte variants on leading dimensions one element longer) and the f32 CUDA-core `u` and `x`, on an
//! H100 (compute capability 9.0, 132 multiprocessors), for every op pair.

use super::super::dispatch::choose_on;
use super::super::{Gemm, GemmType, Kernel, SplitK, Tile};
use crate::blas::{MathMode, Transpose};
use crate::selftest::sweeps::{element_pads, sweep_shape, DMMA90_SWEEP, ELEMENT_OPS};

const H100: ((u32, u32), usize) = ((9, 0), 132);

/// The kernel a sweep entry runs for `ops`, with the selftest's leading dimensions (each `pad`
/// elements longer than its matrix) and 256-byte aligned buffers.
fn picked<S: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (tile, split, letter, pad): (Tile, SplitK, &str, usize),
    kernel: Kernel,
    math: MathMode,
) -> String {
    picked_pads::<S>(ops, (tile, split, letter), [pad; 3], kernel, math)
}

/// As [`picked`], with the pads of A, B and C apart.
fn picked_pads<S: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (tile, split, letter): (Tile, SplitK, &str),
    [pa, pb, pc]: [usize; 3],
    kernel: Kernel,
    math: MathMode,
) -> String {
    let (m, n, k) = sweep_shape(letter);
    let ra = if ops.0 == Transpose::N { m } else { k };
    let rb = if ops.1 == Transpose::N { k } else { n };
    let g = Gemm::<S>::new(ops.0, ops.1, m, n, k)
        .ld(ra + pa, rb + pb, m + pc)
        .math(math)
        .kernel(kernel)
        .tile(tile)
        .split_k(split);
    let plan = g.plan([usize::MAX / 64; 3], None).expect("plan");
    let params = g.params(&plan, [0x1000_0000, 0x2000_0000, 0x3000_0000], 0);
    choose_on::<S, S>(&g, &plan, &params, H100.0, H100.1, false)
        .map(|c| c.name)
        .unwrap_or_else(|e| format!("error: {e}"))
}

fn op_pairs() -> [((Transpose, Transpose), &'static str); 4] {
    use Transpose::{N, T};
    [((N, N), "nn"), ((N, T), "nt"), ((T, N), "tn"), ((T, T), "tt")]
}

#[test]
fn every_dmma90_sweep_entry_runs_the_kernel_it_names() {
    for entry in DMMA90_SWEEP {
        for (ops, o) in op_pairs() {
            let name = picked::<f64>(ops, entry, Kernel::TensorCore, MathMode::Exact);
            assert_eq!(name, format!("gemm_dmma90_f64_{}_{o}", entry.2), "{entry:?}");
            // Exact f32 on the same tiles (gemm_dmma90_f32): pad 1 makes every f32 leading
            // dimension odd, which its 4-byte variants read in place as well.
            let name = picked::<f32>(ops, entry, Kernel::TensorCore, MathMode::Exact);
            assert_eq!(name, format!("gemm_dmma90_f32_{}_{o}", entry.2), "{entry:?}");
        }
    }
}

#[test]
fn the_f32_simt_sweeps_automatic_and_broad_entries_run_u_and_x() {
    for (tile, letter) in [(Tile::Auto, "u"), (Tile::Broad, "x")] {
        for (ops, o) in op_pairs() {
            let name = picked::<f32>(ops, (tile, SplitK::Auto, letter, 0), Kernel::Simt, MathMode::Exact);
            assert_eq!(name, format!("gemm_simt_f32_{letter}_{o}"));
        }
    }
}

#[test]
fn every_thin_element_check_runs_the_kernel_it_names() {
    for letter in ["tu", "hu"] {
        for (ops, o) in ELEMENT_OPS {
            let entry = (Tile::Thin, SplitK::Auto, letter);
            let pads = element_pads(ops);
            let f16 = picked_pads::<half::f16>(ops, entry, pads, Kernel::MmaSync, MathMode::Exact);
            let bf16 = picked_pads::<half::bf16>(ops, entry, pads, Kernel::MmaSync, MathMode::Exact);
            let tf32 = picked_pads::<f32>(ops, entry, pads, Kernel::MmaSync, MathMode::Tf32);
            assert_eq!(f16, format!("gemm_tc_f16_{letter}_{o}"));
            assert_eq!(bf16, format!("gemm_tc_bf16_{letter}_{o}"));
            assert_eq!(tf32, format!("gemm_tc_tf32_{letter}_{o}"));
        }
    }
}

#[test]
fn the_plain_module_wgmma_sweep_entries_run_their_tiles() {
    // The tiles only the plain modules hold: 128 x 192, 64 x 64 and 64 x 96.
    for (tile, letter) in [(Tile::Broad, "b"), (Tile::Half, "h"), (Tile::Medium, "m")] {
        let entry = (tile, SplitK::Auto, letter, 0);
        for (ops, o) in op_pairs() {
            let f16 = picked::<half::f16>(ops, entry, Kernel::Wgmma, MathMode::Exact);
            assert_eq!(f16, format!("gemm_wg_f16_{letter}_{o}"));
            let bf16 = picked::<half::bf16>(ops, entry, Kernel::Wgmma, MathMode::Exact);
            assert_eq!(bf16, format!("gemm_wg_bf16_{letter}_{o}"));
            // tf32: `nn` runs the transposed problem's kernel of that name, `nt` packs B first
            // and runs `tt`.
            let tf32 = picked::<f32>(ops, entry, Kernel::Wgmma, MathMode::Tf32);
            assert_eq!(
                tf32,
                format!("gemm_wg_tf32_{letter}_{}", if o == "nt" { "tt" } else { o })
            );
        }
    }
}
