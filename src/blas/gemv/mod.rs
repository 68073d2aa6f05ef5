//! GEMV: `y = alpha * op(A) x + beta * y`, column-major A, any vector increments.

use std::mem::size_of;
use std::sync::Arc;

use super::{span, Transpose};
use crate::context::Context;
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{use_on, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};
use crate::module::Function;
use crate::profile::scope::{Op, OpScope};

mod strips;
use strips::NR_WARPS;
pub(crate) use strips::{row_strips, Strips, STRIP_CLUSTERS};

/// Element types GEMV is built for: `f32`, `f64`, and `f16` / `bf16` (f32 accumulation; `alpha`
/// and `beta` are then taken as `f16` / `bf16` values).
///
/// ```
/// use cudrv::blas::GemvType;
/// fn kernel_suffix<T: GemvType>() -> &'static str {
///     T::NAME
/// }
/// assert_eq!(kernel_suffix::<half::bf16>(), "bf16");
/// ```
pub trait GemvType: DeviceRepr + Send + Sync + Into<f64> + kernels::GemvKernels {
    /// The kernel-name suffix.
    ///
    /// ```
    /// use cudrv::blas::GemvType;
    /// assert_eq!(<f32 as GemvType>::NAME, "f32");
    /// ```
    const NAME: &'static str;
}

/// The kernels' shape constants per type: sealed, so only the four types implement GEMV.
mod kernels {
    pub trait GemvKernels {
        /// Rows of a row tile of the 16-byte-load kernel `gemv_nv_<t>` (`32 * VEC * UR` in
        /// ptx/gemv.cu).
        const NV_ROWS: usize;
        /// Rows of a row tile of the cluster kernel `gemv_nvc_<t>` (ptx/gemv90.cu).
        const NVC_ROWS: usize;
        /// Bytes of the accumulator type (the element of the split-reduction workspace).
        const ACC_BYTES: usize;
        /// Bytes per lane of the row-strip N kernels `gemv_nr<bytes>_<t>`, narrowest first.
        const STRIP_LANES: &'static [usize];
        /// Narrower lanes for the strips when A or lda is not aligned to the narrowest of
        /// `STRIP_LANES` (f32 at an odd lda: one element per lane).
        const STRIP_FALLBACK: &'static [usize] = &[];
    }
    impl GemvKernels for f32 {
        const NV_ROWS: usize = 128;
        const NVC_ROWS: usize = 256;
        const ACC_BYTES: usize = 4;
        const STRIP_LANES: &'static [usize] = &[8, 16];
        const STRIP_FALLBACK: &'static [usize] = &[4];
    }
    impl GemvKernels for f64 {
        const NV_ROWS: usize = 128;
        const NVC_ROWS: usize = 128;
        const ACC_BYTES: usize = 8;
        const STRIP_LANES: &'static [usize] = &[8, 16];
    }
    impl GemvKernels for half::f16 {
        const NV_ROWS: usize = 256;
        const NVC_ROWS: usize = 256;
        const ACC_BYTES: usize = 4;
        const STRIP_LANES: &'static [usize] = &[4, 8, 16];
    }
    impl GemvKernels for half::bf16 {
        const NV_ROWS: usize = 256;
        const NVC_ROWS: usize = 256;
        const ACC_BYTES: usize = 4;
        const STRIP_LANES: &'static [usize] = &[4, 8, 16];
    }
}
impl GemvType for f32 {
    const NAME: &'static str = "f32";
}
impl GemvType for f64 {
    const NAME: &'static str = "f64";
}
impl GemvType for half::f16 {
    const NAME: &'static str = "f16";
}
impl GemvType for half::bf16 {
    const NAME: &'static str = "bf16";
}

/// The kernels' parameter block (`struct GemvParams` in ptx/gemv.cu).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct GemvParams {
    a: u64,
    x: u64,
    y: u64,
    work: u64,
    m: i64,
    n: i64,
    lda: i64,
    incx: i64,
    incy: i64,
    chunk: i64,
    alpha: f64,
    beta: f64,
    splits: i32,
    pad: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct (8-byte fields, then two i32s).
unsafe impl DeviceRepr for GemvParams {}

/// Rows of a row tile of the one-element-per-load `gemv_n` kernel, columns per block of the
/// one-element-per-load `gemv_t` kernels (one per warp), and threads per block of all of them.
const N_ROWS: usize = 128;
const T_COLS: usize = 8;
const THREADS: u32 = 256;
/// Columns per block of the 16-byte `gemv_tv` kernels (four warps per column), and of
/// `gemv_tv1` (one warp per column).
const TV_COLS: usize = 2;
const TV1_COLS: usize = 8;
/// `gemv_tv1` takes columns (A's rows, op T) of at most this many bytes: 8 KiB for f16 and
/// bf16 (4096 rows), 6 KiB for f32 and f64 (1536 and 768 rows) ...
const TV1_MAX_BYTES_16: usize = 8192;
const TV1_MAX_BYTES: usize = 6144;
/// ... and at least this many columns per multiprocessor: with one warp per column, fewer leave
/// too few loads in flight (f32 2048 x 2048: 2244 GB/s against 3596 with `gemv_tv`).
const TV1_MIN_COLS_PER_SM: usize = 16;

/// The 16-byte T kernel (`gemv_<k>_<t>`) for an `m x n` A of `elem` bytes per element on a
/// device of `sms` multiprocessors: `tv1` (one warp per column, no barrier) for short columns
/// over enough of them, where `gemv_tv`'s four warps per column would mostly idle; else `tv`.
/// Measured on an H200, 2026-11-26 (docs/kernels/gemv.md, "One warp per short column"): the
/// one-token products of the GEMM suite (f16 50257 x 768: 0.60x -> 1.20x cuBLAS) and the square
/// T GEMVs from 3072.
pub(crate) fn t_vector_kernel(m: usize, n: usize, elem: usize, sms: usize) -> &'static str {
    let max = if elem == 2 { TV1_MAX_BYTES_16 } else { TV1_MAX_BYTES };
    if m.saturating_mul(elem) <= max && n >= TV1_MIN_COLS_PER_SM * sms {
        "tv1"
    } else {
        "tv"
    }
}

/// Shortest split of the reduction: columns (N), rows (T). T splits are also a multiple of
/// `T_GRAIN` rows, which keeps the 16-byte loads of `gemv_tv` aligned.
const N_MIN_CHUNK: usize = 256;
const T_MIN_CHUNK: usize = 1024;
const T_GRAIN: usize = 512;
/// Blocks of the cluster of `gemv_nvc` (its compile-time cluster shape, 1 x 8 x 1).
const CLUSTER_SPLITS: usize = 8;
/// Blocks per cluster of `gemv_nc16`, and its row tiles' height.
const NC16_SPLITS: usize = 16;
const NC16_ROWS: usize = 64;
/// Most splits of the element-wise N reduction that run as `gemv_nc16`'s 16 blocks: a block's
/// columns at most 1/8 more than the split's (H100, 2026-12-07: 1001 x 4001 at 16 splits and 1279
/// x 4097 at 17 ran 15-18% faster than the split).
const NC16_MAX_SPLITS: usize = 18;
/// Largest A (bytes) whose split N reduction runs in a cluster (see `gemv`).
const CLUSTER_MAX_BYTES: u64 = 192 << 20;

/// Most splits of the element-wise N reduction that run as the 8 blocks of a cluster
/// (`gemv_nc`): from 12 the cluster's 8 longer column ranges lost to the split (H200,
/// 2026-11-28: 1023 x 3001 and bf16 4095 x 4097 at 12 splits 4% and 14% slower, 1023 x 2301 and
/// 2047 x 2049 at 9 splits 4-15% faster).
const NC_MAX_SPLITS: usize = 10;

/// The element-wise N kernel's reduction over the row tiles of `m` rows, split `splits` ways by
/// [`plan`] (over `N_ROWS`-row tiles), run instead in the blocks of a thread block cluster
/// (sm_90): one launch where the split takes two and a workspace. Taken on the first of these
/// that takes that many splits and whose row tiles' clusters all fit on the device at once (the
/// driver's cluster occupancy: the GPU processing clusters place a cluster's blocks, so it is
/// below the block slots over the cluster size):
/// - `gemv_nc16_<type_name>`, 2 to [`NC16_MAX_SPLITS`] splits: 64-row tiles over 16 blocks (a
///   non-portable cluster size, which the driver allows on the H100 and H200; elsewhere its
///   occupancy answer is an error or 0 and the next kernel is taken). H100, 2026-12-07
///   (docs/kernels/gemv.md, "Wider clusters and more reads in flight"): 1023 x 1025 f16 6.85 ->
///   5.79 us, f32 6.44 -> 5.53, f64 7.13 -> 6.30; 777 x 3001 (12 splits) f16 8.20 -> 5.89,
///   1279 x 4097 (17 splits) 11.23 -> 9.25.
/// - `gemv_nc_<type_name>`, 2 to [`NC_MAX_SPLITS`] splits: `N_ROWS`-row tiles over 8 blocks. H200, 2026-11-28
///   (docs/kernels/gemv.md, "The element-wise N split in a cluster"): f16 1023 x 1025 9.3 -> 6.0
///   us, 2999 x 999 7.9 -> 5.1, f32 3001 x 1500 8.8 -> 6.5; where the clusters needed a second
///   round (f32 6001 x 2001, f16 4095 x 2049, bf16 12289 x 4099) they ran 25-40% slower than the
///   split.
///
/// Returns the kernel's kind (`"nc16"` or `"nc"`), the kernel, its row tiles and its cluster
/// size.
fn element_cluster(
    ctx: &Arc<Context>,
    type_name: &str,
    m: usize,
    splits: usize,
) -> Option<(&'static str, Function, usize, usize)> {
    if ctx.compute_capability() < (9, 0) {
        return None;
    }
    element_cluster_candidates(splits).find_map(|(kind, rows, size)| {
        let tiles = m.div_ceil(rows);
        fitting_cluster_kernel(ctx, &format!("gemv_{kind}_{type_name}"), size, tiles).map(|f| (kind, f, tiles, size))
    })
}

/// The element-wise cluster kernels that take a reduction split `splits` ways, in the order
/// [`element_cluster`] tries them: (kernel kind, row tile height, blocks per cluster).
fn element_cluster_candidates(splits: usize) -> impl Iterator<Item = (&'static str, usize, usize)> {
    [
        ("nc16", NC16_ROWS, NC16_SPLITS, NC16_MAX_SPLITS),
        ("nc", N_ROWS, CLUSTER_SPLITS, NC_MAX_SPLITS),
    ]
    .into_iter()
    .filter(move |&(_, _, _, most)| (2..=most).contains(&splits))
    .map(|(kind, rows, size, _)| (kind, rows, size))
}

/// The cluster kernel `name` (clusters of `size` blocks of [`THREADS`] along grid y) when the
/// clusters of `tiles` row tiles all fit on the device at once (the driver's cluster occupancy).
fn fitting_cluster_kernel(ctx: &Arc<Context>, name: &str, size: usize, tiles: usize) -> Option<Function> {
    let (f, fit) = resident_clusters(ctx, name, (1, size as u32, 1), (32, THREADS / 32, 1))?;
    (tiles <= fit).then_some(f)
}

/// The kernel `name` and how many of its clusters of `shape` blocks of `block` threads the device
/// keeps resident at once (the driver's cluster occupancy, cached per kernel); `None` where the
/// kernel does not load or the driver does not say.
fn resident_clusters(
    ctx: &Arc<Context>,
    name: &str,
    shape: (u32, u32, u32),
    block: (u32, u32, u32),
) -> Option<(Function, usize)> {
    let f = ctx.kernel(name).ok()?;
    let fit = f.max_active_clusters_cached(shape, block, 0).ok()?;
    Some((f, fit as usize))
}

/// The cluster kernel (`"nc16"` or `"nc"`) an op-N GEMV of an `m x n` A on the element-wise
/// kernel (columns not 16-byte aligned, A smaller than the row strips take) runs, as [`gemv`]
/// decides it, or `None` for the kernel without a cluster: for the selftest, which names the
/// kernels it checked.
pub(crate) fn element_n_cluster<T: GemvType>(ctx: &Arc<Context>, m: usize, n: usize) -> Result<Option<&'static str>> {
    let f = ctx.kernel(&format!("gemv_n_{}", T::NAME))?;
    let sms = ctx.limits().multiprocessor_count as usize;
    let slots = f.max_active_blocks_cached(THREADS, 0)?.max(1) as usize * sms;
    let (_, splits, _) = plan(m.div_ceil(N_ROWS), n, N_MIN_CHUNK, 1, slots);
    Ok(element_cluster(ctx, T::NAME, m, splits).map(|(kind, ..)| kind))
}

/// `gemv_nvc_<type_name>` where the 16-byte N kernel's reduction, split `splits` ways by
/// [`plan`] over `slots` block slots of `gemv_nv`, runs in a cluster instead (`tiles` row tiles
/// of its own height) for an A of `a_bytes`:
/// - 8 to 16 splits while the clusters fill at most half the slots and A is at most
///   [`CLUSTER_MAX_BYTES`] (H100, 2026-11-22);
/// - 2 to 7 where every tile's cluster fits on the device at once, as for the element-wise
///   kernel (H200, 2026-11-28, docs/kernels/gemv.md, "The aligned N split below 8 ways in a
///   cluster": f64 1024^2 8.0-9.7 -> 5.2 us, 1536^2 8.7-9.6 -> 6.5, f32 3072 x 768 7.3-9.6 ->
///   5.4-5.6, f16 12288 x 1024 8.4 -> 8.1);
/// - more than 16 where every tile's cluster fits at once, the clusters give at least 7/8 of
///   the `sms` multiprocessors a block and A is at most [`CLUSTER_MAX_BYTES`]: 8 blocks with 8
///   reads in flight per thread read a long row tile at the split's rate in one launch (H100,
///   2026-12-07, docs/kernels/gemv.md, "Wider clusters and more reads in flight": f16 4096 x
///   11008 36.7 -> 34.4 us).
fn vector_cluster(
    ctx: &Arc<Context>,
    type_name: &str,
    (tiles, splits): (usize, usize),
    (slots, sms): (usize, usize),
    a_bytes: u64,
) -> Result<Option<Function>> {
    if ctx.compute_capability() < (9, 0) {
        return Ok(None);
    }
    let name = || format!("gemv_nvc_{type_name}");
    if (CLUSTER_SPLITS..=2 * CLUSTER_SPLITS).contains(&splits) {
        let fits = 2 * tiles * CLUSTER_SPLITS <= slots && a_bytes <= CLUSTER_MAX_BYTES;
        return if fits { ctx.kernel(&name()).map(Some) } else { Ok(None) };
    }
    let long_split_fills = 8 * tiles * CLUSTER_SPLITS >= 7 * sms && a_bytes <= CLUSTER_MAX_BYTES;
    if splits < 2 || (splits > 2 * CLUSTER_SPLITS && !long_split_fills) {
        return Ok(None);
    }
    Ok(fitting_cluster_kernel(ctx, &name(), CLUSTER_SPLITS, tiles))
}

/// Whether an op-N GEMV of an `m x n` A at `lda` on the 16-byte kernel (A 16-byte aligned, `lda`
/// a multiple of 16 bytes, no row strips) runs `gemv_nvc_<T>`, as [`gemv`] decides it: for the
/// selftest.
pub(crate) fn vector_n_in_cluster<T: GemvType>(ctx: &Arc<Context>, m: usize, n: usize, lda: usize) -> Result<bool> {
    let f = ctx.kernel(&format!("gemv_nv_{}", T::NAME))?;
    let sms = ctx.limits().multiprocessor_count as usize;
    let slots = f.max_active_blocks_cached(THREADS, 0)?.max(1) as usize * sms;
    let (_, splits, _) = plan(m.div_ceil(T::NV_ROWS), n, N_MIN_CHUNK, 1, slots);
    let a_bytes = span(m, n, lda).unwrap_or(usize::MAX) as u64 * size_of::<T>() as u64;
    Ok(vector_cluster(ctx, T::NAME, (m.div_ceil(T::NVC_ROWS), splits), (slots, sms), a_bytes)?.is_some())
}

/// Elements a vector of `len` entries with increment `inc` spans.
fn vec_span(len: usize, inc: isize) -> Option<usize> {
    if len == 0 {
        return Some(0);
    }
    (len - 1).checked_mul(inc.unsigned_abs())?.checked_add(1)
}

/// The launch shape for `base` independent blocks of work (row tiles for N, groups of columns
/// for T) over a reduction of `len`, when `slots` blocks fit on the device at once:
/// `(grid_x, splits, chunk)`.
///
/// Every block of the grid is resident from the start (one wave), so no block runs in a second,
/// partly empty wave. With at least `slots / 2` blocks of work the device is kept busy without
/// splitting: when `base > slots`, each block loops over `ceil(base / slots)` of them. Fewer
/// blocks of work split the reduction into chunks of at least `min_chunk` (a multiple of
/// `grain`), as many as fit in the free slots; the kernels then write partial sums and
/// `gemv_finish` adds them.
pub(crate) fn plan(base: usize, len: usize, min_chunk: usize, grain: usize, slots: usize) -> (usize, usize, usize) {
    let (base, len, slots, grain) = (base.max(1), len.max(1), slots.max(1), grain.max(1));
    if 2 * base >= slots {
        let per_block = base.div_ceil(slots);
        return (base.div_ceil(per_block), 1, len);
    }
    let want = (slots / base).min(len.div_ceil(min_chunk.max(1))).clamp(1, 65535);
    let chunk = len.div_ceil(want).next_multiple_of(grain);
    (base, len.div_ceil(chunk), chunk)
}

/// cuBLAS-shaped GEMV (`cublas<t>gemv`): `y = alpha * op(A) x + beta * y` with A column-major
/// `m x n` (leading dimension `lda`), `x` of length `n` (N) or `m` (T) and `y` of length `m` (N)
/// or `n` (T), taken with increments `incx`, `incy` (negative increments walk the vector from its
/// end, as in BLAS). `m == 0` or `n == 0` returns at once; `beta == 0` does not read `y`;
/// `alpha == 0` does not read A or x. The axpby is part of the same pass: `y = alpha A x + beta y`
/// needs no separate scaling of `y`.
///
/// `f16` and `bf16` accumulate in `f32` and round `y` once. A 16-byte aligned A whose `lda` is a
/// multiple of 16 bytes (4 `f32`, 2 `f64`, 8 `f16`/`bf16`) is read with 16-byte loads (for T,
/// also a contiguous 16-byte aligned `x`); any other layout runs on element-wise kernels. An op-N
/// reduction split over blocks runs, on sm_90, in the 8 blocks of a thread block cluster where
/// that fits (their partial sums meet in shared memory: one launch, no workspace); elsewhere a
/// second kernel adds the splits' partial sums. An op N
/// whose rows make strips that fill one wave of the GPU, a block per strip, and whose A is larger
/// than the L2 cache (`strips::strip_choice`) reads 4 (16-bit types, and f32 at an odd lda), 8 or 16
/// bytes per lane, A aligned to them.
///
/// ```no_run
/// use cudrv::blas::{self, Transpose};
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // A = [[1, 3], [2, 4]] (column-major), x = [1, 1]: y = 2 A x + 0.5 y.
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 1.0])?;
/// let mut y = DeviceBuffer::from_slice(&stream, &[2.0f32, 2.0])?;
/// blas::gemv(Transpose::N, 2, 2, 2.0, &a, 2, &x, 1, 0.5, &mut y, 1)?;
/// assert_eq!(y.to_vec()?, vec![9.0, 13.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemv<T: GemvType>(
    trans: Transpose,
    m: usize,
    n: usize,
    alpha: T,
    a: &impl DeviceSlice<T>,
    lda: usize,
    x: &impl DeviceSlice<T>,
    incx: isize,
    beta: T,
    y: &mut impl DeviceSliceMut<T>,
    incy: isize,
) -> Result<()> {
    gemv_routed(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, None)
}

/// [`gemv`] with op N on the row strips `on` rather than the kernel the library would pick
/// (for the selftest, which checks every strip kernel on any sm_90 device). The strips must be
/// the ones for m rows at their lane width, and A and lda aligned to those lanes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemv_on_strips<T: GemvType>(
    m: usize,
    n: usize,
    alpha: T,
    a: &impl DeviceSlice<T>,
    lda: usize,
    x: &impl DeviceSlice<T>,
    beta: T,
    y: &mut impl DeviceSliceMut<T>,
    on: Strips,
) -> Result<()> {
    if !strips::lanes_fit::<T>(on.bytes, a.device_ptr(), lda) || on.strips != strips::strips_over::<T>(on.bytes, m) {
        bail_invalid!("gemv: {on:?} do not fit {m} rows at lda {lda}");
    }
    gemv_routed(Transpose::N, m, n, alpha, a, lda, x, 1, beta, y, 1, Some(on))
}

/// [`gemv`], its op-N row strips forced where `force` names them.
#[allow(clippy::too_many_arguments)]
fn gemv_routed<T: GemvType>(
    trans: Transpose,
    m: usize,
    n: usize,
    alpha: T,
    a: &impl DeviceSlice<T>,
    lda: usize,
    x: &impl DeviceSlice<T>,
    incx: isize,
    beta: T,
    y: &mut impl DeviceSliceMut<T>,
    incy: isize,
    force: Option<Strips>,
) -> Result<()> {
    let (len_x, len_y) = match trans {
        Transpose::N => (n, m),
        Transpose::T => (m, n),
    };
    if lda < m.max(1) {
        bail_invalid!("gemv: lda = {lda} is less than the rows of A ({m})");
    }
    if incx == 0 || incy == 0 {
        bail_invalid!("gemv: increments must not be 0 (incx = {incx}, incy = {incy})");
    }
    let need_a = span(m, n, lda).ok_or_else(|| crate::error::invalid(format_args!("gemv: A overflows")))?;
    if a.len() < need_a {
        bail_invalid!(
            "gemv: A has {} elements; {m} x {n} with lda {lda} needs {need_a}",
            a.len()
        );
    }
    let need_x = vec_span(len_x, incx).ok_or_else(|| crate::error::invalid(format_args!("gemv: x overflows")))?;
    if x.len() < need_x {
        bail_invalid!(
            "gemv: x has {} elements; {len_x} with increment {incx} needs {need_x}",
            x.len()
        );
    }
    let need_y = vec_span(len_y, incy).ok_or_else(|| crate::error::invalid(format_args!("gemv: y overflows")))?;
    if y.len() < need_y {
        bail_invalid!(
            "gemv: y has {} elements; {len_y} with increment {incy} needs {need_y}",
            y.len()
        );
    }
    if i64::try_from(need_a.max(need_x).max(need_y)).is_err() {
        bail_invalid!("gemv: the operands span more elements than the kernels index");
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let stream = y.stream().clone();
    let _scope = OpScope::enter(stream.context(), || {
        let (mf, nf) = (m as f64, n as f64);
        let reads_y = if beta.into() != 0.0 { 2.0 } else { 1.0 };
        Op {
            label: format!("gemv {} {} {m}x{n}", T::NAME, trans.letter()),
            flops: 2.0 * mf * nf,
            bytes: (mf * nf + len_x as f64 + reads_y * len_y as f64) * size_of::<T>() as f64,
            credited: Default::default(),
        }
    });
    use_on(a, &stream)?;
    use_on(x, &stream)?;
    let sz = size_of::<T>() as u64;
    // BLAS: a negative increment starts at the far end; the kernels index from element 0.
    let start = |ptr: u64, len: usize, inc: isize| {
        if inc < 0 {
            ptr + (len as u64 - 1) * inc.unsigned_abs() as u64 * sz
        } else {
            ptr
        }
    };
    let alpha: f64 = alpha.into();
    let ctx = stream.context();
    // 16-byte loads of A when its columns start 16-byte aligned; for T also of x, which must
    // then be contiguous and aligned.
    let vec = 16 / size_of::<T>();
    let a_ptr = a.device_ptr();
    let a_vec = a_ptr % 16 == 0 && lda % vec == 0;
    // The parameters of a launch without a split; the split kernels set work, chunk and splits.
    let mut params = GemvParams {
        a: a_ptr,
        x: start(x.device_ptr(), len_x, incx),
        y: start(y.device_ptr(), len_y, incy),
        work: 0,
        m: m as i64,
        n: n as i64,
        lda: lda as i64,
        incx: incx as i64,
        incy: incy as i64,
        chunk: 0,
        alpha,
        beta: beta.into(),
        splits: 1,
        pad: 0,
    };
    let sms = ctx.limits().multiprocessor_count as usize;
    if trans == Transpose::N && alpha != 0.0 {
        if let Some(s) = force.or_else(|| row_strips::<T>(ctx, m, n, a_ptr, lda)) {
            let f = ctx.kernel(&s.kernel(T::NAME))?;
            let mut l = stream.launch_builder(&f);
            l.arg(&params);
            // SAFETY: gemv_nr<bytes>[c<C>]_<t>(GemvParams) reads A (m x n at lda, checked;
            // aligned to its lanes' bytes with lda a multiple of their elements, as strip_choice
            // and gemv_on_strips require), x and y at their increments (checked spans, pointers
            // moved to element 0 for negative increments) and writes the m elements of y; grid y
            // is the kernel's compile-time cluster shape (1 without a cluster).
            return unsafe {
                l.launch(LaunchConfig {
                    grid_dim: (s.strips as u32, s.cluster as u32, 1),
                    block_dim: (32, NR_WARPS, 1),
                    shared_mem_bytes: 0,
                })
            };
        }
    }
    let (name, base, len, min_chunk, grain, block) = match trans {
        Transpose::N => {
            let (k, rows) = if a_vec { ("nv", T::NV_ROWS) } else { ("n", N_ROWS) };
            (k, m.div_ceil(rows), n, N_MIN_CHUNK, 1, (32, THREADS / 32, 1))
        }
        Transpose::T => {
            let (k, cols) = if a_vec && incx == 1 && x.device_ptr() % 16 == 0 {
                let k = t_vector_kernel(m, n, size_of::<T>(), sms);
                (k, if k == "tv1" { TV1_COLS } else { TV_COLS })
            } else {
                ("t", T_COLS)
            };
            (k, n.div_ceil(cols), m, T_MIN_CHUNK, T_GRAIN, (THREADS, 1, 1))
        }
    };
    let mut f = ctx.kernel(&format!("gemv_{name}_{}", T::NAME))?;
    let slots = f.max_active_blocks_cached(THREADS, 0)?.max(1) as usize * sms;
    let (mut grid_x, splits, chunk) = plan(base, len, min_chunk, grain, slots);
    // alpha == 0: reduce over nothing (A and x are not read), leaving y = beta * y.
    let (mut splits, mut chunk) = if alpha == 0.0 { (1, 0) } else { (splits, chunk) };
    // On sm_90, an N reduction split 8 to 16 ways runs as 8 splits in one thread block cluster,
    // whose blocks add their partial sums in shared memory: no workspace, no second kernel. Only
    // while the clusters fill at most half of the device's slots, and for an A of at most 192
    // MiB: beyond, the second kernel's microsecond weighs little against the split's doubled
    // parallelism. H100, 2026-11-22: the cluster is 2-7% faster for f32 4096^2 and 6144^2, f64
    // 4096^2 and f16 8192^2 (64-144 MiB), 1-3% slower for f32 8192^2 (256 MiB).
    // Splits of 2 to 7 take the cluster where every row tile's cluster fits at once
    // (`vector_cluster`). `slots` stays gemv_nv's: gemv_nvc has its registers, launch bounds and
    // row tiles.
    // The element-wise kernel's split (columns not 16-byte aligned) likewise: `element_cluster`.
    // Each cluster kernel comes with its own row tiles.
    let cluster = match name {
        "nv" => {
            let tiles = m.div_ceil(T::NVC_ROWS);
            vector_cluster(ctx, T::NAME, (tiles, splits), (slots, sms), need_a as u64 * sz)?
                .map(|k| (k, tiles, CLUSTER_SPLITS))
        }
        "n" => element_cluster(ctx, T::NAME, m, splits).map(|(_, k, tiles, size)| (k, tiles, size)),
        _ => None,
    };
    let clustered = cluster.is_some();
    if let Some((k, tiles, size)) = cluster {
        f = k;
        (grid_x, splits, chunk) = (tiles, size, len.div_ceil(size));
    }
    let work = if splits > 1 && !clustered {
        // SAFETY: every element of the workspace is written by the gemv kernel before
        // gemv_finish reads it (each split writes all len_y of its partial sums).
        Some(unsafe { DeviceBuffer::<u8>::uninit(&stream, splits * len_y * T::ACC_BYTES) }?)
    } else {
        None
    };
    params.work = work.as_ref().map_or(0, |w| w.device_ptr());
    params.chunk = chunk as i64;
    params.splits = splits as i32;
    let mut l = stream.launch_builder(&f);
    l.arg(&params);
    // SAFETY: gemv_<op>_<t>(GemvParams) reads A (m x n at lda, checked; the 16-byte kernels only
    // when A, lda and for T x are aligned as they need), x and y at their increments (checked
    // spans, pointers moved to element 0 for negative increments) and writes y or the workspace
    // of splits * len_y accumulators. gemv_nvc and gemv_nc take grid y = 8, gemv_nc16 grid y = 16:
    // their compile-time cluster shapes (gemv_nc16's non-portable size allowed when its cluster
    // occupancy was asked, in element_cluster).
    unsafe {
        l.launch(LaunchConfig {
            grid_dim: (grid_x as u32, splits as u32, 1),
            block_dim: block,
            shared_mem_bytes: 0,
        })
    }?;
    if let Some(work) = work {
        let f = ctx.kernel(&format!("gemv_finish_{}", T::NAME))?;
        let (yp, wp, len, s, b, inc) = (
            params.y,
            work.device_ptr(),
            len_y as i64,
            splits as i32,
            params.beta,
            incy as i64,
        );
        let mut l = stream.launch_builder(&f);
        l.arg(&yp).arg(&wp).arg(&len).arg(&s).arg(&alpha).arg(&b).arg(&inc);
        // SAFETY: gemv_finish_<t>(T* y, const Acc* work, i64 len, i32 splits, f64 alpha, f64 beta,
        // i64 incy): reads splits * len workspace accumulators and len elements of y at incy.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (len_y.div_ceil(256) as u32, 1, 1),
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
    fn plans_cover_the_work_in_one_wave() {
        for &(base, len, min, grain) in &[
            (128, 16384, 256, 1),
            (1, 7, 256, 1),
            (32, 4096, 256, 1),
            (64, 8192, 256, 1),
            (2048, 16384, 1024, 512),
            (1, 200_000, 1024, 512),
            (547, 70000, 256, 1),
            (5, 3000, 1024, 512),
        ] {
            for slots in [132 * 4, 132 * 6, 7] {
                let (gx, s, c) = plan(base, len, min, grain, slots);
                let tag = format!("{base} {len} {slots}: {gx} x {s}, chunk {c}");
                assert!(
                    gx >= 1 && s >= 1 && c >= 1 && s * c >= len && (s - 1) * c < len,
                    "{tag}"
                );
                assert!(gx * s <= slots.max(base.min(slots)), "{tag}");
                assert!(gx <= base && (s == 1 || c % grain == 0), "{tag}");
                assert!(s == 1 || c >= min.min(len) || s * base <= slots, "{tag}");
            }
        }
        // 8192 x 8192 f32, N: 64 row tiles, 4 blocks per SM: 8 splits of 1024 columns.
        assert_eq!(plan(64, 8192, 256, 1, 528), (64, 8, 1024));
        // T: 1024 column groups over 792 slots: 512 blocks of 2 groups each.
        assert_eq!(plan(1024, 8192, 1024, 512, 792), (512, 1, 8192));
    }

    #[test]
    fn short_columns_take_one_warp_each_when_there_are_enough() {
        // One-token products of the GEMM suite (T, column = the hidden size).
        assert_eq!(t_vector_kernel(768, 50257, 2, 132), "tv1");
        assert_eq!(t_vector_kernel(4096, 11008, 2, 132), "tv1");
        assert_eq!(t_vector_kernel(768, 50257, 4, 132), "tv1");
        assert_eq!(t_vector_kernel(768, 50257, 8, 132), "tv1");
        // Longer columns: f16 past 4096 rows, f32 past 1536, f64 past 768.
        assert_eq!(t_vector_kernel(8192, 4096, 2, 132), "tv");
        assert_eq!(t_vector_kernel(2048, 32000, 4, 132), "tv");
        assert_eq!(t_vector_kernel(1024, 32000, 8, 132), "tv");
        // Too few columns (16 per SM: 2112): square 2048 stays, 3072 moves (f16).
        assert_eq!(t_vector_kernel(2048, 2048, 2, 132), "tv");
        assert_eq!(t_vector_kernel(3072, 3072, 2, 132), "tv1");
        assert_eq!(t_vector_kernel(1024, 1024, 4, 132), "tv");
    }

    #[test]
    fn element_splits_take_the_wider_cluster_first() {
        let kinds = |splits| element_cluster_candidates(splits).map(|c| c.0).collect::<Vec<_>>();
        assert!(kinds(1).is_empty());
        assert_eq!(kinds(2), ["nc16", "nc"]);
        assert_eq!(kinds(NC_MAX_SPLITS), ["nc16", "nc"]);
        assert_eq!(kinds(NC_MAX_SPLITS + 1), ["nc16"]);
        assert_eq!(kinds(NC16_MAX_SPLITS), ["nc16"]);
        assert!(kinds(NC16_MAX_SPLITS + 1).is_empty());
        for (_, rows, size) in element_cluster_candidates(2) {
            assert_eq!(rows % size, 0, "a cluster's blocks share its tile's rows");
        }
    }

    #[test]
    fn vector_spans() {
        assert_eq!(vec_span(0, 3), Some(0));
        assert_eq!(vec_span(4, 1), Some(4));
        assert_eq!(vec_span(4, -3), Some(10));
    }
}
