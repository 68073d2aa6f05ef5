//! The thin tiles: 16 x 64 (`t`) and 64 x 16 (`h`) for GEMMs with a side of at most
//! [`THIN_MAX`] (a decode step's tokens). Such a product is memory-bound, so the tiles stream the
//! long operand 256 bytes of k per row and stage where the square tiles compute 2-8x the rows
//! that exist: f64 on the sm_90 DMMA kernels (ptx/gemm_dmma90.cu, with 8-byte variants `tu`,
//! `hu` for operands aligned only to their element), f16, bf16 and tf32 on mma.sync
//! (ptx/gemm_tc.cu, with `tu`, `hu` whose k-contiguous operands may start anywhere). Which problems take them, and their shared memory; `dispatch` builds the
//! choice (docs/kernels/gemm-dmma.md, "Thin tiles").

use super::builder::Plan;
use super::params::tiles2;
use super::params::TC_STAGES;
use crate::blas::MathMode;

/// The longest side the thin tiles (`t`, `h` of every tensor-core type) are made for: a decode
/// step's tokens.
pub(crate) const THIN_MAX: usize = 16;

/// The thin mma.sync tile the automatic choice gives an f16, bf16 or tf32 GEMM (`math`
/// [`MathMode::Tf32`] for f32), if any: where it measured faster than wgmma (H100, 2026-11-26,
/// docs/kernels/gemm-dmma.md, "Thin tiles"). `t` (16 x 64) for D's rows at most [`THIN_MAX`] with Y
/// k-contiguous (a column-major decode step, TN or TT: 0.78-1.11x cuBLAS against wgmma's
/// 0.63-0.91x on 4096-28672 outputs; 32000 outputs 1.01-1.03x against 1.08x); `h` (64 x 16) for
/// D's columns at most THIN_MAX when its tiles make 3/4 of a wave (11008 and 28672 outputs:
/// 0.76-0.93x against 0.48-0.67x; 4096 outputs, 64 tiles: 0.57-0.68x against 0.67-0.92x), except
/// tf32 `nn`, whose wgmma kernel takes the problem swapped (0.92-1.08x against 0.85-1.02x).
pub(crate) fn tc_thin(plan: &Plan, type_name: &str, math: MathMode, batch: usize, sms: usize) -> Option<char> {
    let tensor = matches!(type_name, "f16" | "bf16") || (type_name == "f32" && math == MathMode::Tf32);
    if !tensor {
        return None;
    }
    let h_tiles = tiles2(plan.m, plan.n, (64, THIN_MAX)).saturating_mul(batch);
    let tf32_nn = type_name == "f32" && plan.ops == "nn";
    tc_thin_shape(plan).filter(|&t| t == 't' || (h_tiles * 4 >= sms * 3 && !tf32_nn))
}

/// The mma.sync thin tile `plan`'s shape fits, whatever the tile count: `t` (16 x 64) for D's
/// rows at most [`THIN_MAX`] with Y k-contiguous, `h` (64 x 16) for D's columns at most
/// THIN_MAX. [`tc_thin`] adds when the automatic choice takes it; the f16 / bf16 k split
/// through partial products counts these tiles.
pub(crate) fn tc_thin_shape(plan: &Plan) -> Option<char> {
    if plan.m <= THIN_MAX && plan.m <= plan.n && plan.ops.starts_with('t') {
        Some('t')
    } else if plan.n <= THIN_MAX && plan.n < plan.m {
        Some('h')
    } else {
        None
    }
}

/// The variant of a thin mma.sync kernel (`gemm_tc_<type>_{t,h}_<ops>`) whose k-contiguous
/// operands may start anywhere, any leading dimension and batch stride (ptx/gemm_tc.cu, `tu` and
/// `hu`: rows read 16 bytes at a time from their start rounded down), if `unaligned` (X, Y)
/// are all k-contiguous under the name's ops; same launch as the aligned kernel.
///
/// ```ignore
/// assert_eq!(element_variant("gemm_tc_tf32_t_tn", [false, true]).as_deref(), Some("gemm_tc_tf32_tu_tn"));
/// assert_eq!(element_variant("gemm_tc_f16_h_nn", [false, true]), None); // Y is not k-contiguous
/// ```
pub(crate) fn element_variant(name: &str, unaligned: [bool; 2]) -> Option<String> {
    let rest = name.strip_prefix("gemm_tc_")?;
    let (ty, rest) = rest.split_once('_')?;
    let (tile, ops) = rest.split_once('_')?;
    let (xk, yk) = (ops.ends_with('n'), ops.starts_with('t'));
    let fits = matches!(ty, "f16" | "bf16" | "tf32") && matches!(tile, "t" | "h") && ops.len() == 2;
    let takes = (unaligned[0] || unaligned[1]) && (!unaligned[0] || xk) && (!unaligned[1] || yk);
    (fits && takes).then(|| format!("gemm_tc_{ty}_{tile}u_{ops}"))
}

/// The dimensions of the mma.sync thin tile `plan`'s shape fits ([`tc_thin_shape`]): 16 x 64
/// for `t`, 64 x 16 for `h`.
pub(crate) fn tc_thin_tile(plan: &Plan) -> Option<(usize, usize)> {
    tc_thin_shape(plan).map(|t| if t == 't' { (THIN_MAX, 64) } else { (64, THIN_MAX) })
}

/// Dynamic shared memory of a thin mma.sync tile (ptx/gemm_tc.cu, `tc_slot`): 256 bytes of k
/// per stage, [`TC_STAGES`] stages, each operand's slot holding either layout of its tile.
pub(crate) fn tc_smem((bm, bn): (usize, usize), type_name: &str) -> u32 {
    let (bkb, sz) = (256, if type_name == "tf32" { 4 } else { 2 });
    let slot = |rows: usize| (rows * (bkb + 16)).max(bkb / sz * (rows + 8) * sz);
    TC_STAGES * (slot(bm) + slot(bn)) as u32
}

#[cfg(test)]
mod element_tests {
    use super::element_variant;

    #[test]
    fn the_element_variants_take_only_k_contiguous_unaligned_operands() {
        assert_eq!(
            element_variant("gemm_tc_tf32_t_tn", [false, true]).as_deref(),
            Some("gemm_tc_tf32_tu_tn")
        );
        assert_eq!(
            element_variant("gemm_tc_bf16_h_tn", [true, true]).as_deref(),
            Some("gemm_tc_bf16_hu_tn")
        );
        // nn: X is k-contiguous, Y is not.
        assert_eq!(
            element_variant("gemm_tc_f16_h_nn", [true, false]).as_deref(),
            Some("gemm_tc_f16_hu_nn")
        );
        assert_eq!(element_variant("gemm_tc_f16_h_nn", [false, true]), None);
        // tt: Y only.
        assert_eq!(element_variant("gemm_tc_f16_t_tt", [true, false]), None);
        assert_eq!(
            element_variant("gemm_tc_f16_t_tt", [false, true]).as_deref(),
            Some("gemm_tc_f16_tu_tt")
        );
        // Not a thin mma.sync tile.
        assert_eq!(element_variant("gemm_tc_f16_l_tn", [true, true]), None);
        assert_eq!(element_variant("gemm_dmma90_f64_t_tn", [true, true]), None);
        assert_eq!(element_variant("gemm_tc_tf32_tu_tn", [true, true]), None);
        // Nothing unaligned, or nt (no k-contiguous operand): no variant.
        assert_eq!(element_variant("gemm_tc_tf32_t_tn", [false, false]), None);
        assert_eq!(element_variant("gemm_tc_tf32_t_nt", [true, false]), None);
    }
}
