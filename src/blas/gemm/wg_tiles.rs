//! The wgmma kernels' tile and k split, as the automatic choice takes them: the tile by how
//! many of each size fill a wave, and the split (`gemm_wg_*` with `WgSplit`) of a problem whose
//! tiles leave multiprocessors idle. Pure functions of the problem's size and the
//! multiprocessor count, shared by dispatch and the partial-product route.

use super::params::tiles2;

/// Smallest problem (in 128 x 256 tiles) that takes the wide wgmma tile: half a wave (on the
/// H100, 2048^2 runs 12% faster on 128 wide tiles than on 256 of 128 x 128). Below that the
/// 128 x 128 tile is taken from 3/4 of a wave of its tiles, and the 128 x 64 tile under that.
pub(crate) fn wide_enough((m, n): (usize, usize), batch: usize, sms: usize) -> bool {
    tiles2(m, n, (128, 256)).saturating_mul(batch) >= sms / 2
}

/// The wgmma tile the automatic choice takes for `batch` products of `dims` (rows x columns of
/// the kernel's D) over `k`, of type `t` (f16, bf16 or tf32), before any split of k: its letter
/// and size. Where the 128 x 256 tile is wide enough, the 128 x 192 one replaces it when it
/// leaves the busiest multiprocessor less to do ([`broad_better`]; H100, 2026-11-27: 2304 x
/// 1024 x 768 f16 311 -> 361 TFLOP/s, 2560 x 2048 x 4096 488 -> 632, docs/kernels/gemm-wgmma.md,
/// "The 128 x 192 wgmma tile").
pub(crate) fn wg_auto_tile(
    t: &str,
    dims: (usize, usize),
    batch: usize,
    k: usize,
    sms: usize,
) -> (char, (usize, usize)) {
    // tf32 with k <= 128 (at most 4 k-tiles) keeps the 128 x 128 tile: with the epilogue through
    // shared memory it measured 1.1-1.5x faster than 128 x 256 up to k = 256; with TMA stores
    // the two tie at k = 128 and the wide tile is 5-12% faster at k = 256 (docs/kernels/gemm-wgmma.md).
    // f16 / bf16 keep the wide tile.
    if wide_enough(dims, batch, sms) && !(t == "tf32" && k <= TF32_SHORT_K) {
        if broad_better(dims, batch, sms) {
            ('b', BROAD_TILE)
        } else {
            ('w', (128, 256))
        }
    } else if tiles2(dims.0, dims.1, (128, 128)).saturating_mul(batch) >= sms * 3 / 4 {
        ('l', (128, 128))
    } else if tiles2(dims.0, dims.1, (128, 64)).saturating_mul(batch) > sms {
        // One wave of 128 x 128 tiles rather than more than one of 128 x 64 (11008 x 16 x 4096:
        // 86 tiles against 172, 0.64x -> 0.77x cuBLAS for f16, 0.62x -> 0.75x for tf32; H100,
        // docs/kernels/gemm-wgmma.md, "Split k on the wgmma kernels").
        ('l', (128, 128))
    } else {
        ('n', (128, 64))
    }
}

/// The longest k at which tf32 keeps the 128 x 128 wgmma tile where the wide tiles fit
/// ([`wg_auto_tile`]).
pub(crate) const TF32_SHORT_K: usize = 128;

/// The 128 x 192 wgmma tile (`b`, rows x columns of D). Only the plain modules
/// (`gemm_wg_<type>`) hold its kernels: it has no twin in the activation modules.
pub(crate) const BROAD_TILE: (usize, usize) = (128, 192);

/// Whether the 128 x 192 tile beats the 128 x 256 one on `batch` products of `dims`: the busiest
/// multiprocessor's columns (its rounds of tiles times the tile's columns) at most
/// `BROAD_GAIN_PERCENT` percent of the wide tile's. Both kernels are persistent, one block per
/// multiprocessor, so a problem of 72 wide tiles on 132 multiprocessors (2304 x 1024) runs one
/// round of 256 columns where 108 tiles of 192 columns also fit one round.
pub(crate) fn broad_better((m, n): (usize, usize), batch: usize, sms: usize) -> bool {
    let sms = sms.max(1);
    let busiest = |bn: usize| {
        tiles2(m, n, (128, bn))
            .saturating_mul(batch)
            .div_ceil(sms)
            .saturating_mul(bn)
    };
    busiest(BROAD_TILE.1).saturating_mul(100) <= busiest(256).saturating_mul(BROAD_GAIN_PERCENT)
}

/// The 64 x 64 wgmma tile (`h`, one consumer warpgroup). Only the plain modules hold it.
pub(crate) const HALF_TILE: (usize, usize) = (64, 64);
/// The 64 x 96 wgmma tile (`m`, one consumer warpgroup). Only the plain modules hold it.
pub(crate) const MEDIUM_TILE: (usize, usize) = (64, 96);

/// The 64-row wgmma tile that replaces the automatic choice `(letter, tile, parts)` for `batch`
/// products of `dims` over `ktiles` k-tiles of type `t`, if any (`yk`: Y is k-contiguous).
///
/// Where the chosen tile is 128 x 64 or 128 x 128, and the 64 x 64 tile or (with `yk`) the
/// 64 x 96 one covers the problem in one round leaving the busiest multiprocessor less work (its
/// tiles' area times its k-tiles) than the chosen tile, a split's work counted 5/4 (the parts'
/// hand-off and sum): of the two that fit one round, the one that loads less through the L2
/// (below). Measured on the H100 against the tiles forced in the same job (2026-11-27,
/// docs/kernels/gemm-wgmma.md, "The 64-row wgmma tiles"): f16 TN 768 x 1024 x 3072 306 -> 432 TFLOP/s
/// (64 x 96), NN 128 x 4096 x 4096 196 -> 297 (64 x 64, against 128 x 64 in 2 parts); tf32
/// 768 x 1024 x 3072 120 -> 171 (64 x 96). Of the two, the 64 x 64 tile where both cover the
/// problem in one round and its rows are whole tiles: a block's work is its tile's area, and
/// one round of either is as many blocks' time (H100, 2026-12-07, TN, forced in one run,
/// TFLOP/s 64 x 64 against 64 x 96: f16 4096 x 128 x 4096 386 against 316, bf16 391 against
/// 326; 4096 x 128 x 11008 296 against 282 and 280 against 270). Where it did not gain, and the
/// rule does not take it:
/// * an n-contiguous Y (`!yk`): the 64 x 96 tile loads it in boxes of 64 columns, 128 per 96,
///   and lost 7-13% (f16 NT and NN 768 x 1024 x 3072);
/// * fewer than 64 rows (tf32 31 x 4099 x 257: 4.5 TFLOP/s against 6.9);
/// * tf32's 64 x 64 tile against a split whose parts keep 32 k-tiles or more: the same work per
///   multiprocessor, 1.3x the bytes per output (tf32 128 x 4096 x 4096: 110 against 121 in
///   2 parts of 64 k-tiles; 256 x 256 x 1024, parts of 16 k-tiles: 11.0 against 9.8).
///
/// The caller also leaves out f16 / bf16 operands whose rows lie an odd multiple of 16 bytes
/// apart ([`odd_line_rows`]'s case: 504 x 1000 x 1000 ran 9% slower on 64 x 64).
pub(crate) fn half_rows(
    t: &str,
    (letter, tile, parts): (char, (usize, usize), usize),
    dims: (usize, usize),
    batch: usize,
    ktiles: usize,
    sms: usize,
    yk: bool,
) -> Option<(char, (usize, usize))> {
    if !matches!(letter, 'n' | 'l') || dims.0 < 64 {
        return None;
    }
    let sms = sms.max(1);
    // The busiest multiprocessor's work, in output elements times k-tiles (x4 for the 5/4).
    let busiest = |tile: (usize, usize), parts: usize| {
        let units = tiles2(dims.0, dims.1, tile).saturating_mul(batch).saturating_mul(parts);
        let work = units
            .div_ceil(sms)
            .saturating_mul(tile.0 * tile.1)
            .saturating_mul(ktiles.div_ceil(parts.max(1)));
        work.saturating_mul(if parts > 1 { 5 } else { 4 })
    };
    let now = busiest(tile, parts);
    let half_ok = t != "tf32" || parts == 1 || ktiles.div_ceil(parts) < 32;
    let candidates = [('h', HALF_TILE, half_ok), ('m', MEDIUM_TILE, yk)]
        .map(|(letter, tile, ok)| (letter, tile, tiles2(dims.0, dims.1, tile).saturating_mul(batch), ok));
    let fits = candidates.iter().filter(|&&(_, _, count, ok)| ok && count <= sms);
    if !fits.clone().any(|&(_, tile, _, _)| busiest(tile, 1) < now) {
        return None;
    }
    // Between the two (each one round): on rows that are whole 64-row tiles, 64 x 64 (H100,
    // 2026-12-07, A/B against the rule below: f16 / bf16 TN 4096 x 128 x 4096 1.27x / 1.23x,
    // 4096 x 128 x 11008 1.05x / 1.04x; tf32 64 x 8448 x 256 NN 1.14x, 8448 x 64 x 256 TN
    // 1.16x, the others within 1%). Elsewhere the larger of a multiprocessor's work per k-tile
    // and the rows all tiles load per k-tile over 2.6, the L2's share: on 96 rows (f16 / bf16
    // TN 4096 x 96 x 4096, both tiles' second row half empty) 64 x 64 ran 15% slower.
    if dims.0 % HALF_TILE.0 == 0 {
        if let Some(&(letter, tile, _, _)) = fits.clone().find(|c| c.0 == 'h') {
            return Some((letter, tile));
        }
    }
    let cost = |tile: (usize, usize), count: usize| (tile.0 * tile.1).max(count * (tile.0 + tile.1) * 10 / 26);
    fits.min_by_key(|&&(_, tile, count, _)| cost(tile, count))
        .map(|&(letter, tile, _, _)| (letter, tile))
}

/// The tile that replaces the automatic choice `(letter, tile)` (a 128-row tile) for `batch`
/// products of `dims` (rows x columns of the kernel's D) that need more than a wave of it, if
/// any: where the chosen tile is at least half empty. 33-64 rows: the 64 x 64 tile; 64 columns
/// or fewer: 128 x 64 (the wave rules count tiles, not what they cover, and take 128 x 192 or
/// 128 x 256 for such batches, which never split k). The 128 x 64 and 128 x 128 tiles within a
/// wave stay with the split and [`half_rows`].
/// Measured on an H200 against the tiles forced in the same job (2026-11-27,
/// docs/kernels/gemm-common.md, "Batches of small matrices"; cuBLAS's m x n is the kernel's
/// n x m, but tf32 NN runs swapped): 64 x 64 x 64 x 512 (NN) tf32 22.8 -> 30.7 TFLOP/s, f16
/// 34.4 -> 46.5, bf16 35.0 -> 46.8; f16 64 x 512 x 512 x 96 133 -> 155, 64 x 128 x 128 x 384 92
/// -> 107 (128 x 64 against 128 x 192); tf32 NN 64 x 512 x 512 x 96 74 -> 85.
pub(crate) fn short_sides(
    (letter, tile): (char, (usize, usize)),
    dims: (usize, usize),
    batch: usize,
    sms: usize,
) -> Option<(char, (usize, usize))> {
    let count = |tile| tiles2(dims.0, dims.1, tile).saturating_mul(batch);
    // The split tiles (128 x 64, 128 x 128) within a wave are the split's and half_rows's.
    if tile.0 != 128 || (!matches!(letter, 'w' | 'b') && count(tile) <= sms.max(1)) {
        return None;
    }
    if (33..=HALF_TILE.0).contains(&dims.0) {
        Some(('h', HALF_TILE))
    } else if dims.1 <= 64 && tile.1 > 64 {
        Some(('n', (128, 64)))
    } else {
        None
    }
}

/// Whether the wgmma kernel of tile `tile` splits k (`WgSplit`): the 128-row tiles of at most
/// 128 columns (`SPLITS` in ptx/gemm_wg.cuh).
pub(crate) fn splits_k(tile: (usize, usize)) -> bool {
    tile.0 == 128 && tile.1 <= 128
}

/// Whether the wgmma kernel of tile `tile` has twins in the activation modules
/// (`gemm_wg_<act>_<type>`, whose TMA epilogue applies the activation): the 128-row tiles but
/// 128 x 192.
pub(crate) fn has_act_twin(tile: (usize, usize)) -> bool {
    tile.0 == 128 && tile != BROAD_TILE
}

/// The share (percent) of the wide tile's busiest-multiprocessor columns under which the
/// 128 x 192 tile is taken.
const BROAD_GAIN_PERCENT: usize = 90;

/// Most parts the wgmma kernels split k into (forced or automatic).
pub(crate) const WG_MAX_PARTS: u32 = 64;
/// Most parts of an automatic split.
const WG_AUTO_MAX_PARTS: usize = 16;
/// The least k-tiles (128 bytes of k each) a part of an automatic split keeps.
const WG_SPLIT_MIN_KTILES: usize = 16;
/// The least k-tiles per part for which a split of the 128 x 128 tile beats an equally full one
/// of the 128 x 64 tile in fewer parts.
const WG_SPLIT_LONG_KTILES: usize = 64;

/// The parts a wgmma split of `ktiles` k-tiles in (at most) `parts` really has: every part keeps
/// `ceil(ktiles / parts)` k-tiles, the last what is left.
pub(crate) fn wg_parts(ktiles: usize, parts: usize) -> usize {
    let per = ktiles.div_ceil(parts.max(1)).max(1);
    ktiles.div_ceil(per).max(1)
}

/// The automatic k split of the wgmma kernels, given the tile the unsplit rule chose (`letter`),
/// the 128 x 64 and 128 x 128 tile counts (`n_units`, `l_units`, batch included) and the
/// k-tiles. A block of these kernels streams its operands at a rate that depends little on how
/// many bytes a k-tile holds (on the H100 about 0.45 us per k-tile for a decode step's 16 x 64
/// tiles and for full ones), so a problem of less than a wave of tiles runs about as many times
/// slower as it leaves multiprocessors idle. So: each tile that fits a wave splits k into as many
/// parts as fill the wave (at most `WG_AUTO_MAX_PARTS`, each keeping `WG_SPLIT_MIN_KTILES`), and
/// of the two tiles the one that fills more blocks wins; on a tie, the 128 x 128 tile (which
/// needs half the 128 x 64 tile's loads) if it needs no more parts or keeps at least
/// `WG_SPLIT_LONG_KTILES` per part, else the 128 x 64 tile in fewer parts. A near tie with the
/// 128 x 64 tile unsplit (the 128 x 128 tile's split filling more blocks, but fewer than 5/4 as
/// many, over parts shorter than `WG_SPLIT_LONG_KTILES`) runs the chosen tile unsplit: on the
/// H200 (2026-12-02, docs/kernels/gemm-wgmma.md, "tf32 on rows that straddle lines; wgmma splits that
/// add few blocks") `l` in 2 parts over 16-32 k-tiles each with 1.07-1.08x the blocks of `n`
/// unsplit ran 14-37% slower (f16 772 x 1024 x 2048 NN 152 against 194 TFLOP/s, TN 186 against
/// 254; 776 x 776 x 4096 NN 190 against 227; tf32 772 x 1004 x 1004 TN 73 against 103), over
/// 64 k-tiles 7-65% faster (f16 1152 x 776 x 8192 369 against 298; tf32 1004 x 772 x 8192 167
/// against 101). Measured on the H100
/// (docs/kernels/gemm-wgmma.md, "Split k on the wgmma kernels"): 4096 x 16 x 11008 f16 0.48x -> 0.74x
/// cuBLAS (128 x 64 in 2), tf32 0.53x -> 0.84x (128 x 128 in 4), 8192 x 16 x 8192 0.71x -> 0.84x
/// (128 x 128 in 2), 1024 x 1024 x 32768 0.58x -> 0.80x (128 x 128 in 2), 256 x 256 x 65536
/// 0.11x -> 0.56x.
///
/// Returns the tile letter and the parts (1: no split).
pub(crate) fn wg_auto_split(letter: char, n_units: usize, l_units: usize, ktiles: usize, sms: usize) -> (char, usize) {
    if !matches!(letter, 'n' | 'l') || n_units == 0 || l_units == 0 {
        return (letter, 1);
    }
    // (parts, blocks) of a tile, when its tiles fit a wave.
    let fill = |units: usize| {
        (units <= sms).then(|| {
            let most = (sms / units).min(WG_AUTO_MAX_PARTS).min(ktiles / WG_SPLIT_MIN_KTILES);
            let parts = wg_parts(ktiles, most.max(1));
            (parts, units * parts)
        })
    };
    // The 128 x 128 tile only where it covers more of the problem than 128 x 64 does.
    let l = if l_units < n_units { fill(l_units) } else { None };
    match (fill(n_units), l) {
        (None, _) => (letter, 1),
        (Some((pn, _)), None) => ('n', pn),
        (Some((pn, bn)), Some((pl, bl))) => {
            let long = ktiles.div_ceil(pl) >= WG_SPLIT_LONG_KTILES;
            // The near tie: the split's partial tiles cost more than its few extra blocks gain
            // over short parts, so the unsplit tile the rule chose runs instead.
            let near_tie = pn == 1 && bl > bn && 4 * bl < 5 * bn && !long;
            if near_tie {
                (letter, 1)
            } else if bl > bn || (bl == bn && (pl <= pn || long)) {
                ('l', pl)
            } else {
                ('n', pn)
            }
        }
    }
}

/// Whether an unsplit wgmma GEMM of `batch` products of m x n, with operand rows `row_bytes`
/// apart, that the rule put on the 128 x 64 tile runs faster on 128 x 128 (the caller takes it
/// for tf32 only where the kernel reads both operands where they lie: rows 16-byte multiples,
/// none packed; H200, tf32 NN / TT 1004^3 91 -> 98 TFLOP/s, 1004 x 1004 x 3004 112 -> 121,
/// 1004 x 1004 x 500 71-73 -> 78-79). An operand whose rows lie an odd multiple of
/// 16 bytes apart (7 of every 8 rows of a TMA box then straddle two 128-byte lines: ncu, f16
/// 1000^3 on 128 x 64, 1.87 M L2 sectors and 15.2 us against 1.05 M and 9.9 us at 1024^3)
/// slows the 128 x 64 tile most, as it loads X's 128 rows once per 64 columns; the 128 x 128
/// tile needs half those loads. Taken
/// where the 128 x 128 tiles fill at least a third of the multiprocessors (fewer left too many
/// idle: 504 x 1000 x 1000 in 32 tiles ran 19% slower) over at least 12 k-tiles (1000 x 1000 x
/// 250 in 4 ran 14% slower). H100, 2026-11-27 (docs/kernels/gemm-wgmma.md, "wgmma tiles on rows an
/// odd multiple of 16 bytes apart"): 1000^3 143 -> 175-185 TFLOP/s, 1000 x 1000 x 3000 179 ->
/// 235, 776 x 1024 x 1000 126-129 -> 149; 800^3 (rows 64 bytes off a line every other row)
/// stays on 128 x 64, which runs it 6% faster.
pub(crate) fn odd_line_rows(
    (m, n): (usize, usize),
    row_bytes: [usize; 2],
    ktiles: usize,
    batch: usize,
    sms: usize,
) -> bool {
    straddling_rows(row_bytes)
        && ktiles >= 12
        && tiles2(m, n, (128, 128)).saturating_mul(batch).saturating_mul(3) >= sms
}

/// Whether an operand's rows (`row_bytes` apart, X's and Y's) lie an odd multiple of 16 bytes
/// apart: 7 of every 8 rows of a TMA box then straddle two 128-byte lines.
pub(crate) fn straddling_rows(row_bytes: [usize; 2]) -> bool {
    row_bytes.iter().any(|&b| b % 32 == 16)
}

/// The wgmma pair (`p`: 128 x 128, `q`: 128 x 64, two blocks of a cluster sharing X's loads
/// through the TMA's multicast) that replaces the automatic choice `(letter, parts)` for
/// `batch` products of `dims` (rows x columns of the kernel's D), if any (`has_pair`: the
/// kernel has a pair, f16 / bf16 in every op and tf32 `tn`; the caller also leaves out
/// activations, which pairs have no twins for in the activation modules): operands whose rows
/// lie an odd multiple of 16 bytes apart (`row_bytes`, [`straddling_rows`]: the L2 bounds these
/// tiles' loop, and a pair halves its X rows' loads), where the choice is the 128 x 128 or
/// 128 x 64 tile unsplit, within the bounds measured for [`odd_line_rows`] (at least 12
/// k-tiles, 128 x 128 tiles for a third of the multiprocessors). `q` where its clusters (one
/// per 128 x 128 of D) fit in a wave of blocks, else `p`. Measured on an H200 against the
/// tiles forced in the same job (2026-12-02, docs/kernels/gemm-wgmma.md, "wgmma pairs"), TFLOP/s:
/// f16 1000 x 1000 x 3000 NN 233 -> 283 (q), TN 252 -> 300; 2000 x 1000 x 1000 NN 291 -> 325
/// (p), TN 263 -> 306; 1000 x 2000 x 2000 NN 344 -> 379 (p); 1000^3 179 -> 186 (q); bf16
/// alike; tf32 TN 1004^3 95 -> 129 (q, where the tile alone was 128 x 64), 1004 x 1004 x 3004
/// 109 -> 166, 2004 x 1004 x 1004 156 -> 186 (p). Where no operand straddles lines the pairs
/// ran 5-11% slower than the tile alone (f16 1000 x 2000 x 2000 TN 486 against 440, 1280 x
/// 1280 x 2048 448 against 398).
pub(crate) fn pair_tile(
    has_pair: bool,
    (letter, parts): (char, usize),
    dims: (usize, usize),
    batch: usize,
    row_bytes: [usize; 2],
    ktiles: usize,
    sms: usize,
) -> Option<char> {
    let fits = has_pair && parts == 1 && matches!(letter, 'l' | 'n');
    if !fits || !odd_line_rows(dims, row_bytes, ktiles, batch, sms) {
        return None;
    }
    let clusters = tiles2(dims.0, dims.1, (128, 128)).saturating_mul(batch);
    Some(if clusters.saturating_mul(2) <= sms.max(1) {
        'q'
    } else {
        'p'
    })
}
