//! The f64 kernels for compute capability 9.0 and later (ptx/gemm_dmma90.cu: mma.sync
//! m16n8k4 / m16n8k8 .f64): which tile and cluster split a problem takes, each tile's launch
//! shape and its shared memory (docs/kernels/gemm.md, the DMMA sections and "Thin tiles").

use super::builder::Plan;
use super::params::tiles2;
use super::thin::THIN_MAX;
use super::{SplitK, Tile};
use crate::error::{bail_invalid, Result};

/// The f64 sm_90 DMMA tile letter and the blocks of a cluster that split k for each tile.
///
/// Tiles: `l` (128 x 128, one block per multiprocessor), `m` (128 x 64, one), `s` (64 x 64, two),
/// `u` (32 x 32); `s` and `u` also split k over the 2 blocks of a cluster (`s2`, `u2`); the thin
/// `t` (16 x 64) and `h` (64 x 16), two blocks each. Forced: Large and Wide give `l`, Narrow `m`,
/// Small `s`, Thin `t` when D has at most as many rows as columns and `h` otherwise; a forced
/// split in 2 takes `s` (Small, or Auto when the 64 x 64 tiles fill a wave) or `u`.
/// Automatically: a side of at most [`THIN_MAX`] takes the thin tile along it (such a product is
/// memory-bound; few tiles and long k are split through partial products before this is asked:
/// `partials::auto_parts`). Otherwise, from the measured table in docs/kernels/gemm.md (H100):
/// `l` from a wave of its tiles when the last wave is at least 3/4 full; `m` for 0.9-1.0 wave of
/// its tiles; `s` split in 2 when its split blocks make 0.9 of a wave (one per multiprocessor),
/// k >= 1024, and `s` alone leaves its last wave of two blocks per multiprocessor under 4/5
/// full, if the split fills it to 4/5 or k >= 4096 (long, narrow problems such as 64 x 4096 x
/// 4096); `s` from a wave of two blocks per multiprocessor; `u` from a wave of its tiles; below
/// that `u` split in 2 (k >= 256).
pub(crate) fn dmma90_tile(tile: Tile, split: SplitK, plan: &Plan, batch: usize, sms: usize) -> Result<(char, u32)> {
    let count = |dims| tiles2(plan.m, plan.n, dims).saturating_mul(batch);
    let (tl, tm, ts, tu) = (count((128, 128)), count((128, 64)), count((64, 64)), count((32, 32)));
    // The fraction of the block slots that the last wave of `blocks` fills.
    let fill = |blocks: usize, slots: usize| blocks as f64 / (blocks.div_ceil(slots).max(1) * slots) as f64;
    match split {
        SplitK::Parts(parts) if parts > 1 => {
            let letter = match tile {
                Tile::Small => 's',
                Tile::Auto if ts >= sms => 's',
                Tile::Auto => 'u',
                _ => bail_invalid!(
                    "gemm: the f64 {tile:?} tile does not split k; the Small and Auto tiles split it in 2 parts"
                ),
            };
            if parts != 2 {
                bail_invalid!("gemm: the f64 {letter} tile splits k in 2 parts, not {parts}");
            }
            return Ok((letter, 2));
        }
        _ => {}
    }
    let may_split = split == SplitK::Auto;
    let thin = if plan.m <= plan.n { 't' } else { 'h' };
    Ok(match tile {
        Tile::Thin => (thin, 1),
        Tile::Auto if plan.m.min(plan.n) <= THIN_MAX => (thin, 1),
        Tile::Large | Tile::Wide => ('l', 1),
        Tile::Narrow => ('m', 1),
        Tile::Small => ('s', 1),
        Tile::Auto if tl >= sms && fill(tl, sms) >= 0.75 => ('l', 1),
        Tile::Auto if tm * 10 >= sms * 9 && tm <= sms => ('m', 1),
        Tile::Auto
            if may_split
                && 2 * ts * 10 >= sms * 9
                && plan.k >= 1024
                && fill(ts, 2 * sms) < 0.8
                && (fill(2 * ts, 2 * sms) >= 0.8 || plan.k >= 4096) =>
        {
            ('s', 2)
        }
        Tile::Auto if ts >= 2 * sms => ('s', 1),
        Tile::Auto if tu >= sms => ('u', 1),
        Tile::Auto if may_split && plan.k >= 256 => ('u', 2),
        Tile::Auto => ('u', 1),
    })
}

/// (block tile, threads, BK, stages) of an f64 sm_90 DMMA tile (ptx/gemm_dmma90.cu); dynamic
/// shared memory is [`dmma90_smem`].
pub(crate) fn dmma90_config(letter: char) -> ((usize, usize), u32, u32, u32) {
    match letter {
        'l' => ((128, 128), 256, 16, 4),
        'm' => ((128, 64), 256, 16, 4),
        's' => ((64, 64), 128, 16, 3),
        't' => ((THIN_MAX, 64), 128, 32, 4),
        'h' => ((64, THIN_MAX), 128, 32, 4),
        _ => ((32, 32), 128, 16, 4),
    }
}

/// Dynamic shared memory of an f64 sm_90 DMMA tile (ptx/gemm_dmma90.cu): per stage, each
/// operand's slot holds either layout of its tile, `rows x (bk + 4)` or `bk x (rows + 4)` doubles.
pub(crate) fn dmma90_smem((bm, bn): (usize, usize), bk: u32, stages: u32) -> u32 {
    let bk = bk as usize;
    let slot = |rows: usize| (rows * (bk + 4)).max(bk * (rows + 4));
    (stages as usize * 8 * (slot(bm) + slot(bn))) as u32
}
