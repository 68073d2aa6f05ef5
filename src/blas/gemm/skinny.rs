//! GEMMs with one short side (at most 16: a decode step's tokens) whose operands are both contiguous
//! along k (a linear layer `y = x W^T` over row-major activations: cuBLAS's TN) run on
//! `gemm_skinny_<t>` (ptx/gemm_skinny.cu), f32: the GEMM tiles are 32 to 256 wide, so 16
//! rows leave most of each tile's arithmetic idle, while the product is memory-bound (4096 x 16 x
//! 4096 in f32 does 8 FLOP per byte of the weight matrix). The skinny kernel reads the long
//! operand once, 16 bytes per lane, and keeps the short one's k-slices in shared memory.

use std::mem::size_of;

use super::builder::{Gemm, Plan};
use super::params::{GemmParams, MAX_BATCH_PER_LAUNCH};
use super::thin::tc_thin;
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::MathMode;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceSlice};
use crate::stream::Stream;

/// The longest short side the kernel takes (its accumulators per row: ptx/gemm_skinny.cu's
/// `SKINNY_S`).
pub(crate) const SKINNY_MAX: usize = 16;
/// Warps per block, each owning `rows` rows of the long side.
const WARPS: u32 = 8;

/// The kernel's parameter block (`struct SkinnyParams` in ptx/gemm_skinny.cu).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct SkinnyParams {
    pub(crate) g: u64,
    pub(crate) h: u64,
    d: u64,
    bias: u64,
    work: u64,
    l: i64,
    s: i64,
    k: i64,
    ldg: i64,
    ldh: i64,
    dl: i64,
    ds: i64,
    sg: i64,
    sh: i64,
    sd: i64,
    chunk: i64,
    alpha: f64,
    beta: f64,
    act: i32,
    bias_on_l: i32,
    /// G's start rounded down to 16 bytes by this many elements (ptx/gemm_skinny.cu).
    pub(crate) shift: i32,
    /// The CUDA struct's tail padding (its size is a multiple of its 8-byte alignment), spelled
    /// out so that this one has none.
    pad: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (8-byte fields, then three
// i32s and the padding CUDA adds after them, as a field: no implicit padding); every bit
// pattern is valid.
unsafe impl DeviceRepr for SkinnyParams {}

/// A GEMM routed to the skinny kernel: which variant, its launch shape and parameters.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SkinnyRoute {
    /// `gemm_skinny_<t>_r<rows>s<steps>`, with `u` for an H read element by element.
    pub kernel: String,
    /// Rows of the long side per warp and 16-byte vectors per lane per k tile.
    rows: usize,
    steps: usize,
    pub params: SkinnyParams,
    /// Blocks that split k (grid y); more than 1 adds `gemm_skinny_finish_<t>`.
    pub splits: usize,
    batch: usize,
}

impl SkinnyRoute {
    /// What [`Gemm::kernel_name`] reports: the kernel and, when k is split, `/split<N>`.
    pub(crate) fn name(&self) -> String {
        if self.splits > 1 {
            format!("{}/split{}", self.kernel, self.splits)
        } else {
            self.kernel.clone()
        }
    }

    /// Elements of k per tile (the shared-memory stage of the short operand).
    fn k_tile(&self, elem: usize) -> usize {
        32 * (16 / elem) * self.steps
    }

    /// Dynamic shared memory: two k tiles of the short operand, 16 rows each.
    fn smem(&self, elem: usize) -> u32 {
        (2 * SKINNY_MAX * self.k_tile(elem) * elem) as u32
    }
}

/// The variant for type `name`: rows of the long side per warp and 16-byte vectors per lane per
/// k tile (ptx/gemm_skinny.cu). f32 only: f64 ran at 0.51-0.76x of cuBLAS on the skinny kernel
/// (H100, 2026-11-25); its thin DMMA tiles (16 x 64, 64 x 16) run such products at 0.95-1.07x
/// (2026-11-26). f32 at 2 rows of
/// 2 vectors (two blocks per multiprocessor): 1.05-1.52x of cuBLAS on decode shapes of 16
/// tokens, against 0.95-1.46x at 4 rows (one block).
fn variant(name: &str) -> Option<(usize, usize)> {
    (name == "f32").then_some((2, 2))
}

/// A problem with a short side seen from its long side: the long operand G and the short one H
/// (address, leading dimension, batch stride, all k-contiguous) and the strides of D(l, s);
/// `short_rows` when the short side is D's rows (X, the long side Y's columns), else its columns
/// (Y). Shared by the skinny kernels of every type.
pub(crate) struct Sides {
    pub short_rows: bool,
    pub g: (u64, usize, usize),
    pub h: (u64, usize, usize),
    pub dl: usize,
    pub ds: usize,
}

/// A decode-shaped product as the skinny kernels of every type see it.
pub(crate) struct Decode {
    pub short: usize,
    pub long: usize,
    pub k: usize,
    pub batch: usize,
}

/// `plan`'s [`Decode`] when nothing asks for another kernel (automatic kernel, tile and split),
/// both operands are k-contiguous (X's rows, Y's columns), k > 0 and the short side is at most
/// [`SKINNY_MAX`]; else `None`. Shared by the skinny kernels' routers.
pub(crate) fn decode<S>(g: &Gemm<S>, plan: &Plan, params: &GemmParams) -> Option<Decode> {
    let knobs_auto = g.kernel == Kernel::Auto && g.tile == Tile::Auto && g.split == SplitK::Auto;
    let (xk, yk) = (plan.ops.ends_with('n'), plan.ops.starts_with('t'));
    let (m, n, k) = (plan.m, plan.n, params.k as usize);
    let (short, long) = (m.min(n), m.max(n));
    if !knobs_auto || !xk || !yk || k == 0 || short > SKINNY_MAX {
        return None;
    }
    Some(Decode {
        short,
        long,
        k,
        batch: g.batch,
    })
}

/// `plan`'s [`Sides`] (the shorter of its m and n, D's rows on a tie).
pub(crate) fn sides(plan: &Plan, params: &GemmParams) -> Sides {
    let (x, y) = ((params.x, plan.ldx, plan.sx), (params.y, plan.ldy, plan.sy));
    if plan.m <= plan.n {
        Sides {
            short_rows: true,
            g: y,
            h: x,
            dl: 1,
            ds: plan.ldd,
        }
    } else {
        Sides {
            short_rows: false,
            g: x,
            h: y,
            dl: plan.ldd,
            ds: 1,
        }
    }
}

/// The skinny form of the kernels' problem (`plan`, `params`: row-major D = X Y), when it has one
/// and nothing asks for another kernel: f32 (any math mode: the kernel's exact f32 is at least as
/// accurate as tf32); both operands k-contiguous (`xk`, `yk`), aligned to their element, the long
/// one with leading dimension and batch stride whole 16-byte vectors (its start may be anywhere:
/// the kernel reads from it rounded down); the short side at most [`SKINNY_MAX`];
/// alpha != 0 and k >= 1; and more than a tiny product (those stay on `gemm_small`). `sms` sizes
/// the split of k.
pub(crate) fn route<T: GemmType, S>(
    g: &Gemm<S>,
    plan: &Plan,
    params: &GemmParams,
    sms: usize,
    cc: (u32, u32),
) -> Option<SkinnyRoute> {
    let (rows, steps) = variant(T::NAME)?;
    // tf32 has tensor-core thin tiles for the shapes where they beat this kernel's exact f32
    // (11008 x 16 x 4096 TN: 0.86x cuBLAS's tf32 against 0.70x; H100, docs/kernels/gemm-mma-sync.md).
    if g.math == MathMode::Tf32 && cc >= (8, 0) && tc_thin(plan, T::NAME, g.math, g.batch, sms).is_some() {
        return None;
    }
    let Decode { short, long, k, batch } = decode(g, plan, params)?;
    if batch > MAX_BATCH_PER_LAUNCH {
        return None;
    }
    // Tiny products (every side at most 32) stay on the one-block kernel.
    if long <= 32 && k <= 32 {
        return None;
    }
    let Sides {
        short_rows,
        g: (g_ptr, ldg, sg),
        h: (h_ptr, ldh, sh),
        dl,
        ds,
    } = sides(plan, params);
    // The long operand G keeps 16-byte loads: its rows whole vectors apart, its start rounded
    // down to 16 bytes by `shift` elements (an unaligned view of the weights: 11008 x 16 x 4096
    // at an odd offset, which the tiled kernels ran at 0.72x cuBLAS after copying it, and an
    // element-wise variant at 0.63x). H (at most 16 rows) keeps 16-byte loads too when its start
    // is rounded down by the same shift (both operands views at the same offset: 11008 x 16 x
    // 4096 one element in ran at 0.81x cuBLAS with H element by element); otherwise it is read
    // element by element.
    let (elem, vec) = (size_of::<T>() as u64, 16 / size_of::<T>());
    let whole = |ld: usize, stride: usize| ld % vec == 0 && (batch == 1 || stride % vec == 0);
    if g_ptr % elem != 0 || h_ptr % elem != 0 || !whole(ldg, sg) {
        return None;
    }
    let shift = (g_ptr % 16 / elem) as usize;
    let g_ptr = g_ptr - (shift as u64) * elem;
    let h_vectors = h_ptr % 16 == shift as u64 * elem && whole(ldh, sh);
    // Otherwise the `u` kernel (H copied element by element with cp.async from its own start).
    let (suffix, h_ptr) = if h_vectors {
        ("", h_ptr - shift as u64 * elem)
    } else {
        ("u", h_ptr)
    };
    let mut route = SkinnyRoute {
        kernel: format!("gemm_skinny_{}_r{rows}s{steps}{suffix}", T::NAME),
        rows,
        steps,
        params: SkinnyParams {
            g: g_ptr,
            h: h_ptr,
            d: params.d,
            bias: params.bias,
            work: 0,
            l: long as i64,
            s: short as i64,
            k: k as i64,
            ldg: ldg as i64,
            ldh: ldh as i64,
            dl: dl as i64,
            ds: ds as i64,
            sg: sg as i64,
            sh: sh as i64,
            sd: plan.sd as i64,
            chunk: 0,
            alpha: params.alpha,
            beta: params.beta,
            act: params.act,
            bias_on_l: i32::from(short_rows),
            shift: shift as i32,
            pad: 0,
        },
        splits: 1,
        batch,
    };
    // Split k over blocks while the row blocks number fewer than the multiprocessors (the f32
    // variant holds two per multiprocessor, so a split grid of up to one block per SM still
    // fits in one wave), each split at least 4 k tiles.
    let kt = route.k_tile(size_of::<T>());
    let tiles = (k + shift).div_ceil(kt);
    let blocks = long.div_ceil(WARPS as usize * rows) * batch;
    let want = (sms / blocks.max(1)).clamp(1, 32);
    let splits = want.min((tiles / 4).max(1));
    let chunk = tiles.div_ceil(splits) * kt;
    route.splits = (k + shift).div_ceil(chunk);
    route.params.chunk = chunk as i64;
    Some(route)
}

/// Queues `r` (from [`route`]) on `stream`: the kernel, and with a split of k a workspace and
/// `gemm_skinny_finish_<t>`.
pub(crate) fn run<T: GemmType>(stream: &std::sync::Arc<Stream>, r: &SkinnyRoute) -> Result<()> {
    let ctx = stream.context();
    let elem = size_of::<T>();
    let f = ctx.kernel(&r.kernel)?;
    let (l, s) = (r.params.l as usize, r.params.s as usize);
    let work = if r.splits > 1 {
        // SAFETY: every element of the workspace is written by the skinny kernel before the
        // finish kernel reads it (each split writes all L x S of its partial sums per matrix).
        Some(unsafe { DeviceBuffer::<u8>::uninit(stream, r.splits * l * s * r.batch * elem) }?)
    } else {
        None
    };
    let mut params = r.params;
    params.work = work.as_ref().map_or(0, |w| w.device_ptr());
    let grid = (
        l.div_ceil(WARPS as usize * r.rows) as u32,
        r.splits as u32,
        r.batch as u32,
    );
    let mut launch = stream.launch_builder(&f);
    launch.arg(&params);
    // SAFETY: gemm_skinny_<t>_r<R>s<S>(SkinnyParams): reads G (L x k at ldg, batch stride sg: the
    // elements [shift, k + shift) from its rounded-down start, whole vectors apart) and H (S x k at
    // ldh, sh; in 16-byte vectors from its start rounded down by the same shift, or element by
    // element from its start), both aligned to their element (route
    // checked them; the buffers' spans were checked by Gemm's plan), writes D (L x S at dl, ds, sd) or the
    // workspace of splits * L * S per matrix; block (32, 8) and the shared memory it declares.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: grid,
            block_dim: (32, WARPS, 1),
            shared_mem_bytes: r.smem(elem),
        })
    }?;
    if work.is_some() {
        let f = ctx.kernel(&format!("gemm_skinny_finish_{}", T::NAME))?;
        let splits = r.splits as i32;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&params).arg(&splits);
        // SAFETY: gemm_skinny_finish_<t>(SkinnyParams, int splits) reads the workspace the
        // skinny kernel wrote and writes D as the kernel would have; one thread per output.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: ((l * s).div_ceil(256) as u32, 1, r.batch as u32),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_block_matches_the_kernels() {
        // 5 pointers, 11 i64, 2 f64, 3 i32 and 4 bytes of tail padding (ptx/gemm_skinny.cu).
        assert_eq!(size_of::<SkinnyParams>(), 5 * 8 + 11 * 8 + 2 * 8 + 4 * 4);
    }
}
