//! The bundled elementwise, reduction, softmax and transpose kernels, with checked entry points.
//!
//! Every function queues work on the stream of its output (after waiting for the inputs'
//! streams when they differ, and marking the inputs as used on the output's stream) and checks lengths and shapes first, so a mismatch is an
//! [`Error::InvalidArgument`] and nothing is launched.
//!
//! ```no_run
//! use cudrv::{ops, DeviceBuffer, DeviceSlice};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let x = DeviceBuffer::from_slice(&stream, &[1.0f32, -2.0, 3.0])?;
//! let mut y = DeviceBuffer::from_slice(&stream, &[1.0f32, 1.0, 1.0])?;
//! ops::axpy(&mut y, 2.0, &x)?;                 // y = 2x + y
//! assert_eq!(y.to_vec()?, vec![3.0, -3.0, 7.0]);
//! assert_eq!(ops::sum(&y)?, 7.0);
//! # Ok::<(), cudrv::Error>(())
//! ```

use crate::error::{bail_invalid, Error, Result};
use crate::launch::LaunchConfig;
use crate::memory::{use_on, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, ValidAsZeroBits};
use crate::module::Function;
use crate::profile::scope::{Op, OpScope};
use crate::stream::Stream;

/// Element types the bundled kernels are built for.
///
/// ```
/// use cudrv::ops::Float;
/// fn kernel_for<T: Float>(stem: &str) -> String {
///     format!("{stem}_{}", T::SUFFIX)
/// }
/// assert_eq!(kernel_for::<f32>("axpy"), "axpy_f32");
/// ```
pub trait Float: DeviceRepr + ValidAsZeroBits + PartialOrd + Send + Sync + crate::sealed::Sealed {
    /// The kernel-name suffix, `f32` or `f64`.
    ///
    /// ```
    /// use cudrv::ops::Float;
    /// assert_eq!(<f64 as Float>::SUFFIX, "f64");
    /// ```
    const SUFFIX: &'static str;
}
impl Float for f32 {
    const SUFFIX: &'static str = "f32";
}
impl Float for f64 {
    const SUFFIX: &'static str = "f64";
}
/// Threads per block of the elementwise and reduction kernels (their `__launch_bounds__`).
const BLOCK: u32 = 256;
/// Most blocks an elementwise launch uses; the kernels loop over the rest.
const MAX_GRID: u32 = 4096;
/// Most blocks of a reduction's first pass (the second pass reduces their partials).
const MAX_REDUCE_BLOCKS: u32 = 1024;

fn kernel<T: Float>(stream: &Stream, op: &str) -> Result<Function> {
    stream.context().kernel(&format!("{op}_{}", T::SUFFIX))
}

/// The scope the profiler and NVTX see an operation on `n` elements in: labelled with the
/// operation, type and size, credited with `arrays` passes over `n` elements of `T`.
fn scope<T: Float>(stream: &Stream, op: &str, n: usize, arrays: usize) -> OpScope {
    scope_2d::<T>(stream, op, (1, n), arrays)
}

/// [`scope`] of an operation on a `rows x cols` matrix, credited with `arrays` passes over it.
fn scope_2d<T: Float>(stream: &Stream, op: &str, (rows, cols): (usize, usize), arrays: usize) -> OpScope {
    OpScope::enter(stream.context(), || Op {
        label: if rows == 1 {
            format!("{op} {} {cols}", T::SUFFIX)
        } else {
            format!("{op} {} {rows}x{cols}", T::SUFFIX)
        },
        flops: 0.0,
        bytes: (arrays * rows * cols * std::mem::size_of::<T>()) as f64,
        credited: Default::default(),
    })
}

fn elementwise_config(n: usize, max_grid: u32) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, max_grid as usize) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        bail_invalid!("{what}: lengths differ ({a} vs {b})");
    }
    Ok(())
}

/// Sets every element to `value`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let mut x = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// ops::fill(&mut x, 1.5)?;
/// assert_eq!(x.to_vec()?, vec![1.5; 4]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn fill<T: Float>(out: &mut impl DeviceSliceMut<T>, value: T) -> Result<()> {
    let n = out.len();
    let _scope = scope::<T>(out.stream(), "fill", n, 1);
    let f = kernel::<T>(out.stream(), "fill")?;
    let stream = out.stream().clone();
    let ptr = out.device_ptr();
    let mut l = stream.launch_builder(&f);
    l.arg(&ptr).arg(&value).arg(&n);
    // SAFETY: fill_<t>(T* out, T value, size_t n) writes n elements of `out`.
    unsafe { l.launch(elementwise_config(n, MAX_GRID)) }
}

/// `y = alpha * x`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::scale(&mut y, 3.0, &x)?;
/// assert_eq!(y.to_vec()?, vec![3.0, 6.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn scale<T: Float>(y: &mut impl DeviceSliceMut<T>, alpha: T, x: &impl DeviceSlice<T>) -> Result<()> {
    same_len("scale", y.len(), x.len())?;
    use_on(x, y.stream())?;
    launch_yx(y, x.device_ptr(), "scale", &[&alpha])
}

/// `x = alpha * x`, in place.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let mut x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// ops::scale_in_place(&mut x, 0.5)?;
/// assert_eq!(x.to_vec()?, vec![0.5, 1.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn scale_in_place<T: Float>(x: &mut impl DeviceSliceMut<T>, alpha: T) -> Result<()> {
    let ptr = x.device_ptr();
    launch_yx(x, ptr, "scale", &[&alpha])
}

/// `y = alpha * x + y`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let mut y = DeviceBuffer::from_slice(&stream, &[10.0f32, 20.0])?;
/// ops::axpy(&mut y, 2.0, &x)?;
/// assert_eq!(y.to_vec()?, vec![12.0, 24.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn axpy<T: Float>(y: &mut impl DeviceSliceMut<T>, alpha: T, x: &impl DeviceSlice<T>) -> Result<()> {
    same_len("axpy", y.len(), x.len())?;
    use_on(x, y.stream())?;
    launch_yx(y, x.device_ptr(), "axpy", &[&alpha])
}

/// `y = alpha * x + beta * y`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let mut y = DeviceBuffer::from_slice(&stream, &[10.0f32, 20.0])?;
/// ops::axpby(&mut y, 2.0, &x, 0.5)?;
/// assert_eq!(y.to_vec()?, vec![7.0, 14.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn axpby<T: Float>(y: &mut impl DeviceSliceMut<T>, alpha: T, x: &impl DeviceSlice<T>, beta: T) -> Result<()> {
    same_len("axpby", y.len(), x.len())?;
    use_on(x, y.stream())?;
    launch_yx(y, x.device_ptr(), "axpby", &[&alpha, &beta])
}

/// Launches `<op>_<t>(T* y, const T* x, scalars..., size_t n)`.
fn launch_yx<T: Float>(y: &mut impl DeviceSliceMut<T>, x_ptr: u64, op: &str, scalars: &[&T]) -> Result<()> {
    let n = y.len();
    // scale reads x and writes y; axpy and axpby read y too.
    let _scope = scope::<T>(y.stream(), op, n, if op == "scale" { 2 } else { 3 });
    let f = kernel::<T>(y.stream(), op)?;
    let y_ptr = y.device_ptr();
    let stream = y.stream().clone();
    let mut l = stream.launch_builder(&f);
    l.arg(&y_ptr).arg(&x_ptr);
    for s in scalars {
        l.arg(*s);
    }
    l.arg(&n);
    // SAFETY: every `<op>_<t>` of this shape reads n elements at x and writes n at y; both
    // slices have n elements (checked by the callers).
    unsafe { l.launch(elementwise_config(n, MAX_GRID)) }
}

/// An elementwise binary operation.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f64, 2.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[10.0f64, 20.0])?;
/// let mut out = DeviceBuffer::<f64>::zeroed(&stream, 2)?;
/// ops::binary(ops::Binary::Add, &mut out, &a, &b)?;
/// assert_eq!(out.to_vec()?, vec![11.0, 22.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `out = a + b`
    Add,
    /// `out = a * b`
    Mul,
}

/// `out = a (op) b`, elementwise.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[3.0f32, 4.0])?;
/// let mut out = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::binary(ops::Binary::Mul, &mut out, &a, &b)?;
/// assert_eq!(out.to_vec()?, vec![3.0, 8.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn binary<T: Float>(
    op: Binary,
    out: &mut impl DeviceSliceMut<T>,
    a: &impl DeviceSlice<T>,
    b: &impl DeviceSlice<T>,
) -> Result<()> {
    let name = match op {
        Binary::Add => "add",
        Binary::Mul => "mul",
    };
    same_len(name, out.len(), a.len())?;
    same_len(name, out.len(), b.len())?;
    use_on(a, out.stream())?;
    use_on(b, out.stream())?;
    let n = out.len();
    let _scope = scope::<T>(out.stream(), name, n, 3);
    let f = kernel::<T>(out.stream(), name)?;
    let (o, pa, pb) = (out.device_ptr(), a.device_ptr(), b.device_ptr());
    let stream = out.stream().clone();
    let mut l = stream.launch_builder(&f);
    l.arg(&o).arg(&pa).arg(&pb).arg(&n);
    // SAFETY: add/mul_<t>(T* out, const T* a, const T* b, size_t n); all three have n elements.
    unsafe { l.launch(elementwise_config(n, MAX_GRID)) }
}

/// `out = a + b`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[3.0f32, 4.0])?;
/// let mut out = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::add(&mut out, &a, &b)?;
/// assert_eq!(out.to_vec()?, vec![4.0, 6.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn add<T: Float>(out: &mut impl DeviceSliceMut<T>, a: &impl DeviceSlice<T>, b: &impl DeviceSlice<T>) -> Result<()> {
    binary(Binary::Add, out, a, b)
}

/// `out = a * b`, elementwise.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
/// let b = DeviceBuffer::from_slice(&stream, &[3.0f32, 4.0])?;
/// let mut out = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::mul(&mut out, &a, &b)?;
/// assert_eq!(out.to_vec()?, vec![3.0, 8.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn mul<T: Float>(out: &mut impl DeviceSliceMut<T>, a: &impl DeviceSlice<T>, b: &impl DeviceSlice<T>) -> Result<()> {
    binary(Binary::Mul, out, a, b)
}

/// An elementwise activation function.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let x = DeviceBuffer::from_slice(&stream, &[-1.0f32, 2.0])?;
/// let mut y = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::activation(ops::Activation::Relu, &mut y, &x)?;
/// assert_eq!(y.to_vec()?, vec![0.0, 2.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `max(x, 0)`
    Relu,
    /// `1 / (1 + exp(-x))`
    Sigmoid,
    /// `tanh(x)`
    Tanh,
    /// `0.5 x (1 + erf(x / sqrt 2))` (the exact form, not the tanh approximation)
    Gelu,
}

impl Activation {
    /// Every activation, for tests and tools.
    ///
    /// ```
    /// use cudrv::ops::Activation;
    /// for f in Activation::ALL {
    ///     assert!(f.reference(0.0).is_finite(), "{}", f.name());
    /// }
    /// ```
    pub const ALL: [Activation; 4] = [
        Activation::Relu,
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::Gelu,
    ];

    /// The kernel-name stem.
    ///
    /// ```
    /// use cudrv::ops::Activation;
    /// assert_eq!(Activation::Sigmoid.name(), "sigmoid");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Sigmoid => "sigmoid",
            Activation::Tanh => "tanh",
            Activation::Gelu => "gelu",
        }
    }

    /// The function on the host, in f64 (the reference the kernels are checked against).
    ///
    /// ```
    /// use cudrv::ops::Activation;
    /// assert_eq!(Activation::Tanh.reference(0.0), 0.0);
    /// assert!((Activation::Gelu.reference(1.0) - 0.841_344_746).abs() < 1e-9);
    /// ```
    pub fn reference(self, x: f64) -> f64 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Tanh => x.tanh(),
            // 1 + erf(z) = erfc(-z), without the cancellation of 1 + erf(z) at negative z.
            Activation::Gelu => 0.5 * x * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2),
        }
    }
}

/// `out = act(x)`, elementwise.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[-1.0f32, 2.0])?;
/// let mut out = DeviceBuffer::<f32>::zeroed(&stream, 2)?;
/// ops::activation(ops::Activation::Relu, &mut out, &x)?;
/// assert_eq!(out.to_vec()?, vec![0.0, 2.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn activation<T: Float>(act: Activation, out: &mut impl DeviceSliceMut<T>, x: &impl DeviceSlice<T>) -> Result<()> {
    same_len(act.name(), out.len(), x.len())?;
    use_on(x, out.stream())?;
    let n = out.len();
    let _scope = scope::<T>(out.stream(), act.name(), n, 2);
    let f = kernel::<T>(out.stream(), act.name())?;
    let (o, px) = (out.device_ptr(), x.device_ptr());
    let stream = out.stream().clone();
    let mut l = stream.launch_builder(&f);
    l.arg(&o).arg(&px).arg(&n);
    // SAFETY: <act>_<t>(T* out, const T* x, size_t n); both have n elements.
    unsafe { l.launch(elementwise_config(n, MAX_GRID)) }
}

/// A reduction over all elements.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
/// assert_eq!(ops::reduce(ops::Reduction::Sum, &x)?, 6.0);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The sum (0 for no elements).
    Sum,
    /// The maximum (-infinity for no elements; NaN if any element is NaN).
    Max,
}

/// Reduces `x` to one value, returned to the host.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 5.0, 3.0])?;
/// assert_eq!(ops::reduce(ops::Reduction::Max, &x)?, 5.0);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn reduce<T: Float>(op: Reduction, x: &impl DeviceSlice<T>) -> Result<T> {
    let name = match op {
        Reduction::Sum => "reduce_sum",
        Reduction::Max => "reduce_max",
    };
    let _scope = scope::<T>(x.stream(), name, x.len(), 1);
    let f = kernel::<T>(x.stream(), name)?;
    let stream = x.stream();
    let first = elementwise_config(x.len(), MAX_REDUCE_BLOCKS);
    let blocks = first.grid_dim.0 as usize;
    // SAFETY: the first pass writes one partial per block, all `blocks` of them.
    let partials = unsafe { DeviceBuffer::<T>::uninit(stream, blocks)? };
    // SAFETY: the second pass writes its single element.
    let result = unsafe { DeviceBuffer::<T>::uninit(stream, 1)? };
    let (n, px) = (x.len(), x.device_ptr());
    let mut l = stream.launch_builder(&f);
    l.arg(&partials).arg(&px).arg(&n);
    // SAFETY: reduce_<op>_<t>(T* partials, const T* x, size_t n) with block 256 writes
    // partials[blockIdx.x] for each block; `partials` has one slot per block.
    unsafe { l.launch(first)? };
    // The second pass is a launch of the same kernel with another shape: its own profiler row.
    let final_name = match op {
        Reduction::Sum => "reduce_sum partials",
        Reduction::Max => "reduce_max partials",
    };
    let final_pass = scope::<T>(stream, final_name, blocks, 1);
    let mut l = stream.launch_builder(&f);
    l.arg(&result).arg(&partials).arg(&blocks);
    // SAFETY: as above with one block over the `blocks` partials.
    unsafe { l.launch(elementwise_config(1, 1))? };
    drop(final_pass);
    Ok(result.to_vec()?[0])
}

/// The sum of all elements.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 5.0, 3.0])?;
/// assert_eq!(ops::sum(&x)?, 9.0);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn sum<T: Float>(x: &impl DeviceSlice<T>) -> Result<T> {
    reduce(Reduction::Sum, x)
}

/// The largest element (-infinity for none; NaN if any is NaN).
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.default_stream();
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 5.0, 3.0])?;
/// assert_eq!(ops::max(&x)?, 5.0);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn max<T: Float>(x: &impl DeviceSlice<T>) -> Result<T> {
    reduce(Reduction::Max, x)
}

fn shape(what: &str, len: usize, rows: usize, cols: usize) -> Result<(u32, u32)> {
    match rows.checked_mul(cols) {
        Some(n) if n == len => {}
        _ => bail_invalid!("{what}: {rows} x {cols} does not match a buffer of {len} elements"),
    }
    let r = u32::try_from(rows).map_err(|_| Error::InvalidArgument(format!("{what}: {rows} rows exceed u32")))?;
    let c = u32::try_from(cols).map_err(|_| Error::InvalidArgument(format!("{what}: {cols} columns exceed u32")))?;
    Ok((r, c))
}

/// Row-wise softmax of a row-major `rows x cols` matrix: `out[i, j] = exp(x[i, j] - m_i) / s_i`.
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Two rows of two: softmax of equal entries is 1/2 each.
/// let x = DeviceBuffer::from_slice(&stream, &[0.0f32, 0.0, 5.0, 5.0])?;
/// let mut p = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// ops::softmax_rows(&mut p, &x, 2, 2)?;
/// assert_eq!(p.to_vec()?, vec![0.5; 4]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn softmax_rows<T: Float>(
    out: &mut impl DeviceSliceMut<T>,
    x: &impl DeviceSlice<T>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (r, c) = shape("softmax_rows input", x.len(), rows, cols)?;
    shape("softmax_rows output", out.len(), rows, cols)?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    use_on(x, out.stream())?;
    let _scope = scope_2d::<T>(out.stream(), "softmax_rows", (rows, cols), 2);
    let f = kernel::<T>(out.stream(), "softmax_rows")?;
    let (o, px) = (out.device_ptr(), x.device_ptr());
    let stream = out.stream().clone();
    let grid = r.min(stream.context().limits().max_grid_dim[0]);
    let mut l = stream.launch_builder(&f);
    l.arg(&o).arg(&px).arg(&r).arg(&c);
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: softmax_rows_<t>(T* out, const T* x, unsigned rows, unsigned cols) with block 256
    // touches rows*cols elements of each; both have exactly that many.
    unsafe { l.launch(cfg) }
}

/// Transposes a row-major `rows x cols` matrix into `out` (`cols x rows`).
///
/// ```no_run
/// use cudrv::{ops, DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?; // 2 x 3
/// let mut t = DeviceBuffer::<f32>::zeroed(&stream, 6)?; // 3 x 2
/// ops::transpose(&mut t, &x, 2, 3)?;
/// assert_eq!(t.to_vec()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn transpose<T: Float>(
    out: &mut impl DeviceSliceMut<T>,
    x: &impl DeviceSlice<T>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (r, c) = shape("transpose input", x.len(), rows, cols)?;
    shape("transpose output", out.len(), cols, rows)?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    use_on(x, out.stream())?;
    let _scope = scope_2d::<T>(out.stream(), "transpose", (rows, cols), 2);
    let f = kernel::<T>(out.stream(), "transpose")?;
    let (o, px) = (out.device_ptr(), x.device_ptr());
    let stream = out.stream().clone();
    let mut l = stream.launch_builder(&f);
    l.arg(&o).arg(&px).arg(&r).arg(&c);
    let cfg = LaunchConfig {
        grid_dim: (c.div_ceil(32), r.div_ceil(32), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: transpose_<t>(T* out, const T* in, unsigned rows, unsigned cols) with 32x8 blocks
    // over 32x32 tiles reads rows*cols and writes cols*rows elements, both checked above.
    unsafe { l.launch(cfg) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_reference_keeps_its_relative_accuracy_at_negative_x() {
        // gelu(x) = x Phi(x), with the normal distribution Phi from tables (15 digits).
        let cases = [
            (0.0, 0.0),
            (1.0, 0.841_344_746_068_543),
            (-1.0, -0.158_655_253_931_457),
            (-3.0, -3.0 * 0.001_349_898_031_630_09),
            (-5.0, -5.0 * 2.866_515_718_791_94e-7),
        ];
        for (x, want) in cases {
            let got = Activation::Gelu.reference(x);
            let err = if want == 0.0 {
                got.abs()
            } else {
                ((got - want) / want).abs()
            };
            assert!(err < 1e-13, "gelu({x}) = {got:e}, want {want:e}");
        }
    }

    #[test]
    fn launch_shapes_cover_the_input() {
        assert_eq!(elementwise_config(0, MAX_GRID).grid_dim.0, 1);
        assert_eq!(elementwise_config(257, MAX_GRID).grid_dim.0, 2);
        assert_eq!(elementwise_config(1 << 30, MAX_GRID).grid_dim.0, MAX_GRID);
    }

    #[test]
    fn shapes_must_match_buffers() {
        assert!(shape("t", 6, 2, 3).is_ok());
        let e = shape("t", 7, 2, 3).unwrap_err().to_string();
        assert!(e.contains("2 x 3") && e.contains("7 elements"), "{e}");
        assert!(shape("t", 0, usize::MAX, 2).is_err());
    }
}
