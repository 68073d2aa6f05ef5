//! A k split through partial products: a GEMM whose output tiles are too few to fill the GPU
//! and whose k is long (64 x 64 x 65536: one to four tiles, however they are cut) runs as
//! `parts` GEMMs over consecutive ranges of k. They are one strided batch of the ordinary kernels
//! (the batch stride steps through k), so every kernel family, tile and alignment rule applies
//! unchanged; each writes its partial product (alpha 1, beta 0, no bias, no activation) in the
//! accumulator type into a scratch buffer, and `gemm_partials_<t>` (ptx/gemm_partials.cu) adds
//! them in a fixed order and applies the GEMM's epilogue. f32 (also as tf32) and f64 keep their
//! partial sums in their own type; f16 and bf16 keep them in f32 (rounding each to 16 bits would
//! lose the split's precision): their parts run on the wgmma kernels (ptx/gemm_wg.cuh; compute
//! capability 9.0, operands the TMA can read) or else the mma.sync kernels (ptx/gemm_tc.cu),
//! which write their f32 accumulators to the scratch when the parameter block's `act` is
//! [`ACT_PARTIAL_F32`], and the sum is rounded once, at the end.

use std::mem::size_of;
use std::sync::Arc;

use super::builder::{Gemm, Plan};
use super::choice::Choice;
use super::dispatch::choose;
use super::dmma90::f32_on_f64_cores;
use super::launch::run_choice;
use super::params::{tiles2, GemmParams, ACT_PARTIAL_F32};
use super::thin::{tc_thin, tc_thin_tile, THIN_MAX};
use super::wg_tiles::wg_auto_tile;
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::memory_class::fast_memory;
use crate::blas::{Activation, MathMode};
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceSlice};
use crate::stream::Stream;

/// Most parts a split through partial products has (forced or automatic).
pub(crate) const PARTIALS_MAX: usize = 256;
/// Threads per block of `gemm_partials_<t>`: small blocks spread a short sum over more
/// multiprocessors.
const SUM_BLOCK: usize = 128;
/// Most lanes of the parts per 16-byte chunk of the sum in `gemm_partials_<t>`.
const SUM_LANES: usize = 8;
/// Every part but the last keeps a multiple of this much of k, so that the parts of a
/// k-contiguous operand start on 16-byte bounds when the operand does (f32 and f64).
const KPER_STEP: usize = 8;

/// A GEMM split through partial products, before anything is queued: the parts, their share of
/// k, the scratch's row length and the chosen kernels of the parts.
#[derive(Clone, Debug)]
pub(crate) struct PartialsRoute {
    /// Parts (>= 2): `full` of the same share of k (a multiple of 8), then (when `full < parts`)
    /// one over the rest.
    parts: usize,
    full: usize,
    /// Elements per row of a partial product in the scratch: n rounded up to a multiple of 4 (16
    /// bytes of f32), which `gemm_partials_<t>`'s 16-byte loads of f32 and f64 chunks rely on.
    ldw: usize,
    /// The kernels' problem of the `full` batched parts and of the last, shorter one.
    plans: [Plan; 2],
    /// The choice for the batched parts, and for the last part when it is shorter.
    choices: [Arc<Choice>; 2],
}

impl PartialsRoute {
    /// `<the parts' kernel>/partials<parts>`, as [`Gemm::kernel_name`] reports it.
    pub(crate) fn name<T: GemmType>(&self) -> String {
        format!("{}/partials{}", self.choices[0].reported_name::<T>(), self.parts)
    }
}

/// Whether `T` keeps its partial sums in its own type (f32, f64); f16 and bf16 keep them in f32.
fn own_accumulator<T: GemmType>() -> bool {
    matches!(T::NAME, "f32" | "f64")
}

/// Whether `T` can be split through partial products at all: every type but f16 and bf16 before
/// compute capability 8.0 (their parts need the mma.sync kernels' f32 output).
fn splittable<T: GemmType>(cc: (u32, u32)) -> bool {
    own_accumulator::<T>() || (matches!(T::NAME, "f16" | "bf16") && cc >= (8, 0))
}

/// Bytes of one partial sum in the scratch: f32 for f16 and bf16.
fn scratch_size<T: GemmType>() -> usize {
    if own_accumulator::<T>() {
        size_of::<T>()
    } else {
        4
    }
}

/// The automatic part count, or `None` to leave the GEMM to the other kernels. Fitted to forced
/// splits on the H100 (docs/kernels/gemm-common.md, "Partial products"): the best count makes about
/// two blocks per multiprocessor of the parts' own tiles, so it falls as the output tiles grow.
/// f64 (the DMMA tiles), and exact f32 where it runs on them (`f64_cores`): `2 sms / t` rounded
/// down to a power of two, at most 64, where `t` is the 64 x 64 tiles of the output; taken from 4
/// parts, and on compute capability 9.0 (`cc`) for k from [`DMMA_MIN_K`] to [`AUTO_MIN_K`] from
/// [`DMMA_SHORT_LEAST`]. f32 on the CUDA cores: the same, at most 128, taken from 16 parts (at
/// 4-8 its own 128 x 64 split is as fast or faster); with both sides at least 256 and k from
/// 8192, `2 sms / t` over the 128 x 128 tiles rounded to the nearest power of two, at most 128
/// and k / 1024, taken from 4 parts. tf32 (the wgmma kernels, which stay resident and so want
/// fewer parts as the tiles grow):
/// `sms / 2 / t^(2/3)` rounded to a power of two, at most 64, where `t` is the 128 x 128
/// tiles; taken from 8 parts when k >= 16384, from 32 below (in 4 parts it lost on 16-token
/// decode steps such as 8192 x 16 x 28672), and 8 parts where that comes to 4 with k >= 16384
/// and both sides at least 128 (1024 x 1024 x 32768: 1.17x cuBLAS against 0.87x unsplit). f16
/// and bf16 (the mma.sync kernels; H200, 2026-11-26, docs/kernels/gemm-mma-sync.md, "f16 and bf16
/// through partial products"): f64's count over the parts' tiles (the thin tiles where a side
/// is at most [`THIN_MAX`], else 64 x 64), taken from 4 parts (8 for 64 x 16 tiles), and
/// without a short side only up to [`HALF_MAX_TILES`] tiles. Every part keeps at least 128 of
/// k, and k is at least 4096 (2048 for the DMMA tiles; the measured range: up to 65536).
pub(crate) fn auto_parts<T: GemmType, S>(
    g: &Gemm<S>,
    plan: &Plan,
    sms: usize,
    f64_cores: bool,
    cc: (u32, u32),
) -> Option<usize> {
    // f64, and exact f32 on the f64 tensor cores (`f64_cores`), whose parts run f64's tiles.
    let dmma = T::NAME == "f64" || (T::NAME == "f32" && g.math == MathMode::Exact && f64_cores);
    // From DMMA_MIN_K on the sm_90 DMMA tiles only, where it was measured.
    let min_k = if dmma && cc >= (9, 0) { DMMA_MIN_K } else { AUTO_MIN_K };
    if !automatic(g, plan, min_k) {
        return None;
    }
    // The power of two at or below x, or nearest to it (0 below 1).
    let pow2 = |x: f64, nearest: bool| {
        if x < 1.0 {
            0
        } else if nearest {
            1usize << (x.log2().round() as u32)
        } else {
            1usize << (x.log2().floor() as u32)
        }
    };
    let pow2_below = |x: f64| pow2(x, false);
    let two_per_sm = |tile| 2.0 * sms as f64 / tiles2(plan.m, plan.n, tile).max(1) as f64;
    let tf32 = T::NAME == "f32" && g.math == MathMode::Tf32;
    let tf32_thin = tf32 && tc_thin(plan, "f32", g.math, g.batch, sms).is_some();
    let (parts, least) = match (T::NAME, g.math) {
        // The DMMA tiles: from 4 parts, or below AUTO_MIN_K from DMMA_SHORT_LEAST.
        _ if dmma => {
            let least = if plan.k < AUTO_MIN_K { DMMA_SHORT_LEAST } else { 4 };
            (pow2_below(two_per_sm((64, 64))).min(64), least)
        }
        // f32 with both sides at least 256 and k from 8192: the parts' 128 x 128 tiles two per
        // SM, rounded to a power of two, each part keeping at least 1024 of k (H100,
        // 2026-11-27, TFLOP/s: 256 x 256 x 65536 in 64 parts 37.2 -> 41.1, 512 x 512 x 16384
        // in 16 39.0 -> 41.9, 768 x 768 x 16384 in 8 34.8 -> 38.6, 512 x 512 x 8192 in 8 29.6 ->
        // 34.8; 256 x 256 x 16384 in 32 parts of 512 lost 4% to 16 of 1024;
        // docs/kernels/gemm-simt.md, "f32: partial products by the parts' tiles").
        ("f32", MathMode::Exact) if plan.m.min(plan.n) >= 256 && plan.k >= 8192 => {
            let parts = pow2(two_per_sm((128, 128)), true);
            (parts.min(pow2_below((plan.k / 1024) as f64)).min(128), 4)
        }
        ("f32", MathMode::Exact) => (pow2_below(two_per_sm((64, 64))).min(128), 16),
        // tf32 on the thin tiles (a decode step): as f16 below, from 4 parts, so only where the
        // tiles fill at most half the SMs (4096 outputs of 16 tokens, 64 tiles, in 4 parts:
        // 0.799 -> 0.848x cuBLAS at k 4096, 0.820 -> 0.948x at 11008, 0.788 -> 0.959x at 14336;
        // 96 tiles in 2 parts lost, 0.959 -> 0.793x; H100, 2026-11-27, docs/kernels/gemm-mma-sync.md,
        // "Thin mma.sync tiles on unaligned operands").
        //
        // With more thin tiles than SMs, 4 parts where they cut the busiest SM's excess share
        // (its blocks over the mean) by at least a fifth (H100, 2026-11-28, 16 tokens, TN, k 4096
        // unless noted, 4 parts against unsplit, x cuBLAS: 136 tiles 0.82 -> 0.92, 172 0.82 ->
        // 0.85 and 0.79 -> 0.87 at an odd offset, 172 at k 11008 0.80 -> 0.90, 192 0.89 -> 0.91,
        // 320 0.88 -> 0.94; left unsplit: 208 0.93 (0.91 in 4), 264 1.01 (0.92), 344 0.89 (0.97),
        // 448 1.05 (0.99); docs/kernels/gemm-mma-sync.md, "tf32 decode steps over one to three waves").
        ("f32", MathMode::Tf32) if tf32_thin => {
            let tile = tc_thin_tile(plan).unwrap_or((64, 64));
            let t = tiles2(plan.m, plan.n, tile).max(1);
            let excess = |parts: usize| {
                let mean = (t * parts) as f64 / sms.max(1) as f64;
                mean.ceil() / mean
            };
            if t > sms && excess(1) >= 1.2 * excess(4) {
                (4, 4)
            } else {
                (pow2_below(two_per_sm(tile)).min(64), 4)
            }
        }
        ("f32", MathMode::Tf32) => {
            let t = tiles2(plan.m, plan.n, (128, 128)).max(1) as f64;
            let parts = pow2(sms as f64 / 2.0 / t.powf(2.0 / 3.0), true);
            // Where the count comes to 4 with k >= 16384 (41-112 tiles) and both sides at least
            // a tile, 8 parts: 1024 x 1024 x 32768 (64 tiles) ran 0.87x cuBLAS unsplit, 1.02x in
            // 4 parts, 1.17-1.18x in 8 and 1.06x in 16 (H100, 2026-11-26 and 11-27;
            // docs/kernels/gemm-wgmma.md, "tf32 in 8 parts where the formula says 4"). Decode steps
            // keep their rule (8192 x 16 x 28672 lost in 4 parts).
            let square = plan.m.min(plan.n) >= 128;
            let parts = if parts == 4 && plan.k >= 16384 && square {
                8
            } else {
                parts
            };
            (parts.min(64), 8)
        }
        ("f16" | "bf16", _) => {
            let tile = tc_thin_tile(plan);
            let t = match tile {
                Some(tile) => tiles2(plan.m, plan.n, tile),
                None => {
                    let t = tiles2(plan.m, plan.n, (64, 64));
                    if plan.m.min(plan.n) > THIN_MAX && t > HALF_MAX_TILES {
                        return None;
                    }
                    t
                }
            };
            // D's columns short (64 x 16 tiles): wgmma's own split is faster in 4 parts (16 x
            // 4096 x 4096: 37.0 against 30.1 TFLOP/s), ties in 8 and loses in 16 (16 x 1024 x
            // 4096: 11.1 against 15.0).
            let least = if tile == Some((64, THIN_MAX)) { 8 } else { 4 };
            (pow2_below(2.0 * sms as f64 / t.max(1) as f64).min(64), least)
        }
        _ => return None,
    };
    let parts = parts.min(plan.k / AUTO_MIN_KPER);
    // tf32 below 32 parts lost to the wgmma kernels' own split at k < 16384 (512 x 512 x 4096
    // and 1000 x 200 x 12000 in 8 parts: 15% and 9% slower; 16-token decode steps).
    if tf32 && parts < 32 && plan.k < 16384 && !tf32_thin {
        return None;
    }
    (parts >= least).then_some(parts)
}

/// The automatic split of an f16 / bf16 GEMM that [`auto_parts`] leaves alone because it has
/// more than [`HALF_MAX_TILES`] tiles of 64 x 64 with both sides longer than [`THIN_MAX`], on
/// the wgmma kernels (compute capability 9.0; the caller checks): up to
/// [`WG_PARTIALS_MAX_TILES`] tiles of 128 x 128 (more than 12 only from k = 16384), each part
/// keeping at least [`WG_PARTIALS_MIN_KPER`] of k, a power of two from 8 to 32 (the measured
/// range), counting the blocks on the tile the parts' batch takes (`wg_auto_tile`) unless that
/// is 128 x 256 or 128 x 192. Sides that are multiples of 64: the fewest parts whose blocks
/// fill 0.45 of a wave and at most one, else 8 parts. Other sides, only from k =
/// [`WG_PARTIALS_RAGGED_MIN_K`]: the most parts whose blocks fill more than half a wave and at
/// most one. The parts read their operands fewer times over than the wgmma kernels' own split
/// of the 128 x 64 tile in 16 parts, and hand off through the scratch rather than by one block
/// per tile reading every part. Measured on the H100 (2026-11-28, docs/kernels/gemm-wgmma.md, "f16
/// and bf16 partial products: fewer parts, more tiles"), f16 NN, x cuBLAS: 256 x 256 x 65536
/// 0.82 in 32 parts (the rule before) -> 0.87-0.91 in 8, 256 x 128 x 65536 0.88 (32) -> 0.91
/// (16), 128 x 256 x 32768 1.01 (32) -> 1.06 (16), 192 x 320 x 65536 0.84 (16) -> 0.91 (8),
/// 256 x 512 x 65536 0.89 (16) -> 0.92 (8), 512 x 256 x 32768 0.80 (16) -> 0.86 (8), 384 x 256
/// x 65536 0.88 (16) and 0.86 (8); bf16 alike. Before that, on an H200 (2026-11-27, "f16 and
/// bf16 through partial products on wgmma"), the split against the wgmma kernels' own: 256 x
/// 256 x 65536 0.60x -> 0.83x cuBLAS, 256 x 128 x 65536 0.56x -> 0.77x, 384 x 256 x 65536 0.65x
/// -> 0.80x, 200 x 200 x 65536 121 -> 188 TFLOP/s.
pub(crate) fn auto_wgmma_parts<S>(g: &Gemm<S>, plan: &Plan, type_name: &str, sms: usize, fast: bool) -> Option<usize> {
    if !automatic(g, plan, AUTO_MIN_K) || plan.m.min(plan.n) <= THIN_MAX {
        return None;
    }
    let (m, n) = (plan.m, plan.n);
    // Sides that end inside a 64-wide tile only from k = 65536: at shorter k the wgmma
    // kernels' own split was faster (200 x 120 x 40000: 79 against 70 TFLOP/s, 300 x 200 x
    // 30000: 77 against 61-66; 150 x 250 x 50000 tied; 200 x 200 x 65536: 121 -> 188).
    let ragged = m % 64 != 0 || n % 64 != 0;
    if !ragged && plan.k >= WG_PARTIALS_MID_MIN_K {
        if let Some(parts) = mid_parts(tiles2(m, n, (128, 128)), plan.k, sms) {
            return Some(parts);
        }
    }
    if tiles2(m, n, (64, 64)) <= HALF_MAX_TILES || tiles2(m, n, (128, 128)) > WG_PARTIALS_MAX_TILES {
        return None;
    }
    if ragged && plan.k < WG_PARTIALS_RAGGED_MIN_K {
        return None;
    }
    // More than WG_PARTIALS_FEW_TILES tiles only from k = WG_PARTIALS_MANY_TILES_MIN_K (the
    // measured range).
    let wide = tiles2(m, n, (128, 128)) > WG_PARTIALS_FEW_TILES;
    if wide && plan.k < WG_PARTIALS_MANY_TILES_MIN_K {
        return None;
    }
    // On fast memory (blas/memory_class.rs), sides that are multiples of 128: first the fewest parts
    // whose blocks on the 128 x 128 tile fill 0.45 of a wave and at most one. H200, 2026-11-28
    // 12:25 UTC, x cuBLAS against the rule below in one run, two rounds, f16 / bf16 NN: 256 x
    // 256 x 65536 0.75 -> 0.85 / 0.75 -> 0.82 (32 parts against 64 x 64 in 8), 384 x 256 x
    // 65536 0.72 -> 0.87 (16 against 128 x 64 in 8), 256 x 512 x 65536 0.81 -> 0.92, 512 x 256
    // x 32768 0.79 -> 0.84 / 0.77 -> 0.83; TN alike but 384 x 256 x 65536, 0.93 -> 0.89 (where
    // the rule below takes the 64 x 96 tile). 192 x 320 x 65536 (half-empty 128-row tiles) lost
    // 2-8% and keeps the rule below. On the H100 (2026-11-28 00:30 UTC) these counts lost 2-9%
    // on three of the four (docs/kernels/gemm-wgmma.md, "f16 and bf16 partial products: fewer
    // parts, more tiles").
    if fast && m % 128 == 0 && n % 128 == 0 {
        let mut parts = 8;
        while parts <= 32 && plan.k / parts >= WG_PARTIALS_MIN_KPER {
            let (letter, tile) = wg_auto_tile(type_name, (m, n), parts, plan.k / parts, sms);
            let units = tiles2(m, n, tile) * parts;
            if letter == 'l' && units <= sms && units * 20 >= sms * 9 {
                return Some(parts);
            }
            parts *= 2;
        }
    }
    let mut best = None;
    let mut parts = 8;
    while parts <= 32 && plan.k / parts >= WG_PARTIALS_MIN_KPER {
        let (letter, tile) = wg_auto_tile(type_name, (m, n), parts, plan.k / parts, sms);
        let units = tiles2(m, n, tile) * parts;
        if !matches!(letter, 'w' | 'b') && units <= sms {
            // Sides that are multiples of 64: the fewest parts whose blocks fill 0.45 of a wave.
            if !ragged && units * 20 >= sms * 9 {
                return Some(parts);
            }
            if units * 2 > sms {
                best = Some(parts);
            }
        }
        parts *= 2;
    }
    // More than WG_PARTIALS_FEW_TILES tiles (to WG_PARTIALS_MAX_TILES): 8 parts even where
    // their blocks make more than a wave (H100, 2026-11-28, f16 NN, x cuBLAS against the
    // wgmma kernels' own split: 512 x 512 x 32768 0.72 -> 0.88-0.91, 640 x 512 x 16384 0.70 ->
    // 0.80, 768 x 512 x 16384 0.60 -> 0.82, 640 x 640 x 16384 0.61 -> 0.76, 640 x 512 x 32768
    // 0.79 -> 0.87).
    if best.is_none() && wide && !ragged && plan.k / 8 >= WG_PARTIALS_MIN_KPER {
        return Some(8);
    }
    best
}

/// The split of an f16 / bf16 GEMM of `tiles` 128 x 128 output tiles over k (at least
/// [`WG_PARTIALS_MID_MIN_K`], sides multiples of 64: the caller checks) between
/// [`WG_PARTIALS_MAX_TILES`] and a wave: 2 parts (4 from k = 65536) where 2 parts' blocks make
/// 0.7 to 1.5 waves; where they make fewer, 4 parts of at least [`MID_FOUR_MIN_KPER`] of k
/// where 4 parts' blocks make 0.7 to 1.5 waves. Against the wgmma kernels' own split of the 128
/// x 128 tile in 2 (64-81 tiles) or the unsplit tile (80-96), which leave more than a quarter of
/// the SMs idle or keep a partial tile's hand-off on each block.
///
/// H200, 2026-12-02 23:46 UTC, f16 / bf16, NN and TN, TFLOP/s, the rule before -> 2 parts
/// (`bench gemm --splits auto,p2,p3,p4 --trials 5`): 1024 x 1024 x 32768 (64 tiles) 691 -> 689 /
/// 577-610 -> 712-719, 1152 x 1152 x 32768 (81) 566 -> 647-648 / 568-570 -> 663, 1280 x 1024 x
/// 16384 (80) 536-538 -> 575-577 / 537-541 -> 589, 1536 x 1024 x 32768 (96) 631-636 -> 718-719 /
/// 656 -> 744-746, 1536 x 1024 x 16384 621 -> 643 / 642 -> 665, 1024 x 1024 x 16384 585-620 ->
/// 606-611 / 569-599 -> 621-625, 1024 x 768 x 32768 (48) 544-575 -> 572-577 / 428-594 ->
/// 587-589; 1024 x 1024 x 65536 in 4 parts 645-723 -> 746 / 611-625 -> 781-782 (2 parts:
/// 725-759). 2048 x 1024 x 32768 (128; 2 parts 3-4% slower than unsplit) is left alone. 3 parts
/// ran 0.35-0.89x cuBLAS everywhere: not a count to take.
///
/// H100, 2026-12-07 08:32 UTC (`--splits auto,p2,p4 --trials 5`, the rule before was this one
/// on fast memory only), x cuBLAS, the unsplit choice -> 2 parts, f16 NN / TN, then bf16 NN / TN
/// where both are given: 1024 x 1024 x 32768 0.891 -> 0.961 / 0.764 -> 0.955, 0.845 -> 0.961 /
/// 0.746 -> 0.958; 1024 x 1024 x 16384 0.903 -> 0.939 / 0.832 -> 0.930, 0.776 -> 0.917 / 0.801
/// -> 0.921; f16 1152 x 1152 x 32768 0.895 -> 1.003 / 0.816 -> 0.916; f16 1536 x 1024 x 32768
/// 0.866 -> 0.981 / 0.877 -> 0.995; f16 1024 x 768 x 32768 0.699 -> 0.830 / 0.605 -> 0.820; f16
/// 1280 x 1024 x 16384 TN 0.768 -> 0.807; f16 1024 x 1024 x 65536 in 4 parts 0.861 -> 0.976 /
/// 0.735 -> 0.989 (2 parts 0.953 / 0.970); bf16 1536 x 1024 x 16384 NN within 1%. 768 x 768 x
/// 32768 (36 tiles, 2 parts' 72 blocks 0.55 of a wave) in 4 parts 0.738 -> 0.868 / 0.715 ->
/// 0.831, 0.747 -> 0.857 / 0.698 -> 0.825, where 2 parts lost 1-4% (as on the H200).
fn mid_parts(tiles: usize, k: usize, sms: usize) -> Option<usize> {
    let fills = |parts: usize| {
        let units = parts * tiles;
        units * 10 >= sms * 7 && units * 2 <= sms * 3
    };
    if tiles <= WG_PARTIALS_MAX_TILES {
        None
    } else if fills(2) {
        Some(if k >= 65536 { 4 } else { 2 })
    } else if fills(4) && k / 4 >= MID_FOUR_MIN_KPER {
        Some(4)
    } else {
        None
    }
}

/// The least k a part of [`mid_parts`]'s split in 4 keeps (the measured 768 x 768 x 32768).
const MID_FOUR_MIN_KPER: usize = 8192;

/// The least k from which [`mid_parts`] splits.
const WG_PARTIALS_MID_MIN_K: usize = 16384;

/// Most 128 x 128 output tiles of an f16 / bf16 GEMM [`auto_wgmma_parts`] splits by the rules
/// for few tiles (more: [`mid_parts`]).
const WG_PARTIALS_MAX_TILES: usize = 25;
/// Most 128 x 128 output tiles [`auto_wgmma_parts`] splits at any k from 4096 (more only from
/// [`WG_PARTIALS_MANY_TILES_MIN_K`]).
const WG_PARTIALS_FEW_TILES: usize = 12;
/// The least k for which [`auto_wgmma_parts`] splits more than [`WG_PARTIALS_FEW_TILES`] tiles.
const WG_PARTIALS_MANY_TILES_MIN_K: usize = 16384;
/// The least k for which [`auto_wgmma_parts`] splits a GEMM whose sides are not multiples of 64.
const WG_PARTIALS_RAGGED_MIN_K: usize = 65536;
/// The least k a part of [`auto_wgmma_parts`]'s split keeps.
const WG_PARTIALS_MIN_KPER: usize = 1024;

/// Most 64 x 64 output tiles an f16 / bf16 GEMM with both sides longer than [`THIN_MAX`] has
/// for the automatic choice to split it through partial products on the mma.sync kernels: more
/// go to [`auto_wgmma_parts`] (16 tiles, 256 x 256 x 65536: 0.40x cuBLAS in 16 parts on 64 x 64
/// mma.sync tiles against 0.58x on wgmma's own split; 4 tiles, 128 x 128 x 65536: 0.77x in 64
/// parts against 0.56x).
const HALF_MAX_TILES: usize = 4;

/// Whether the automatic choice may split `g` through partial products at all: kernel family
/// and tile left to it, and k at least `min_k` ([`AUTO_MIN_K`], or [`DMMA_MIN_K`] for the DMMA
/// tiles' rule).
fn automatic<S>(g: &Gemm<S>, plan: &Plan, min_k: usize) -> bool {
    g.kernel == Kernel::Auto && g.tile == Tile::Auto && plan.k >= min_k
}

/// The least k the automatic choice splits through partial products (f64 and exact f32 on the
/// f64 tensor cores of compute capability 9.0: [`DMMA_MIN_K`]).
const AUTO_MIN_K: usize = 4096;
/// The least k the automatic choice splits f64 (and exact f32 on the f64 tensor cores) through
/// partial products, below [`AUTO_MIN_K`] in at least [`DMMA_SHORT_LEAST`] parts: that is where
/// the 64 x 64 output tiles number at most 16, and the DMMA kernels' own split of the 32 x 32
/// tile in 2 (`u2`) leaves most multiprocessors idle. H200, 2026-12-03 (docs/kernels/gemm-dmma.md,
/// "f64 and f32 on the DMMA tiles: partial products from k = 2048"), TFLOP/s, `u2` -> 16
/// parts forced, NN / NT: f64 219 x 94 x 3744 5.4 -> 8.4 / 4.7 -> 8.1, 128 x 128 x 2048 4.4 ->
/// 5.8 / 4.0 -> 6.0, 150 x 200 x 3000 8.0 -> 8.7 / 7.5 -> 9.0, 96 x 320 x 2500 8.4 -> 9.5 /
/// 7.6 -> 9.3, 64 x 500 x 3000 8.8 -> 10.3 / 8.4 -> 10.6, 256 x 192 x 3000 13.6 -> 13.8 / 12.7
/// -> 14.2; exact f32 +5% to +58% on the same shapes. Where the formula gives fewer parts the
/// split lost (472 x 248 x 2352 in 8 parts 23.8 -> 17.5, 400 x 300 x 3500 in 4 25.2 -> 21.5),
/// and at k = 1500-1800 on 45-49 such tiles even 16 did (200 x 200 x 1500 9.3 -> 7.3).
const DMMA_MIN_K: usize = 2048;
/// The fewest parts of an automatic split of the DMMA tiles below [`AUTO_MIN_K`] (see
/// [`DMMA_MIN_K`]).
const DMMA_SHORT_LEAST: usize = 16;
/// The least k a part of an automatic split keeps.
const AUTO_MIN_KPER: usize = 128;

/// The route of `g` through partial products: a forced [`SplitK::Partials`] (refused, before
/// anything is queued, for f16, bf16 and batches), or the automatic choice; `None` for every
/// other GEMM, and for a forced split that k is too short to make.
pub(crate) fn route<T: GemmType, S: Copy + Into<f64>>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    stream: &Stream,
) -> Result<Option<PartialsRoute>> {
    let cc = stream.context().compute_capability();
    // f16 / bf16: the parts on wgmma's kernels where they can run (compute capability 9.0,
    // operands the TMA can read) unless mma.sync is asked for.
    let mut on_wgmma = g.kernel != Kernel::MmaSync && cc >= (9, 0);
    let wanted = match g.split {
        SplitK::Partials(asked) if asked >= 2 => {
            let asked = asked as usize;
            if !splittable::<T>(cc) {
                bail_invalid!(
                    "gemm: a split of k through partial products of {} keeps its partial sums in f32 on the mma.sync kernels, which need compute capability 8.0, not {}.{}",
                    T::NAME,
                    cc.0,
                    cc.1
                );
            }
            if !own_accumulator::<T>() && g.kernel == Kernel::Simt {
                bail_invalid!(
                    "gemm: a split of k through partial products of {} runs its parts on the tensor-core kernels (wgmma or mma.sync), not {:?}",
                    T::NAME,
                    g.kernel
                );
            }
            if g.batch != 1 {
                bail_invalid!(
                    "gemm: a split of k through partial products takes one matrix, not a batch of {}",
                    g.batch
                );
            }
            if asked > PARTIALS_MAX {
                bail_invalid!(
                    "gemm: a split of k through partial products has at most {PARTIALS_MAX} parts, not {asked}"
                );
            }
            // alpha == 0 (k 0 in the parameters) reads neither operand: nothing to split.
            if params.k == 0 {
                return Ok(None);
            }
            asked
        }
        SplitK::Auto if g.batch == 1 && params.k != 0 && automatic(g, plan, DMMA_MIN_K) && splittable::<T>(cc) => {
            let limits = stream.context().limits();
            let sms = limits.multiprocessor_count.max(1) as usize;
            let f64_cores = f32_on_f64_cores(cc, limits.single_to_double_ratio);
            match auto_parts::<T, S>(g, plan, sms, f64_cores, cc) {
                // f16 / bf16: a decode step's thin tiles on the mma.sync kernels (the rule was
                // fitted on them); the few 64 x 64 tiles of two longer sides on wgmma's, where
                // the same count ran faster (H200, 2026-11-27: 128 x 128 x 65536 in 64 parts
                // 105 -> 177 TFLOP/s, 64 x 64 x 65536 35 -> 45; docs/kernels/gemm-wgmma.md).
                Some(p) => {
                    on_wgmma &= plan.m.min(plan.n) > THIN_MAX;
                    p
                }
                None if cc >= (9, 0) && !own_accumulator::<T>() => match auto_wgmma_parts(
                    g,
                    plan,
                    T::NAME,
                    sms,
                    fast_memory(stream.context().limits().peak_memory_bandwidth()),
                ) {
                    Some(p) => p,
                    None => return Ok(None),
                },
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    let kper = plan.k.div_ceil(wanted).next_multiple_of(KPER_STEP);
    let parts = plan.k.div_ceil(kper);
    if parts < 2 {
        return Ok(None);
    }
    let full = if plan.k % kper == 0 { parts } else { parts - 1 };
    let ldw = plan.n.next_multiple_of(4);
    let plane = plan
        .m
        .checked_mul(ldw)
        .filter(|p| p.checked_mul(parts).and_then(|b| b.checked_mul(8)).is_some());
    let Some(plane) = plane else {
        bail_invalid!(
            "gemm: the partial products of {} x {} in {parts} parts overflow",
            plan.m,
            plan.n
        );
    };
    let (xk, yk) = (plan.ops.ends_with('n'), plan.ops.starts_with('t'));
    let batched = Plan {
        k: kper,
        ldd: ldw,
        sx: if xk { kper } else { kper * plan.ldx },
        sy: if yk { kper } else { kper * plan.ldy },
        sd: plane,
        ..plan.clone()
    };
    let last = Plan {
        k: plan.k - full * kper,
        ..batched.clone()
    };
    let [p_full, p_last] = part_params::<T>(params, &batched, &last, full, 0);
    let choice = |kernel: Kernel| -> Result<[Arc<Choice>; 2]> {
        let inner = |batch: usize| Gemm {
            batch,
            kernel,
            split: SplitK::Off,
            activation: Activation::None,
            ..*g
        };
        let first = choose::<T, S>(&inner(full), &batched, &p_full, stream)?;
        let second = if full < parts {
            choose::<T, S>(&inner(1), &last, &p_last, stream)?
        } else {
            first.clone()
        };
        Ok([first, second])
    };
    // f16 and bf16 parts on the kernels that write f32 partial sums: wgmma's (`on_wgmma`) where
    // it can take them, else mma.sync's.
    let [first, second] = if own_accumulator::<T>() {
        choice(g.kernel)?
    } else if g.kernel == Kernel::Wgmma {
        // Asked for: where wgmma cannot run the parts (another GPU, a tile it lacks), its
        // refusal is the answer.
        choice(Kernel::Wgmma)?
    } else {
        match on_wgmma.then(|| choice(Kernel::Wgmma)) {
            Some(Ok(c)) => c,
            _ => choice(Kernel::MmaSync)?,
        }
    };
    Ok(Some(PartialsRoute {
        parts,
        full,
        ldw,
        plans: [batched, last],
        choices: [first, second],
    }))
}

/// The parameter blocks of the batched parts and of the last part, writing into the scratch at
/// `ws`: alpha 1, beta 0, no bias, no activation (f16 and bf16: `act` [`ACT_PARTIAL_F32`], their
/// sums as f32); the last part starts `full` steps into X, Y and the scratch.
fn part_params<T: GemmType>(params: &GemmParams, batched: &Plan, last: &Plan, full: usize, ws: u64) -> [GemmParams; 2] {
    let first = GemmParams {
        d: ws,
        bias: 0,
        k: batched.k as i64,
        ldd: batched.ldd as i64,
        sx: batched.sx as i64,
        sy: batched.sy as i64,
        sd: batched.sd as i64,
        alpha: 1.0,
        beta: 0.0,
        act: if own_accumulator::<T>() { 0 } else { ACT_PARTIAL_F32 },
        ..*params
    };
    let step = |s: usize, sz: usize| (full * s * sz) as u64;
    let sz = size_of::<T>();
    let second = GemmParams {
        x: params.x + step(batched.sx, sz),
        y: params.y + step(batched.sy, sz),
        d: ws + step(batched.sd, scratch_size::<T>()),
        k: last.k as i64,
        ..first
    };
    [first, second]
}

/// The launch of `gemm_partials_<t>` for an m x n sum of `parts` partial products whose
/// elements have `size` bytes, on `sms` multiprocessors: a thread per 16-byte chunk of a row of
/// the sum (4 f32 or 2 f64 outputs) and lane of the parts; the lanes (a power of two, at most
/// [`SUM_LANES`] and `parts`) double while the threads fill less than 512 per multiprocessor,
/// so that a few outputs of many parts (64 x 64 x 65536) still keep many loads in flight;
/// [`SUM_BLOCK`] threads per block, the lanes' sums meeting in shared memory, the grid at most
/// 16 blocks per multiprocessor (grid-stride beyond).
pub(crate) fn sum_launch(m: usize, n: usize, parts: usize, size: usize, sms: usize) -> LaunchConfig {
    let chunks = m * n.div_ceil(16 / size);
    let mut lanes = 1;
    while lanes < SUM_LANES && lanes * 2 <= parts && chunks * lanes < sms * 512 {
        lanes *= 2;
    }
    let width = SUM_BLOCK / lanes;
    LaunchConfig {
        grid_dim: (chunks.div_ceil(width).min(sms * 16).max(1) as u32, 1, 1),
        block_dim: (width as u32, lanes as u32, 1),
        shared_mem_bytes: if lanes > 1 { (SUM_BLOCK * 16) as u32 } else { 0 },
    }
}

/// Queues a route: the parts (one batched launch, and one more for a shorter last part) into a
/// scratch from the caching pool, then `gemm_partials_<t>`, which adds them and writes D. The
/// scratch is freed in stream order after the last kernel that reads it.
pub(crate) fn run<T: GemmType>(stream: &Arc<Stream>, route: &PartialsRoute, params: &GemmParams) -> Result<()> {
    let f = stream.context().kernel(&format!("gemm_partials_{}", T::NAME))?;
    let plane = route.plans[0].sd;
    // SAFETY: every element gemm_partials reads (part q < parts, row < m, column < n) is written
    // by part q's GEMM, queued before it on the same stream; the padding columns (n <= c < ldw)
    // are never read (the f16 / bf16 parts may write column n there). Bytes: the partial sums'
    // type, `scratch_size` (the pool's blocks are aligned for any of them).
    let ws = unsafe { DeviceBuffer::<u8>::uninit(stream, route.parts * plane * scratch_size::<T>()) }?;
    let [p_full, p_last] = part_params::<T>(params, &route.plans[0], &route.plans[1], route.full, ws.device_ptr());
    // At most PARTIALS_MAX parts: one launch holds the batch, so `run_kernel` never steps D
    // between launches by T's size (the f16 / bf16 scratch holds f32).
    debug_assert!(route.full <= PARTIALS_MAX);
    run_choice::<T>(
        stream,
        &route.choices[0],
        &route.plans[0],
        p_full,
        route.full,
        Activation::None,
    )?;
    if route.full < route.parts {
        run_choice::<T>(stream, &route.choices[1], &route.plans[1], p_last, 1, Activation::None)?;
    }
    let sms = stream.context().limits().multiprocessor_count.max(1) as usize;
    let sum = sum_launch(
        params.m as usize,
        params.n as usize,
        route.parts,
        scratch_size::<T>(),
        sms,
    );
    let (w, ldw, parts) = (ws.device_ptr(), route.ldw as i64, route.parts as i32);
    let mut l = stream.launch_builder(&f);
    l.arg(params).arg(&w).arg(&ldw).arg(&parts);
    // SAFETY: gemm_partials_<t>(GemmParams, const A* ws, i64 ldw, i32 parts) reads ws[(q * m + r)
    // * ldw + c] for q < parts, r < m, c < n (inside the parts * m * ldw elements of `ws`, A the
    // partial sums' type), and
    // reads (beta != 0) and writes D at rows < m, columns < n with ldd, and the bias at c < n,
    // which `plan` checked against C and the bias; the scratch's parts start 16-byte aligned (the
    // pool's blocks are, and `ldw` is a multiple of 4) for its vector loads; block, grid and
    // shared memory as the kernel requires (`sum_launch`).
    unsafe { l.launch(sum) }?;
    drop(ws);
    Ok(())
}
