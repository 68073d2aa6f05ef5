//! Checks of every bundled kernel against a CPU reference in f64, used by `cudrv selftest` and
//! the GPU tests.
//!
//! Each check draws fresh random inputs, poisons the output (all bits set: NaN for floats),
//! runs the kernel, and compares with the reference by the relative error
//! `‖out − ref‖₂ / ‖ref‖₂`; a NaN anywhere fails. A randomized pass ([`fuzz`]) then runs a few
//! hundred GEMM and GEMV cases drawn from the same seed, each checked entry by entry (its
//! "rel.error" column is the worst error over its bound, passing at 1 or less).
//!
//! ```no_run
//! let ctx = cudrv::Context::new(0)?;
//! let checks = cudrv::selftest::run_all(&ctx, 0x5eed)?;
//! assert!(checks.iter().all(|c| c.passed));
//! # Ok::<(), cudrv::Error>(())
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::context::Context;
use crate::error::Result;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
use crate::ops::{self, Activation, Float};
use crate::registry::{EMBEDDED_MODULES, ON_USE_MODULES};
use crate::stream::Stream;

/// Randomized differential checks of the BLAS kernels (GEMM and GEMV), seeded and replayable.
mod blas;
pub mod fuzz;
mod gemv;
pub(crate) mod sweeps;
pub(crate) mod wg_in_place;

/// A small deterministic random generator (xorshift64*), so checks need no extra dependency.
///
/// ```
/// use cudrv::selftest::Rng;
/// let (mut a, mut b) = (Rng::new(42), Rng::new(42));
/// assert_eq!(a.next_u64(), b.next_u64()); // a seed replays the same inputs
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is remapped).
    ///
    /// ```
    /// use cudrv::selftest::Rng;
    /// let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    /// println!("seed {seed:#x}"); // print it, so a failure can be replayed
    /// let mut rng = Rng::new(seed);
    /// # let _ = rng.next_u64();
    /// ```
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// use cudrv::selftest::Rng;
    /// let mut rng = Rng::new(0);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// One of `options`, each equally likely (a value listed twice is drawn twice as often).
    ///
    /// # Panics
    /// If `options` is empty: there is nothing to draw.
    ///
    /// ```
    /// use cudrv::selftest::Rng;
    /// let mut rng = Rng::new(3);
    /// let op = rng.pick(&['n', 't']);
    /// assert!(op == 'n' || op == 't');
    /// ```
    pub fn pick<T: Copy>(&mut self, options: &[T]) -> T {
        assert!(!options.is_empty(), "Rng::pick: no options to draw from");
        options[self.next_u64() as usize % options.len()]
    }

    /// A uniform value in [lo, hi).
    ///
    /// ```
    /// use cudrv::selftest::Rng;
    /// let mut rng = Rng::new(7);
    /// assert!((0..1000).map(|_| rng.uniform(-1.0, 1.0)).all(|x| (-1.0..1.0).contains(&x)));
    /// ```
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    /// `n` uniform values in [lo, hi), never all zero.
    ///
    /// ```
    /// use cudrv::selftest::Rng;
    /// let x: Vec<half::bf16> = Rng::new(1).vec(1000, -2.0, 2.0);
    /// assert_eq!(x.len(), 1000);
    /// ```
    pub fn vec<T: FromF64>(&mut self, n: usize, lo: f64, hi: f64) -> Vec<T> {
        (0..n).map(|_| T::from_f64(self.uniform(lo, hi))).collect()
    }
}

/// A BLAS element type whose values the checks build and compare through f64.
pub(crate) trait Element: crate::blas::GemmType + FromF64 {}
impl<T: crate::blas::GemmType + FromF64> Element for T {}

/// The kernel-name letter of an op: `n` or `t`.
pub(crate) fn letter_of(t: crate::blas::Transpose) -> char {
    match t {
        crate::blas::Transpose::N => 'n',
        crate::blas::Transpose::T => 't',
    }
}

/// Conversion used to build inputs and compare outputs in f64.
///
/// ```
/// use cudrv::selftest::FromF64;
/// /// An f64 reference dot product of any element type.
/// fn dot<T: FromF64>(a: &[T], b: &[T]) -> f64 {
///     a.iter().zip(b).map(|(x, y)| x.to_f64() * y.to_f64()).sum()
/// }
/// let a = [half::f16::from_f64(0.5); 4];
/// assert_eq!(dot(&a, &a), 1.0);
/// ```
pub trait FromF64: Copy {
    /// From f64, rounding to nearest.
    ///
    /// ```
    /// use cudrv::selftest::FromF64;
    /// assert_eq!(<f32 as FromF64>::from_f64(0.1), 0.1f32);
    /// assert_eq!(<half::bf16 as FromF64>::from_f64(1.0).to_f64(), 1.0);
    /// ```
    fn from_f64(x: f64) -> Self;
    /// To f64, exactly.
    ///
    /// ```
    /// use cudrv::selftest::FromF64;
    /// assert_eq!(half::f16::from_f64(65504.0).to_f64(), 65504.0);
    /// ```
    fn to_f64(self) -> f64;
}
impl FromF64 for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl FromF64 for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}
impl FromF64 for half::f16 {
    fn from_f64(x: f64) -> Self {
        half::f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
}
impl FromF64 for half::bf16 {
    fn from_f64(x: f64) -> Self {
        half::bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        half::bf16::to_f64(self)
    }
}

/// `‖out − ref‖₂ / ‖ref‖₂` (absolute norm when the reference is zero); infinite if any output
/// is NaN or the lengths differ.
///
/// ```
/// use cudrv::selftest::rel_error;
/// assert_eq!(rel_error(&[1.0f32, 2.0], &[1.0, 2.0]), 0.0);
/// assert!(rel_error(&[f32::NAN], &[1.0]).is_infinite());
/// ```
pub fn rel_error<T: FromF64>(out: &[T], reference: &[f64]) -> f64 {
    if out.len() != reference.len() {
        return f64::INFINITY;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (o, r) in out.iter().zip(reference) {
        let o = o.to_f64();
        if o.is_nan() != r.is_nan() {
            return f64::INFINITY;
        }
        if o.is_nan() || (o.is_infinite() && o == *r) {
            continue;
        }
        diff += (o - r) * (o - r);
        norm += r * r;
    }
    let e = if norm > 0.0 { (diff / norm).sqrt() } else { diff.sqrt() };
    if e.is_nan() {
        f64::INFINITY
    } else {
        e
    }
}

/// The outcome of one check.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// for c in cudrv::selftest::run_all(&ctx, 1)? {
///     let mark = if c.passed { "ok  " } else { "FAIL" };
///     println!("{mark} {} {}: error {:.2e} <= {:.2e} {}", c.kernel, c.case, c.error, c.tolerance, c.detail);
/// }
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Check {
    /// The kernel(s) checked, e.g. `axpy_f32`.
    pub kernel: String,
    /// The case, e.g. `n=1000003`.
    pub case: String,
    /// The relative error measured.
    pub error: f64,
    /// The bound it had to stay under.
    pub tolerance: f64,
    /// Whether it passed.
    pub passed: bool,
    /// What failed, if anything (a launch error, a NaN).
    pub detail: String,
}

impl Check {
    /// A check of `kernel` on `case` from the error measured (or the failure to run it), passing
    /// when the error is at most `tolerance`.
    pub(crate) fn new(kernel: String, case: String, tolerance: f64, error: Result<f64>) -> Check {
        let (error, detail) = match error {
            Ok(e) => (e, String::new()),
            Err(e) => (f64::INFINITY, e.to_string()),
        };
        let passed = error <= tolerance && detail.is_empty();
        let detail = if !passed && detail.is_empty() {
            "output differs from the CPU reference (or holds NaN)".into()
        } else {
            detail
        };
        Check {
            kernel,
            case,
            error,
            tolerance,
            passed,
            detail,
        }
    }

    /// Adds this check to `out`; when it passed, the kernels named in `covers` count as covered.
    pub(crate) fn record(
        self,
        out: &mut Vec<Check>,
        covered: &mut BTreeSet<String>,
        covers: impl IntoIterator<Item = String>,
    ) {
        if self.passed {
            covered.extend(covers);
        }
        out.push(self);
    }
}

fn tolerance<T: Float>() -> f64 {
    if T::SUFFIX == "f32" {
        1e-5
    } else {
        1e-12
    }
}

/// Fills a buffer with all-ones bits (NaN for floats) so unwritten elements are caught.
fn poisoned<T: Float>(stream: &Arc<Stream>, n: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: every byte is written by the memset below before anyone reads it.
    let mut b = unsafe { DeviceBuffer::<T>::uninit(stream, n)? };
    b.memset_bytes(0xFF)?;
    Ok(b)
}

struct Checker<'a> {
    stream: &'a Arc<Stream>,
    rng: Rng,
    out: Vec<Check>,
}

impl Checker<'_> {
    fn record<T: FromF64>(&mut self, kernel: String, case: String, tol: f64, result: Result<(Vec<T>, Vec<f64>)>) {
        let error = result.map(|(got, want)| rel_error(&got, &want));
        self.out.push(Check::new(kernel, case, tol, error));
    }

    fn elementwise<T: Float + FromF64>(&mut self, n: usize) {
        let s = self.stream;
        let t = T::SUFFIX;
        let tol = tolerance::<T>();
        let case = format!("n={n}");
        let x: Vec<T> = self.rng.vec(n, -4.0, 4.0);
        let y: Vec<T> = self.rng.vec(n, -4.0, 4.0);
        let alpha = T::from_f64(self.rng.uniform(-2.0, 2.0));
        let beta = T::from_f64(self.rng.uniform(-2.0, 2.0));
        let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        let yf: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
        let (a, b) = (alpha.to_f64(), beta.to_f64());

        let r = (|| {
            let mut o = poisoned::<T>(s, n)?;
            ops::fill(&mut o, alpha)?;
            Ok((o.to_vec()?, vec![a; n]))
        })();
        self.record(format!("fill_{t}"), case.clone(), 0.0, r);

        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let mut o = poisoned::<T>(s, n)?;
            ops::scale(&mut o, alpha, &dx)?;
            Ok((o.to_vec()?, xf.iter().map(|v| a * v).collect()))
        })();
        self.record(format!("scale_{t}"), case.clone(), tol, r);

        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let mut dy = DeviceBuffer::from_slice(s, &y)?;
            ops::axpy(&mut dy, alpha, &dx)?;
            Ok((dy.to_vec()?, xf.iter().zip(&yf).map(|(x, y)| a * x + y).collect()))
        })();
        self.record(format!("axpy_{t}"), case.clone(), tol, r);

        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let mut dy = DeviceBuffer::from_slice(s, &y)?;
            ops::axpby(&mut dy, alpha, &dx, beta)?;
            Ok((dy.to_vec()?, xf.iter().zip(&yf).map(|(x, y)| a * x + b * y).collect()))
        })();
        self.record(format!("axpby_{t}"), case.clone(), tol, r);

        for (name, f) in [("add", (|p, q| p + q) as fn(f64, f64) -> f64), ("mul", |p, q| p * q)] {
            let r = (|| {
                let dx = DeviceBuffer::from_slice(s, &x)?;
                let dy = DeviceBuffer::from_slice(s, &y)?;
                let mut o = poisoned::<T>(s, n)?;
                if name == "add" {
                    ops::add(&mut o, &dx, &dy)?;
                } else {
                    ops::mul(&mut o, &dx, &dy)?;
                }
                Ok((o.to_vec()?, xf.iter().zip(&yf).map(|(p, q)| f(*p, *q)).collect()))
            })();
            self.record(format!("{name}_{t}"), case.clone(), tol, r);
        }

        for act in Activation::ALL {
            let r = (|| {
                let dx = DeviceBuffer::from_slice(s, &x)?;
                let mut o = poisoned::<T>(s, n)?;
                ops::activation(act, &mut o, &dx)?;
                Ok((o.to_vec()?, xf.iter().map(|v| act.reference(*v)).collect()))
            })();
            self.record(format!("{}_{t}", act.name()), case.clone(), tol, r);
        }
    }

    fn reductions<T: Float + FromF64>(&mut self, n: usize) {
        let s = self.stream;
        let t = T::SUFFIX;
        let x: Vec<T> = self.rng.vec(n, -1.0, 1.0);
        let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            // Cancellation makes the plain relative error of a signed sum meaningless, so the
            // error is measured relative to Σ|x|, the scale rounding errors grow with.
            let got = ops::sum(&dx)?.to_f64();
            let want: f64 = xf.iter().sum();
            let scale: f64 = xf.iter().map(|v| v.abs()).sum::<f64>().max(1.0);
            // rel_error([1 + d], [1]) = |d|: the error of the sum relative to Σ|x|.
            Ok((vec![1.0 + (got - want) / scale], vec![1.0]))
        })();
        self.record(format!("reduce_sum_{t}"), format!("n={n}"), tolerance::<T>(), r);
        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let got = ops::max(&dx)?;
            let want = xf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Ok((vec![got], vec![want]))
        })();
        self.record(format!("reduce_max_{t}"), format!("n={n}"), 0.0, r);
    }

    fn matrices<T: Float + FromF64>(&mut self, rows: usize, cols: usize) {
        let s = self.stream;
        let t = T::SUFFIX;
        let case = format!("{rows}x{cols}");
        let x: Vec<T> = self.rng.vec(rows * cols, -8.0, 8.0);
        let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let mut o = poisoned::<T>(s, rows * cols)?;
            ops::softmax_rows(&mut o, &dx, rows, cols)?;
            let mut want = Vec::with_capacity(rows * cols);
            for row in xf.chunks(cols) {
                let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = row.iter().map(|v| (v - m).exp()).sum();
                want.extend(row.iter().map(|v| (v - m).exp() / sum));
            }
            Ok((o.to_vec()?, want))
        })();
        self.record(format!("softmax_rows_{t}"), case.clone(), tolerance::<T>(), r);
        let r = (|| {
            let dx = DeviceBuffer::from_slice(s, &x)?;
            let mut o = poisoned::<T>(s, rows * cols)?;
            ops::transpose(&mut o, &dx, rows, cols)?;
            let mut want = vec![0.0; rows * cols];
            for i in 0..rows {
                for j in 0..cols {
                    want[j * rows + i] = xf[i * cols + j];
                }
            }
            Ok((o.to_vec()?, want))
        })();
        self.record(format!("transpose_{t}"), case, 0.0, r);
    }

    fn empty_kernels(&mut self) {
        let s = self.stream;
        let r = (|| {
            let ctx = s.context();
            let f = ctx.kernel("cudrv_empty")?;
            // SAFETY: cudrv_empty takes no parameters.
            unsafe { s.launch_builder(&f).launch(LaunchConfig::for_num_elems(1))? };
            let g = ctx.kernel("cudrv_empty_args")?;
            let a = DeviceBuffer::from_slice(s, &[1.0f32])?;
            let mut b = DeviceBuffer::from_slice(s, &[7.0f32])?;
            let (n, alpha) = (1u64, 2.0f32);
            let mut l = s.launch_builder(&g);
            l.arg(&a).arg(&b).arg(&n).arg(&alpha);
            // SAFETY: cudrv_empty_args(const float*, float*, u64, float) matches; it writes
            // nothing unless n is all ones.
            unsafe { l.launch(LaunchConfig::for_num_elems(1))? };
            // The kernel must leave b untouched.
            let got = b.to_vec()?;
            b.memset_zero()?;
            Ok((got, vec![7.0]))
        })();
        self.record("cudrv_empty, cudrv_empty_args".into(), "launch".into(), 0.0, r);
    }
}

/// Runs every check on `ctx` with inputs drawn from `seed`.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let checks = cudrv::selftest::run_all(&ctx, 0x5eed)?;
/// let failed = checks.iter().filter(|c| !c.passed).count();
/// assert_eq!(failed, 0, "{failed} of {} checks failed", checks.len());
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn run_all(ctx: &Arc<Context>, seed: u64) -> Result<Vec<Check>> {
    let stream = ctx.new_stream()?;
    let mut c = Checker {
        stream: &stream,
        rng: Rng::new(seed),
        out: Vec::new(),
    };
    c.empty_kernels();
    for n in [1, 1000, 1_000_003] {
        c.elementwise::<f32>(n);
        c.elementwise::<f64>(n);
    }
    for n in [1, 255, 257, 1_000_003, 10_000_019] {
        c.reductions::<f32>(n);
        c.reductions::<f64>(n);
    }
    for (r, k) in [(1, 1), (3, 1000), (513, 257), (4096, 33)] {
        c.matrices::<f32>(r, k);
        c.matrices::<f64>(r, k);
    }
    let mut checks = c.out;
    // Every bundled kernel must have been checked.
    let mut covered: BTreeSet<String> = checks
        .iter()
        .flat_map(|c| c.kernel.split(", ").map(str::to_string).collect::<Vec<_>>())
        .collect();
    let (blas_checks, blas_covered) = blas::run(&stream, seed);
    checks.extend(blas_checks);
    covered.extend(blas_covered);
    checks.extend(fuzz_checks(&stream, seed)?);
    let bundled = EMBEDDED_MODULES.iter().chain(ON_USE_MODULES.iter().copied());
    for m in bundled.filter(|m| m.runs_on(ctx.compute_capability())) {
        for k in m.kernels.iter().filter(|k| !covered.contains(**k)) {
            checks.push(Check {
                kernel: k.to_string(),
                case: "-".into(),
                error: f64::INFINITY,
                tolerance: 0.0,
                passed: false,
                detail: format!("bundled kernel in module `{}` has no check", m.name),
            });
        }
    }
    Ok(checks)
}

/// The randomized pass: [`FUZZ_GEMM_CASES`] GEMM cases per type and [`FUZZ_GEMV_CASES`] GEMV
/// cases per type from `seed` (small shapes; the GPU fuzz test runs thousands, larger ones
/// included), one check per type, passing when every case matched its reference, ran
/// bit-identically twice and left the padding alone.
fn fuzz_checks(stream: &Arc<Stream>, seed: u64) -> Result<Vec<Check>> {
    let as_check = |name: String, r: fuzz::Report| {
        let passed = r.failures.is_empty();
        Check {
            kernel: name,
            case: format!("{} random", r.cases),
            error: r.worst,
            tolerance: 1.0,
            passed,
            detail: r
                .failures
                .first()
                .map(|f| format!("{} [{}]: {}", f.case, f.kernel, f.detail))
                .unwrap_or_default(),
        }
    };
    let mut out = Vec::new();
    for ty in fuzz::FuzzType::ALL {
        let r = fuzz::gemm(stream, ty, seed, FUZZ_GEMM_CASES, false)?;
        out.push(as_check(format!("gemm fuzz {}", ty.name()), r));
    }
    out.push(as_check(
        "gemv fuzz".into(),
        fuzz::gemv(stream, seed, FUZZ_GEMV_CASES, false)?,
    ));
    Ok(out)
}

/// GEMM cases per type in `cudrv selftest`'s randomized pass.
///
/// ```
/// use cudrv::selftest::{FUZZ_GEMM_CASES, FUZZ_GEMV_CASES};
/// assert!(FUZZ_GEMM_CASES >= FUZZ_GEMV_CASES);
/// ```
pub const FUZZ_GEMM_CASES: usize = 40;
/// GEMV cases per type in `cudrv selftest`'s randomized pass.
///
/// ```
/// use cudrv::selftest::FUZZ_GEMV_CASES;
/// assert!(FUZZ_GEMV_CASES > 0);
/// ```
pub const FUZZ_GEMV_CASES: usize = 15;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.uniform(-1.0, 1.0);
            assert_eq!(x, b.uniform(-1.0, 1.0));
            assert!((-1.0..1.0).contains(&x));
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn rel_error_catches_nan_and_length() {
        assert!(rel_error(&[1.0f64], &[1.0, 2.0]).is_infinite());
        assert!(rel_error(&[f64::NAN], &[0.0]).is_infinite());
        assert!((rel_error(&[1.1f64], &[1.0]) - 0.1).abs() < 1e-12);
        assert_eq!(rel_error(&[f64::NEG_INFINITY], &[f64::NEG_INFINITY]), 0.0);
    }
}
