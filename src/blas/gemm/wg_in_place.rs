//! The wgmma kernels that read 16-bit operands where they lie (`gemm_wgu_<type>_<tile>_<ops>`,
//! ptx/gemm_wg_in_place.cuh): operands aligned only to their element, which the TMA cannot
//! address, go to them instead of being copied aligned first (`gemm_pack_b16`), where the copy
//! would cost more than the kernel's slower loads.

use super::choice::Choice;

/// The longest k at which batches read unaligned operands in place on the 64 x 64 tile (one
/// k-tile of 64 elements; `in_place_pays`).
pub(crate) const IN_PLACE_MAX_K: usize = 64;
/// The longest k on the 128 x 64 tile, whose producer moves 192 segments per step over its 128
/// threads (the 64 x 64 tile's one each): half a k-tile.
pub(crate) const IN_PLACE_MAX_K_NARROW: usize = 32;

/// Whether a product of `batch` matrices over `k` whose 16-bit operands the TMA cannot address
/// reads them in place on `tile` (the in-place twin's) rather than copying them aligned first:
/// batches at short k, where the copy is a launch and a pass over both operands for one step
/// of the product per tile. Measured on an H200 against the copy (TFLOP/s, every op, f16 and
/// bf16): 64 x 64 at k 25-54 1.13-1.26x; 128 x 64 at k 27 1.09-1.22x, k 33 0.95-1.12x, k 52
/// 0.95-0.99x, k 61 0.82-0.89x; both at k 85-335 0.35-0.78x, where the producer's steps, about
/// one memory round trip each, cost more than the copy. Single products copy (0.29-0.75x in
/// place: the copy is paid once, the slower loads on every reuse). docs/kernels/gemm-wgmma.md,
/// "wgmma reading unaligned 16-bit operands in place".
pub(crate) fn in_place_pays(batch: usize, k: usize, tile: (usize, usize)) -> bool {
    let max_k = if tile == (64, 64) {
        IN_PLACE_MAX_K
    } else {
        IN_PLACE_MAX_K_NARROW
    };
    batch > 1 && k <= max_k
}

/// The prefix of the in-place kernels' names.
pub(crate) const IN_PLACE_PREFIX: &str = "gemm_wgu_";

/// The in-place twin of a wgmma choice `choice` (f16 or bf16, after dispatch chose it for
/// operands copied aligned): the same tile where it has one (`h`, `n`; the pair `q` runs its
/// tile `n` alone, since pairs have no twin), with the copies dropped. `None` for the other
/// tiles and types, which keep the copy.
pub(crate) fn in_place_twin(choice: &Choice) -> Option<Choice> {
    let rest = choice.name.strip_prefix("gemm_wg_")?;
    let (ty, rest) = rest.split_once('_')?;
    let (letter, ops) = rest.split_once('_')?;
    if !matches!(ty, "f16" | "bf16") || ops.len() != 2 {
        return None;
    }
    let (letter, tile) = match letter {
        "h" => ('h', (64, 64)),
        "n" | "q" => ('n', (128, 64)),
        _ => return None,
    };
    let mut twin = choice.clone();
    twin.name = format!("{IN_PLACE_PREFIX}{ty}_{letter}_{ops}");
    twin.tile = tile;
    twin.threads = 128 * (1 + tile.0 as u32 / 64);
    twin.pair = false;
    twin.align = [false; 2];
    twin.fallback = None;
    if letter == 'h' {
        twin.split_k = None;
    }
    Some(twin)
}
