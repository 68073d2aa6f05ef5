//! The selftest's checks of the bundled GEMV kernels, against an f64 CPU reference: every
//! kernel variant (type, op, 16-byte or element-wise loads, split reductions, clusters, row
//! strips).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::blas::{self, Transpose};
use crate::error::Result;
use crate::memory::{DeviceBuffer, DeviceSlice};
use crate::selftest::{letter_of, rel_error, Check, Element, Rng};
use crate::stream::Stream;

/// Runs the GEMV checks into `out`, and the kernels they covered into `covered`.
pub(crate) fn checks(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    // GEMV. lda a multiple of 16 bytes runs the 16-byte-load kernels (`gemv_nv`; for T
    // `gemv_tv1` on short columns over 16 or more per multiprocessor, 600 x 20 sms and f16's
    // 2048 x 3072, else `gemv_tv`;
    // pool buffers are 256-byte aligned and x is contiguous), lda = m + 1 the element-wise ones
    // (`gemv_n`, `gemv_t`). The short-and-wide N case splits its reduction (200000 columns over
    // one row block), so it also runs `gemv_finish`. On sm_90 a split whose row tiles' clusters
    // fit runs in the 8 blocks of a thread block cluster instead (`gemv_nvc`, `gemv_nc`: 2048 x
    // 3072, 2999 x 999 at lda 3001), or on the smallest odd products in 16 blocks of 64-row
    // tiles (`gemv_nc16`: 1000 x 777 at lda 1001), as the library decides it; 40000 x 64 fills
    // the device unsplit, so `gemv_nv` itself stays checked there. An N case whose A would take
    // the row strips (larger than the L2 cache, strips filling a wave) is counted for the strip
    // kernel it runs.
    let sms = stream.context().limits().multiprocessor_count as usize;
    let l2 = stream.context().limits().l2_cache_bytes as usize;
    for (m, n, lda) in [
        (1000, 777, 1000),
        (1000, 777, 1001),
        (2999, 999, 3001),
        (33, 200_000, 33),
        (2048, 3072, 2048),
        (5000, 300, 5000),
        (600, 20 * sms, 600),
        // Enough row tiles to fill the device unsplit: `gemv_nv` itself on sm_90 too.
        (40_000, 64, 40_000),
    ] {
        for trans in [Transpose::N, Transpose::T] {
            for (t, tol) in [("f32", 1e-5), ("f64", 1e-12), ("f16", 2e-2), ("bf16", 2e-2)] {
                let ((result, strip, cluster), vec) = match t {
                    "f32" => (gemv_with_route::<f32>(stream, rng, trans, (m, n, lda)), 4),
                    "f64" => (gemv_with_route::<f64>(stream, rng, trans, (m, n, lda)), 2),
                    "f16" => (gemv_with_route::<half::f16>(stream, rng, trans, (m, n, lda)), 8),
                    _ => (gemv_with_route::<half::bf16>(stream, rng, trans, (m, n, lda)), 8),
                };
                let wide = if lda % vec == 0 { "v" } else { "" };
                let name = match strip {
                    Some(s) => s.kernel(t),
                    // Aligned T: one warp per column up to TV1_MAX_ROWS rows, four beyond.
                    None if trans == Transpose::T && !wide.is_empty() => {
                        format!("gemv_{}_{t}", crate::blas::t_vector_kernel(m, n, 16 / vec, sms))
                    }
                    None => format!("gemv_{}{wide}{cluster}_{t}", letter_of(trans)),
                };
                // The N product of 200,000 columns ends in the finishing kernel.
                let finish = (trans == Transpose::N && n == 200_000).then(|| format!("gemv_finish_{t}"));
                let check = Check::new(name.clone(), format!("{m}x{n} lda {lda}"), tol, result);
                check.record(out, covered, std::iter::once(name).chain(finish));
            }
        }
    }
    strip_checks::<f32>(stream, rng, 1e-5, (sms, l2), out, covered);
    strip_checks::<f64>(stream, rng, 1e-12, (sms, l2), out, covered);
    strip_checks::<half::f16>(stream, rng, 2e-2, (sms, l2), out, covered);
    strip_checks::<half::bf16>(stream, rng, 2e-2, (sms, l2), out, covered);
}

fn gemv_case<T: Element + blas::GemvType>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    trans: Transpose,
    m: usize,
    n: usize,
    lda: usize,
) -> Result<f64> {
    gemv_case_on::<T>(stream, rng, trans, (m, n, lda), None)
}

/// [`gemv_case`], op N on the row strips `strips` where they are named.
fn gemv_case_on<T: Element + blas::GemvType>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    trans: Transpose,
    (m, n, lda): (usize, usize, usize),
    strips: Option<blas::Strips>,
) -> Result<f64> {
    let (lx, ly) = if trans == Transpose::N { (n, m) } else { (m, n) };
    let a: Vec<T> = rng.vec((n - 1) * lda + m, -1.0, 1.0);
    let x: Vec<T> = rng.vec(lx, -1.0, 1.0);
    let y0: Vec<T> = rng.vec(ly, -1.0, 1.0);
    let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
    let mut want = vec![0.0; ly];
    for (r, w) in want.iter_mut().enumerate() {
        let dot: f64 = (0..lx)
            .map(|c| {
                let av = if trans == Transpose::N {
                    a[r + c * lda]
                } else {
                    a[c + r * lda]
                };
                av.to_f64() * x[c].to_f64()
            })
            .sum();
        *w = alpha.to_f64() * dot + beta.to_f64() * y0[r].to_f64();
    }
    let da = DeviceBuffer::from_slice(stream, &a)?;
    let dx = DeviceBuffer::from_slice(stream, &x)?;
    let mut dy = DeviceBuffer::from_slice(stream, &y0)?;
    match strips {
        Some(s) => blas::gemv_on_strips(m, n, alpha, &da, lda, &dx, beta, &mut dy, s)?,
        None => blas::gemv(trans, m, n, alpha, &da, lda, &dx, 1, beta, &mut dy, 1)?,
    }
    let got: Vec<f64> = dy.to_vec()?.into_iter().map(T::to_f64).collect();
    Ok(rel_error(&got, &want))
}

/// A GEMV check, and for op N the row-strip kernel the library picks for it on this device
/// (pool buffers are 256-byte aligned) and the cluster it runs its split in, as the kernel
/// name's suffix after `gemv_n` / `gemv_nv` (`c`: `gemv_nvc` for columns 16-byte aligned;
/// `c16` or `c`: `gemv_nc16` or `gemv_nc` else; empty without a cluster or with strips).
fn gemv_with_route<T: Element + blas::GemvType>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    trans: Transpose,
    (m, n, lda): (usize, usize, usize),
) -> (Result<f64>, Option<blas::Strips>, &'static str) {
    let ctx = stream.context();
    let strip = if trans == Transpose::N {
        blas::row_strips::<T>(ctx, m, n, 256, lda)
    } else {
        None
    };
    let cluster = if trans == Transpose::N && strip.is_none() {
        if lda % (16 / std::mem::size_of::<T>()) == 0 {
            blas::vector_n_in_cluster::<T>(ctx, m, n, lda)
                .unwrap_or(false)
                .then_some("c")
        } else {
            blas::element_n_cluster::<T>(ctx, m, n).unwrap_or(None).map(|k| &k[1..])
        }
    } else {
        None
    };
    (
        gemv_case::<T>(stream, rng, trans, m, n, lda),
        strip,
        cluster.unwrap_or(""),
    )
}

/// The row-strip N kernels of `T`: for each lane width, a shape that gives 3/4 of a wave of
/// strips of that width (the next narrower lanes would make 1.5 waves), with a partial last
/// strip; the fallback lanes (f32's one element) on an odd lda.
fn strip_checks<T: Element + blas::GemvType>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    tol: f64,
    (sms, l2): (usize, usize),
    out: &mut Vec<Check>,
    covered: &mut BTreeSet<String>,
) {
    let (sz, t) = (std::mem::size_of::<T>(), <T as blas::GemvType>::NAME);
    // A check of kernel `name`, which counts as covered when it passed.
    let mut record = |name: String, case: String, result: Result<f64>| {
        Check::new(name.clone(), case, tol, result).record(out, covered, [name]);
    };
    // The cluster sizes the strips are also forced over (sm_90).
    let clusters = if stream.context().compute_capability() >= (9, 0) {
        &blas::STRIP_CLUSTERS[..]
    } else {
        &[]
    };
    let lanes = T::STRIP_LANES.iter().map(|&b| (b, false));
    for (bytes, odd) in lanes.chain(T::STRIP_FALLBACK.iter().map(|&b| (b, true))) {
        let lda_for = |m: usize| if odd { m | 1 } else { m.next_multiple_of(bytes / sz) };
        let m = 32 * bytes / sz * (3 * sms / 4).max(1) - 3;
        let lda = lda_for(m);
        // At least 2048 columns, and A larger than the L2 cache (the strips' condition).
        let n = 2048.max(l2 / (lda * sz) + 2);
        let (result, kernel, _) = gemv_with_route::<T>(stream, rng, Transpose::N, (m, n, lda));
        let name = kernel.map_or("gemv (row strips not chosen)".to_string(), |s| s.kernel(t));
        record(name, format!("{m}x{n} lda {lda}"), result);
        // Each strip kernel of these lanes forced, plain and (sm_90) split over each cluster
        // size: 5 strips, the last one partial, over 4099 columns (ranges of unequal length).
        let m = 32 * bytes / sz * 5 - 3;
        let lda = lda_for(m);
        for cluster in std::iter::once(1).chain(clusters.iter().copied()) {
            let strips = blas::Strips {
                bytes,
                strips: 5,
                cluster,
            };
            let result = gemv_case_on::<T>(stream, rng, Transpose::N, (m, 4099, lda), Some(strips));
            record(strips.kernel(t), format!("{m}x4099 lda {lda}, forced"), result);
        }
    }
}
