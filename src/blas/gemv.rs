//! GEMV: `y = alpha * op(A) x + beta * y`, column-major A, any vector increments.

use std::mem::size_of;

use super::{span, Transpose};
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{use_on, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};

/// Element types GEMV is built for: `f32` and `f64`.
pub trait GemvType: DeviceRepr + Send + Sync + Into<f64> + super::sealed::Sealed {
    /// The kernel-name suffix.
    const NAME: &'static str;
}
impl GemvType for f32 {
    const NAME: &'static str = "f32";
}
impl GemvType for f64 {
    const NAME: &'static str = "f64";
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

/// Rows per block of `gemv_n` and columns per block of `gemv_t` (the kernels' constants).
const N_ROWS: usize = 128;
const T_COLS: usize = 8;

/// Elements a vector of `len` entries with increment `inc` spans.
fn vec_span(len: usize, inc: isize) -> Option<usize> {
    if len == 0 {
        return Some(0);
    }
    (len - 1).checked_mul(inc.unsigned_abs())?.checked_add(1)
}

/// The split of the reduction: (splits, chunk) for `blocks` blocks over a reduction of `len`
/// with at least `min_chunk` per split, aiming at `4 * sms` blocks in all.
pub(crate) fn split(blocks: usize, len: usize, min_chunk: usize, sms: usize) -> (usize, usize) {
    let want = (4 * sms).div_ceil(blocks.max(1)).max(1);
    let most = len.div_ceil(min_chunk).max(1);
    let splits = want.min(most).min(65535);
    let chunk = len.div_ceil(splits).max(1);
    (len.div_ceil(chunk).max(1), chunk)
}

/// cuBLAS-shaped GEMV (`cublas<t>gemv`): `y = alpha * op(A) x + beta * y` with A column-major
/// `m x n` (leading dimension `lda`), `x` of length `n` (N) or `m` (T) and `y` of length `m` (N)
/// or `n` (T), taken with increments `incx`, `incy` (negative increments walk the vector from its
/// end, as in BLAS). `m == 0` or `n == 0` returns at once; `beta == 0` does not read `y`;
/// `alpha == 0` does not read A or x.
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
    let sms = stream.context().limits().multiprocessor_count as usize;
    let (blocks, splits, chunk) = match trans {
        Transpose::N => {
            let blocks = m.div_ceil(N_ROWS);
            let (s, c) = split(blocks, n, 256, sms);
            (blocks, s, c)
        }
        Transpose::T => {
            let blocks = n.div_ceil(T_COLS);
            let (s, c) = split(blocks, m, 1024, sms);
            (blocks, s, c)
        }
    };
    // alpha == 0: reduce over nothing (A and x are not read), leaving y = beta * y.
    let (splits, chunk) = if alpha == 0.0 { (1, 0) } else { (splits, chunk) };
    let work = if splits > 1 {
        // SAFETY: every element of the workspace is written by the gemv kernel before
        // gemv_finish reads it (each split writes all len_y of its partial sums).
        Some(unsafe { DeviceBuffer::<T>::uninit(&stream, splits * len_y) }?)
    } else {
        None
    };
    let params = GemvParams {
        a: a.device_ptr(),
        x: start(x.device_ptr(), len_x, incx),
        y: start(y.device_ptr(), len_y, incy),
        work: work.as_ref().map_or(0, |w| w.device_ptr()),
        m: m as i64,
        n: n as i64,
        lda: lda as i64,
        incx: incx as i64,
        incy: incy as i64,
        chunk: chunk as i64,
        alpha,
        beta: beta.into(),
        splits: splits as i32,
        pad: 0,
    };
    let ctx = stream.context();
    let (name, block) = match trans {
        Transpose::N => (format!("gemv_n_{}", T::NAME), (32, 8, 1)),
        Transpose::T => (format!("gemv_t_{}", T::NAME), (256, 1, 1)),
    };
    let f = ctx.kernel(&name)?;
    let mut l = stream.launch_builder(&f);
    l.arg(&params);
    // SAFETY: gemv_<op>_<t>(GemvParams) reads A (m x n at lda, checked), x and y at their
    // increments (checked spans, pointers moved to element 0 for negative increments) and
    // writes y or the workspace of splits * len_y elements.
    unsafe {
        l.launch(LaunchConfig {
            grid_dim: (blocks as u32, splits as u32, 1),
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
        // SAFETY: gemv_finish_<t>(T* y, const T* work, i64 len, i32 splits, f64 alpha, f64 beta,
        // i64 incy): reads splits * len workspace elements and len elements of y at incy.
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
    fn splits_cover_the_reduction() {
        for &(blocks, len, min) in &[(128, 16384, 256), (1, 7, 256), (32, 4096, 256), (2048, 16384, 1024)] {
            let (s, c) = split(blocks, len, min, 132);
            assert!(
                s >= 1 && c >= 1 && s * c >= len && (s - 1) * c < len,
                "{blocks} {len}: {s} x {c}"
            );
        }
        assert_eq!(split(2048, 16384, 1024, 132).0, 1);
    }

    #[test]
    fn vector_spans() {
        assert_eq!(vec_span(0, 3), Some(0));
        assert_eq!(vec_span(4, 1), Some(4));
        assert_eq!(vec_span(4, -3), Some(10));
    }
}
