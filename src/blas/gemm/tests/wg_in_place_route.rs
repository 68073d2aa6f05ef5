//! The route of f16 / bf16 operands aligned only to their element on an H100 (compute
//! capability 9.0, 132 multiprocessors): batches at short k read them in place
//! (`gemm_wgu_<type>_<tile>_<ops>`, `in_place_pays`), everything else copies them aligned first
//! or runs as before; each selftest entry of the in-place kernels picks the kernel it names; and
//! the fuzz family's draw (`random_b16_in_place_case`) reaches every in-place kernel.

use super::super::dispatch::choose_on;
use super::super::wg_in_place::{IN_PLACE_MAX_K, IN_PLACE_MAX_K_NARROW};
use super::super::{Gemm, GemmType, Kernel, SplitK, Tile};
use crate::blas::{MathMode, Transpose};
use crate::selftest::wg_in_place::TILES;

const H100: ((u32, u32), usize) = ((9, 0), 132);

/// The kernel dispatch names for a batch of `batch` products of `dims` in `ops`, each leading
/// dimension of A, B and C `pads` elements longer than its matrix, matrices one after the
/// other, A starting `byte` bytes past a 256-byte boundary; " copied" follows the name when an
/// operand is copied aligned first.
fn route<S: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
    batch: usize,
    [pa, pb, pc]: [usize; 3],
    (kernel, tile): (Kernel, Tile),
    byte: u64,
) -> String {
    let ra = if ops.0 == Transpose::N { m } else { k };
    let rb = if ops.1 == Transpose::N { k } else { n };
    let (ca, cb) = (
        if ops.0 == Transpose::N { k } else { m },
        if ops.1 == Transpose::N { n } else { k },
    );
    let (lda, ldb, ldc) = (ra + pa, rb + pb, m + pc);
    let g = Gemm::<S>::new(ops.0, ops.1, m, n, k)
        .ld(lda, ldb, ldc)
        .math(MathMode::Exact)
        .kernel(kernel)
        .tile(tile)
        .split_k(SplitK::Auto)
        .batched(batch, lda * ca, ldb * cb, ldc * n);
    let plan = g.plan([usize::MAX / 64; 3], None).expect("plan");
    let params = g.params(&plan, [0x1000_0000 + byte, 0x2000_0000, 0x3000_0000], 0);
    choose_on::<S, S>(&g, &plan, &params, H100.0, H100.1, false)
        .map(|c| format!("{}{}", c.name, if c.align.contains(&true) { " copied" } else { "" }))
        .unwrap_or_else(|e| format!("error: {e}"))
}

fn op_pairs() -> [((Transpose, Transpose), &'static str); 4] {
    use Transpose::{N, T};
    [((N, N), "nn"), ((N, T), "nt"), ((T, N), "tn"), ((T, T), "tt")]
}

#[test]
fn every_in_place_selftest_entry_runs_the_kernel_it_names() {
    for (tile, letter, dims) in TILES {
        for (ops, o) in op_pairs() {
            let wg = (Kernel::Wgmma, tile);
            let f16 = route::<half::f16>(ops, dims, 3, [1, 3, 1], wg, 0);
            assert_eq!(f16, format!("gemm_wgu_f16_{letter}_{o}"), "{dims:?}");
            let bf16 = route::<half::bf16>(ops, dims, 3, [1, 3, 1], wg, 0);
            assert_eq!(bf16, format!("gemm_wgu_bf16_{letter}_{o}"), "{dims:?}");
        }
    }
}

#[test]
fn batches_at_short_k_read_unaligned_operands_in_place_and_the_rest_copy() {
    let auto = (Kernel::Auto, Tile::Auto);
    for (ops, o) in op_pairs() {
        // The measured batches: rows not 16 bytes apart, k of one k-tile on 64 x 64, half a
        // k-tile on 128 x 64.
        let name = route::<half::f16>(ops, (97, 56, 25), 236, [0; 3], auto, 0);
        assert!(name.starts_with("gemm_wgu_f16_h_") && name.ends_with(o), "{name}");
        let name = route::<half::bf16>(ops, (181, 54, IN_PLACE_MAX_K), 302, [1, 1, 0], auto, 0);
        assert!(name.starts_with("gemm_wgu_bf16_h_"), "{name}");
        let name = route::<half::f16>(ops, (25, 171, IN_PLACE_MAX_K_NARROW), 106, [1, 1, 0], auto, 0);
        assert!(name.starts_with("gemm_wgu_f16_n_"), "{name}");
        // Past each tile's longest k, and a single product: copied aligned first.
        let name = route::<half::f16>(ops, (97, 56, IN_PLACE_MAX_K + 1), 236, [0; 3], auto, 0);
        assert!(name.starts_with("gemm_wg_f16_") && name.ends_with(" copied"), "{name}");
        let name = route::<half::f16>(ops, (25, 171, IN_PLACE_MAX_K_NARROW + 1), 106, [1, 1, 0], auto, 0);
        assert!(
            name.starts_with("gemm_wg_f16_n_") && name.ends_with(" copied"),
            "{name}"
        );
        let name = route::<half::f16>(ops, (1001, 999, 100), 1, [0; 3], auto, 0);
        assert!(!name.contains("gemm_wgu_"), "{name}");
        // Aligned operands: the TMA reads them, no copy and no in-place kernel.
        let name = route::<half::f16>(ops, (64, 64, 64), 512, [0; 3], auto, 0);
        assert!(name.starts_with("gemm_wg_f16_") && !name.ends_with(" copied"), "{name}");
        // An operand off its element (one byte into an f16): copied, never read in place.
        let name = route::<half::f16>(ops, (97, 56, 25), 236, [0; 3], auto, 1);
        assert!(!name.contains("gemm_wgu_"), "{name}");
        // tf32 has no in-place twin.
        let name = route::<f32>(ops, (97, 56, 25), 236, [1; 3], (Kernel::Wgmma, Tile::Auto), 0);
        assert!(!name.contains("gemm_wgu_"), "{name}");
    }
}

/// The kernel dispatch names for a drawn fuzz case, laid out and called as the fuzz runner lays
/// it out and calls it (`fuzz::case_operands`, `fuzz::case_gemm`; buffers 256-byte aligned).
fn case_route<T: crate::selftest::fuzz::FuzzElement>(case: &crate::selftest::fuzz::GemmCase) -> String {
    use crate::selftest::fuzz::{case_gemm, case_operands};
    let [oa, ob, oc] = case_operands(case);
    let g = case_gemm::<T>(case, [&oa, &ob, &oc]);
    let Ok(plan) = g.plan([usize::MAX / 64; 3], None) else {
        return "(refused)".into();
    };
    let size = std::mem::size_of::<T>() as u64;
    let at = |base: u64, offset: usize| base + offset as u64 * size;
    let addrs = [
        at(0x1000_0000, oa.base),
        at(0x2000_0000, ob.base),
        at(0x3000_0000, oc.base),
    ];
    let params = g.params(&plan, addrs, 0);
    choose_on::<T, T::Scalar>(&g, &plan, &params, H100.0, H100.1, false)
        .map(|c| c.name)
        .unwrap_or_else(|e| format!("error: {e}"))
}

/// The GPU test `gemm_fuzz_b16_in_place` asserts that every in-place kernel ran over its cases
/// (225 per type by default): the draw reaches each of them within 120 cases of each fixed seed
/// here, so that assertion reflects the kernels, not the luck of the draw.
#[test]
fn the_in_place_fuzz_draw_reaches_every_in_place_kernel() {
    use crate::selftest::fuzz::{random_b16_in_place_case, FuzzType};
    use crate::selftest::Rng;
    for seed in [0x5EED_0001u64, 0x2026_1124] {
        for (ty, name) in [(FuzzType::F16, "f16"), (FuzzType::Bf16, "bf16")] {
            let mut rng = Rng::new(seed);
            let ran: std::collections::BTreeSet<String> = (0..120)
                .map(|_| {
                    let case = random_b16_in_place_case(&mut rng, ty);
                    if ty == FuzzType::F16 {
                        case_route::<half::f16>(&case)
                    } else {
                        case_route::<half::bf16>(&case)
                    }
                })
                .collect();
            for t in ["h", "n"] {
                for (_, o) in op_pairs() {
                    let want = format!("gemm_wgu_{name}_{t}_{o}");
                    assert!(ran.contains(&want), "seed {seed:#x}: {want} never chosen in {ran:?}");
                }
            }
        }
    }
}
