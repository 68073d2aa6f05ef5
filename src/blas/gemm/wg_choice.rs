//! The wgmma kernel of a GEMM that dispatch put on Hopper's warpgroup tensor cores
//! (`gemm_wg_<type>_<tile>_<ops>`, ptx/gemm_wg.cuh): the operand layout the kernel reads (tf32's
//! transposed or packed operands), the tile, the split of k, the 64-row tiles and the pairs,
//! each by the rules of [`super::wg_tiles`].

use super::builder::Plan;
use super::choice::{Choice, Family};
use super::params::{tiles2, WG_SMEM};
use super::tf32_operands::nt_packs_x;
use super::wg_tiles::{
    half_rows, has_act_twin, odd_line_rows, pair_tile, short_sides, straddling_rows, wg_auto_split, wg_auto_tile,
    wg_parts, wide_enough, BROAD_TILE, HALF_TILE, MEDIUM_TILE,
};
use super::{SplitK, Tile};
use crate::error::Result;

/// The wgmma kernel for `batch` products of `plan` of type `t` (f16, bf16 or tf32), with the
/// `tile` and `split` asked for (`Tile::LargePair` / `NarrowPair` arrive as `Large` / `Narrow`
/// with `pair` set), on a device of `sms` multiprocessors; `activation`: the epilogue applies
/// one, which only some tiles' kernels have (their twins in `gemm_wg_<act>_<type>`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn wgmma_choice(
    t: &str,
    plan: &Plan,
    tile: Tile,
    split: SplitK,
    pair: bool,
    activation: bool,
    batch: usize,
    sms: usize,
) -> Result<Choice> {
    // wgmma reads tf32 from shared memory only k-contiguous. An m-contiguous X is loaded
    // into registers as wgmma's A operand (`tt`); for `nn` (n-contiguous Y) the problem is
    // transposed so that Y becomes that operand (`swap`); `nt` packs the operand of fewer
    // rows k-contiguous first (nt_packs_x) and runs `tt` (Y packed) or `nn` (X packed).
    let xk = plan.ops.ends_with('n');
    let yk = plan.ops.starts_with('t');
    let (ops, pack, swap) = match (t, xk, yk) {
        ("tf32", true, true) => ("tn", [false; 2], false),
        ("tf32", false, true) => ("tt", [false; 2], false),
        ("tf32", true, false) => ("nn", [false; 2], true),
        ("tf32", false, false) if nt_packs_x(plan) => ("nn", [true, false], true),
        ("tf32", false, false) => ("tt", [false, true], false),
        _ => (plan.ops, [false; 2], false),
    };
    let dims = if swap { (plan.n, plan.m) } else { (plan.m, plan.n) };
    let forced_parts = match split {
        SplitK::Parts(p) if p > 1 => Some(p as usize),
        _ => None,
    };
    let auto_tile = tile == Tile::Auto;
    let (letter, tile) = match tile {
        // A forced split runs on at most 128 columns.
        Tile::Auto if forced_parts.is_some() && wide_enough(dims, batch, sms) => ('l', (128, 128)),
        Tile::Wide => ('w', (128, 256)),
        Tile::Broad => ('b', BROAD_TILE),
        Tile::Large => ('l', (128, 128)),
        Tile::Narrow => ('n', (128, 64)),
        Tile::Half => ('h', HALF_TILE),
        Tile::Medium => ('m', MEDIUM_TILE),
        // With an activation the automatic choice keeps the 128 x 256 tile where it would
        // take 128 x 192, and 128 x 64 where it would take 64 x 64: only those have twins
        // in the activation modules (gemm_wg_<act>_<type>), whose TMA epilogue applies
        // it; the others would apply it in their rolled epilogue.
        _ => {
            let chosen = wg_auto_tile(t, dims, batch, plan.k, sms);
            match short_sides(chosen, dims, batch, sms).unwrap_or(chosen) {
                (_, tile) if activation && !has_act_twin(tile) && tile.0 == 64 => ('n', (128, 64)),
                (_, tile) if activation && !has_act_twin(tile) => ('w', (128, 256)),
                chosen => chosen,
            }
        }
    };
    // k-tiles of 128 bytes of k.
    let ktiles = plan.k.div_ceil(if t == "tf32" { 32 } else { 64 });
    let (letter, tile, parts) = match forced_parts {
        Some(p) => (letter, tile, wg_parts(ktiles, p)),
        None if split == SplitK::Auto && auto_tile => {
            let count = |t| tiles2(dims.0, dims.1, t).saturating_mul(batch);
            match wg_auto_split(letter, count((128, 64)), count((128, 128)), ktiles, sms) {
                ('l', parts) => ('l', (128, 128), parts),
                (_, parts) => (letter, tile, parts),
            }
        }
        None => (letter, tile, 1),
    };
    // The operands' row lengths in bytes (tf32: 4 bytes an element).
    let esize = if t == "tf32" { 4 } else { 2 };
    let row_bytes = [plan.ldx * esize, plan.ldy * esize];
    // tf32 gains only where the kernel reads both operands where they lie: rows 16-byte
    // multiples (else one is copied aligned, and 128 x 128 never reads X in place) and
    // neither packed (`nt`).
    let lines_rule = t != "tf32" || (pack == [false; 2] && row_bytes.iter().all(|b| b % 16 == 0));
    let (letter, tile) = if auto_tile
        && letter == 'n'
        && parts == 1
        && lines_rule
        && odd_line_rows((plan.m, plan.n), row_bytes, ktiles, batch, sms)
    {
        ('l', (128, 128))
    } else {
        (letter, tile)
    };
    // A 64-row tile where it leaves the busiest multiprocessor less to do; not for 16-bit
    // operands whose rows lie an odd multiple of 16 bytes apart, nor with an activation
    // (the 64-row tiles have no twins in the activation modules).
    let odd_rows = t != "tf32" && straddling_rows(row_bytes);
    let half = (auto_tile && forced_parts.is_none() && !odd_rows)
        // tf32's kernels read Y k-contiguous always (`nn` swapped, `nt` packed).
        .then(|| half_rows(t, (letter, tile, parts), dims, batch, ktiles, sms, yk || t == "tf32"))
        .flatten()
        .filter(|&(_, tile)| !activation || has_act_twin(tile));
    let (letter, tile, parts) = match half {
        Some((letter, tile)) => (letter, tile, 1),
        None => (letter, tile, parts),
    };
    // Pair kernels exist for the 16-bit types in every op and for tf32 tn. A forced pair
    // runs where one exists, without a split of k.
    let has_pair = t != "tf32" || ops == "tn";
    let pair = pair && forced_parts.is_none() && has_pair;
    let (letter, parts) = match (pair, letter) {
        (true, 'l') => ('p', 1),
        (true, _) => ('q', 1),
        (false, _) => (letter, parts),
    };
    // The automatic choice takes a pair where operand rows straddle 128-byte lines.
    let auto_pair = (auto_tile && !activation)
        .then(|| pair_tile(has_pair, (letter, parts), dims, batch, row_bytes, ktiles, sms))
        .flatten();
    let (letter, tile, pair) = match auto_pair {
        Some('q') => ('q', (128, 64), true),
        Some(_) => ('p', (128, 128), true),
        None => (letter, tile, pair),
    };
    Ok(Choice {
        name: format!("gemm_wg_{t}_{letter}_{ops}"),
        family: Family::Wgmma,
        pack,
        align: [false; 2],
        swap,
        x_in_place: false,
        transpose_y: false,
        tile,
        smem: WG_SMEM,
        // A producer warpgroup and one consumer warpgroup per 64 rows.
        threads: 128 * (1 + tile.0 as u32 / 64),
        split_k: (parts > 1).then_some(parts as u32),
        cluster_k: 1,
        stream_k: None,
        pair,
        fallback: None,
    })
}
