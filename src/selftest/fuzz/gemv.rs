//! The GEMV half of [`super`]: random `y = alpha op(A) x + beta y` cases over every GEMV kernel
//! family (element-wise and 16-byte kernels, N and T, split reductions, the cluster kernel, row
//! strips over matrices larger than the L2 cache), each run twice and checked as the GEMM cases are.

use std::sync::Arc;

use half::{bf16, f16};

use super::{range, same_bits, CaseOutcome, FuzzElement, Report, PAD};
use crate::blas::{self, GemvType, Transpose};
use crate::error::Result;
use crate::memory::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
use crate::selftest::Rng;
use crate::stream::Stream;

/// One GEMV case.
struct GemvCase {
    trans: Transpose,
    m: usize,
    n: usize,
    lda: usize,
    incx: isize,
    incy: isize,
    alpha: f64,
    beta: f64,
    offset_a: usize,
}

impl GemvCase {
    fn random(rng: &mut Rng, large: bool) -> GemvCase {
        let class = rng.next_u64() % if large { 8 } else { 6 };
        let (m, n) = match class {
            0 => (range(rng, 1, 40), range(rng, 1, 40)),
            1 | 2 => (range(rng, 1, 700), range(rng, 1, 700)),
            // Short and wide / tall and narrow: split reductions.
            3 => (range(rng, 1, 64), range(rng, 2000, 60000)),
            4 => (range(rng, 2000, 60000), range(rng, 1, 64)),
            // Mid sizes: the cluster N kernel on Hopper, T's four warps per column.
            5 => (range(rng, 1000, 3000), range(rng, 1000, 3500)),
            // Larger than the L2 cache: the row strips (N) and the T kernels at full size.
            _ => (range(rng, 3000, 9000), range(rng, 2048, 7000)),
        };
        let aligned = rng.next_u64() % 2 == 0;
        let (m, n) = if aligned { (m.div_ceil(8) * 8, n) } else { (m, n) };
        let lda = m + match rng.next_u64() % 5 {
            0 => range(rng, 1, 7),
            1 => 8,
            _ => 0,
        };
        GemvCase {
            trans: rng.pick(&[Transpose::N, Transpose::T]),
            m,
            n,
            lda,
            incx: rng.pick(&[1, 1, 1, 2, -1, 3]),
            incy: rng.pick(&[1, 1, 1, 2, -2]),
            alpha: rng.pick(&[1.0, -0.75, 0.5]),
            beta: rng.pick(&[0.0, 0.0, 1.0, 0.5]),
            offset_a: if rng.next_u64() % 10 == 0 { range(rng, 1, 3) } else { 0 },
        }
    }

    fn describe(&self, ty: &str) -> String {
        format!(
            "gemv {ty} {} {}x{} lda {} incx {} incy {} alpha {} beta {}{}",
            if self.trans == Transpose::N { 'N' } else { 'T' },
            self.m,
            self.n,
            self.lda,
            self.incx,
            self.incy,
            self.alpha,
            self.beta,
            if self.offset_a > 0 {
                format!(" offset {}", self.offset_a)
            } else {
                String::new()
            }
        )
    }
}

/// Position of logical element i of a vector of `len` with increment `inc` (BLAS: a negative
/// increment walks from the end).
fn vidx(i: usize, len: usize, inc: isize) -> usize {
    let step = inc.unsigned_abs();
    if inc > 0 {
        i * step
    } else {
        (len - 1 - i) * step
    }
}

fn run_gemv<T: FuzzElement + GemvType>(stream: &Arc<Stream>, c: &GemvCase, rng: &mut Rng) -> Result<CaseOutcome> {
    let (len_x, len_y) = if c.trans == Transpose::N {
        (c.n, c.m)
    } else {
        (c.m, c.n)
    };
    let a_len = c.offset_a + (c.n - 1) * c.lda + c.m;
    let mut ha = vec![T::from_f64(PAD); a_len];
    for j in 0..c.n {
        for i in 0..c.m {
            ha[c.offset_a + i + j * c.lda] = T::from_f64(rng.uniform(-1.0, 1.0));
        }
    }
    let nan = T::from_f64(f64::NAN);
    let span = |len: usize, inc: isize| (len - 1) * inc.unsigned_abs() + 1;
    let mut hx = vec![nan; span(len_x, c.incx)];
    for i in 0..len_x {
        hx[vidx(i, len_x, c.incx)] = T::from_f64(rng.uniform(-1.0, 1.0));
    }
    let mut hy = vec![nan; span(len_y, c.incy)];
    let mut y_inside = vec![false; hy.len()];
    for i in 0..len_y {
        let at = vidx(i, len_y, c.incy);
        y_inside[at] = true;
        if c.beta != 0.0 {
            hy[at] = T::from_f64(rng.uniform(-1.0, 1.0));
        }
    }
    let da = DeviceBuffer::from_slice(stream, &ha)?;
    let dx = DeviceBuffer::from_slice(stream, &hx)?;
    let mut dy = DeviceBuffer::from_slice(stream, &hy)?;
    let va = da.slice(c.offset_a..)?;
    let (alpha, beta) = (T::from_f64(c.alpha), T::from_f64(c.beta));
    let mut outs = Vec::new();
    for run in 0..2 {
        if run > 0 {
            dy.copy_from_slice(&hy)?;
        }
        if let Err(e) = blas::gemv(c.trans, c.m, c.n, alpha, &va, c.lda, &dx, c.incx, beta, &mut dy, c.incy) {
            return Ok(CaseOutcome::Failed(format!("run {run}: {e}")));
        }
        outs.push(dy.to_vec()?);
    }
    if !same_bits(&outs[0], &outs[1]) {
        return Ok(CaseOutcome::Failed("the two runs differ (a race)".into()));
    }
    let got = &outs[0];
    if let Some(i) = (0..got.len()).find(|&i| !y_inside[i] && !same_bits(&[got[i]], &[hy[i]])) {
        return Ok(CaseOutcome::Failed(format!(
            "y element {i}, between the increments, was written"
        )));
    }
    let k = len_x;
    let u_acc = T::ACC_U * (64.0 + 2.0 * (k as f64).sqrt());
    // Every element of short outputs, a sample (ends included) of long ones.
    let rows: Vec<usize> = if len_y <= 512 {
        (0..len_y).collect()
    } else {
        let mut r: Vec<usize> = (0..256).map(|_| rng.next_u64() as usize % len_y).collect();
        r.extend([0, len_y - 1]);
        r
    };
    let mut worst = 0.0f64;
    for i in rows {
        let (mut acc, mut mag) = (0.0f64, 0.0f64);
        for p in 0..k {
            let a = if c.trans == Transpose::N {
                ha[c.offset_a + i + p * c.lda]
            } else {
                ha[c.offset_a + p + i * c.lda]
            };
            let t = a.to_f64() * hx[vidx(p, len_x, c.incx)].to_f64();
            acc += t;
            mag += t.abs();
        }
        let at = vidx(i, len_y, c.incy);
        let y0 = if c.beta != 0.0 { hy[at].to_f64() } else { 0.0 };
        let reference = c.alpha * acc + c.beta * y0;
        let s = c.alpha.abs() * mag + (c.beta * y0).abs();
        let bound = u_acc * 1.25 * s + T::OUT_U * reference.abs() + T::OUT_TINY + 1e-30;
        let v = got[at].to_f64();
        let err = (v - reference).abs();
        if !v.is_finite() || err > bound {
            return Ok(CaseOutcome::Failed(format!(
                "y[{i}] = {v:e}, reference {reference:e}: error {err:.3e} > bound {bound:.3e}"
            )));
        }
        worst = worst.max(err / bound);
    }
    Ok(CaseOutcome::Passed(worst))
}

/// `cases` random GEMV cases for each element type (f32, f64, f16, bf16) drawn from `seed`, each
/// run twice and checked. With `large`, some matrices exceed the L2 cache (the row strips).
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = cudrv::selftest::fuzz::gemv(&stream, 77, 20, false)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn gemv(stream: &Arc<Stream>, seed: u64, cases: usize, large: bool) -> Result<Report> {
    let mut rng = Rng::new(seed ^ 0x6E3F);
    let mut report = Report {
        seed,
        ..Report::default()
    };
    for i in 0..cases * 4 {
        let case = GemvCase::random(&mut rng, large);
        let (ty, outcome) = match i % 4 {
            0 => ("f32", run_gemv::<f32>(stream, &case, &mut rng)?),
            1 => ("f64", run_gemv::<f64>(stream, &case, &mut rng)?),
            2 => ("f16", run_gemv::<f16>(stream, &case, &mut rng)?),
            _ => ("bf16", run_gemv::<bf16>(stream, &case, &mut rng)?),
        };
        let kind = format!("gemv_{ty}_{}", if case.trans == Transpose::N { 'n' } else { 't' });
        report.merge_case(&kind, &case.describe(ty), outcome);
    }
    Ok(report)
}
