//! Which kernel runs a GEMM: family, tile, split and shared memory, from the type, math mode,
//! shape, alignment, compute capability and multiprocessor count.

use std::mem::size_of;
use std::sync::Arc;

use super::builder::{Gemm, Plan};
use super::choice::{Choice, Family};
use super::choice_cache::{self, Key};
use super::dmma90::{
    dmma90_config, dmma90_smem, dmma90_tile, element_q as dmma90_element_q, element_variant as dmma90_element_variant,
    f32_on_dmma, f32_on_f64_cores, sector_rows as dmma90_sector_rows, stream_k_blocks as dmma90_stream_k_blocks,
    DmmaOperands,
};
use super::f32_tiles::{
    f32_auto, f32_copy_pays, f32_deep_parts, f32_tile, f32_transpose_y, DEEP_SPLIT_MIN_K, F32_MAX_PARTS, F32_W_SMEM,
    F32_X_SMEM,
};
use super::operand_copies::{aligned_params, operands_aligned};
use super::params::{tiles2, GemmParams, MAX_BATCH_PER_LAUNCH, TC_STAGES};
use super::tf32_operands::{nt_packs_x, read_x_in_place, wide_in_place};
use super::thin::{element_variant, tc_smem, tc_thin, THIN_MAX};
use super::wg_choice::wgmma_choice;
use super::wg_in_place::{in_place_pays, in_place_twin};
use super::wg_tiles::WG_MAX_PARTS;
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::tma::{self, TmaElement, TmaMatrix};
use crate::blas::MathMode;
use crate::error::{bail_invalid, Result};
use crate::stream::Stream;

/// The largest m, n and k of the `gemm_small_<t>` kernels (ptx/gemm_small.cu).
pub(crate) const SMALL_MAX: usize = 32;

/// Threads per block and dynamic shared memory of `gemm_small_<t>` for an `m x n x k` product: a
/// thread per 4 outputs (at least a warp, at most 256), and both operands in shared memory with
/// a padding column (accumulator-type elements: 8 bytes for f64, else 4).
pub(crate) fn small_launch(m: usize, n: usize, k: usize, f64_acc: bool) -> (u32, u32) {
    let threads = ((m * n).div_ceil(4).div_ceil(32) * 32).clamp(32, 256);
    let acc = if f64_acc { 8 } else { 4 };
    let smem = (m * (k + 1) + k * (n + 1)) * acc;
    (threads as u32, smem as u32)
}

fn tiles(m: usize, n: usize, tile: usize) -> usize {
    m.div_ceil(tile) * n.div_ceil(tile)
}

/// f32 on the CUDA cores (exact, everything automatic) with an operand that the tiles with
/// 16-byte copies cannot read as it is: the operand is copied into an aligned buffer first when
/// that pays ([`f32_copy_pays`]) and the aligned problem runs w or x; the choice for the
/// operands as they are is its [`Choice::fallback`] (no memory for the copy). A Y copied
/// transposed anyway (`transpose_y`, which reads any layout) is not also aligned. `None`:
/// no copy.
fn f32_aligned_copy<S>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    ok: [bool; 2],
    pick: &dyn Fn(&GemmParams, bool) -> Result<Choice>,
) -> Result<Option<Choice>> {
    let auto = g.kernel == Kernel::Auto && g.tile == Tile::Auto && g.split == SplitK::Auto;
    if !auto || g.math != MathMode::Exact || params.k < 1 || (ok[0] && ok[1]) || !f32_copy_pays(plan.m, plan.n) {
        return Ok(None);
    }
    let align = [!ok[0], !ok[1]];
    let mut choice = pick(&aligned_params(plan, params, align, 4), true)?;
    if !(choice.name.starts_with("gemm_simt_f32_w_") || choice.name.starts_with("gemm_simt_f32_x_")) {
        return Ok(None);
    }
    choice.align = [align[0], align[1] && !choice.transpose_y];
    choice.fallback = Some(Box::new(pick(params, false)?));
    Ok(Some(choice))
}

/// The least work (`2 m n k batch` flops) for which the automatic choice copies unaligned
/// operands to reach the tensor cores rather than run the CUDA-core kernel on them: f16, bf16
/// and f64 (whose CUDA-core kernels run far below the tensor cores) from about 96^3; tf32, whose
/// alternative is the fast exact f32 kernel, from about 400^3 (H100, docs/kernels/gemm-common.md,
/// "Unaligned operands").
fn align_min_flop(type_name: &str) -> u128 {
    match type_name {
        "f32" => 2 * 400 * 400 * 400,
        _ => 2 * 96 * 96 * 96,
    }
}

#[allow(clippy::too_many_arguments)] // a pure function of everything dispatch depends on, for tests
pub(crate) fn choose_kernel(
    type_name: &str,
    tensor_type: bool,
    math: MathMode,
    forced: Kernel,
    tile: Tile,
    split: SplitK,
    plan: &Plan,
    aligned: bool,
    wgmma_ok: bool,
    cc: (u32, u32),
    sms: usize,
    batch: usize,
    activation: bool,
) -> Result<Choice> {
    // The wgmma pairs (Tile::LargePair, NarrowPair); every other kernel takes the tile alone.
    let (tile, pair) = match tile {
        Tile::LargePair => (Tile::Large, true),
        Tile::NarrowPair => (Tile::Narrow, true),
        tile => (tile, false),
    };
    // The f64 thin tiles are sm_90 DMMA kernels; before, f64 has the 64 x 64 one only.
    let tile = if tile == Tile::Thin && type_name == "f64" && cc < (9, 0) {
        Tile::Small
    } else {
        tile
    };
    // f16, bf16 and tf32 take their thin tiles (mma.sync) when forced, or with the tile and the
    // split left to dispatch where `tc_thin` measured them faster than wgmma.
    let thin = tile == Tile::Thin
        || (tile == Tile::Auto
            && matches!(split, SplitK::Auto | SplitK::Off)
            && tc_thin(plan, type_name, math, batch, sms).is_some());
    let tc_name = match (type_name, math) {
        ("f32", MathMode::Tf32) => Some("tf32"),
        ("f32", _) => None,
        (t, _) if tensor_type => Some(t),
        _ => None,
    };
    let tensor_checks = || -> Result<()> {
        if tc_name.is_none() {
            bail_invalid!(
                "gemm: {type_name} has no tensor-core kernel with {math:?} math{}",
                if type_name == "f32" && math == MathMode::Exact {
                    " before compute capability 9.0 (where exact f32 takes the f64 tensor cores) or on the mma.sync kernels"
                } else {
                    ""
                }
            );
        }
        if !aligned {
            bail_invalid!(
                "gemm: the tensor-core kernel needs 16-byte aligned A and B and leading dimensions / strides that are multiples of 16 bytes"
            );
        }
        if cc < (8, 0) {
            bail_invalid!(
                "gemm: the tensor-core kernel needs compute capability 8.0, not {}.{}",
                cc.0,
                cc.1
            );
        }
        Ok(())
    };
    let wg_type = matches!(tc_name, Some("f16" | "bf16" | "tf32"));
    let wg_possible = wg_type && aligned && wgmma_ok && cc == (9, 0);
    // Exact f32 on the f64 tensor cores (ptx/gemm_dmma90_f32.cu): the tensor-core kernel of f32
    // on compute capability 9.0 and later, on any alignment (the element variants read operands
    // aligned only to their element). The automatic choice asks for it where the device's f64
    // units are fast ([`f32_on_f64_cores`], in `choose_on`).
    let f32_dmma = f32_on_dmma(type_name, math, forced, cc);
    // Family: Simt, MmaSync (incl. DMMA for f64) or Wgmma.
    let family = match forced {
        Kernel::Simt => Family::Simt,
        Kernel::TensorCore if f32_dmma => Family::Dmma,
        Kernel::MmaSync => {
            tensor_checks()?;
            Family::MmaSync
        }
        Kernel::Wgmma => {
            tensor_checks()?;
            if !wg_possible {
                bail_invalid!(
                    "gemm: the wgmma kernel needs compute capability 9.0, f16 / bf16 / tf32, k >= 1, alpha != 0 and operands the tensor memory accelerator can address (16-byte aligned, extents below 2^31)"
                );
            }
            if matches!(tile, Tile::Small | Tile::Thin) {
                bail_invalid!("gemm: the wgmma kernel has no {tile:?} tile");
            }
            Family::Wgmma
        }
        Kernel::TensorCore => {
            tensor_checks()?;
            if wg_possible && tile != Tile::Small && !thin {
                Family::Wgmma
            } else {
                Family::MmaSync
            }
        }
        // m, n and k of at most 32 with every knob automatic: one block per matrix (a tile of
        // the other kernels would be mostly empty).
        Kernel::Auto
            if tile == Tile::Auto
                && split == SplitK::Auto
                && plan.m <= SMALL_MAX
                && plan.n <= SMALL_MAX
                && plan.k <= SMALL_MAX =>
        {
            Family::Small
        }
        Kernel::Auto => {
            if tc_name.is_none() || !aligned || cc < (8, 0) {
                Family::Simt
            } else if wg_possible && tile != Tile::Small && !thin {
                // On the H100 the 128 x 128 wgmma tile beats the 64 x 64 mma.sync one down to
                // 256^2 (1.8x cuBLAS against 1.3x for bf16), so Auto takes wgmma at every size.
                Family::Wgmma
            } else {
                Family::MmaSync
            }
        }
    };
    let dmma90 = family == Family::MmaSync && type_name == "f64" && cc >= (9, 0) && forced != Kernel::MmaSync;
    let f32_simt = family == Family::Simt && type_name == "f32";
    let wgmma = family == Family::Wgmma;
    if let SplitK::Parts(parts) = split {
        if !dmma90 && !f32_dmma && !f32_simt && !wgmma && parts > 1 {
            bail_invalid!(
                "gemm: a split of k in {parts} parts exists only for f64 on the sm_90 DMMA kernels (compute capability 9.0 and later), for f16, bf16 and tf32 on the wgmma kernels and for f32 on the CUDA cores"
            );
        }
        if wgmma
            && parts > 1
            && (parts > WG_MAX_PARTS || matches!(tile, Tile::Wide | Tile::Broad | Tile::Half | Tile::Medium))
        {
            bail_invalid!(
                "gemm: the wgmma kernels split k in 2-{WG_MAX_PARTS} parts on the 128 x 64 and 128 x 128 tiles (Tile::Auto, Narrow or Large), not {parts} parts on {tile:?}"
            );
        }
        if f32_simt && parts > 1 && (parts > F32_MAX_PARTS || !matches!(tile, Tile::Auto | Tile::Narrow) || batch != 1)
        {
            bail_invalid!(
                "gemm: f32 on the CUDA cores splits k in 2-{F32_MAX_PARTS} parts on its 128 x 64 tile (Tile::Auto) or its 32 x 64 tile (Tile::Narrow), batch 1; not {parts} parts on {tile:?} with batch {batch}"
            );
        }
    }
    let big = tiles(plan.m, plan.n, 128).saturating_mul(batch) >= sms;
    let plain = |name: String, family, tile, smem, threads| Choice {
        name,
        family,
        pack: [false; 2],
        align: [false; 2],
        swap: false,
        x_in_place: false,
        transpose_y: false,
        tile,
        smem,
        threads,
        split_k: None,
        cluster_k: 1,
        stream_k: None,
        pair: false,
        fallback: None,
    };
    match family {
        Family::Wgmma => wgmma_choice(
            tc_name.unwrap_or("f16"),
            plan,
            tile,
            split,
            pair,
            activation,
            batch,
            sms,
        ),
        Family::MmaSync | Family::Dmma if dmma90 || f32_dmma => {
            // The sm_90 DMMA kernels (m16n8k4 / m16n8k8, ptx/gemm_dmma90.cu; f32 operands
            // ptx/gemm_dmma90_f32.cu, which take the f64 tiles' rule: the same tiles, stages and
            // threads), f32 on operands not 16-byte aligned in their element variant.
            let operands = if f32_dmma { DmmaOperands::F32 } else { DmmaOperands::F64 };
            let (letter, parts) = dmma90_tile(tile, split, plan, batch, sms, operands)?;
            let (tile, threads, bk, stages) = dmma90_config(letter);
            // Stream-k (`k`) carries its grid instead of a cluster split.
            let stream_k = (letter == 'k').then(|| dmma90_stream_k_blocks(plan, parts, sms));
            let parts = if stream_k.is_some() { 1 } else { parts };
            let suffix = if parts > 1 { parts.to_string() } else { String::new() };
            let (ty, elem) = if f32_dmma { ("f32", 4) } else { ("f64", 8) };
            let name = format!("gemm_dmma90_{ty}_{letter}{suffix}_{}", plan.ops);
            let name = match dmma90_element_variant(&name) {
                Some(variant) if f32_dmma && !aligned => variant,
                _ => name,
            };
            let mut choice = plain(name, Family::Dmma, tile, dmma90_smem(tile, bk, stages, elem), threads);
            choice.cluster_k = parts;
            choice.stream_k = stream_k;
            Ok(choice)
        }
        Family::MmaSync if type_name == "f64" => {
            // The sm_80 DMMA kernel (m8n8k4): 64 x 64, 4 warps, 3 stages of 20480 bytes.
            Ok(plain(
                format!("gemm_dmma_f64_s_{}", plan.ops),
                Family::Dmma,
                (64, 64),
                3 * 20480,
                128,
            ))
        }
        Family::MmaSync | Family::Dmma => {
            let t = tc_name.unwrap_or("f16");
            let large = match tile {
                Tile::Auto => big,
                Tile::Small | Tile::Half | Tile::Medium | Tile::Narrow | Tile::NarrowPair | Tile::Thin => false,
                Tile::Large | Tile::LargePair | Tile::Wide | Tile::Broad => true,
            };
            let (size, tile, smem) = match (thin, plan.m <= plan.n) {
                (true, true) => ('t', (THIN_MAX, 64), tc_smem((THIN_MAX, 64), t)),
                (true, false) => ('h', (64, THIN_MAX), tc_smem((64, THIN_MAX), t)),
                _ if large => ('l', (128, 128), TC_STAGES * 80 * 256),
                _ => ('s', (64, 64), TC_STAGES * 80 * 128),
            };
            Ok(plain(
                format!("gemm_tc_{t}_{size}_{}", plan.ops),
                Family::MmaSync,
                tile,
                smem,
                128,
            ))
        }
        Family::Simt if type_name == "f32" => {
            // The pipelined f32 kernels (ptx/gemm_simt.cu): w = 128 x 256 with 16-byte copies
            // (`aligned` operands only), x = 128 x 128 with 16-byte copies and two blocks per SM
            // (`aligned` only; forced by `Broad`), l = 128 x 128 (any operands), s = 64 x 64 and
            // u = 32 x 64 (two k-slices of warps per block), and v = 128 x 64; w, u and v split k
            // over blocks (each part's partial tile added by the tile's last block).
            // Automatic: a deep split of v for long k over few tiles (below), else the candidate
            // that leaves the least work on the busiest SM ([`f32_auto`]).
            // A forced `Wide` below 9/10 of a wave of w tiles splits k over 2-4 blocks per tile
            // when that fills 3/4 of a wave and leaves every block at least 256 of k.
            let w_tiles = tiles2(plan.m, plan.n, (128, 256)).saturating_mul(batch);
            let w_full = plan.m.saturating_mul(plan.n).saturating_mul(4) >= w_tiles.saturating_mul(128 * 256 * 3);
            // w needs its tiles at least 3/4 full: 48 x 16384 x 4096 on 128 w tiles of which
            // 48 of 256 columns are inside the problem ran at 0.26x cuBLAS.
            let wide = w_tiles.saturating_mul(10) >= sms * 9 && w_full;
            let splits = (sms / w_tiles.max(1)).min(4).min(plan.k / 256);
            // A forced split (validated above) runs v.
            let forced_parts = match split {
                SplitK::Parts(p) if p > 1 => Some(p),
                _ => None,
            };
            let forced_w_split = split != SplitK::Off
                && tile == Tile::Wide
                && aligned
                && !wide
                && batch == 1
                && splits >= 2
                && w_tiles * splits * 4 >= sms * 3;
            // Deep split: few output tiles and long k (64 x 64 x 65536 is one tile) leave most
            // SMs idle with at most 4 parts ([`f32_deep_parts`]), when even the 64 x 64 tiles
            // cover under half the SMs and k is at least DEEP_SPLIT_MIN_K.
            let deep_parts = f32_deep_parts((plan.m, plan.n, plan.k), batch, sms);
            let deep_split = tile == Tile::Auto
                && split != SplitK::Off
                && batch == 1
                && !(aligned && wide)
                && deep_parts > 4
                && plan.k >= DEEP_SPLIT_MIN_K
                && tiles2(plan.m, plan.n, (64, 64)).saturating_mul(2) < sms;
            let auto = f32_auto(
                (plan.m, plan.n, plan.k),
                aligned,
                split != SplitK::Off && batch == 1,
                sms,
                batch,
            );
            let auto_tile = tile == Tile::Auto;
            let size = match tile {
                Tile::Narrow | Tile::NarrowPair => "u",
                _ if forced_parts.is_some() => "v",
                Tile::Auto if deep_split => "v",
                Tile::Auto => auto.0,
                Tile::Broad if aligned => "x",
                Tile::Large | Tile::LargePair | Tile::Wide | Tile::Broad if aligned => "w",
                Tile::Large | Tile::LargePair | Tile::Wide | Tile::Broad => "l",
                Tile::Small | Tile::Half | Tile::Medium | Tile::Thin => "s",
            };
            let (tile, threads) = f32_tile(size);
            let mut choice = plain(
                format!("gemm_simt_f32_{size}_{}", plan.ops),
                Family::Simt,
                tile,
                match size {
                    "w" => F32_W_SMEM,
                    "x" => F32_X_SMEM,
                    _ => 0,
                },
                threads,
            );
            let auto_parts = if deep_split { deep_parts } else { auto.1 };
            if size == "w" {
                let parts = if forced_w_split {
                    splits
                } else if auto_tile {
                    auto_parts
                } else {
                    1
                };
                choice.split_k = Some(parts as u32);
            } else if size == "v" || size == "u" {
                let auto_parts = if auto_tile { auto_parts as u32 } else { 1 };
                choice.split_k = Some(forced_parts.unwrap_or(auto_parts));
            }
            // A k-contiguous Y (TN, TT) on the tiles with 16-byte copies: copied transposed
            // first where that pays ([`f32_transpose_y`]), then the NN / NT kernel reads it.
            if matches!(size, "w" | "x")
                && aligned
                && batch == 1
                && plan.ops.starts_with('t')
                && f32_transpose_y((plan.m, plan.n, plan.k))
            {
                let as_stored = choice.clone();
                choice.transpose_y = true;
                choice.name = format!("gemm_simt_f32_{size}_n{}", &plan.ops[1..]);
                choice.fallback = Some(Box::new(as_stored));
            }
            Ok(choice)
        }
        Family::Small => {
            let (threads, smem) = small_launch(plan.m, plan.n, plan.k, type_name == "f64");
            Ok(plain(
                format!("gemm_small_{type_name}"),
                Family::Small,
                (SMALL_MAX, SMALL_MAX),
                smem,
                threads,
            ))
        }
        Family::Simt => Ok(plain(
            format!("gemm_simt_{type_name}_s_{}", plan.ops),
            Family::Simt,
            (64, 64),
            0,
            256,
        )),
    }
}

/// The element type the TMA moves for a GEMM type (`None` for f64: no wgmma path).
pub(crate) fn tma_element<T: GemmType>() -> Option<TmaElement> {
    match T::NAME {
        "f16" => Some(TmaElement::F16),
        "bf16" => Some(TmaElement::Bf16),
        "f32" => Some(TmaElement::F32),
        _ => None,
    }
}

/// X and Y as the TMA sees them for the wgmma kernels, given whether each is k-contiguous.
pub(crate) fn tma_operands(
    params: &GemmParams,
    element: TmaElement,
    xk: bool,
    yk: bool,
    batch: usize,
) -> [TmaMatrix; 2] {
    let (m, n, k) = (params.m as u64, params.n as u64, params.k as u64);
    let op = |address, contiguous_k: bool, rows, ld, stride| TmaMatrix {
        address,
        element,
        inner: if contiguous_k { k } else { rows },
        outer: if contiguous_k { rows } else { k },
        ld,
        batch: batch as u64,
        stride,
    };
    [
        op(params.x, xk, m, params.ldx as u64, params.sx as u64),
        op(params.y, yk, n, params.ldy as u64, params.sy as u64),
    ]
}

/// Whether the wgmma path can take this call: k >= 1 and alpha != 0 (the kernel always reads
/// A and B), extents below 2^31, and operands the TMA can address, either as given or, for
/// tf32 with both operands m/n-contiguous, after packing one of them.
fn wgmma_fits<T: GemmType>(g_math: MathMode, plan: &Plan, params: &GemmParams, batch: usize) -> bool {
    let Some(element) = tma_element::<T>() else {
        return false;
    };
    if element == TmaElement::F32 && g_math != MathMode::Tf32 {
        return false;
    }
    let max = tma::MAX_EXTENT as i64;
    if params.k < 1 || params.m > max || params.n > max || params.k > max || batch > MAX_BATCH_PER_LAUNCH {
        return false;
    }
    let xk = plan.ops.ends_with('n');
    let yk = plan.ops.starts_with('t');
    let [x, y] = tma_operands(params, element, xk, yk, batch);
    if element == TmaElement::F32 && !xk && !yk {
        // tf32 nt: one operand is packed into a fresh, tight, 16-byte aligned buffer (each
        // matrix of a batch); the other must fit as given.
        return if nt_packs_x(plan) { y.fits() } else { x.fits() };
    }
    x.fits() && y.fits()
}

/// The tiled kernel for `g` on `stream`'s device: [`choose_on`], memoized per thread (see
/// [`super::choice_cache`]), so a repeated shape costs one lookup.
pub(crate) fn choose<T: GemmType, S: Copy>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    stream: &Stream,
) -> Result<Arc<Choice>> {
    let ctx = stream.context();
    let (cc, sms) = (ctx.compute_capability(), ctx.limits().multiprocessor_count as usize);
    let room = ctx.limits().max_shared_per_block_optin;
    let f64_cores = f32_on_f64_cores(cc, ctx.limits().single_to_double_ratio);
    // The key leaves `room` out: devices of one compute capability give a block the same.
    let key = Key::new::<T, S>(g, plan, params, cc, sms, f64_cores);
    choice_cache::get_or_choose(key, || {
        choose_within::<T, S>(g, plan, params, (cc, sms, f64_cores), room)
    })
}

/// [`choose_on`] on a device that gives a block at most `room` bytes of shared memory.
///
/// Where the automatic tile needs more (f32's 128 x 256 CUDA-core tile, `F32_W_SMEM`, on the
/// 99 KiB of compute capability 8.6, 8.9 and 12.x), the choice is remade on the 128 x 128
/// tiles (`Tile::Broad`), which every device of compute capability 7.0 and up holds. A forced
/// tile stays as asked, and its launch reports the shortfall.
pub(crate) fn choose_within<T: GemmType, S: Copy>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    (cc, sms, f64_cores): ((u32, u32), usize, bool),
    room: u32,
) -> Result<Choice> {
    let choice = choose_on::<T, S>(g, plan, params, cc, sms, f64_cores)?;
    if fits_shared_memory(&choice, room) || g.tile != Tile::Auto {
        return Ok(choice);
    }
    let smaller = Gemm {
        tile: Tile::Broad,
        split: SplitK::Auto,
        ..*g
    };
    choose_on::<T, S>(&smaller, plan, params, cc, sms, f64_cores)
}

/// Whether the automatic choice runs exact f32 on the f64 tensor cores (the gemm_dmma90_f32
/// kernels): on a device where they are fast (`f64_cores`), with kernel, tile and split left to
/// it (or no split), for any product but those the one-block kernel takes (every side at most
/// [`SMALL_MAX`]). Measured against the CUDA-core kernels on an H200 (2026-12-01,
/// docs/kernels/gemm-dmma.md, "f32 on the f64 tensor cores").
fn f32_auto_dmma<S>(type_name: &str, g: &Gemm<S>, plan: &Plan, split: SplitK, f64_cores: bool) -> bool {
    f64_cores
        && type_name == "f32"
        && g.math == MathMode::Exact
        && g.kernel == Kernel::Auto
        && g.tile == Tile::Auto
        && matches!(split, SplitK::Auto | SplitK::Off)
        && !(plan.m <= SMALL_MAX && plan.n <= SMALL_MAX && plan.k <= SMALL_MAX)
}

/// The k from which exact f32 on the DMMA tiles copies an unaligned operand aligned first
/// (`gemm_pack_b32`) rather than read it in place with the 4-byte element variants (the thin tiles
/// always read in place, and so does a product with a short side: [`F32_ELEMENT_SIDE`]). The
/// variants' copies are a quarter as wide as the aligned tiles', so their cost grows with the main
/// loop while the copy's does not: on an H200 (2026-12-01, NN / TN against cuBLAS) the copy ran 777
/// x 1531 x 2049 0.84 / 0.79 -> 1.07 / 1.00, 3827 x 262 x 3075 0.69 / 0.81 -> 0.87 / 0.98, 12345 x
/// 321 x 4567 0.79 / 0.90 -> 1.03 / 1.05, 1255 x 429 x 1038 0.76 / 0.78 -> 0.92 / 0.93, 997 x 1009
/// x 1013 0.83 / 0.90 -> 0.90 / 0.91, and lost at k = 179 (2831 x 702 x 179 0.68 / 0.82 -> 0.64 /
/// 0.68); at k = 82 a tie.
const F32_ELEMENT_MAX_K: usize = 512;

/// Exact f32 on the DMMA tiles reads unaligned operands in place at any k where
/// `1/m + 1/n >= 1 / F32_ELEMENT_SIDE` (a short side of about this or less): the copy reads and
/// writes the long operand, which a product with a short side reads only a few times. H200
/// (2026-12-03, A/B against copying from k = 512, f32 NN / TT, TFLOP/s): sides of 17-127 1.00-1.98x
/// (geomean 1.43 over 26 rows; 26 x 6083 x 1438 NN 9.4 -> 18.6, 0.60 -> 1.18x cuBLAS; 127 x 4097
/// x 2049 +17-19%), 160 x 4001 x 3001 -16 to -24%, 199 x 3001 x 2001 -17 to -23%, 3827 x 262 x
/// 3075 -20 to -22% (docs/kernels/gemm-dmma.md, "f32 on the DMMA tiles: unaligned operands read in
/// place beside a short side").
const F32_ELEMENT_SIDE: usize = 128;

/// Whether `choice` and the choice it gives way to (without memory for its copies) each ask for
/// at most `room` bytes of dynamic shared memory per block.
fn fits_shared_memory(choice: &Choice, room: u32) -> bool {
    choice.smem <= room && choice.fallback.as_deref().map_or(true, |f| fits_shared_memory(f, room))
}

/// The tiled kernel for `g` on a device of compute capability `cc` with `sms` multiprocessors
/// (`f64_cores`: exact f32 runs automatically on its f64 tensor cores, [`f32_on_f64_cores`]):
/// a pure function of the type, the knobs, the plan, the batch, the kernels' k and the operand
/// addresses' alignment (what [`Key`] holds).
pub(crate) fn choose_on<T: GemmType, S>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    cc: (u32, u32),
    sms: usize,
    f64_cores: bool,
) -> Result<Choice> {
    let vec = match (T::NAME, g.math) {
        ("f32", _) => 4,
        _ => (16 / size_of::<T>()) as i64,
    };
    // A split through partial products reaches here only when k is too short to make two
    // parts (partials::route): the tiles then run unsplit.
    let split = match g.split {
        SplitK::Partials(_) => SplitK::Off,
        s => s,
    };
    // The tiled kernel of `kernel` (the asked one, or the CUDA cores' for a fallback) on `tile`.
    let pick_tile = |kernel: Kernel, tile: Tile, params: &GemmParams, aligned: bool| {
        choose_kernel(
            T::NAME,
            T::TENSOR_CORES,
            g.math,
            kernel,
            tile,
            split,
            plan,
            aligned,
            wgmma_fits::<T>(g.math, plan, params, g.batch),
            cc,
            sms,
            g.batch,
            g.activation.op().is_some(),
        )
    };
    // Exact f32 on the f64 tensor cores where they are fast, with the kernel, tile and split
    // left to dispatch (a forced tile or split keeps its meaning on the CUDA cores), past the
    // one-block kernel of tiny products: the automatic choice then picks among the DMMA kernels
    // as a forced tensor-core kernel would (unaligned operands: below).
    let f32_dmma_auto = f32_auto_dmma(T::NAME, g, plan, split, f64_cores);
    let kernel = if f32_dmma_auto { Kernel::TensorCore } else { g.kernel };
    let f32_dmma = f32_on_dmma(T::NAME, g.math, kernel, cc);
    let pick_on = |kernel: Kernel, params: &GemmParams, aligned: bool| pick_tile(kernel, g.tile, params, aligned);
    let pick = |params: &GemmParams, aligned: bool| pick_on(kernel, params, aligned);
    let ok = operands_aligned(params, vec, g.batch);
    // A choice that copies or packs an operand gives way, without the memory for the copy, to
    // the CUDA-core kernels on the operands as they are (automatic kernel only: a forced one
    // reports the failed allocation).
    let with_fallback = |mut choice: Choice| -> Choice {
        let copies = choice.align.iter().chain(&choice.pack).any(|&c| c);
        if copies && choice.fallback.is_none() && g.kernel == Kernel::Auto {
            choice.fallback = pick_on(Kernel::Simt, params, ok[0] && ok[1]).ok().map(Box::new);
        }
        choice
    };
    let tensor_type = T::TENSOR_CORES || (T::NAME == "f32" && g.math == MathMode::Tf32) || f32_dmma;
    let flop = 2 * plan.m as u128 * plan.n as u128 * plan.k as u128 * g.batch as u128;
    // An unaligned operand is copied into an aligned buffer when a tensor-core kernel is forced,
    // or automatically when the problem is large enough for the copy to pay (the CUDA-core
    // kernels run f16 / bf16 / f64 at a fraction of the tensor cores' rate). Not with k = 0 or
    // alpha = 0 (the operands are not read) or below compute capability 8.0.
    let copy = tensor_type
        && cc >= (8, 0)
        && params.k >= 1
        && !(ok[0] && ok[1])
        && match g.kernel {
            Kernel::Simt => false,
            Kernel::Auto => flop >= align_min_flop(T::NAME),
            _ => true,
        };
    if !copy {
        if let Some(choice) = f32_aligned_copy(g, plan, params, ok, &pick)? {
            return Ok(choice);
        }
        return pick(params, ok[0] && ok[1]).map(with_fallback);
    }
    let align = [!ok[0], !ok[1]];
    let aligned = aligned_params(plan, params, align, vec);
    let mut choice = pick(&aligned, true)?;
    // f16 / bf16 batches at short k read their unaligned operands in place (the wgmma twin of
    // the tile chosen; operands aligned to their element): the copy costs as much as the
    // product (f16 181x54x49 x 302 14.9 -> 17.8 TFLOP/s, H200; `in_place_pays`).
    // Both operands aligned to their element: what every variant below that reads unaligned
    // operands in place needs.
    let size = size_of::<T>() as u64;
    let element_aligned = params.x % size == 0 && params.y % size == 0;
    if choice.family == Family::Wgmma && element_aligned {
        if let Some(twin) = in_place_twin(&choice).filter(|t| in_place_pays(g.batch, plan.k, t.tile)) {
            return Ok(twin);
        }
    }
    // The f64 DMMA tiles have variants that read 8 bytes at a time (`tu`, `su`, `s2u`, ...),
    // which cost 2-5% of a tile's rate against the 16-byte ones. The copies they save cost
    // about 130 (1/m + 1/n) of the product's time (read and write m x k and k x n at the copy
    // rate, against 2 m n k at the DMMA rate). So the variants run for the thin tiles (memory-
    // bound: 11008 x 16 x 4096 at an odd offset 0.50x -> 1.32x cuBLAS) and where 1/m + 1/n >=
    // 1/1536 (1023^3 0.75x -> 0.93x, 12345 x 321 x 4567 0.86x -> 0.99x; 4097^3 1.12x with the
    // copy against 1.06x; H100, docs/kernels/gemm-dmma.md, "f64 tiles by waste and waves").
    if let Some(name) = dmma90_element_variant(&choice.name) {
        let thin = choice.tile.0.min(choice.tile.1) == THIN_MAX;
        let copy_costs = 1536 * (plan.m + plan.n) >= plan.m * plan.n;
        let element = if T::NAME == "f32" {
            thin || plan.k < F32_ELEMENT_MAX_K || F32_ELEMENT_SIDE * (plan.m + plan.n) >= plan.m * plan.n
        } else {
            thin || copy_costs
        };
        if element && element_aligned {
            // `s` in three blocks per multiprocessor (`q`, the same tile and launch) for the
            // element variants over short k where that takes fewer rounds (`element_q`).
            let unsplit_s = choice.name == format!("gemm_dmma90_{}_s_{}", T::NAME, plan.ops);
            let auto = g.tile == Tile::Auto && g.split == SplitK::Auto;
            choice.name = if unsplit_s && g.tile == Tile::Auto && dmma90_element_q(plan, g.batch, sms) {
                format!("gemm_dmma90_{}_qu_{}", T::NAME, plan.ops)
            } else if unsplit_s
                && auto
                && T::NAME == "f64"
                && dmma90_sector_rows(plan)
                && dmma90_tile(Tile::Auto, SplitK::Auto, plan, g.batch, sms, DmmaOperands::F64Element)? == ('s', 2)
            {
                // The sector-rows gate kept `s` unsplit for the 16-byte kernel; the element
                // variant keeps the split (`DmmaOperands::F64Element`).
                choice.cluster_k = 2;
                format!("gemm_dmma90_f64_s2u_{}", plan.ops)
            } else {
                name
            };
            return Ok(choice);
        }
    }
    // The thin mma.sync tiles (f16, bf16, tf32) have variants that read k-contiguous operands
    // from any element (`tu`, `hu`): a decode step's unaligned weights are streamed in place
    // instead of copied first (a copy reads and writes the whole matrix, which the thin tile
    // itself only reads once: 11008 x 16 x 4096 at an odd offset ran at 0.37x (tf32) and 0.69x
    // (f16) cuBLAS with the copy; docs/kernels/gemm-mma-sync.md, "Thin mma.sync tiles on unaligned
    // operands").
    if let Some(name) = element_variant(&choice.name, align).filter(|_| element_aligned) {
        choice.name = name;
        return Ok(choice);
    }
    // An operand that the tf32 wgmma path transposes into a buffer of its own anyway
    // (`gemm_wg_pack_tf32`, which reads any layout) needs no aligned copy first; tf32's
    // register-fed X is read where it lies rather than copied (tf32_operands.rs).
    let activation = g.activation.op().is_some();
    let settle_copies = |c: &mut Choice| {
        c.align = [align[0] && !c.pack[0], align[1] && !c.pack[1]];
        read_x_in_place(c, params, activation);
    };
    settle_copies(&mut choice);
    // Where that copy is left to the 128 x 128 tile (short k), a wide tile reads X in place.
    let auto = matches!(g.kernel, Kernel::Auto | Kernel::Wgmma) && g.tile == Tile::Auto && g.split == SplitK::Auto;
    if let Some(tile) = auto.then(|| wide_in_place(&choice, plan, g.batch, sms)).flatten() {
        let mut wide = pick_tile(g.kernel, tile, &aligned, true)?;
        settle_copies(&mut wide);
        if wide.x_in_place {
            choice = wide;
        }
    }
    Ok(with_fallback(choice))
}
