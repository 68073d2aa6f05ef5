//! The DMMA kernels for compute capability 9.0 and later (ptx/gemm_dmma90.cu on f64 operands,
//! ptx/gemm_dmma90_f32.cu on f32 ones: mma.sync m16n8k4 / m16n8k8 .f64): which tile and cluster
//! split a problem takes, each tile's launch shape and its shared memory (docs/kernels/gemm-dmma.md,
//! the DMMA sections, "Thin tiles" and "f32 on the f64 tensor cores").

use super::builder::Plan;
use super::params::{paired_time, tiles2};
use super::thin::THIN_MAX;
use super::{Kernel, SplitK, Tile};
use crate::blas::MathMode;
use crate::error::{bail_invalid, Result};

/// The f64 sm_90 DMMA tile letter and the blocks of a cluster that split k for each tile, for
/// the `operands` it reads ([`DmmaOperands`]).
///
/// Tiles: `l` (128 x 128, one block per multiprocessor), `m` (128 x 64, one), `p` (128 x 64 of 4
/// warps, two), `s` (64 x 64, two), `q` (64 x 64, three), `u` (32 x 32); `s` and `u` also split k
/// over the 2 blocks of a cluster (`s2`, `u2`); the thin `t` (16 x 64) and `h` (64 x 16), two
/// blocks each; `k`, m's tile in stream-k (the blocks share the tiles' k-tiles evenly,
/// [`stream_k_blocks`]). Forced: Large and Wide give `l`, Broad `p`, Narrow `m`, Small and Medium
/// `s`, Half `q`, Thin `t` when D has at most as many rows as columns and `h` otherwise; a forced
/// split in 2 takes `s` (Small, or Auto when the 64 x 64 tiles fill a wave), `q` (Half) or `u`;
/// Narrow with a split in 2 to [`STREAM_K_MAX_PARTS`] parts takes `k` with at most that many
/// blocks per tile (one matrix only).
///
/// Automatically (from forced sweeps on the H100, docs/kernels/gemm-dmma.md, the DMMA sections,
/// "Thin tiles" and "f64 tiles by waste and waves"):
/// * the thin tile along a short side ([`thin_side`]: at most [`THIN_MAX`], or up to 80 where
///   16-wide strips waste much less of D than 64-wide ones: 31 x 4099 x 257 0.82x -> 1.59x
///   cuBLAS, 2053 x 67 x 1999 0.54x -> 0.79x, 4096 x 24 x 4096 0.54x (`s`) -> 1.03x), except
///   that a side over 16 with k >= [`THIN_SPLIT_MIN_K`] takes `u` split in 2 where that leaves
///   the busiest multiprocessor a tenth less work (2053 x 67 x 1999: 0.81x -> 1.09x; H200,
///   2026-11-29, 72 shapes of a side 24-80 by 300-2500 at k 256-800, NN and TT: every one the
///   rule splits ran faster split, 300 x 65 x 512 +25% / +57%, 1000 x 24 x 800 +34-41%, 300 x
///   24 x 256 +12%; where the thin tiles' blocks are fewer per SM than the split's, the split
///   lost up to 24%, as the rule has it). Few tiles with long k are split through partial
///   products before this is asked (`partials::auto_parts`).
/// * A tile only where it covers D with little waste ([`FULL`] of its area holds D): 128 x 128
///   on a batch of 64 x 64 matrices computes 4x the work (0.45x -> 1.05x on `s`).
/// * `l` from a wave of its tiles when the last wave is at least 3/4 full, no more than
///   [`L_FILL_MARGIN`] emptier than `s`'s last round of two blocks per multiprocessor, and k is
///   at least 32 (4096 x 4096 x 16: the output's stores dominate; `s`, two blocks per
///   multiprocessor, overlaps them: 0.88x -> 1.02x; H200, 2026-11-28: 5684 x 1168 x 376, `l`'s
///   last wave 0.85 full against `s`'s 0.92, 35.3 -> 42.2 TFLOP/s, 3000 x 3000 x 1000 0.87
///   against 0.93, 44.0 -> 48.0; where both are 0.97 full, 4096 x 4096 x 64-1024, 2000 x 2000 x
///   500, 2048 x 2048 x 384 and 8192 x 1024 x 512, `l` kept, within 2% of `s` or up to 7%
///   ahead); there, `p` for k up to [`P_MAX_K`]: two blocks per multiprocessor overlap one's
///   stores of D with the other's DMMAs, which short k leaves the larger share of the time (H200,
///   2026-11-29, A/B in every op: 8192 x 8192 x 64 0.76-0.83x -> 0.84-0.91x cuBLAS, 2048 x 2048
///   x 128 x 32 0.89-0.92x -> 0.94-0.99x, 512 x 512 x 64 x 96 0.87-0.88x -> 0.99-1.00x, 4096 x
///   4096 x 256 -0.1% to +2.4%; from k = 700 `l` is as fast or up to 6% faster, forced);
/// * `l` also from 3/4 of one wave of its tiles where `s` would put 4 blocks or more on the
///   busiest multiprocessor and k is at least [`L_PART_WAVE_MIN_K`]: a lone `l` block takes
///   about 3.2 times a lone `s` block, two rounds of `s` pairs 3.49 (H200, 2026-11-29: 24 shapes
///   of 104-128 such tiles and 416-504 of `s` at k 384-2048, NN and TT, `l` forced 0.5-14%
///   faster than the automatic `s` or `s2` in every case; then A/B in every op, 1792 x 1152 x
///   4096 +9-12%, 1536 x 1280 x 3000 +7-12%, 1000 x 1700 x 800 +4-7%; where `s` put 3 blocks
///   on an SM, 1408 x 1152 x 500 with 99 `l` tiles, `l` lost 18-22%, and at k = 300, 960 x
///   2000, 2-6%);
/// * `m` for 0.9-1.0 wave of its tiles;
/// * `s` split in 2 when its split blocks make 0.9 of a wave, k >= 1024, and either `s` alone
///   leaves its last wave of two blocks per multiprocessor under 4/5 full and the split fills
///   it to 4/5 or k >= 2048 (768 x 1024 x 3072: 0.52x -> 0.91x; 64 x 4096 x 4096; 1536^3 +4%)
///   and, for f64 on rows a sector apart ([`sector_rows`]), the split leaves the busiest
///   multiprocessor a twentieth less work (below; 12288 x 128 x 4096 `s` 1.03-1.05x `s2`),
///   or, where `m` would not take it (below), the split leaves the busiest multiprocessor a
///   twentieth less work (its blocks, a pair taking 1.747 times a lone block, times their k:
///   1023 x 1025 x 1027 NT 0.73x -> 0.87x, TT 0.79x -> 0.90x, `s` putting 3 blocks on some and
///   the split 5 of half the k: predicted 17%, measured 15-19%); there `u` split in 2
///   instead where the pairs' model, a `u` block costing [`U_BLOCK_COST`] of an `s` block, puts
///   it [`U2_AHEAD_F64`] ahead (f32: [`U2_AHEAD_F32`]): smaller tiles waste less of D and even
///   the rounds out (H200, 2026-12-03, A/B: f64 600 x 400 x 2500 +48%, 17 x 28672 x 4096
///   +36-38%, 28 x 4386 x 3703 +53-80%, 155 x 2833 x 6222 +20-22%; f32 NN 1.06-1.65x).
///   Where the model leaves `u2` behind, exact f32 runs `u` unsplit instead of `s2` when `u`
///   makes one to [`F32_U_OVER_S2_MAX_BUSIEST`] waves of its tiles, `s2`'s last round is at
///   most [`F32_U_OVER_S2_MAX_FILL`] full and the operands are not both k-contiguous (64 x
///   5664 x 1776 NN / NT +29%, 512 x 768 x 2048 +30-32%, 1249 x 271 x 2524 +14-27%);
/// * `m` for half a wave to a wave of its tiles (768 x 1024 x 768 0.49x -> 0.73x, 896 x 1024 x
///   2048 0.56x -> 0.94x: `u` below, its 32 x 32 tiles reading each operand 2-4x as often, lost
///   to it wherever k >= 1024);
/// * `s` from a wave of two blocks per multiprocessor, or from one block per multiprocessor
///   with k >= 1024 (f64: k >= [`S_OVER_U_MIN_K`]); `u` from a wave of its tiles, split in 2
///   from k = [`U2_OVER_U_MIN_K`] where that puts at most [`U2_OVER_U_MAX_BUSIEST`] blocks on the
///   busiest multiprocessor (f64 216 x 665 x 3590 +17-32%, 300 x 500 x 3000 +26-29%; f32
///   +4-34%); below a wave `u` split in 2 (k >= 256).
/// * Where `s` (unsplit) is taken and k is at most [`Q_MAX_K`], `q` (the same tile in three
///   blocks per multiprocessor) when its rounds of three leave the busiest multiprocessor fewer
///   rounds than `s`'s of two: where the blocks are short-lived, a third block per
///   multiprocessor overlaps the others' first loads and last stores (H200, 2026-11-29, A/B in
///   every op: 1536 x 1536 x 96 0.77-0.81x -> 0.95-1.03x cuBLAS, 4096 x 4096 x 16 +1-10%, batches
///   38 x 284 x 42 x 240 and 201 x 154 x 41 x 65 +14-22% but TT at k 42 +0-2%, 100 x 60 x 64 x 500
///   +8-10%; forced, 64 x 64 x 64 x 512, as many rounds either way, -4% NN / NT / TN; from k =
///   376 `q` was 1-10% slower than `s`, at k = 1677 up to 15%). Dispatch takes `q` by the same
///   count of rounds up to k = 512 where the operands are read one element at a time
///   ([`element_q`]).
pub(crate) fn dmma90_tile(
    tile: Tile,
    split: SplitK,
    plan: &Plan,
    batch: usize,
    sms: usize,
    operands: DmmaOperands,
) -> Result<(char, u32)> {
    let f32 = operands == DmmaOperands::F32;
    let sector_gate = operands == DmmaOperands::F64 && sector_rows(plan);
    let count = |dims| tiles2(plan.m, plan.n, dims).saturating_mul(batch);
    let (tl, tm, ts, tu) = (count((128, 128)), count((128, 64)), count((64, 64)), count((32, 32)));
    // The `s` blocks on the busiest multiprocessor, spread evenly.
    let s_busiest = ts.div_ceil(sms.max(1));
    // The fraction of the block slots that the last wave of `blocks` fills.
    let fill = |blocks: usize, slots: usize| blocks as f64 / (blocks.div_ceil(slots).max(1) * slots) as f64;
    // Whether a tile's area is mostly D's.
    let full = |dims| coverage(plan.m, plan.n, dims) >= FULL;
    // Whether k split over a cluster's 2 blocks (`split` blocks) leaves the busiest
    // multiprocessor at most `keep` (num, den) of the work it has unsplit (`whole` blocks), for
    // the tiles that run two per multiprocessor (s, u and the thin ones, so these compare like
    // for like), each block's work its k and the split's hand-off.
    let split_keeps = |split: usize, whole: usize, (num, den): (usize, usize)| {
        paired_time(split, sms) * (plan.k / 2 + SPLIT_COST_K) * den <= paired_time(whole, sms) * plan.k * num
    };
    match split {
        SplitK::Parts(parts) if parts > 1 && tile == Tile::Narrow => {
            // Stream-k on m's tile: `parts` caps the blocks per tile (stream_k_blocks).
            if parts > STREAM_K_MAX_PARTS || batch != 1 {
                bail_invalid!(
                    "gemm: the f64 Narrow tile runs stream-k over 2-{STREAM_K_MAX_PARTS} blocks per tile on one matrix, not {parts} parts with batch {batch}"
                );
            }
            return Ok(('k', parts));
        }
        SplitK::Parts(parts) if parts > 1 => {
            let letter = match tile {
                Tile::Small => 's',
                Tile::Half => 'q',
                Tile::Auto if ts >= sms => 's',
                Tile::Auto => 'u',
                _ => bail_invalid!(
                    "gemm: the f64 {tile:?} tile does not split k; the Small, Half and Auto tiles split it in 2 parts"
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
    let m_half_wave = tm <= sms && tm * 2 >= sms && full((128, 64));
    let thin = if plan.m <= plan.n { 't' } else { 'h' };
    Ok(match tile {
        Tile::Thin => (thin, 1),
        // A short side of 17-80: `u` in 2 parts where it loads the busiest SM a tenth less than
        // the thin tile (2053 x 67 x 1999: 16.1 TFLOP/s against `t` 12.0).
        Tile::Auto
            if thin_side(plan)
                && may_split
                && plan.m.min(plan.n) > THIN_MAX
                && plan.k >= THIN_SPLIT_MIN_K
                && split_keeps(2 * tu, count(dmma90_config(thin).0), (9, 10)) =>
        {
            ('u', 2)
        }
        Tile::Auto if thin_side(plan) => (thin, 1),
        Tile::Large | Tile::LargePair | Tile::Wide => ('l', 1),
        Tile::Broad => ('p', 1),
        Tile::Narrow | Tile::NarrowPair => ('m', 1),
        Tile::Small | Tile::Medium => ('s', 1),
        Tile::Half => ('q', 1),
        Tile::Auto
            if tl >= sms
                && fill(tl, sms) >= 0.75
                && fill(tl, sms) + L_FILL_MARGIN >= fill(ts, 2 * sms)
                && plan.k >= 32
                && full((128, 128)) =>
        {
            (if plan.k <= P_MAX_K { 'p' } else { 'l' }, 1)
        }
        // 3/4 of one wave of l's tiles or more, where s would put 4 blocks or more on the
        // busiest SM (two rounds of pairs) and k is long enough for a lone block per SM.
        Tile::Auto
            if tl < sms
                && fill(tl, sms) >= 0.75
                && s_busiest >= 4
                && plan.k >= L_PART_WAVE_MIN_K
                && full((128, 128)) =>
        {
            ('l', 1)
        }
        Tile::Auto if tm * 10 >= sms * 9 && tm <= sms && full((128, 64)) => ('m', 1),
        Tile::Auto
            if may_split
                && 2 * ts * 10 >= sms * 9
                && plan.k >= 1024
                && ((fill(ts, 2 * sms) < 0.8
                    && (fill(2 * ts, 2 * sms) >= 0.8 || plan.k >= 2048)
                    && (!sector_gate || split_keeps(2 * ts, ts, (19, 20))))
                    || (split_keeps(2 * ts, ts, (19, 20)) && !m_half_wave)) =>
        {
            // The 32 x 32 tile in 2 parts where its rounds leave the busiest multiprocessor
            // clearly less time than s's (a u block costing U_BLOCK_COST of an s block).
            let (u2, s2) = (paired_time(2 * tu, sms) * U_BLOCK_COST, paired_time(2 * ts, sms) * 1000);
            let (num, den) = if f32 { U2_AHEAD_F32 } else { U2_AHEAD_F64 };
            if u2 * den <= s2 * num {
                ('u', 2)
            } else if f32
                && plan.ops != "tn"
                && fill(2 * ts, 2 * sms) <= F32_U_OVER_S2_MAX_FILL
                && tu >= sms
                && tu <= F32_U_OVER_S2_MAX_BUSIEST * sms
            {
                // Exact f32 with at most one k-contiguous operand, where s2's last round of
                // pairs leaves slots empty: one to five waves of u blocks, all resident at once.
                ('u', 1)
            } else {
                ('s', 2)
            }
        }
        Tile::Auto if m_half_wave => ('m', 1),
        Tile::Auto if ts >= 2 * sms || (ts >= sms && (plan.k >= 1024 || (!f32 && plan.k >= S_OVER_U_MIN_K))) => (
            if q_saves_rounds(plan, s_busiest, Q_MAX_K) {
                'q'
            } else {
                's'
            },
            1,
        ),
        Tile::Auto if tu >= sms => (
            'u',
            if may_split && plan.k >= U2_OVER_U_MIN_K && 2 * tu <= U2_OVER_U_MAX_BUSIEST * sms {
                2
            } else {
                1
            },
        ),
        Tile::Auto if may_split && plan.k >= 256 => ('u', 2),
        Tile::Auto => ('u', 1),
    })
}

/// The most blocks per output tile that stream-k (`k`, [`dmma90_tile`]) may be asked for.
pub(crate) const STREAM_K_MAX_PARTS: u32 = 64;

/// The grid of a stream-k launch (`k`, ptx/gemm_dmma90.cu) of `parts` blocks per tile at most
/// over an `m x n x k` product: no more blocks than multiprocessors (one resident each, every
/// block's share within one k-tile of the others') or than k-tiles (BK 16), at least one.
pub(crate) fn stream_k_blocks(plan: &Plan, parts: u32, sms: usize) -> u32 {
    let tiles = tiles2(plan.m, plan.n, (128, 64));
    let blocks = tiles.saturating_mul(parts as usize).min(sms);
    stream_k_grid(blocks, plan.m, plan.n, plan.k)
}

/// `blocks` capped at the k-tiles of an `m x n x k` stream-k launch (each tile's k in BK = 16
/// steps, one step where k = 0) and at least one: every block of the grid then has work, which
/// the kernel's count of a tile's parts relies on (an idle block would never count in). The
/// launch applies it to its own problem as well.
pub(crate) fn stream_k_grid(blocks: usize, m: usize, n: usize, k: usize) -> u32 {
    let k_tiles = tiles2(m, n, (128, 64)).saturating_mul(k.div_ceil(16).max(1));
    u32::try_from(blocks.min(k_tiles).max(1)).unwrap_or(u32::MAX)
}

/// What a DMMA tile reads, for [`dmma90_tile`]: f64 operands with the 16-byte copies, f64 read
/// one element at a time (the element variants, [`element_variant`]), or f32 (exact f32 on the
/// f64 tensor cores, which takes the f64 rule but for the margin of `u2` over `s2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DmmaOperands {
    /// f64 read by the 16-byte kernels (or after an aligned copy).
    F64,
    /// The gate of [`sector_rows`] does not apply: the 16-byte kernels measured it, the element
    /// variants did not gain from it (f64 2339 x 568 x 1573 NN `su` 0.88x `s2u`, 9927 x 236 x
    /// 3144 0.89x).
    F64Element,
    /// f32, converted to f64 as the fragments are read.
    F32,
}

/// Whether both operands of an f64 product have rows 32 bytes apart (leading dimensions and
/// batch strides a multiple of 4 doubles: each row's share of a k-tile starts on an L2 sector
/// wherever the first row's does, whatever the layout), so that the 16-byte kernels read them
/// as they are (an address off 16 bytes makes them the element variants,
/// [`DmmaOperands::F64Element`]). The fill arm of `s2` in [`dmma90_tile`] asks such products
/// for the pairs' model's twentieth as well: there `s` ran ahead of `s2` in all 26 such rows of
/// an A/B where the model put the split under 5% ahead (1.03-1.12x), while with a row stride 16
/// bytes off the sector the split ran ahead in NN (`s` 0.95x) and TN (0.89x) and `s` lost up
/// to 18% in NT (H100, 2026-12-07, docs/kernels/gemm-dmma.md, "f64: s2 only where the pairs'
/// model puts it a twentieth ahead, on rows a sector apart").
pub(crate) fn sector_rows(plan: &Plan) -> bool {
    [plan.ldx, plan.ldy, plan.sx, plan.sy].iter().all(|ld| ld % 4 == 0)
}

/// The least k from which f64 runs `s` (unsplit) on one to two waves of its tiles over one
/// block per multiprocessor where k < 1024 and `m` does not take the product (its 128 x 64 tiles
/// cover D less than [`FULL`], or make more than a wave), instead of `u`: H100, 2026-12-07, 8
/// shapes of 190-270 such tiles at k 500-1000 forced in NN and TN: where the rule fell to `u`
/// (4 shapes, 190-225 tiles), `s` ran 1.12-1.50x faster in all 8 rows (600 x 1200 x 700 24.0 ->
/// 27.9 TFLOP/s, 1100 x 700 x 800 TN 20.8 -> 31.2, 900 x 900 x 600 TN 21.4 -> 30.6); the 32 x
/// 32 tile reads each operand twice as often as `s`. Below k = 600 not measured (k <= 128
/// keeps `q`, [`Q_MAX_K`]); exact f32 keeps `u` there (0.79-1.21x cuBLAS on the same shapes)
/// (docs/kernels/gemm-dmma.md, "f64: `s` over `u` below k = 1024").
const S_OVER_U_MIN_K: usize = 600;

/// The least k at which a wave or more of `u` tiles splits k in 2 where the split puts at most
/// [`U2_OVER_U_MAX_BUSIEST`] blocks on the busiest multiprocessor (see [`dmma90_tile`]; the
/// A/B's k ran 1130-4417).
const U2_OVER_U_MIN_K: usize = 1024;
/// The most `u2` blocks on the busiest multiprocessor for which 1 to 1.5 waves of `u` tiles
/// split k in 2: there the busiest multiprocessor goes from 2 whole blocks to 3 halves while the
/// rest go from 1 to 2 or 3. H200, 2026-12-03, A/B of 17 such shapes (133-184 tiles, k
/// 1130-4009) in NN and TT: f64 1.07-1.39x, f32 1.04-1.34x, every row faster; 8 of them in NT
/// and TN: f64 1.20-1.32x / 1.03-1.49x, f32 1.11-1.29x / 1.02-1.24x. At 4 blocks (199-264
/// tiles, measured at 208-228: the busiest multiprocessor's share of the work unchanged)
/// 0.93-1.07x, so no split there (docs/kernels/gemm-dmma.md, "f64 and f32: a wave and a half of 32 x
/// 32 tiles split in 2; exact f32 on whole 32 x 32 tiles where s2 leaves slots empty").
const U2_OVER_U_MAX_BUSIEST: usize = 3;

/// The most `u` blocks per multiprocessor (all resident at once: 40 KiB of shared memory each)
/// for which exact f32 runs the 32 x 32 tile unsplit where the `s2` rule would split the 64 x
/// 64 one, the model does not put `u2` ahead, `s2`'s last round of pairs is at most
/// [`F32_U_OVER_S2_MAX_FILL`] full and the kernel's operands are not both k-contiguous (`tn`).
/// H200, 2026-12-03, A/B in NN and TT of 9 such shapes (215-646 `u` tiles, k 1229-3756, `s2`'s
/// last round 0.50-0.86 full): 1.02-1.32x in 17 rows of 18, 159 x 3994 x 3756 TT 0.93x; 8 of
/// them in NT 1.09-1.32x. f32 reads half f64's bytes per element, which the 32 x 32 tile,
/// reading each operand twice as often as `s`, feels most; f64 kept `s2` (1249 x 271 x 2524:
/// `s2` 26.8 TFLOP/s, `u` 23.5).
/// Against it: `tn` in every shape (0.68-1.00x: both operands k-contiguous), and `s2` filling
/// its round (4096 x 128 x 4096 and 64 x 8192 x 8192, 0.97 full: NN 0.82-0.93x, TT 0.80-0.98x).
/// Where the model put `u2` ahead, `u` ran 0.91-1.12x `u2`, so `u2` stays.
const F32_U_OVER_S2_MAX_BUSIEST: usize = 5;
/// The fullest last round of `s2` pairs (over two blocks per multiprocessor) at which exact
/// f32 may take `u` unsplit instead ([`F32_U_OVER_S2_MAX_BUSIEST`]): 0.86 gained 5-8%, 0.97-0.99
/// lost up to 20% or tied.
const F32_U_OVER_S2_MAX_FILL: f64 = 0.9;

/// What a `u` block (32 x 32) costs in thousandths of an `s` block (64 x 64), both two per
/// multiprocessor over the same k: fitted on f64 600 x 400 x 2500 (H200, 2026-12-03; see
/// [`dmma90_tile`]).
const U_BLOCK_COST: usize = 340;

/// The most of `s2`'s modelled time (num, den) that `u2`'s may take for the automatic choice to
/// split the 32 x 32 tile instead, f64: 1.25x ahead. Where the model put `u2` 1.14-1.16x ahead,
/// f64 NN ran 0.78-1.09x as fast (geomean 0.95) and TT 0.89-1.09x; from 1.29x ahead 1.10-1.81x
/// but two rows at 0.98x (H200, 2026-12-03, 47 shapes; docs/kernels/gemm-dmma.md, "f64 and f32: the
/// 32 x 32 tile split in 2 where the model puts it ahead").
const U2_AHEAD_F64: (usize, usize) = (4, 5);

/// As [`U2_AHEAD_F64`] for exact f32 on the DMMA tiles: 1.1x ahead (f32 NN, TT and NT 1.04-1.90x
/// where the model put `u2` 1.14x ahead or more, one shape of 34 at 0.89-0.96x).
const U2_AHEAD_F32: (usize, usize) = (10, 11);

/// How much fuller `s`'s last round (two blocks per multiprocessor) may be than `l`'s last wave
/// before the automatic choice leaves `l` for `s` (see [`dmma90_tile`]).
const L_FILL_MARGIN: f64 = 0.05;

/// The least k for which the automatic choice takes `l` over less than a wave of its tiles
/// (see [`dmma90_tile`]): from k = 384 it ran ahead of `s` where the rule takes it, at 300 2-6%
/// behind.
const L_PART_WAVE_MIN_K: usize = 384;

/// The longest k for which the automatic choice takes `p` where it would take `l` (see
/// [`dmma90_tile`]).
const P_MAX_K: usize = 256;

/// The least k for which the automatic choice splits a product with a short side of 17-80 in 2
/// parts of `u` rather than run the thin tile (see [`dmma90_tile`]; H200, 2026-11-29: at k = 256
/// the split ran 2-27% faster wherever the rule takes it; below, not measured).
const THIN_SPLIT_MIN_K: usize = 256;

/// The longest k for which the automatic choice takes `q` where it would take `s` (see
/// [`dmma90_tile`]): at k = 128-131 the two ran within 3% of each other, from k = 376 `s` ahead.
const Q_MAX_K: usize = 128;

/// Whether the automatic choice runs `q` rather than `s` (unsplit) where the operands are read
/// one element at a time (the element variants, `qu` for `su`): k at most [`Q_ELEMENT_MAX_K`]
/// and `q`'s rounds of three blocks leave the busiest multiprocessor fewer rounds than `s`'s of
/// two. The element variants' 8- or 4-byte copies leave a block more waiting than the 16-byte
/// ones, which a third block per multiprocessor hides past `Q_MAX_K`. H200, 2026-12-03, A/B of
/// 21 shapes (k 138-512, 3-22 blocks of `s` on the busiest multiprocessor, NN / TN / TT): f32
/// `su` -> `qu` 1.09-1.39x in every row (3826 x 373 x 195 NN 0.58 -> 0.83x cuBLAS, 1941 x 3436 x
/// 470 NN 0.76 -> 0.95x), f64 0.99-1.34x (1013 x 1398 x 194 NN 0.66 -> 0.93x, 237 x 4500 x 487
/// 1.13-1.27x). On aligned operands the same change ran 0.96-1.07x (TN 1.20-1.27x at 3 blocks),
/// so `s` keeps them from k = [`Q_MAX_K`] (docs/kernels/gemm-dmma.md, "f64 and f32: three 64 x 64
/// blocks per multiprocessor on element-wise operands up to k = 512").
pub(crate) fn element_q(plan: &Plan, batch: usize, sms: usize) -> bool {
    let s_busiest = tiles2(plan.m, plan.n, (64, 64))
        .saturating_mul(batch)
        .div_ceil(sms.max(1));
    q_saves_rounds(plan, s_busiest, Q_ELEMENT_MAX_K)
}

/// Whether `q` replaces `s` (unsplit) for k up to `max_k`: its rounds of three blocks leave the
/// busiest multiprocessor, which holds `s_busiest` blocks of 64 x 64, fewer rounds than `s`'s
/// rounds of two (the rule of [`dmma90_tile`] with [`Q_MAX_K`], and of [`element_q`]).
fn q_saves_rounds(plan: &Plan, s_busiest: usize, max_k: usize) -> bool {
    plan.k <= max_k && s_busiest.div_ceil(3) < s_busiest.div_ceil(2)
}

/// The longest k for which the element variants take `q` over `s` ([`element_q`]; measured to
/// k = 487).
const Q_ELEMENT_MAX_K: usize = 512;

/// What splitting k over a cluster's 2 blocks costs, in k of a block's work (the partial tile
/// handed over and added).
const SPLIT_COST_K: usize = 16;

/// The least share of a tile's area that D must fill for the automatic choice to take it.
const FULL: f64 = 0.9;

/// The share of the tiles' area over an `m x n` D that D fills.
fn coverage(m: usize, n: usize, (bm, bn): (usize, usize)) -> f64 {
    (m * n) as f64 / (m.div_ceil(bm) * bm * n.div_ceil(bn) * bn).max(1) as f64
}

/// Whether an f64 GEMM takes the thin tiles automatically: D (the kernels' row-major form) with
/// a side of at most [`THIN_MAX`] (a decode step), or of at most 80 where D fills at least 0.2
/// more of 16-wide strips across it than of 64-wide ones (31: 0.97 against 0.48; 67: 0.84
/// against 0.52). Short columns (the `h` tile) only with k <= 512: the strips of `h` each
/// stream the long operand, which `s` reads once (17 x 28672 x 4096: 0.82x against 0.89x,
/// 40 x 8192 x 2048: 0.69x against 0.82x; 31 x 4099 x 257: 1.59x against 0.62x).
pub(crate) fn thin_side(plan: &Plan) -> bool {
    let short = plan.m.min(plan.n);
    // The share of strips `w` wide across the short side that D fills.
    let strips = |w| coverage(short, 1, (w, 1));
    short <= THIN_MAX
        || (short <= 5 * THIN_MAX && strips(THIN_MAX) >= strips(64) + 0.2 && (plan.m <= plan.n || plan.k <= 512))
}

/// (block tile, threads, BK, stages) of an f64 sm_90 DMMA tile (ptx/gemm_dmma90.cu); dynamic
/// shared memory is [`dmma90_smem`].
pub(crate) fn dmma90_config(letter: char) -> ((usize, usize), u32, u32, u32) {
    match letter {
        'l' => ((128, 128), 256, 16, 4),
        'm' | 'k' => ((128, 64), 256, 16, 4),
        'p' => ((128, 64), 128, 16, 3),
        's' | 'q' => ((64, 64), 128, 16, 3),
        't' => ((THIN_MAX, 64), 128, 32, 4),
        'h' => ((64, THIN_MAX), 128, 32, 4),
        _ => ((32, 32), 128, 16, 4),
    }
}

/// Dynamic shared memory of an sm_90 DMMA tile (ptx/gemm_dmma90.cuh) on operands of `elem`
/// bytes (8: f64, 4: the f32 kernels): per stage, each operand's slot holds either layout of its
/// tile, `rows x (bk + 4)` or `bk x (rows + 32 / elem)` elements; with f32 operands the f64 C
/// tile of the epilogue, `bm x (bn + 8)` doubles, may be the larger.
pub(crate) fn dmma90_smem((bm, bn): (usize, usize), bk: u32, stages: u32, elem: usize) -> u32 {
    let bk = bk as usize;
    let slot = |rows: usize| (rows * (bk + 4)).max(bk * (rows + 32 / elem));
    let pipeline = stages as usize * elem * (slot(bm) + slot(bn));
    pipeline.max(bm * (bn + 8) * 8) as u32
}

/// The variant of an sm_90 DMMA kernel that reads its operands one element at a time (8 bytes
/// for f64, 4 for f32), so that they need be aligned only to their element
/// (`gemm_dmma90_<t>_<tile>_<ops>` -> `gemm_dmma90_<t>_<tile>u_<ops>`, every tile and cluster
/// split); `None` for any other kernel.
pub(crate) fn element_variant(name: &str) -> Option<String> {
    let rest = name.strip_prefix("gemm_dmma90_")?;
    let (ty, rest) = rest.split_once('_')?;
    let (tile, ops) = rest.split_once('_')?;
    (matches!(ty, "f64" | "f32")
        && matches!(
            tile,
            "l" | "m" | "k" | "p" | "q" | "s" | "u" | "s2" | "u2" | "q2" | "t" | "h"
        ))
    .then(|| format!("gemm_dmma90_{ty}_{tile}u_{ops}"))
}

/// Whether the automatic choice runs exact f32 on the f64 tensor cores (ptx/gemm_dmma90_f32.cu):
/// Hopper (compute capability 9.0) whose f64 units run at half the f32 rate or better (H100,
/// H200: `single_to_double_ratio` 2; parts with cut-down f64, which report a larger ratio, and
/// drivers that report none keep f32 on the CUDA cores). There one DMMA does the work of 256-512
/// FFMAs and leaves the issue slots to the loads (H200, 2026-12-01: docs/kernels/gemm-dmma.md, "f32 on
/// the f64 tensor cores").
pub(crate) fn f32_on_f64_cores(cc: (u32, u32), single_to_double_ratio: u32) -> bool {
    cc == (9, 0) && (1..=2).contains(&single_to_double_ratio)
}

/// Whether a GEMM of `type_name` in `math` with the `kernel` family runs on the f32 DMMA kernels
/// (ptx/gemm_dmma90_f32.cu): exact f32 with the tensor-core family on compute capability 9.0 and
/// later (the automatic choice asks for that family where [`f32_on_f64_cores`] holds).
pub(crate) fn f32_on_dmma(type_name: &str, math: MathMode, kernel: Kernel, cc: (u32, u32)) -> bool {
    type_name == "f32" && math == MathMode::Exact && kernel == Kernel::TensorCore && cc >= (9, 0)
}
