//! tf32 on the wgmma kernels, which read tf32 from shared memory only k-contiguous: which
//! operand of an `nt` problem is packed k-contiguous first, and when the m-contiguous operand
//! that goes into registers is read where it lies instead of copied aligned first.

use super::builder::Plan;
use super::choice::{Choice, Family};
use super::options::Tile;
use super::params::GemmParams;
use super::wg_tiles::{broad_better, wide_enough, TF32_SHORT_K};

/// tf32 `nt` (both operands m/n-contiguous, one packed k-contiguous first): whether X is packed
/// (then the swapped `nn` kernel runs, Y in registers) rather than Y (`tt`, X in registers):
/// where X has fewer rows than Y, so that the smaller operand is copied (H100, NT 2053 x 67 x
/// 1999: docs/kernels/gemm-wgmma.md, "tf32 nt: the smaller operand packed").
pub(crate) fn nt_packs_x(plan: &Plan) -> bool {
    plan.m < plan.n
}

/// The widest D (columns of the kernels' row-major D, the Y side) for which tf32 reads an
/// unaligned X in place rather than copy it aligned first (H100, forced A/B: D 1024 and 2048
/// wide +39% and +10%, 4097 wide -7%, 12345 wide -13%).
const X_IN_PLACE_MAX_N: i64 = 2048;

/// Whether `choice` runs a wgmma kernel that can read its X in place (flags bit 1 of
/// ptx/gemm_wg.cuh): tf32 `tt` or `nn` (X m-contiguous, into registers), not the 128 x 128 tile,
/// not an activation (whose twin kernels lack the copies).
fn x_in_place_applies(choice: &Choice, activation: bool) -> bool {
    choice.family == Family::Wgmma
        && choice.name.starts_with("gemm_wg_tf32_")
        && (choice.name.ends_with("_tt") || choice.name.ends_with("_nn"))
        && choice.tile != (128, 128)
        && !activation
}

/// Marks `choice` (its copies already set for the operands as given, `params`) to read X in
/// place where that applies: the tf32 wgmma kernels that take X (the m-contiguous operand; Y
/// before the swap) into registers read it where it lies when its rows are not 16 bytes apart
/// and D is at most X_IN_PLACE_MAX_N wide. The copy reads and writes the whole operand, which
/// the kernel then reads again, once per column tile (2053 x 67 x 1999: the copy 14 of 31 us),
/// and costs less than the 4-byte copies' slower stages only while D has few column tiles
/// (H100, docs/kernels/gemm-wgmma.md, "tf32: the m-contiguous operand read in place").
pub(crate) fn read_x_in_place(choice: &mut Choice, params: &GemmParams, activation: bool) {
    if !x_in_place_applies(choice, activation) {
        return;
    }
    let i = usize::from(choice.swap);
    let (address, width) = if choice.swap {
        (params.y, params.m)
    } else {
        (params.x, params.n)
    };
    if choice.align[i] && address % 4 == 0 && width <= X_IN_PLACE_MAX_N {
        choice.align[i] = false;
        choice.x_in_place = true;
    }
}

/// The wide tile (128 x 192 or 128 x 256, as `wg_auto_tile` weighs them for the other types) to
/// take instead of the automatic 128 x 128 one (`choice`, unsplit, for `batch` products of the
/// `plan`'s shape) where that tile copies an unaligned X first: at k up to [`TF32_SHORT_K`] tf32
/// keeps 128 x 128 where the wide tiles fit, but 128 x 128 does not read X in place, and the
/// copy of X cost more than the wide tile's short-k loss. Measured (H200, 2026-11-28,
/// docs/kernels/gemm-wgmma.md, "tf32 batches: NT packed per matrix, short k on a wide tile that reads
/// X in place"), NN TFLOP/s, A/B of the builds: 226 x 110 x 110 x 256 23.3 -> 30.9, 294 x 188 x
/// 36 x 128 12.8 -> 21.7, 223 x 166 x 95 x 128 23.0 -> 34.6; TT alike. The caller
/// takes the wide tile only where it then reads X in place ([`read_x_in_place`]).
pub(crate) fn wide_in_place(choice: &Choice, plan: &Plan, batch: usize, sms: usize) -> Option<Tile> {
    let copies_x = choice.align[usize::from(choice.swap)];
    // (The 128 x 128 tile never reads X in place: x_in_place_applies.)
    let is_large =
        choice.family == Family::Wgmma && choice.name.starts_with("gemm_wg_tf32_l_") && choice.split_k.is_none();
    let dims = if choice.swap {
        (plan.n, plan.m)
    } else {
        (plan.m, plan.n)
    };
    if !(is_large && copies_x && plan.k <= TF32_SHORT_K && wide_enough(dims, batch, sms)) {
        return None;
    }
    Some(if broad_better(dims, batch, sms) {
        Tile::Broad
    } else {
        Tile::Wide
    })
}
