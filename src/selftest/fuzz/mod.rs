//! Randomized differential checks of `cudrv::blas` (GEMM and GEMV), used by the GPU fuzz test
//! (`tests/gpu_blas_fuzz.rs`) and by `cudrv selftest`: `cudrv::selftest::fuzz`.
//!
//! Every case is drawn from a seed (replayable), runs **twice** on fresh copies of its inputs and
//! must give the same bits both times (every GEMM and GEMV path adds its partial sums in a fixed
//! order, the k-split ones included), leaves every element of `C` / `y` outside the matrix as it
//! was (the padding and the gaps between batch entries hold NaN), and matches an f64 CPU
//! reference on sampled entries (corners and edges always among them) within a bound derived,
//! entry by entry, from the type and the sum of the magnitudes of the terms:
//!
//! `|got - ref| <= (u_in + u_acc(k)) * 1.25 * S + u_out * |ref| + tiny`,
//! `S = |alpha| sum_p |a_ip b_pj| + |beta c_ij| + |bias|`, where `u_in` is the input rounding
//! (tf32 operands not already tf32: 2^-9; f32 in `MathMode::Tf32x3`: 3 * 2^-22, with `u_acc` over
//! 3k terms; else 0), `u_acc(k) = u * (64 + 2 sqrt(k))` with `u` the
//! accumulator's unit roundoff (2^-24, f64 2^-53), and `u_out` one unit in the last place of
//! the output (f16 2^-10, bf16 2^-7, f32 2^-23, f64 2^-52; plus 1e-5 for the fast sigmoid and
//! tanh). With `beta = 0`, C is filled with
//! NaN before each run: it must not be read. The operands' padding holds 4096.0, so a kernel that
//! reads past a row or column shows it.
//!
//! ```no_run
//! use cudrv::selftest::fuzz::{self, FuzzType};
//! let ctx = cudrv::Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let report = fuzz::gemm(&stream, FuzzType::F16, 0x5eed, 50, false)?;
//! assert!(report.failures.is_empty(), "{report}");
//! # Ok::<(), cudrv::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use half::{bf16, f16};

use crate::blas::{Activation, Gemm, GemmType, Kernel, Layout, MathMode, SplitK, Tile, Transpose};
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut};
use crate::selftest::{FromF64, Rng};
use crate::stream::Stream;

/// The GEMM element type and math of a fuzz run.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// for ty in FuzzType::ALL {
///     let report = fuzz::gemm(&stream, ty, 1, 10, false)?;
///     assert!(report.failures.is_empty(), "{}: {report}", ty.name());
/// }
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FuzzType {
    /// f32, exact math (CUDA cores).
    F32,
    /// f32 storage, [`MathMode::Tf32`] (tensor cores).
    Tf32,
    /// f16.
    F16,
    /// bf16.
    Bf16,
    /// f64.
    F64,
    /// f32 storage, [`MathMode::Tf32x3`] (three tf32 products on the tensor cores, or the exact
    /// kernels where the mode takes those).
    F32x3,
}

impl FuzzType {
    /// Every type, in a fixed order.
    ///
    /// ```
    /// use cudrv::selftest::fuzz::FuzzType;
    /// assert_eq!(FuzzType::ALL.len(), 6);
    /// ```
    pub const ALL: [FuzzType; 6] = [
        FuzzType::F32,
        FuzzType::Tf32,
        FuzzType::F16,
        FuzzType::Bf16,
        FuzzType::F64,
        FuzzType::F32x3,
    ];

    /// `f32`, `tf32`, `f16`, `bf16`, `f64`, `f32x3`.
    ///
    /// ```
    /// use cudrv::selftest::fuzz::FuzzType;
    /// assert_eq!(FuzzType::Tf32.name(), "tf32");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            FuzzType::F32 => "f32",
            FuzzType::Tf32 => "tf32",
            FuzzType::F16 => "f16",
            FuzzType::Bf16 => "bf16",
            FuzzType::F64 => "f64",
            FuzzType::F32x3 => "f32x3",
        }
    }
}

/// One GEMM case: everything a call depends on. Build it by hand to replay a shape, or let
/// [`gemm`] draw it from a seed.
///
/// ```no_run
/// use cudrv::selftest::{fuzz, Rng};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // Replay one drawn case with a larger k, three times.
/// let mut case = fuzz::random_gemm_case(&mut Rng::new(9), fuzz::FuzzType::F16, false);
/// case.dims.2 = 4099;
/// let report = fuzz::gemm_case(&stream, &case, 3, 9)?;
/// println!("{case}: {report}");
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GemmCase {
    /// Element type and math.
    pub ty: FuzzType,
    /// `op(A)`, `op(B)`.
    pub ops: (Transpose, Transpose),
    /// `m, n, k`.
    pub dims: (usize, usize, usize),
    /// Storage order.
    pub layout: Layout,
    /// Extra elements of each leading dimension beyond the tightest (A, B, C).
    pub ld_pad: [usize; 3],
    /// Batch count.
    pub batch: usize,
    /// Batch strides of A and B (`Some(0)`: one matrix shared by every product; `None`: one
    /// matrix plus `gap` apart) and the gap between C's matrices.
    pub strides: (Option<usize>, Option<usize>, usize),
    /// Elements each buffer starts past a fresh allocation (0 keeps it 256-byte aligned).
    pub offsets: [usize; 3],
    /// `alpha`, `beta`.
    pub scalars: (f64, f64),
    /// With a bias.
    pub bias: bool,
    /// The epilogue's activation.
    pub act: Activation,
    /// Forced kernel family, tile and k split (an `InvalidArgument` for a combination the
    /// library does not have is accepted, once C is found untouched).
    pub knobs: (Kernel, Tile, SplitK),
    /// tf32 only: inputs already representable in tf32, so the bound has no input rounding.
    pub tf32_exact_inputs: bool,
}

impl fmt::Display for GemmCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = |t: Transpose| if t == Transpose::N { 'N' } else { 'T' };
        let (m, n, k) = self.dims;
        write!(
            f,
            "{} {}{} {m}x{n}x{k}{}",
            self.ty.name(),
            l(self.ops.0),
            l(self.ops.1),
            if self.layout == Layout::RowMajor {
                " row-major"
            } else {
                ""
            }
        )?;
        if self.ld_pad != [0; 3] {
            write!(f, " ldpad {:?}", self.ld_pad)?;
        }
        if self.batch != 1 {
            write!(f, " batch {} strides {:?}", self.batch, self.strides)?;
        }
        if self.offsets != [0; 3] {
            write!(f, " offsets {:?}", self.offsets)?;
        }
        write!(f, " alpha {} beta {}", self.scalars.0, self.scalars.1)?;
        if self.bias {
            write!(f, " bias")?;
        }
        if self.act != Activation::None {
            write!(f, " {:?}", self.act)?;
        }
        if self.knobs != (Kernel::Auto, Tile::Auto, SplitK::Auto) {
            write!(f, " forced {:?}", self.knobs)?;
        }
        Ok(())
    }
}

/// One failed case.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// for f in fuzz::gemm(&stream, FuzzType::Bf16, 3, 20, false)?.failures {
///     eprintln!("{} on {}: {}", f.case, f.kernel, f.detail);
/// }
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Failure {
    /// The case, as [`GemmCase`]'s Display or the GEMV equivalent.
    pub case: String,
    /// The kernel the library chose.
    pub kernel: String,
    /// What was wrong.
    pub detail: String,
}

/// What a fuzz run saw.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::gemm(&stream, FuzzType::F64, 11, 30, false)?;
/// println!("worst error/bound {:.3} on {}", r.worst, r.worst_case);
/// for (kernel, n) in &r.kernels {
///     println!("{n:3} cases on {kernel}");
/// }
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The seed the cases were drawn from.
    pub seed: u64,
    /// Cases run (each twice).
    pub cases: usize,
    /// Cases the library refused (forced knobs it does not have), with C untouched.
    pub refused: usize,
    /// Cases per kernel chosen.
    pub kernels: BTreeMap<String, usize>,
    /// The largest |error| / bound over every sampled entry (passing means <= 1).
    pub worst: f64,
    /// The case with the largest ratio.
    pub worst_case: String,
    /// Every failure.
    pub failures: Vec<Failure>,
}

impl Report {
    fn merge_case(&mut self, kernel: &str, case: &str, outcome: CaseOutcome) {
        self.cases += 1;
        *self.kernels.entry(kernel.to_string()).or_default() += 1;
        match outcome {
            CaseOutcome::Passed(ratio) => {
                if ratio > self.worst {
                    self.worst = ratio;
                    self.worst_case = case.to_string();
                }
            }
            CaseOutcome::Refused => self.refused += 1,
            CaseOutcome::Failed(detail) => self.failures.push(Failure {
                case: case.to_string(),
                kernel: kernel.to_string(),
                detail,
            }),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {:#x}: {} cases, {} refused, {} failed, worst error/bound {:.3} ({})",
            self.seed,
            self.cases,
            self.refused,
            self.failures.len(),
            self.worst,
            self.worst_case
        )?;
        for fl in self.failures.iter().take(20) {
            writeln!(f, "  FAIL {} [{}]: {}", fl.case, fl.kernel, fl.detail)?;
        }
        if self.failures.len() > 20 {
            writeln!(f, "  ... {} more", self.failures.len() - 20)?;
        }
        Ok(())
    }
}

enum CaseOutcome {
    Passed(f64),
    Refused,
    Failed(String),
}

/// Element types of the fuzz checks.
pub(crate) trait FuzzElement: GemmType + FromF64 + Default + 'static {
    /// `alpha` / `beta` of this type's GEMM.
    fn scalar(x: f64) -> Self::Scalar;
    /// One unit in the last place of a stored result, relative (twice the rounding's unit
    /// roundoff: the rounding itself, and the f32 error of the value it rounds near a power of 2).
    const OUT_U: f64;
    /// One unit in the last place of a subnormal result, absolute: the rounding of an output
    /// under the type's smallest normal, which [`Self::OUT_U`]'s relative bound misses there
    /// (f16 products of a few small terms land in it).
    const OUT_TINY: f64;
    /// Unit roundoff of the accumulator.
    const ACC_U: f64;
}
impl FuzzElement for f32 {
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const OUT_U: f64 = 1.0 / (1u64 << 23) as f64;
    const OUT_TINY: f64 = 0.0; // 2^-149, under the bound's floor of 1e-30
    const ACC_U: f64 = 1.0 / (1u64 << 24) as f64;
}
impl FuzzElement for f64 {
    fn scalar(x: f64) -> f64 {
        x
    }
    const OUT_U: f64 = 1.0 / (1u64 << 52) as f64;
    const OUT_TINY: f64 = 0.0; // 2^-1074, under the bound's floor of 1e-30
    const ACC_U: f64 = 1.0 / (1u64 << 53) as f64;
}
impl FuzzElement for f16 {
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const OUT_U: f64 = 1.0 / 1024.0;
    const OUT_TINY: f64 = 1.0 / (1u64 << 24) as f64; // 2^-24
    const ACC_U: f64 = 1.0 / (1u64 << 24) as f64;
}
impl FuzzElement for bf16 {
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    const OUT_U: f64 = 1.0 / 128.0;
    const OUT_TINY: f64 = 0.0; // 2^-133, under the bound's floor of 1e-30
    const ACC_U: f64 = 1.0 / (1u64 << 24) as f64;
}

/// The value of the operands' padding (finite, so a kernel that multiplies it by a zero-filled
/// operand stays exact, and large, so one that adds it in shows).
const PAD: f64 = 4096.0;

/// Whether two slices hold the same bits.
fn same_bits<T: DeviceRepr>(a: &[T], b: &[T]) -> bool {
    // SAFETY: DeviceRepr types are plain data without padding bytes (f32, f64, f16, bf16 here),
    // so viewing them as bytes reads initialised memory only.
    let bytes = |s: &[T]| unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) };
    bytes(a) == bytes(b)
}

/// Rounds an f32 to the nearest tf32 (10-bit mantissa).
fn to_tf32(x: f32) -> f32 {
    f32::from_bits((x.to_bits().wrapping_add(0x1000)) & !0x1FFF)
}

fn act_ref(act: Activation, v: f64) -> f64 {
    match act.op() {
        Some(f) => f.reference(v),
        None => v,
    }
}

/// Column-major / row-major index of element (r, c) of a matrix with leading dimension ld.
fn at(layout: Layout, r: usize, c: usize, ld: usize) -> usize {
    match layout {
        Layout::ColMajor => r + c * ld,
        Layout::RowMajor => r * ld + c,
    }
}

/// Span in elements of a stored rows x cols matrix.
fn span(layout: Layout, (rows, cols): (usize, usize), ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        return 0;
    }
    match layout {
        Layout::ColMajor => (cols - 1) * ld + rows,
        Layout::RowMajor => (rows - 1) * ld + cols,
    }
}

/// One operand laid out in a host buffer: where matrix b starts, its ld, its stored dims.
pub(crate) struct Operand {
    pub(crate) base: usize,
    pub(crate) stride: usize,
    pub(crate) ld: usize,
    dims: (usize, usize),
    len: usize,
}

impl Operand {
    pub(crate) fn new(
        layout: Layout,
        dims: (usize, usize),
        pad: usize,
        batch: usize,
        stride: Option<usize>,
        offset: usize,
    ) -> Operand {
        let tight = match layout {
            Layout::ColMajor => dims.0.max(1),
            Layout::RowMajor => dims.1.max(1),
        };
        let ld = tight + pad;
        let one = span(layout, dims, ld);
        let stride = stride.unwrap_or(one + pad);
        let len = offset + if batch == 0 { 0 } else { (batch - 1) * stride + one } + 3;
        Operand {
            base: offset,
            stride,
            ld,
            dims,
            len,
        }
    }

    /// Index of stored element (r, c) of batch entry b.
    fn idx(&self, layout: Layout, b: usize, r: usize, c: usize) -> usize {
        self.base + b * self.stride + at(layout, r, c, self.ld)
    }

    /// Marks the in-matrix elements.
    fn mask(&self, layout: Layout, batch: usize) -> Vec<bool> {
        let mut m = vec![false; self.len];
        for b in 0..batch {
            for r in 0..self.dims.0 {
                for c in 0..self.dims.1 {
                    m[self.idx(layout, b, r, c)] = true;
                }
            }
        }
        m
    }
}

/// `case`'s A, B and C as the runner lays them out in their host buffers (C's matrices one
/// after the other with the case's gap).
pub(crate) fn case_operands(case: &GemmCase) -> [Operand; 3] {
    let (m, n, k) = case.dims;
    let (ta, tb) = case.ops;
    let layout = case.layout;
    let batch = case.batch;
    let a_dims = if ta == Transpose::N { (m, k) } else { (k, m) };
    let b_dims = if tb == Transpose::N { (k, n) } else { (n, k) };
    let (sa, sb, gap_c) = case.strides;
    let oa = Operand::new(layout, a_dims, case.ld_pad[0], batch, sa, case.offsets[0]);
    let ob = Operand::new(layout, b_dims, case.ld_pad[1], batch, sb, case.offsets[1]);
    let c_one = {
        let tight = if layout == Layout::ColMajor { m.max(1) } else { n.max(1) };
        span(layout, (m, n), tight + case.ld_pad[2])
    };
    let oc = Operand::new(
        layout,
        (m, n),
        case.ld_pad[2],
        batch,
        Some(c_one + gap_c),
        case.offsets[2],
    );
    [oa, ob, oc]
}

/// The GEMM call of `case` on operands laid out as [`case_operands`] lays them out.
pub(crate) fn case_gemm<T: FuzzElement>(case: &GemmCase, [oa, ob, oc]: [&Operand; 3]) -> Gemm<T::Scalar> {
    let (m, n, k) = case.dims;
    let (ta, tb) = case.ops;
    let (alpha, beta) = case.scalars;
    let mut g = Gemm::<T::Scalar>::new(ta, tb, m, n, k)
        .alpha(T::scalar(alpha))
        .beta(T::scalar(beta))
        .ld(oa.ld, ob.ld, oc.ld)
        .layout(case.layout)
        .activation(case.act)
        .kernel(case.knobs.0)
        .tile(case.knobs.1)
        .split_k(case.knobs.2);
    match case.ty {
        FuzzType::Tf32 => g = g.math(MathMode::Tf32),
        FuzzType::F32x3 => g = g.math(MathMode::Tf32x3),
        _ => {}
    }
    if case.batch != 1 {
        g = g.batched(case.batch, oa.stride, ob.stride, oc.stride);
    }
    g
}

/// Runs one case: `runs` calls (at least 2), each on freshly uploaded C, all compared bit for
/// bit, the last checked against the reference. Returns the kernel name and the outcome.
fn run_case<T: FuzzElement>(
    stream: &Arc<Stream>,
    case: &GemmCase,
    runs: usize,
    rng: &mut Rng,
) -> Result<(String, CaseOutcome)> {
    let (m, n, k) = case.dims;
    let (ta, tb) = case.ops;
    let layout = case.layout;
    let batch = case.batch;
    let [oa, ob, oc] = case_operands(case);
    let tf32_round = case.ty == FuzzType::Tf32 && case.tf32_exact_inputs;
    let mut draw = |op: &Operand| -> Vec<T> {
        let inside = op.mask(layout, batch);
        inside
            .iter()
            .map(|&i| {
                if !i {
                    return T::from_f64(PAD);
                }
                let v = rng.uniform(-1.0, 1.0);
                if tf32_round {
                    T::from_f64(to_tf32(v as f32) as f64)
                } else {
                    T::from_f64(v)
                }
            })
            .collect()
    };
    let ha = draw(&oa);
    let hb = draw(&ob);
    let (alpha, beta) = case.scalars;
    let nan = T::from_f64(f64::NAN);
    let c_inside = oc.mask(layout, batch);
    let hc: Vec<T> = c_inside
        .iter()
        .map(|&i| {
            if i && beta != 0.0 {
                T::from_f64(rng.uniform(-1.0, 1.0))
            } else {
                nan
            }
        })
        .collect();
    let bias_len = if layout == Layout::ColMajor { m } else { n };
    let hbias: Vec<T> = (0..bias_len.max(1))
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();

    let da = DeviceBuffer::from_slice(stream, &ha)?;
    let db = DeviceBuffer::from_slice(stream, &hb)?;
    let dbias = DeviceBuffer::from_slice(stream, &hbias)?;
    let mut dc = DeviceBuffer::from_slice(stream, &hc)?;
    let (oca, ocb, occ) = (oa.base, ob.base, oc.base);
    let g = case_gemm::<T>(case, [&oa, &ob, &oc]);
    let va = da.slice(oca..)?;
    let vb = db.slice(ocb..)?;
    let forced = case.knobs != (Kernel::Auto, Tile::Auto, SplitK::Auto);
    let kernel = {
        let vc = dc.slice(occ..)?;
        match g.kernel_name(&va, &vb, &vc) {
            Ok(name) => name,
            Err(Error::InvalidArgument(msg)) if forced => {
                // The same call must be refused by run too, leaving C as it was.
                let mut vc = dc.slice_mut(occ..)?;
                let r = if case.bias {
                    g.run_with_bias(&va, &vb, &dbias, &mut vc)
                } else {
                    g.run(&va, &vb, &mut vc)
                };
                let after = dc.to_vec()?;
                let outcome = match r {
                    Err(Error::InvalidArgument(_)) if same_bits(&after, &hc) => CaseOutcome::Refused,
                    Err(Error::InvalidArgument(_)) => CaseOutcome::Failed("refused, but C changed".into()),
                    other => CaseOutcome::Failed(format!("kernel_name refused ({msg}) but run gave {other:?}")),
                };
                return Ok(("(refused)".into(), outcome));
            }
            Err(e) => return Err(e),
        }
    };
    let mut outs: Vec<Vec<T>> = Vec::with_capacity(runs);
    for run in 0..runs.max(2) {
        if run > 0 {
            dc.copy_from_slice(&hc)?;
        }
        let mut vc = dc.slice_mut(occ..)?;
        let r = if case.bias {
            g.run_with_bias(&va, &vb, &dbias, &mut vc)
        } else {
            g.run(&va, &vb, &mut vc)
        };
        if let Err(e) = r {
            return Ok((kernel, CaseOutcome::Failed(format!("run {run}: {e}"))));
        }
        outs.push(dc.to_vec()?);
    }
    for (i, o) in outs.iter().enumerate().skip(1) {
        if !same_bits(o, &outs[0]) {
            let differ = o
                .iter()
                .zip(&outs[0])
                .filter(|(x, y)| !same_bits(&[**x], &[**y]))
                .count();
            return Ok((
                kernel,
                CaseOutcome::Failed(format!("run {i} differs from run 0 in {differ} elements (a race)")),
            ));
        }
    }
    let got = &outs[0];
    // Outside the matrices: untouched.
    if let Some(i) = (0..got.len()).find(|&i| !c_inside[i] && !same_bits(&[got[i]], &[hc[i]])) {
        return Ok((
            kernel,
            CaseOutcome::Failed(format!("C element {i}, outside the matrices, was written")),
        ));
    }
    // Sampled entries against the f64 reference.
    // Tf32x3: the splits and the dropped lo * lo product, 3 * 2^-22 of each |a b|, over three
    // times k accumulated terms.
    let (u_in, k_acc) = match case.ty {
        FuzzType::Tf32 if !case.tf32_exact_inputs => (1.0 / 512.0, k),
        FuzzType::F32x3 => (3.0 / 4_194_304.0, 3 * k),
        _ => (0.0, k),
    };
    let u_acc = T::ACC_U * (64.0 + 2.0 * (k_acc as f64).sqrt());
    let u_act = match case.act {
        Activation::Sigmoid | Activation::Tanh if case.ty != FuzzType::F64 => 1e-5,
        _ => 0.0,
    };
    let opa = |b: usize, i: usize, p: usize| {
        let (r, c) = if ta == Transpose::N { (i, p) } else { (p, i) };
        ha[oa.idx(layout, b, r, c)].to_f64()
    };
    let opb = |b: usize, p: usize, j: usize| {
        let (r, c) = if tb == Transpose::N { (p, j) } else { (j, p) };
        hb[ob.idx(layout, b, r, c)].to_f64()
    };
    let mut worst = 0.0f64;
    let per_batch = 96usize;
    for b in 0..batch {
        let mut samples: Vec<(usize, usize)> = vec![(0, 0), (m - 1, n - 1), (m - 1, 0), (0, n - 1)];
        for _ in 0..per_batch {
            let i = match rng.next_u64() % 4 {
                0 => m - 1 - (rng.next_u64() as usize % m.min(64)),
                _ => rng.next_u64() as usize % m,
            };
            let j = match rng.next_u64() % 4 {
                0 => n - 1 - (rng.next_u64() as usize % n.min(64)),
                _ => rng.next_u64() as usize % n,
            };
            samples.push((i, j));
        }
        for (i, j) in samples {
            let (mut acc, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t = opa(b, i, p) * opb(b, p, j);
                acc += t;
                mag += t.abs();
            }
            let ci = oc.idx(layout, b, i, j);
            let c0 = if beta != 0.0 { hc[ci].to_f64() } else { 0.0 };
            let bias = if case.bias {
                hbias[if layout == Layout::ColMajor { i } else { j }].to_f64()
            } else {
                0.0
            };
            let pre = alpha * acc + beta * c0 + bias;
            let reference = act_ref(case.act, pre);
            let s = alpha.abs() * mag + (beta * c0).abs() + bias.abs();
            let bound = (u_in + u_acc) * 1.25 * s + (T::OUT_U + u_act) * reference.abs() + T::OUT_TINY + 1e-30;
            let v = got[ci].to_f64();
            let err = (v - reference).abs();
            if !v.is_finite() || err > bound {
                return Ok((
                    kernel,
                    CaseOutcome::Failed(format!(
                        "C[{i}, {j}] of batch {b} = {v:e}, reference {reference:e}: error {err:.3e} > bound {bound:.3e} (S = {s:.3e})"
                    )),
                ));
            }
            worst = worst.max(err / bound);
        }
    }
    Ok((kernel, CaseOutcome::Passed(worst)))
}

/// [`run_case`] for the element type of `case.ty` (f32 storage for tf32).
fn run_typed(stream: &Arc<Stream>, case: &GemmCase, runs: usize, rng: &mut Rng) -> Result<(String, CaseOutcome)> {
    match case.ty {
        FuzzType::F32 | FuzzType::Tf32 | FuzzType::F32x3 => run_case::<f32>(stream, case, runs, rng),
        FuzzType::F16 => run_case::<f16>(stream, case, runs, rng),
        FuzzType::Bf16 => run_case::<bf16>(stream, case, runs, rng),
        FuzzType::F64 => run_case::<f64>(stream, case, runs, rng),
    }
}

/// Runs `case` `runs` times (at least twice) and reports it as a one-case [`Report`].
///
/// ```no_run
/// use cudrv::selftest::{fuzz, Rng};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let case = fuzz::random_gemm_case(&mut Rng::new(5), fuzz::FuzzType::F32, false);
/// let r = fuzz::gemm_case(&stream, &case, 2, 5)?;
/// assert_eq!(r.cases, 1);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn gemm_case(stream: &Arc<Stream>, case: &GemmCase, runs: usize, seed: u64) -> Result<Report> {
    let mut rng = Rng::new(seed);
    let mut report = Report {
        seed,
        ..Report::default()
    };
    let (kernel, outcome) = run_typed(stream, case, runs, &mut rng)?;
    report.merge_case(&kernel, &case.to_string(), outcome);
    Ok(report)
}

mod draw;
mod draw_paths;
mod families;
mod gemv;
use draw::range;
pub use draw::{
    random_deep_case, random_gemm_case, random_mid_case, random_skinny_case, random_view_case, random_wave_case,
};
pub use draw_paths::{random_b16_in_place_case, random_in_place_case, random_pair_case, random_stream_k_case};
pub use families::{b16_in_place, deep, gemm, in_place, mid, pairs, skinny, stream_k, views, waves};
pub use gemv::gemv;
