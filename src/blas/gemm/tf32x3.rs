//! [`MathMode::Tf32x3`]: f32 products at f32 accuracy on the tensor cores. Each operand is
//! split into a tf32 part and a tf32 remainder (`x = hi + lo` to 2^-22 of `|x|`), and the GEMM
//! over three times k, `[hi', lo, hi] x [lo; hi'; hi]`, sums `hi_a lo_b + lo_a hi_b + hi_a hi_b`
//! on the tf32 kernels with f32 accumulation: the dropped `lo_a lo_b` and the splits' rounding
//! come to at most `3 * 2^-22 |a b|` per product, the accumulation is the f32 kernels' own.
//!
//! The split (`gemm_split_tf32x3`, ptx/gemm_pack.cu) writes both operands k-contiguous (the
//! layout the tf32 wgmma kernels read without another copy), so the product runs as TN
//! (column-major) or NT (row-major) on copies of `(m + n) * 3k` elements per matrix. Where
//! the exact CUDA-core kernels are as fast (small or short products, one row or column), the
//! mode runs those instead: both are f32-accurate, the exact one more so.

use std::sync::Arc;

use super::builder::{Path, Plan};
use super::choice::{Choice, Family};
use super::launch::run_choice;
use super::params::batch_launches;
use super::{Gemm, GemmType, Kernel, Tile};
use crate::blas::{Layout, MathMode, Transpose};
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{use_on, DeviceBuffer, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// The kernel that splits an operand, as [`Gemm::kernel_name`] prefixes it.
pub(crate) const SPLIT_KERNEL: &str = "gemm_split_tf32x3";

/// The smallest `2 m n k batch` (FLOP) for which the automatic choice splits.
const MIN_FLOP: f64 = 0.6e9;

/// The shortest side (m, n), the smallest `m n` of one product and the shortest k for which the
/// automatic choice splits.
const MIN_SIDE: usize = 256;
const MIN_AREA: usize = 768 * 768;
const MIN_K: usize = 64;

/// The most rows of op(A) or columns of op(B) one split launch takes (32 to a block in grid y,
/// at most 65535 blocks): longer operands run on the exact kernels, and a forced family is
/// refused.
const MAX_SPLIT_VECTORS: usize = 65535 * 32;

/// Whether `g` (f32, [`MathMode::Tf32x3`], already checked against its buffers, not empty)
/// runs as three tf32 products on a device of compute capability `cc`, rather than on the
/// exact kernels: forced by [`Kernel::TensorCore`], [`Kernel::MmaSync`] or [`Kernel::Wgmma`]
/// (an error before compute capability 8.0), never with [`Kernel::Simt`], and otherwise where
/// the problem is large enough that the tensor cores' rate pays for the split's copies.
pub(crate) fn splits<S: Copy + Into<f64>>(g: &Gemm<S>, cc: (u32, u32)) -> Result<bool> {
    let alpha: f64 = g.alpha.into();
    // alpha == 0 or k == 0: A and B are not read; the exact path scales C.
    if alpha == 0.0 || g.k == 0 {
        return Ok(false);
    }
    match g.kernel {
        Kernel::Simt => Ok(false),
        Kernel::Auto => Ok(cc >= (8, 0) && pays(g.m, g.n, g.k, g.batch) && g.m.max(g.n) <= MAX_SPLIT_VECTORS),
        forced => {
            if cc < (8, 0) {
                bail_invalid!(
                    "gemm: MathMode::Tf32x3 with {forced:?} needs tf32 tensor cores (compute capability 8.0), not {}.{}",
                    cc.0,
                    cc.1
                );
            }
            if g.m.max(g.n) > MAX_SPLIT_VECTORS {
                bail_invalid!(
                    "gemm: MathMode::Tf32x3 with {forced:?} splits at most {MAX_SPLIT_VECTORS} rows of op(A) and columns of op(B), not {} x {}; Kernel::Auto runs this product exactly",
                    g.m,
                    g.n
                );
            }
            Ok(true)
        }
    }
}

/// The automatic choice: large enough products split. Measured on an H200 (2026-11-29, the
/// exact kernels against the split forced, TFLOP/s, NN): the split ahead from 768^3 (21.4 ->
/// 31.2), 1024^3 (36.6 -> 48.1), 2048^2 x 256 (39.6 -> 62.3), 4096^2 x 64 (33.4 -> 46.5),
/// 12345 x 321 x 4567 (34.2 -> 40.5), 777 x 1531 x 2049 (30.1 -> 35.5); level at 1024^2 x 256
/// (30.4 / 30.9) and 512^2 x 2048 (27.0 / 26.7); behind at 512^3 (19.7 / 13.4), 1024^2 x 128
/// (24.7 / 19.7), 128 x 4096 x 4096 (37.7 / 27.7), 64 x 2048 x 2048 (20.7 / 11.0), the split's
/// copies and its tile's short waves costing more than the tensor cores save.
fn pays(m: usize, n: usize, k: usize, batch: usize) -> bool {
    let flop = 2.0 * m as f64 * n as f64 * k as f64 * batch as f64;
    m.min(n) >= MIN_SIDE && m.saturating_mul(n) >= MIN_AREA && k >= MIN_K && flop >= MIN_FLOP
}

/// The split operands' row length: `3k` rounded up to 16 bytes.
fn packed_ld(k: usize) -> usize {
    (3 * k).div_ceil(4) * 4
}

/// The tf32 GEMM over the split operands of `g`: op(A)' (`m x 3k`) and op(B)' (`3k x n`), both
/// stored k-contiguous with leading dimension [`packed_ld`], batch strides `strides` (0 where
/// the caller's operand is shared by the batch); C, its layout, scalars and knobs as in `g`.
pub(crate) fn inner<S: Copy>(g: &Gemm<S>, [sa, sb]: [usize; 2]) -> Gemm<S> {
    let ld = packed_ld(g.k);
    let ldc = g.ld[2];
    let (trans_a, trans_b) = match g.layout {
        Layout::ColMajor => (Transpose::T, Transpose::N),
        Layout::RowMajor => (Transpose::N, Transpose::T),
    };
    Gemm {
        trans_a,
        trans_b,
        k: 3 * g.k,
        ld: [Some(ld), Some(ld), ldc],
        strides: [sa, sb, g.strides[2]],
        math: MathMode::Tf32,
        ..*g
    }
}

/// The batch strides of the split operands: one copy per matrix of a batch (none shared).
pub(crate) fn packed_strides<S: Copy>(g: &Gemm<S>) -> [usize; 2] {
    let ld = packed_ld(g.k);
    let batched = g.batch > 1;
    [
        if batched && g.strides[0] != 0 { g.m * ld } else { 0 },
        if batched && g.strides[1] != 0 { g.n * ld } else { 0 },
    ]
}

/// One operand's split: where it is read and how, where it goes.
struct SplitOperand {
    /// Device address of the caller's operand.
    input: u64,
    /// Vectors of k (rows of op(A), columns of op(B)).
    count: usize,
    /// The caller's leading dimension and batch stride, elements.
    ld_in: usize,
    stride_in: usize,
    /// The copy's batch stride (0: one matrix shared by the batch).
    stride_out: usize,
    /// Whether k is the operand's contiguous index.
    k_inner: bool,
    /// The segment of the copy that holds the remainder: 1 for op(A), 0 for op(B).
    lo_seg: i32,
    /// Matrices stored in the copy.
    matrices: usize,
}

/// The alignment of a new pool allocation, bytes: where [`Gemm::kernel_name`] places the copies
/// to name the GEMM that reads them.
pub(crate) const COPY_ALIGNMENT: u64 = 256;

/// The elements of the split copies of op(A) and op(B).
pub(crate) fn packed_lens<S: Copy>(g: &Gemm<S>) -> [usize; 2] {
    let ld = packed_ld(g.k);
    let [sa, sb] = packed_strides(g);
    let matrices = |stride: usize| if stride == 0 { 1 } else { g.batch };
    [
        g.m.saturating_mul(ld).saturating_mul(matrices(sa)),
        g.n.saturating_mul(ld).saturating_mul(matrices(sb)),
    ]
}

/// Splits the operands of `g` (f32, `T` is `f32`) into new buffers on `stream` and returns them
/// (op(A)', op(B)'), for [`inner`]. Both copies are allocated before anything is queued, so an
/// error (out of memory among them) leaves nothing queued.
pub(crate) fn split_operands<T: GemmType, S: Copy + Into<f64>>(
    g: &Gemm<S>,
    stream: &Arc<Stream>,
    a: &impl DeviceSlice<T>,
    b: &impl DeviceSlice<T>,
) -> Result<(DeviceBuffer<T>, DeviceBuffer<T>)> {
    if T::NAME != "f32" {
        bail_invalid!("gemm: MathMode::Tf32x3 splits f32 operands, not {}", T::NAME);
    }
    let [lda, ldb, _] = g.lds();
    let [spa, spb] = packed_strides(g);
    let matrices = |stride: usize| if stride == 0 { 1 } else { g.batch };
    // op(A)(i, p) with p contiguous: column-major A^T or row-major A; op(B)(p, j): column-major
    // B or row-major B^T.
    let op_a = SplitOperand {
        input: a.device_ptr(),
        count: g.m,
        ld_in: lda,
        stride_in: g.strides[0],
        stride_out: spa,
        k_inner: matches!(
            (g.layout, g.trans_a),
            (Layout::ColMajor, Transpose::T) | (Layout::RowMajor, Transpose::N)
        ),
        lo_seg: 1,
        matrices: matrices(spa),
    };
    let op_b = SplitOperand {
        input: b.device_ptr(),
        count: g.n,
        ld_in: ldb,
        stride_in: g.strides[1],
        stride_out: spb,
        k_inner: matches!(
            (g.layout, g.trans_b),
            (Layout::ColMajor, Transpose::N) | (Layout::RowMajor, Transpose::T)
        ),
        lo_seg: 0,
        matrices: matrices(spb),
    };
    let pa = alloc_split::<T>(stream, &op_a, g.k)?;
    let pb = alloc_split::<T>(stream, &op_b, g.k)?;
    use_on(a, stream)?;
    use_on(b, stream)?;
    launch_split(stream, &pa, &op_a, g.k)?;
    launch_split(stream, &pb, &op_b, g.k)?;
    Ok((pa, pb))
}

/// The buffer of one operand's split copy: `count` rows of [`packed_ld`] per stored matrix.
fn alloc_split<T: GemmType>(stream: &Arc<Stream>, op: &SplitOperand, k: usize) -> Result<DeviceBuffer<T>> {
    let len = op
        .count
        .checked_mul(packed_ld(k))
        .and_then(|l| l.checked_mul(op.matrices))
        .ok_or_else(|| crate::error::invalid(format_args!("gemm: the tf32x3 split of {} x {k} overflows", op.count)))?;
    // SAFETY: every element the GEMM reads (rows < count, columns < 3k of each stored matrix)
    // is written by `launch_split` before the GEMM is queued on the same stream; the padding
    // columns (3k <= p < ld) are outside every operand the GEMM reads.
    unsafe { DeviceBuffer::<T>::uninit(stream, len) }
}

/// Queues `gemm_split_tf32x3` (ptx/gemm_pack.cu) from `op` into `out`.
fn launch_split<T: GemmType>(stream: &Arc<Stream>, out: &DeviceBuffer<T>, op: &SplitOperand, k: usize) -> Result<()> {
    let (grid_x, grid_y) = (k.div_ceil(32) as u64, op.count.div_ceil(32) as u64);
    if grid_x > i32::MAX as u64 || grid_y > 65535 {
        bail_invalid!("gemm: an operand of {} x {k} is too large for {SPLIT_KERNEL}", op.count);
    }
    let f = stream.context().kernel(SPLIT_KERNEL)?;
    let (count, k64, ld_in, ld_out) = (op.count as i64, k as i64, op.ld_in as i64, packed_ld(k) as i64);
    let (stride_in, stride_out) = (op.stride_in as i64, op.stride_out as i64);
    let (k_inner, elem) = (i32::from(op.k_inner), size_of::<T>() as u64);
    for (first, n) in batch_launches(op.matrices) {
        let i = op.input + first as u64 * op.stride_in as u64 * elem;
        let o = out.device_ptr() + first as u64 * op.stride_out as u64 * elem;
        let mut l = stream.launch_builder(&f);
        l.arg(&o).arg(&i).arg(&count).arg(&k64).arg(&ld_in).arg(&ld_out);
        l.arg(&stride_in).arg(&stride_out).arg(&k_inner).arg(&op.lo_seg);
        // SAFETY: gemm_split_tf32x3 takes (float* out, const float* in, i64 count, i64 k, i64
        // ld_in, i64 ld_out, i64 stride_in, i64 stride_out, int k_inner, int lo_seg), reads
        // in[b * stride_in + (r * ld_in + p | p * ld_in + r)] for b < n, r < count, p < k
        // (inside the operand and its batch, which the plan checked) and writes out[b *
        // stride_out + r * ld_out + s * k + p], s < 3, inside `out` (matrices * count *
        // ld_out elements, ld_out >= 3k).
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x as u32, grid_y as u32, n as u32),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            })
        }?;
    }
    Ok(())
}

/// Runs `g` (f32, [`MathMode::Tf32x3`], checked against its operands as `exact_plan`, not
/// empty) as three tf32 products where [`splits`] says so, else on the exact kernels; a split
/// that finds no memory for its copies runs exactly instead (nothing was queued).
pub(crate) fn run<T: GemmType<Scalar = S>, S: Copy + Into<f64>>(
    g: &Gemm<S>,
    exact_plan: &Plan,
    a: &impl DeviceSlice<T>,
    b: &impl DeviceSlice<T>,
    bias: Option<(u64, usize, &dyn DeviceSlice<T>)>,
    c: &mut impl DeviceSliceMut<T>,
) -> Result<()> {
    let stream = c.stream().clone();
    let exact = Gemm {
        math: MathMode::Exact,
        ..*g
    };
    if !splits(g, stream.context().compute_capability())? {
        return exact.launch_planned(exact_plan, a, b, bias, c);
    }
    let inner = inner(g, packed_strides(g));
    // The product's checks (a forced family or tile that does not apply) and its kernel before
    // the splits are queued.
    let [la, lb] = packed_lens(g);
    let plan = inner.plan([la, lb, c.len()], bias.map(|b| b.1))?;
    let at = |p: u64| [p, p, c.device_ptr()];
    let promoted = promoted_choice::<T, S>(&inner, &plan, at(COPY_ALIGNMENT), &stream)?;
    let (pa, pb) = match split_operands(g, &stream, a, b) {
        Err(crate::Error::OutOfMemory { .. }) => return exact.launch_planned(exact_plan, a, b, bias, c),
        split => split?,
    };
    // The copies' frees are ordered on `stream` after the GEMM that reads them.
    let Some((product, choice)) = promoted else {
        return inner.launch_planned(&plan, &pa, &pb, bias, c);
    };
    if let Some((_, _, bias)) = bias {
        use_on(bias, &stream)?;
    }
    let params = product.params(
        &plan,
        [pa.device_ptr(), pb.device_ptr(), c.device_ptr()],
        bias.map_or(0, |b| b.0),
    );
    run_choice::<T>(&stream, &choice, &plan, params, product.batch, product.activation)
}

/// The name [`Gemm::kernel_name`] reports for `g` (f32, [`MathMode::Tf32x3`], checked, not
/// empty, splitting): the split, then the tf32 product over the copies (aligned as new pool
/// allocations are) with C at `c`.
pub(crate) fn product_name<T: GemmType<Scalar = S>, S: Copy + Into<f64>>(
    g: &Gemm<S>,
    c: &impl DeviceSlice<T>,
    bias_len: Option<usize>,
) -> Result<String> {
    let inner = inner(g, packed_strides(g));
    let [la, lb] = packed_lens(g);
    let plan = inner.plan([la, lb, c.len()], bias_len)?;
    let at = [COPY_ALIGNMENT, COPY_ALIGNMENT, c.device_ptr()];
    let name = match promoted_choice::<T, S>(&inner, &plan, at, c.stream())? {
        Some((_, choice)) => choice.reported_name::<T>(),
        None => inner.name_at::<T>(&plan, at, c.stream())?,
    };
    Ok(format!("{SPLIT_KERNEL}+{name}"))
}

/// The rate of the promoted 128 x 192 tile per column of D over the 128 x 128 one's, percent,
/// where both fill their rounds (H200, 2026-11-29, f32x3 forced tiles: 4096^3 103 / 98,
/// 8192^3 120 / 101, 3072^3 107 / 86 TFLOP/s).
const BROAD_RATE_PERCENT: usize = 115;

/// Whether the promoted 128 x 192 tile beats the 128 x 128 one on `batch` products of the
/// kernels' `dims` (rows x columns of D) on `sms` multiprocessors, where dispatch took a wide
/// tile (128 x 256 has no promoted kernel): the busiest multiprocessor's columns (its rounds of
/// tiles times the tile's columns), the 128 x 192 tile's weighed by [`BROAD_RATE_PERCENT`].
/// Measured against each other forced (H200, 2026-11-29, TFLOP/s 128 x 192 / 128 x 128): 2048^3
/// 70.8 / 84.0 and 2048^2 x 256 52.0 / 62.3 (the 128 x 192 tile's second round a third full),
/// 1536^3 70.8 / 49.2, 4096^3 103.0 / 98.5, 5000 x 3000 x 1000 95.6 / 76.7.
pub(crate) fn broad_over_large((m, n): (usize, usize), batch: usize, sms: usize) -> bool {
    let busiest = |bn: usize| {
        m.div_ceil(128)
            .saturating_mul(n.div_ceil(bn))
            .saturating_mul(batch)
            .div_ceil(sms.max(1))
            .saturating_mul(bn)
    };
    busiest(192).saturating_mul(100) <= busiest(128).saturating_mul(BROAD_RATE_PERCENT)
}

/// The names of the promoted tf32 kernels start so (they have no activation twins: their
/// rolled epilogue applies an activation).
pub(crate) const PROMOTED_PREFIX: &str = "gemm_wg_tf32x3_";

/// The tiles of the promoted tf32 kernels (`gemm_wg_tf32x3_<tile>_tn`, ptx/gemm_wg_tf32.cu):
/// every tf32 wgmma tile but the 128 x 256 one (`w`), whose second accumulator set would not fit
/// the registers.
const PROMOTED_TILES: [char; 5] = ['b', 'l', 'n', 'm', 'h'];

/// The promoted kernel for the product over the copies (`inner`, `plan`, operands at `ptrs`),
/// and the product it runs (`inner`, or `inner` on the 128 x 192 tile where the automatic choice
/// was the 128 x 256 one): where dispatch picks a tf32 wgmma tile of [`PROMOTED_TILES`] (both
/// copies are k-contiguous, so the kernel is the `tn` one). `None` where it picks another family
/// (forced mma.sync, decode and partial-product routes), which runs unpromoted.
#[allow(clippy::type_complexity)]
fn promoted_choice<T: GemmType<Scalar = S>, S: Copy + Into<f64>>(
    inner: &Gemm<S>,
    plan: &Plan,
    ptrs: [u64; 3],
    stream: &Stream,
) -> Result<Option<(Gemm<S>, Choice)>> {
    let pick = |g: &Gemm<S>| -> Result<Option<Choice>> {
        let params = g.params(plan, ptrs, 0);
        Ok(match g.path::<T>(plan, &params, stream)? {
            Path::Tiles(choice) if choice.family == Family::Wgmma => Some((*choice).clone()),
            _ => None,
        })
    };
    let Some(mut choice) = pick(inner)? else {
        return Ok(None);
    };
    let mut product = *inner;
    let wide = matches!(choice.name.as_str(), "gemm_wg_tf32_w_tn" | "gemm_wg_tf32_b_tn");
    if wide && inner.tile == Tile::Auto {
        let sms = stream.context().limits().multiprocessor_count as usize;
        let tile = if broad_over_large((plan.m, plan.n), inner.batch, sms) {
            Tile::Broad
        } else {
            Tile::Large
        };
        product = Gemm { tile, ..*inner };
        match pick(&product)? {
            Some(other) => choice = other,
            None => return Ok(None),
        }
    }
    let tile = choice
        .name
        .strip_prefix("gemm_wg_tf32_")
        .and_then(|rest| rest.strip_suffix("_tn"));
    match tile.and_then(|t| t.chars().next()) {
        Some(t) if PROMOTED_TILES.contains(&t) && tile.map(str::len) == Some(1) => {
            choice.name = format!("{PROMOTED_PREFIX}{t}_tn");
            Ok(Some((product, choice)))
        }
        _ => Ok(None),
    }
}
