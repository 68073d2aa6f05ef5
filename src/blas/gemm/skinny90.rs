//! f16, bf16 and tf32 GEMMs with one short side (at most 16: a decode step's tokens) whose
//! operands are both contiguous along k (a linear layer `y = x W^T` over row-major activations:
//! cuBLAS's TN) run on `gemm_skinny90_<t>_k<KB>` (ptx/gemm_skinny90.cu) on compute capability
//! 9.0: both operands arrive in shared memory as TMA boxes and the tensor cores read them there,
//! one block per SM: whole row tiles per block where they spread over most SMs, else every block
//! the same share of the work along k (stream-k), so a decode step streams its weights at the
//! memory's rate whatever its tile count.

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;

use super::builder::{Gemm, Plan};
use super::dispatch::tma_element;
use super::params::GemmParams;
use super::partials;
use super::skinny::{decode, sides, Decode, Sides, SKINNY_MAX};
use super::GemmType;
use crate::blas::memory_class::fast_memory;
use crate::blas::tma::TmaMatrix;
use crate::blas::MathMode;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// Rows of the long side per block tile (the kernel's 4 consumer warps of 16 rows).
const ROWS: usize = 64;
/// Threads per block: 4 consumer warps and the producer warp.
const THREADS: u32 = 160;
/// f32 of a block's slot of parked partial sums (64 x 16, in fragment order).
const SLOT_FLOATS: usize = ROWS * SKINNY_MAX;

/// The kernel's parameter block (`struct Skinny90Params` in ptx/gemm_skinny90.cu).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct Skinny90Params {
    d: u64,
    bias: u64,
    ws: u64,
    seq: u64,
    l: i64,
    s: i64,
    k: i64,
    dl: i64,
    ds: i64,
    sd: i64,
    alpha: f64,
    beta: f64,
    act: i32,
    bias_on_l: i32,
    tiles: i32,
    batch: i32,
    nk: i32,
    gz: i32,
    hz: i32,
    whole: i32,
    /// Bytes from the 16-byte boundary below both operands' views to their starts (the maps
    /// begin there; the kernel zeroes these bytes of each row's first k-tile).
    lead: i32,
    /// The CUDA struct's tail padding, spelled out so that this one has none.
    pad: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (8-byte fields, then ten
// i32s: no padding); every bit pattern is valid.
unsafe impl DeviceRepr for Skinny90Params {}

/// A GEMM routed to the kernel: its name, launch shape and parameters.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Skinny90Route {
    /// `gemm_skinny90_<t>_k<KB>`.
    pub kernel: String,
    params: Skinny90Params,
    /// The long operand G (L x k) and the short one H (S x k) as the TMA sees them.
    g: TmaMatrix,
    h: TmaMatrix,
    /// Blocks of the launch (at most one per multiprocessor, at most one per unit).
    blocks: usize,
    /// Elements of k in a box row (128 bytes: the swizzle's span).
    epb: u32,
}

impl Skinny90Route {
    /// What [`Gemm::kernel_name`] reports: the kernel, with `/view` where its maps start below
    /// the operands' views.
    pub(crate) fn name(&self) -> String {
        if self.params.lead > 0 {
            format!("{}/view", self.kernel)
        } else {
            self.kernel.clone()
        }
    }

    /// Dynamic shared memory (`skinny90_smem` in ptx/gemm_skinny90.cu).
    fn smem(&self) -> u32 {
        (STAGES * BOXES * (ROWS + SKINNY_MAX) * 128 + 16 * STAGES + 1024) as u32
    }
}

/// The ring the kernels are compiled with: 128-byte box rows of k per stage (4: KB = 256
/// elements of f16 / bf16, 128 of tf32) and stages. 256 of 5
/// (200 KiB, one block per SM) against 128 of 10: 0-14% faster on decode steps of 16 tokens
/// (H200, 2026-11-28 06:57 UTC); a 256-wide unswizzled box per stage (one TMA load per operand,
/// 2-way bank conflicts) 2-20% slower (07:01 UTC). 3 stages against 5: 0-13% faster (6144 x 16
/// x 4096 45.2 against 39.9 TFLOP/s; 2 stages 42.4; 2 of 512 as 3 of 256 within 2%; H200
/// 2026-11-28 09:33 UTC): 26 MB of loads at once from the whole grid queue behind each other,
/// and each block's first stage arrived 1.2-2.6 us after its start.
const BOXES: usize = 4;
const STAGES: usize = 3;
/// Fewest elements of the long operand (long side x k) the kernel takes: 1024 x 16 x 1024 (2
/// MiB of weights) ran 17% slower than on the thin tiles, 768 x 16 x 3072 (4.5 MiB) 26% faster
/// (H200, 2026-11-28 06:57-07:05 UTC).
const MIN_ELEMENTS: usize = 1 << 21;
/// Bytes of the long operand from which the kernel takes a product the thin tiles would run
/// whole. On the H100 (2026-11-28 07:15 UTC, f16 / bf16 against the thin tiles in one run)
/// it gained from 172 MiB up (22016 x 16 x 4096 +1-2%, 28672 x 16 x 4096 +1%, 128256 x 16 x
/// 4096 +2%, 8192 x 16 x 28672 and 57344 x 16 x 8192 +6%) and lost below (6144 x 16 x 4096
/// -11%, 12288 x 16 x 4096 and 8192 x 16 x 8192 -2.5%); on the H200 it gained 8-17% on every
/// such shape measured (12288 to 128256 outputs).
const MIN_WHOLE_BYTES: usize = 160 << 20;
/// Bytes of the long operand from which the kernel takes a product on fast memory
/// ([`fast_memory`]), where the thin tiles, which stream at about 3 TB/s, fall behind the
/// memory. H200 (4.8 TB/s), 2026-11-28 09:40 UTC, f16 / bf16 against the thin tiles in one run:
/// 6144 x 16 x 4096 +8% / +27%, 8192 x 16 x 4096 +11%, 12288 x 16 x 4096 +11% / +16%, 22016 x
/// 16 x 4096 +21% / +25%, 3072 x 16 x 4096 +14% / +17%, 2048 x 16 x 4096 +2% / +8%; 1024 x 16 x
/// 4096 -10% / -19%, 1536 x 16 x 1536 -7% (weights the L2 holds between calls, in few tiles).
/// The H100 (3.35 TB/s) keeps [`MIN_WHOLE_BYTES`].
const FAST_MIN_WHOLE_BYTES: usize = 12 << 20;

/// A number no other launch of this process gives the kernel (its blocks' flags), the first one
/// from the clock and the process id, so that a buffer another process left does not hold it
/// either.
fn next_seq() -> u64 {
    static SEQ: Lazy<AtomicU64> = Lazy::new(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        AtomicU64::new(nanos ^ (u64::from(std::process::id()) << 40))
    });
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// The kernel's form of the problem (`plan`, `params`: row-major D = X Y), when it has one and
/// nothing asks for another kernel: f16, bf16 or f32 in tf32 math on compute capability 9.0
/// (tf32 with the short side as C's columns only on fast memory ([`fast_memory`])); both operands
/// k-contiguous, starting the same number of bytes past a 16-byte boundary (0 included), with
/// leading dimensions and batch strides of whole 16-byte vectors (the TMA's rules); the short
/// side at most [`SKINNY_MAX`]; alpha != 0; at least [`MIN_ELEMENTS`] elements in the long
/// operand; and a short side that is the caller's m, or on
/// fast memory ([`fast_memory`] of `bandwidth`, bytes per second) [`FAST_MIN_WHOLE_BYTES`] of
/// weights, elsewhere [`MIN_WHOLE_BYTES`] or one matrix the thin tiles would split through
/// partial products. Forced knobs (kernel, tile, split) leave it to the tiles.
pub(crate) fn route<T: GemmType, S>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    sms: usize,
    cc: (u32, u32),
    bandwidth: Option<f64>,
) -> Option<Skinny90Route> {
    let name = match (T::NAME, g.math) {
        ("f16" | "bf16", _) => T::NAME,
        ("f32", MathMode::Tf32) => "tf32",
        _ => return None,
    };
    let fast = fast_memory(bandwidth);
    if cc < (9, 0) {
        return None;
    }
    let Decode { short, long, k, batch } = decode(g, plan, params)?;
    if long.saturating_mul(k) < MIN_ELEMENTS {
        return None;
    }
    let Sides {
        short_rows,
        g: (g_ptr, ldg, sg),
        h: (h_ptr, ldh, sh),
        dl,
        ds,
    } = sides(plan, params);
    // Batches whose matrices share an operand (a zero stride: the tensor map without a batch
    // coordinate) were not yet run through the kernel on a GPU: they stay on the tiles. So a
    // batch here has a batch coordinate in both maps, and its weights are batch matrices.
    if batch > 1 && (sg == 0 || sh == 0) {
        return None;
    }
    // Which products it takes (H100 and H200, 2026-11-28, against the tiles in one run): a
    // short side that is the caller's m (D's columns here: the 64 x 16 thin tile or a wgmma
    // split otherwise; 16 x 4096 x 4096 +18%, 16 x 11008 x 4096 +7% on the H100, +21% on the
    // H200); on fast memory, weights from FAST_MIN_WHOLE_BYTES; elsewhere large weights
    // (MIN_WHOLE_BYTES) and one matrix the thin tiles would split through partial products
    // (4096 x 16 x 4096 +12%, 4096 x 16 x 11008 +3% on the H100; a batch of four such -3.5%).
    if short_rows {
        let weights = long
            .saturating_mul(k)
            .saturating_mul(size_of::<T>())
            .saturating_mul(batch);
        let take = if fast {
            weights >= FAST_MIN_WHOLE_BYTES
        } else if name == "tf32" {
            // Not yet measured against the thin tiles on slower memory.
            false
        } else {
            weights >= MIN_WHOLE_BYTES
                || (batch == 1 && partials::auto_parts::<T, S>(g, plan, sms, false, cc).is_some())
        };
        if !take {
            return None;
        }
    }
    let element = tma_element::<T>()?;
    // Views that start past a 16-byte boundary (a slice one element into its buffer): both
    // maps begin at the boundary below, `lead` bytes early, and are that much longer along k.
    // The TMA then loads whole aligned boxes (a box's own start must be 16-byte aligned:
    // docs/kernels/gemm-wgmma.md, 2026-12-02), and map coordinate j of a row holds its element
    // j - lead / sizeof(T) in both operands, so the sum over k pairs the right elements; the
    // kernel zeroes the first `lead` bytes of each row's first k-tile, which lie before the
    // view. Both operands must be that far in, or the coordinates would not pair up (such
    // views stay on the thin tiles' element variants).
    let elem = size_of::<T>() as u64;
    let lead = g_ptr % 16;
    if lead % elem != 0 || h_ptr % 16 != lead {
        return None;
    }
    let inner = k + (lead / elem) as usize;
    let matrix = |address: u64, outer: usize, ld: usize, stride: usize| TmaMatrix {
        address: address - lead,
        element,
        inner: inner as u64,
        outer: outer as u64,
        ld: ld as u64,
        batch: batch as u64,
        stride: stride as u64,
    };
    let (gm, hm) = (matrix(g_ptr, long, ldg, sg), matrix(h_ptr, short, ldh, sh));
    if !gm.fits() || !hm.fits() {
        return None;
    }
    let tiles = long.div_ceil(ROWS);
    let kb = BOXES * 128 / size_of::<T>();
    let nk = inner.div_ceil(kb);
    let all_tiles = tiles.checked_mul(batch)?;
    if all_tiles.checked_mul(nk)? > i32::MAX as usize {
        return None;
    }
    let (blocks, whole) = grid(all_tiles, nk, sms);
    Some(Skinny90Route {
        kernel: format!("gemm_skinny90_{name}_k{kb}"),
        params: Skinny90Params {
            d: params.d,
            bias: params.bias,
            ws: 0,
            seq: 0,
            l: long as i64,
            s: short as i64,
            k: k as i64,
            dl: dl as i64,
            ds: ds as i64,
            sd: plan.sd as i64,
            alpha: params.alpha,
            beta: params.beta,
            act: params.act,
            bias_on_l: i32::from(short_rows),
            tiles: tiles as i32,
            batch: batch as i32,
            nk: nk as i32,
            gz: i32::from(batch > 1),
            hz: i32::from(batch > 1),
            whole: i32::from(whole),
            lead: lead as i32,
            pad: 0,
        },
        g: gm,
        h: hm,
        blocks,
        epb: (128 / size_of::<T>()) as u32,
    })
}

/// The launch's blocks for `tiles` row tiles of `nk` units each on `sms` multiprocessors, and
/// whether they take whole tiles: where whole tiles, as evenly spread as they go (at most
/// ceil(tiles / sms) per block), keep at least 7 SMs in 10 busy, they do (no partial sums, no
/// block waiting for another); otherwise stream-k over min(units, sms) blocks. H200 2026-11-28
/// 09:33 UTC, f16 against stream-k on 132 blocks, both on 3 stages: 6144 x 16 x 4096 (96 tiles)
/// 46.6 against 45.2 TFLOP/s, 8192 x 16 x 4096 (128) 46.0 / 43.6, 22016 x 16 x 4096 (344
/// tiles, 115 blocks) 55.9 / 55.1, 12288 (192 tiles, 96 blocks) and 28672 x 16 x 4096 (448
/// tiles, 112 blocks) within 1%; on 64 tiles (4096 x 16 x 14336: 64 blocks) 43.1 / 51.0.
fn grid(tiles: usize, nk: usize, sms: usize) -> (usize, bool) {
    let sms = sms.max(1);
    let whole_blocks = tiles.div_ceil(tiles.div_ceil(sms).max(1));
    if whole_blocks * 10 >= sms * 7 {
        (whole_blocks, true)
    } else {
        (tiles.saturating_mul(nk).min(sms), false)
    }
}

/// Whether a launch of `blocks` on `sms` multiprocessors overlaps the kernel before it
/// (programmatic dependent launch: its blocks start as the previous grid's producers issue their
/// last loads, and wait in griddepcontrol.wait for that grid to finish): where it fills at least
/// 19 SMs in 20. H200 2026-11-28 12:07 UTC, f16 / bf16 decode steps against cuBLAS in one run,
/// two rounds each: 132-block stream-k grids (4096 x 16 x 11008 0.91 -> 0.98, 4096 x 16 x 14336
/// 0.91 -> 0.95) and 128-block whole-tile grids (8192 x 16 x 8192 0.90 -> 0.94) gain; 96-block
/// grids lose when they overlap too (6144 x 16 x 4096 0.85 -> 0.76, 12288 x 16 x 4096 0.86 ->
/// 0.82; why was not measured), and keep their figures without.
fn overlaps(blocks: usize, sms: usize) -> bool {
    blocks * 20 >= sms * 19
}

/// Queues `r` (from [`route`]) on `stream`, with its scratch: each block's parked partial sums
/// (64 x 16 f32) and flag.
pub(crate) fn run(stream: &Arc<Stream>, r: &Skinny90Route) -> Result<()> {
    let ctx = stream.context();
    let f = ctx.kernel(&r.kernel)?;
    if f.max_dynamic_shared_memory() < r.smem() {
        f.set_max_dynamic_shared_memory(r.smem())?;
    }
    let mut params = r.params;
    // Whole tiles need no scratch. Stream-k's: a block reads another's slot only after that
    // block's flag holds this launch's `seq`, which it stores after writing the slot. Outside a
    // graph no launch before this one stored `seq`; a graph replays one `seq` on one scratch, so
    // there the flags are zeroed in the graph before each replay's launch (seq is never 0).
    let ws = if r.params.whole == 0 {
        let slots = r.blocks * SLOT_FLOATS;
        // SAFETY: see above: no slot is read before its writer's flag says it was written, and
        // a capture zeroes the flags.
        let mut ws = unsafe { DeviceBuffer::<f32>::uninit(stream, slots + 2 * r.blocks) }?;
        if stream.is_recorded() {
            ws.slice_mut(slots..)?.memset_zero()?;
        }
        params.ws = ws.device_ptr();
        Some(ws)
    } else {
        None
    };
    params.seq = next_seq().max(1);
    let (tg, th) = (r.g.encode(r.epb, ROWS as u32)?, r.h.encode(r.epb, SKINNY_MAX as u32)?);
    let mut launch = stream.launch_builder(&f);
    // Every thread of the kernel runs griddepcontrol.wait before touching global memory.
    launch.arg(&tg).arg(&th).arg(&params);
    if overlaps(r.blocks, ctx.limits().multiprocessor_count as usize) {
        launch.overlap_previous();
    }
    // SAFETY: gemm_skinny90_<t>_k<KB>(TensorMap tg, TensorMap th, Skinny90Params): reads G (L x k
    // at ldg, sg) and H (S x k at ldh, sh) through their tensor maps (the TMA stays inside
    // their extents; route checked the TMA's alignment rules, and the buffers' spans were
    // checked by Gemm's plan); a map of views past a 16-byte boundary also reads the `lead`
    // (< 16) bytes before each row, which lie in the same allocation (device allocations and
    // the pool's blocks start at least 512-byte aligned) and never reach D's values; writes D
    // (L x S at dl, ds, sd) and, in stream-k, the scratch of blocks * (1024 floats + a u64);
    // block 160 threads, grid at most one block per unit of work
    // (whole: per tile), the shared memory of its ring; every thread runs griddepcontrol.wait
    // before its first access to global memory (the launch may overlap the previous kernel).
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (r.blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: r.smem(),
        })
    }?;
    drop(ws); // back to the pool behind the launch
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_block_matches_the_kernels() {
        // 4 pointers, 6 i64, 2 f64, 10 i32 (ptx/gemm_skinny90.cu).
        assert_eq!(size_of::<Skinny90Params>(), 4 * 8 + 6 * 8 + 2 * 8 + 10 * 4);
    }

    #[test]
    fn only_grids_on_nearly_every_sm_overlap_the_kernel_before() {
        assert!(overlaps(132, 132) && overlaps(128, 132) && overlaps(126, 132));
        assert!(!overlaps(115, 132) && !overlaps(96, 132) && !overlaps(64, 132));
    }

    #[test]
    fn whole_tiles_where_they_keep_most_sms_busy() {
        // 96 tiles on 132 SMs: one each; 344: 3 each on 115 blocks; 64: stream-k on every SM.
        assert_eq!(grid(96, 16, 132), (96, true));
        assert_eq!(grid(344, 16, 132), (115, true));
        assert_eq!(grid(192, 16, 132), (96, true));
        assert_eq!(grid(64, 56, 132), (132, false));
        assert_eq!(grid(92, 16, 132), (132, false));
        // Fewer units than SMs: a block per unit.
        assert_eq!(grid(1, 4, 132), (4, false));
        // One SM (or a count of 0): one block, every tile.
        assert_eq!(grid(5, 1, 0), (1, true));
    }

    #[test]
    fn launch_sequence_numbers_are_never_repeated() {
        let a = next_seq();
        let b = next_seq();
        assert_ne!(a, b);
        assert!(b > a);
    }
}
