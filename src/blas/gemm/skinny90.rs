//! f16 and bf16 GEMMs with one short side (at most 16: a decode step's tokens) whose operands are
//! both contiguous along k (a linear layer `y = x W^T` over row-major activations: cuBLAS's TN)
//! run on `gemm_skinny90_<t>_k<KB>` (ptx/gemm_skinny90.cu) on compute capability 9.0: both
//! operands arrive in shared memory as TMA boxes and the tensor cores read them there,
//! every block taking the same share of the work along k (stream-k), so a decode step streams its
//! weights at the memory's rate whatever its tile count.

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;

use super::builder::{Gemm, Plan};
use super::dispatch::tma_element;
use super::params::GemmParams;
use super::partials;
use super::skinny::{sides, Sides, SKINNY_MAX};
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::tma::TmaMatrix;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceSlice};
use crate::stream::Stream;

/// Rows of the long side per block tile (the kernel's 4 consumer warps of 16 rows).
const ROWS: usize = 64;
/// Threads per block: 4 consumer warps and the producer warp.
const THREADS: u32 = 160;

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
    pad: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (8-byte fields, then eight
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
}

impl Skinny90Route {
    /// What [`Gemm::kernel_name`] reports.
    pub(crate) fn name(&self) -> String {
        self.kernel.clone()
    }

    /// Dynamic shared memory (`skinny90_smem` in ptx/gemm_skinny90.cu).
    fn smem(&self) -> u32 {
        (STAGES * KB / 64 * (ROWS + SKINNY_MAX) * 128 + 16 * STAGES + 1024) as u32
    }
}

/// The ring the kernels are compiled with: elements of k per stage (KB) and stages. 256 of 5
/// (200 KiB, one block per SM) against 128 of 10: 0-14% faster on decode steps of 16 tokens
/// (H200, 2026-11-28 06:57 UTC); a 256-wide unswizzled box per stage (one TMA load per operand,
/// 2-way bank conflicts) 2-20% slower (07:01 UTC).
const KB: usize = 256;
const STAGES: usize = 5;
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
/// nothing asks for another kernel: f16 or bf16 on compute capability 9.0; both operands
/// k-contiguous, 16-byte aligned, with leading dimensions and batch strides of whole 16-byte
/// vectors (the TMA's rules); the short side at most [`SKINNY_MAX`]; alpha != 0; at least
/// [`MIN_ELEMENTS`] elements in the long operand; and a short side that is the caller's m,
/// [`MIN_WHOLE_BYTES`] of weights, or one matrix the thin tiles would split through partial
/// products. Forced knobs (kernel, tile, split) leave it to the tiles.
pub(crate) fn route<T: GemmType, S>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    sms: usize,
    cc: (u32, u32),
) -> Option<Skinny90Route> {
    if !matches!(T::NAME, "f16" | "bf16") || cc < (9, 0) {
        return None;
    }
    let knobs_auto = g.kernel == Kernel::Auto && g.tile == Tile::Auto && g.split == SplitK::Auto;
    let (xk, yk) = (plan.ops.ends_with('n'), plan.ops.starts_with('t'));
    let (m, n, k, batch) = (plan.m, plan.n, params.k as usize, g.batch);
    let (short, long) = (m.min(n), m.max(n));
    if !knobs_auto || !xk || !yk || k == 0 || short > SKINNY_MAX || long.saturating_mul(k) < MIN_ELEMENTS {
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
    // H200), large weights (MIN_WHOLE_BYTES), and one matrix the thin tiles would split
    // through partial products (4096 x 16 x 4096 +12%, 4096 x 16 x 11008 +3% on the H100; a
    // batch of four such -3.5%).
    if short_rows {
        let weights = long
            .saturating_mul(k)
            .saturating_mul(size_of::<T>())
            .saturating_mul(batch);
        if weights < MIN_WHOLE_BYTES && (batch > 1 || partials::auto_parts::<T, S>(g, plan, sms).is_none()) {
            return None;
        }
    }
    let element = tma_element::<T>()?;
    let matrix = |address: u64, outer: usize, ld: usize, stride: usize| TmaMatrix {
        address,
        element,
        inner: k as u64,
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
    let nk = k.div_ceil(KB);
    let units = tiles.checked_mul(batch)?.checked_mul(nk)?;
    if units > i32::MAX as usize {
        return None;
    }
    Some(Skinny90Route {
        kernel: format!("gemm_skinny90_{}_k{KB}", T::NAME),
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
            pad: 0,
        },
        g: gm,
        h: hm,
        blocks: units.min(sms.max(1)),
    })
}

/// Queues `r` (from [`route`]) on `stream`, with its scratch: each block's parked partial sums
/// (64 x 16 f32) and flag.
pub(crate) fn run(stream: &Arc<Stream>, r: &Skinny90Route) -> Result<()> {
    let ctx = stream.context();
    let f = ctx.kernel(&r.kernel)?;
    if f.max_dynamic_shared_memory() < r.smem() {
        f.set_max_dynamic_shared_memory(r.smem())?;
    }
    // SAFETY: a block reads another's slot only after that block's flag holds this launch's
    // `seq`, which it stores after writing the slot; no launch before this one stored `seq`.
    let ws = unsafe { DeviceBuffer::<f32>::uninit(stream, r.blocks * (4 * 32 * 8 + 2)) }?;
    let mut params = r.params;
    params.ws = ws.device_ptr();
    params.seq = next_seq();
    let (tg, th) = (r.g.encode(64, ROWS as u32)?, r.h.encode(64, SKINNY_MAX as u32)?);
    let mut launch = stream.launch_builder(&f);
    launch.arg(&tg).arg(&th).arg(&params);
    // SAFETY: gemm_skinny90_<t>_k<KB>(TensorMap tg, TensorMap th, Skinny90Params): reads G (L x k
    // at ldg, sg) and H (S x k at ldh, sh) through their tensor maps (the TMA stays inside
    // their extents; route checked the TMA's alignment rules, and the buffers' spans were
    // checked by Gemm's plan), writes D (L x S at dl, ds, sd) and
    // the scratch of blocks * (1024 floats + a u64); block 160 threads, grid at most one block
    // per unit of work, the shared memory of its ring.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (r.blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: r.smem(),
        })
    }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_block_matches_the_kernels() {
        // 4 pointers, 6 i64, 2 f64, 8 i32 (ptx/gemm_skinny90.cu).
        assert_eq!(size_of::<Skinny90Params>(), 4 * 8 + 6 * 8 + 2 * 8 + 8 * 4);
    }

    #[test]
    fn launch_sequence_numbers_are_never_repeated() {
        let a = next_seq();
        let b = next_seq();
        assert_ne!(a, b);
        assert!(b > a);
    }
}
