//! The f32 CUDA-core kernels' tile and k split (ptx/gemm_simt.cu), as the automatic choice
//! takes them: the tile that leaves the least work on the busiest multiprocessor, and the deep
//! split of the 128 x 64 tile for long k over few tiles. Pure functions of the problem's size and
//! the multiprocessor count, used by dispatch.

use super::params::{paired_time, tiles2};

/// Dynamic shared memory of the f32 `w` kernel: 3 stages of 32 k of 128 + 4 and 256 + 4 floats.
pub(crate) const F32_W_SMEM: u32 = 3 * 32 * (132 + 260) * 4;
/// Dynamic shared memory of the f32 `x` kernel: 3 stages of 16 k of 128 + 4 and 128 + 4 floats.
pub(crate) const F32_X_SMEM: u32 = 3 * 16 * (132 + 132) * 4;
/// The largest k at which the automatic choice runs `x` where it would run `w`: up to there
/// w's lone block per SM pays its first loads and last stores in the open, and x's pairs hide
/// them (H100, docs/kernels/gemm-simt.md, "f32: the paired 128 x 128 tile": 4096 x 4096 x 64 and
/// x 128 +1-4% in every op pair; from 192 w is ahead in NN and TN).
const X_SHORT_K: usize = 128;
/// The least k for which the automatic choice splits the f32 `v` tile into more than 4 parts:
/// the deep-split model was fitted and checked from 16384 to 65536.
pub(crate) const DEEP_SPLIT_MIN_K: usize = 16384;
/// Most parts the f32 `v` tile splits k into (forced or automatic).
pub(crate) const F32_MAX_PARTS: u32 = 64;

/// The `s` blocks (128 threads of 138 registers, ptx/gemm_simt.cu) a multiprocessor holds at once.
const S_RESIDENT: usize = 3;
/// Least k each part keeps in an automatic split of f32's `v` and `w` tiles.
const F32_PART_MIN_K: usize = 512;
/// Least k each part keeps in an automatic split of f32's `u` tile (H100, 2026-11-27: 256^3 in
/// 2 parts of 128 ran 15% slower than whole, where the fit of [`u_time`] has it 5% faster).
const U_PART_MIN_K: usize = 256;
/// What a split costs per part, in k of the block's own work: its partial tile written, read and
/// added by the tile's last block (fitted with the deep splits, docs/kernels/gemm-simt.md).
const F32_PART_COST_K: usize = 13;

/// The f32 CUDA-core tile `size` (`w`, `x`, `l`, `v`, `s`, `u`; ptx/gemm_simt.cu): its block tile
/// (rows x columns of D) and threads.
pub(crate) fn f32_tile(size: &str) -> ((usize, usize), u32) {
    match size {
        "w" => ((128, 256), 256),
        "l" => ((128, 128), 256),
        "x" => ((128, 128), 128),
        "v" => ((128, 64), 128),
        "s" => ((64, 64), 128),
        _ => ((32, 64), 128),
    }
}

/// The automatic f32 CUDA-core tile, and its k split (1: none): the candidate that leaves the
/// least work on the busiest SM.
///
/// The model: an SM's work is the blocks it runs (`ceil(blocks / SMs)`, the blocks spread
/// evenly) times a block's outputs and k (rounded up to the tile's k-step: w 32, l 8, s, u, v
/// and x 16), times the tile's cost per output and k: u 168, s 150, v 140, x 136, w 120, l 120 on
/// aligned operands but 140 on others (H100, 4096 x 4096 x 1024: u 34.2, s 39.4, w 48.2 TFLOP/s;
/// 4095 x 4097 x 1023: l 39.5, s 37.6). The unsplit tiles (w or l, s, u) are compared so; x
/// (aligned operands only) counts its blocks in pairs as v below, and takes w's place at k up to
/// [`X_SHORT_K`] (x's steady rate is 3-8% below w's, 136 keeps it from ties at long k). A
/// split part adds [`F32_PART_COST_K`] to its k and keeps at least [`F32_PART_MIN_K`]; v's
/// blocks of four warps then count as the deep split's fit has them (two at a time, a pair
/// taking 1.747 times a lone block, so an SM left with one block, or an odd count, runs below
/// the fitted rate), and so do s's and u's against it; a split must leave 3% less work than
/// the best unsplit tile. Of equal candidates the larger, unsplit tile wins. Last, u in 2-4
/// parts of at least [`U_PART_MIN_K`] of k, by its own fit ([`u_time`]) scaled to the model's
/// figure for u whole: it must leave 3% less work than u whole, or 10% less than another tile.
///
/// Measured (H100, 2026-11-27, docs/kernels/gemm-simt.md, "f32 tiles by the busiest SM's work"):
/// over the 49 suite shapes that take the tiles, forced to each tile and to v in 2-4 parts,
/// the model's pick ran at 0.991 of the best of them (geometric mean; the rule before it 0.947),
/// at worst 0.85 (64 x 64 x 64 x 512: s where u is faster, as before); 12345 x 321 x 4567
/// 1.32x the rule before (l -> v in 2 parts), 768 x 1024 x 3072 1.24x (u -> v in 4 parts),
/// 4096 x 4096 x 16 1.30x (w -> s: w's k-step of 32 is half empty). The paired 128 x 128 tile x
/// (H100, 2026-11-27, "f32: the paired 128 x 128 tile"): over 85 aligned shapes (suite and
/// others) forced to x, the rule with x ran 1.008x the rule without (geometric mean), at worst
/// 0.985, 14 shapes changed: 8192 x 8192 x 64 +11%, attention 128 x 2048 x 2048 x 32 NN +18%.
/// u in parts (H100, 2026-11-27, "f32: the 32 x 64 tile split"): 2053 x 67 x 1999 11.9 -> 15.3
/// TFLOP/s (u whole -> 4 parts), 1000 x 50 x 3000 5.3 -> 12.0 (v in 4 -> u in 4), 1024 x 96 x
/// 2048 9.1 -> 15.7, 11008 x 16 x 4097 10.2 -> 14.1 (u in 3). w in parts past a wave of its
/// tiles (H100, 2026-11-28, docs/kernels/gemm-simt.md, "f32: w split past a wave"; until then w split
/// only within one), TFLOP/s: 5120 x 2048 x 13824 TN 37.8 -> 47.8 and NN 38.8 -> 49.3, 5120 x
/// 2048 x 5120 37.7 -> 46.5 (TN), 4097^3 38.6 -> 41.4, 6000 x 3000 x 4096 +5-6%, NN 11008 x
/// 256 x 4096 40.9 -> 47.0, NN 22016 x 128 x 4096 40.8 -> 46.3; 39 other shapes within 1.6%.
///
/// Batches at k <= 256 whose `s` blocks fill at most 1.5 rounds of the [`S_RESIDENT`] blocks an
/// SM holds take `u` where the model says `s` (H200, 2026-11-27, docs/kernels/gemm-common.md, "Batches
/// of small matrices"): 64 x 64 x 64 x 512 17.4 -> 20.3 TFLOP/s, at k = 32 / 128 / 256
/// +17% / +6% / +4%, 64 x 64 x 64 x 128 +9%; where s's blocks fill two rounds or more it kept
/// s (64 x 128 x 128 x 384: s 8% faster, 48 x 48 x 48 x 1024 6%, 64 x 64 x 64 x 2048 within 2%).
pub(crate) fn f32_auto(
    (m, n, k): (usize, usize, usize),
    aligned: bool,
    may_split: bool,
    sms: usize,
    batch: usize,
) -> (&'static str, usize) {
    // A tile's cost per output and k, and the k-step its blocks round k up to.
    let cost = |size: &str| -> u128 {
        match size {
            "u" => 168,
            "s" => 150,
            "x" => 136,
            "w" => 120,
            "l" if aligned => 120,
            _ => 140,
        }
    };
    let work = |size: &str, parts: usize, paired: bool| {
        let (dims, _) = f32_tile(size);
        let step = match size {
            "w" => 32,
            "l" => 8,
            _ => 16,
        };
        let blocks = tiles2(m, n, dims).saturating_mul(batch).saturating_mul(parts);
        let mut k = k.div_ceil(parts).next_multiple_of(step);
        if parts > 1 {
            k += F32_PART_COST_K * parts;
        }
        let busiest = if paired {
            paired_time(blocks, sms) as u128
        } else {
            // Half a pair's time per block: the rate the costs were fitted at.
            blocks.div_ceil(sms.max(1)) as u128 * 874
        };
        busiest * (dims.0 * dims.1) as u128 * k as u128 * cost(size)
    };
    let big = if aligned { "w" } else { "l" };
    let (mut best, mut least) = ((big, 1), work(big, 1, false));
    for size in ["s", "u"] {
        let w = work(size, 1, false);
        if w < least {
            (best, least) = ((size, 1), w);
        }
    }
    // x (aligned only) counts its blocks in pairs, as v; it takes w's place at short k.
    if aligned {
        let w = work("x", 1, true);
        if w < least || (best.0 == "w" && k <= X_SHORT_K) {
            (best, least) = (("x", 1), w);
        }
    }
    // Batches at short k whose s blocks fill at most one and a half of the rounds the SMs hold
    // at once: u, twice the blocks of half the rows, keeps more warps in flight.
    let s_blocks = tiles2(m, n, f32_tile("s").0).saturating_mul(batch);
    if best.0 == "s" && batch > 1 && k <= 256 && s_blocks * 2 <= sms * S_RESIDENT * 3 {
        best = ("u", 1);
    }
    if !may_split {
        return best;
    }
    // Against v, s and u count their blocks as v's (x's already are).
    if best.0 != big && best.0 != "x" {
        least = work(best.0, 1, true);
    }
    let unsplit = least;
    for parts in 2..=4usize {
        if k / parts < F32_PART_MIN_K {
            break;
        }
        // w (aligned operands) splits wherever the model has it ahead, past a wave of its tiles
        // too, whose last round the parts' blocks even out (H100, 2026-11-28: 5120 x 2048 x
        // 13824 TN, 320 tiles in 2.4 waves, 37.8 -> 47.8 TFLOP/s).
        for size in ["v", "w"] {
            if size == "w" && !aligned {
                continue;
            }
            let w = work(size, parts, size == "v");
            if w.saturating_mul(100) < unsplit.saturating_mul(97) && w < least {
                (best, least) = ((size, parts), w);
            }
        }
    }
    // u in parts, by its own fit scaled to the model's figure for u unsplit; against another
    // tile it must leave a tenth less work, the agreement of the fits across tiles (512 x 512 x
    // 2048: u in 2 parts 4% ahead of v in 4 by the model, which ran 5% faster).
    let u_tiles = tiles2(m, n, f32_tile("u").0).saturating_mul(batch);
    let u_whole = work("u", 1, true);
    let u_alone = u_time(u_tiles, k, 1, sms);
    let margin = if best == ("u", 1) { 97 } else { 90 };
    let against = least;
    for parts in 2..=4usize {
        if k / parts < U_PART_MIN_K {
            break;
        }
        let w = (u_whole as f64 * u_time(u_tiles, k, parts, sms) / u_alone) as u128;
        if w.saturating_mul(100) < against.saturating_mul(margin) && w < least {
            (best, least) = (("u", parts), w);
        }
    }
    best
}

/// The time of `tiles` u tiles (32 x 64) over k in `parts` parts, in units of k, as fitted on
/// the H100 (2026-11-27, docs/kernels/gemm-simt.md, "f32: the 32 x 64 tile split"): the busiest SM
/// runs `b = ceil(blocks / SMs)` blocks at once, which take g(b) = 1, 1.48, 2.09 times one
/// block's time for b = 1, 2, 3 (three are resident; more take rounds of three), a block its k
/// plus 320 (loads before the first product, stores after the last), and a split 99 more (the
/// partial tiles, the arrival counters, the last block's sum). Over 10 shapes forced to 1-4
/// parts it ranked the parts as measured within 4%.
fn u_time(tiles: usize, k: usize, parts: usize, sms: usize) -> f64 {
    let busiest = tiles.saturating_mul(parts).div_ceil(sms.max(1)).max(1);
    let g = match busiest {
        1 => 1.0,
        2 => 1.48,
        b => 2.09 * b as f64 / 3.0,
    };
    let k_part = k.div_ceil(parts).next_multiple_of(16) as f64;
    g * (k_part + 320.0) + if parts > 1 { 99.0 } else { 0.0 }
}

/// The deep split's part count for the f32 `v` tile (128 x 64) on `batch` products of m x n over
/// k: few output tiles and long k (64 x 64 x 65536 is one tile) leave most SMs idle with at most
/// 4 parts, so `v` takes up to [`F32_MAX_PARTS`] parts, each keeping at least 256 of k (a power
/// of two of parts, what was measured, so that the parts' k-tiles come out even). The model,
/// fitted to forced splits on the H100 (docs/kernels/gemm-simt.md, "Deep k splits"): the busiest SM
/// runs ceil(blocks / SMs) blocks, two at a time (v's launch bounds), a pair taking 1.75 times
/// one block alone, each over k / parts; the last block of a tile then adds every part's partial
/// tile, [`F32_PART_COST_K`] units of k per part. Its best part count was the measured best on
/// every shape tried (1 to 32 tiles, k 16384-65536).
pub(crate) fn f32_deep_parts((m, n, k): (usize, usize, usize), batch: usize, sms: usize) -> usize {
    let v_tiles = tiles2(m, n, (128, 64)).saturating_mul(batch);
    let deep_time = |parts: usize| {
        let per_part = k.div_ceil(parts);
        paired_time(v_tiles.saturating_mul(parts), sms) * per_part + 1000 * F32_PART_COST_K * parts
    };
    (1..=F32_MAX_PARTS.trailing_zeros())
        .map(|e| 1usize << e)
        .filter(|&parts| k / parts >= 256)
        .min_by_key(|&parts| (deep_time(parts), parts))
        .unwrap_or(1)
}

/// Whether f32's `w` and `x` copy a k-contiguous Y (TN, TT; batch 1, aligned operands)
/// transposed before the GEMM of `(m, n, k)` (the kernels' rows, columns and depth; Y is n x k):
/// the kernels read an n-contiguous Y with 16-byte copies, 7-9% faster, and the copy moves
/// 8 n k bytes, about 70 / m percent of the GEMM's time. Measured (H100, 2026-11-27,
/// docs/kernels/gemm-simt.md, "f32: B copied transposed"), TN / TT with the copy against without:
/// m = 2048-4096 +3-11%, m = 1024 -3% to +1%, m = 512 -6% / -9%, m = 256 -14% / -16%.
/// The copy kernel takes Y's rows 32 to a block in grid y (at most 65535 blocks), so longer Ys
/// keep the kernel for a k-contiguous Y.
pub(crate) fn f32_transpose_y((m, n, k): (usize, usize, usize)) -> bool {
    m >= F32_TRANSPOSE_MIN_M && n.saturating_mul(k) <= F32_TRANSPOSE_MAX / 4 && n.div_ceil(32) <= 65535
}

/// The least rows of D for which f32's Y is copied transposed ([`f32_transpose_y`]).
const F32_TRANSPOSE_MIN_M: usize = 1536;
/// The largest transposed copy of Y, in bytes (a scratch from the stream's pool).
const F32_TRANSPOSE_MAX: usize = 512 << 20;

/// Whether f32 operands that the tiles with 16-byte copies (w, x) cannot read as they are
/// (unaligned start, leading dimension or batch stride) are copied into aligned buffers first
/// for an m x n D: the copies move about 8 (m k + k n) bytes, 70 (1 / m + 1 / n) percent of the
/// GEMM's time on the H100, against w's 14% over l (cost 120 against 140 per output and k in
/// [`f32_auto`]); so from 1 / m + 1 / n <= 1 / 1024 (at most 7%). Measured (H100, 2026-11-27,
/// two runs, against l): 4097^3 36.6-36.8 -> 38.5-38.7 TFLOP/s (+5%), 4095 x 4097 x 1023
/// 39.5 -> 40.6-40.7 (+3%), 2048^3 with leading dimensions 2049 40.0-40.2 -> 40.6-40.8 (+1%,
/// at the bound).
pub(crate) fn f32_copy_pays(m: usize, n: usize) -> bool {
    m.saturating_mul(n) >= F32_COPY_MIN_SIDE.saturating_mul(m.saturating_add(n))
}

/// See [`f32_copy_pays`].
const F32_COPY_MIN_SIDE: usize = 1024;
