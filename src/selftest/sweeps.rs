//! What the selftest's tensor-core sweeps cover (`blas.rs`): the sm_90 DMMA tiles and splits
//! with the kernel each names, the shape each tile is checked on, and the op pairs and pads of
//! the element-variant checks. A CPU test (src/blas/gemm/tests/selftest_names.rs) holds these
//! against dispatch.

use crate::blas::{SplitK, Tile, Transpose};

/// The sm_90 DMMA kernels' checks (modules gemm_dmma90, f64, and gemm_dmma90_f32, exact f32 on
/// the same tiles): (tile, split, kernel letter,
/// elements added to each leading dimension). `u` is the automatic tile for 136 x 100 x 48,
/// Narrow is `m` (128 x 64), Broad is `p` (128 x 64 in 4 warps), Half is `q` (64 x 64, three
/// blocks per multiprocessor; `q2` split), Thin is `t` (16 x 64) or `h` (64 x 16) by the shape;
/// the k splits over the 2 blocks of a cluster are forced, and Narrow in 3 parts is `k` (m's
/// tile in stream-k, 3 blocks per tile: each tile's k-tiles shared by 3-4 blocks). Leading
/// dimensions one element longer (operands aligned only to their element) run each tile's
/// 8-byte variant (`<letter>u`) in place of an aligned copy. A CPU test (src/blas/gemm/tests/selftest_names.rs)
/// checks that each entry picks the kernel it names.
pub(crate) const DMMA90_SWEEP: [(Tile, SplitK, &str, usize); 24] = [
    (Tile::Small, SplitK::Auto, "s", 0),
    (Tile::Half, SplitK::Auto, "q", 0),
    (Tile::Large, SplitK::Auto, "l", 0),
    (Tile::Auto, SplitK::Auto, "u", 0),
    (Tile::Narrow, SplitK::Auto, "m", 0),
    (Tile::Broad, SplitK::Auto, "p", 0),
    (Tile::Small, SplitK::Parts(2), "s2", 0),
    (Tile::Auto, SplitK::Parts(2), "u2", 0),
    (Tile::Half, SplitK::Parts(2), "q2", 0),
    (Tile::Narrow, SplitK::Parts(3), "k", 0),
    (Tile::Thin, SplitK::Auto, "t", 0),
    (Tile::Thin, SplitK::Auto, "h", 0),
    (Tile::Small, SplitK::Auto, "su", 1),
    (Tile::Half, SplitK::Auto, "qu", 1),
    (Tile::Large, SplitK::Auto, "lu", 1),
    (Tile::Auto, SplitK::Auto, "uu", 1),
    (Tile::Narrow, SplitK::Auto, "mu", 1),
    (Tile::Broad, SplitK::Auto, "pu", 1),
    (Tile::Small, SplitK::Parts(2), "s2u", 1),
    (Tile::Auto, SplitK::Parts(2), "u2u", 1),
    (Tile::Half, SplitK::Parts(2), "q2u", 1),
    (Tile::Narrow, SplitK::Parts(3), "ku", 1),
    (Tile::Thin, SplitK::Auto, "tu", 1),
    (Tile::Thin, SplitK::Auto, "hu", 1),
];

/// The (m, n, k) a tensor-core sweep checks the tile `letter` on: sizes that are not multiples
/// of the tiles (multiples of 16 bytes for the tensor cores); the thin tiles (256 bytes of k per
/// stage) get k = 300, several stages and a partial one, and `h` (64 x 16), the one for more
/// rows than columns in the kernels' row-major D (C^T), the transposed shape; f64's `u` a
/// shape whose sides are too long for the thin tiles.
pub(crate) fn sweep_shape(letter: &str) -> (usize, usize, usize) {
    match letter {
        "h" | "hu" => (72, 136, 300),
        "t" | "tu" => (136, 72, 300),
        "u" | "uu" => (136, 100, 48),
        // f64's `p` (128 x 64, 3 stages of 16 k): 2 x 3 tiles, the last of each side partial,
        // over 12 k-tiles and a partial one. Also the wgmma pair `p` (128 x 128): 2 x 2 tiles
        // of the kernel's 136 x 200 D, one pair per row of tiles, partial on both sides.
        "p" | "pu" => (200, 136, 200),
        // Stream-k on 128 x 64: 2 x 3 tiles, partial on both sides, 13 k-tiles each (the last
        // partial) shared by 18 blocks, so most blocks park a part in both slots.
        "k" | "ku" => (200, 136, 200),
        // f64's `q` (64 x 64, 3 stages of 16 k): 3 x 2 tiles over 12 k-tiles and a partial one.
        // Also the wgmma pair `q` (128 x 64): 1 x 3 tiles of the kernel's 72 x 136 D, so the
        // second pair's second tile lies past D.
        "q" | "qu" | "q2" | "q2u" => (136, 72, 200),
        // The 128 x 192 wgmma tile: 2 x 3 tiles, the last of each side partial, over several
        // k-tiles and a partial one.
        "b" => (200, 392, 200),
        // The 64 x 96 wgmma tile: 4 x 3 tiles, the last of each side partial, 4 k-tiles (16-bit)
        // and a partial one. (`h` above is also the 64 x 64 wgmma tile's: 2 x 3 tiles.)
        "m" => (200, 200, 200),
        _ => (136, 72, 48),
    }
}

/// The op pairs whose thin mma.sync kernels have element variants (at least one operand
/// k-contiguous: A under T, B under N).
pub(crate) const ELEMENT_OPS: [((Transpose, Transpose), &str); 3] = [
    ((Transpose::N, Transpose::N), "nn"),
    ((Transpose::T, Transpose::N), "tn"),
    ((Transpose::T, Transpose::T), "tt"),
];

/// Pads of A, B and C for an element-variant check: one element on each k-contiguous operand
/// (an unaligned operand that is not k-contiguous would be copied instead) and on C.
pub(crate) fn element_pads((ta, tb): (Transpose, Transpose)) -> [usize; 3] {
    [usize::from(ta == Transpose::T), usize::from(tb == Transpose::N), 1]
}
