//! The fuzz runs by family: each draws its cases from a seed with one of the `random_*_case`
//! functions of `draw` (the shapes that family's kernels and rules meet), runs each twice and
//! checks it against the f64 reference (the module docs of `fuzz` give the bound).

use std::sync::Arc;

use super::{
    random_b16_in_place_case, random_deep_case, random_gemm_case, random_in_place_case, random_mid_case,
    random_pair_case, random_skinny_case, random_stream_k_case, random_view_case, random_wave_case, run_typed,
    FuzzType, GemmCase, Report,
};
use crate::error::Result;
use crate::selftest::Rng;
use crate::stream::Stream;

/// `cases` random GEMM cases of type `ty` drawn from `seed`, each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::gemm(&stream, FuzzType::Tf32, 0xdead, 50, true)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn gemm(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize, large: bool) -> Result<Report> {
    run_drawn(stream, seed, ty as u64, cases, |rng| random_gemm_case(rng, ty, large))
}

/// `cases` GEMMs that `draw` makes, each run twice and checked, reported under `seed`. The
/// cases and their inputs come from one generator seeded by `seed` mixed with `salt`, a
/// number of the family's own (and the type's), so that two families or types given the same
/// seed draw different cases.
fn run_drawn(
    stream: &Arc<Stream>,
    seed: u64,
    salt: u64,
    cases: usize,
    mut draw: impl FnMut(&mut Rng) -> GemmCase,
) -> Result<Report> {
    let mut rng = Rng::new(seed ^ salt.wrapping_mul(0x9E37_79B9));
    let mut report = Report {
        seed,
        ..Report::default()
    };
    for _ in 0..cases {
        let case = draw(&mut rng);
        let (kernel, outcome) = run_typed(stream, &case, 2, &mut rng)?;
        report.merge_case(&kernel, &case.to_string(), outcome);
    }
    Ok(report)
}

/// `cases` random GEMMs with one short side from `seed` ([`random_skinny_case`]: the skinny
/// kernel's shapes), each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::skinny(&stream, FuzzType::F32, 0xbeef, 40)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn skinny(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 17, cases, |rng| random_skinny_case(rng, ty))
}

/// `cases` random f16, bf16 or tf32 decode steps on views past a 16-byte boundary from `seed`
/// ([`random_view_case`]: the sm_90 TMA kernel's maps from the boundary below), each run twice
/// and checked. Other types draw the same shapes and run them on their own kernels.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::views(&stream, FuzzType::F16, 0xbeef, 10)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn views(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 71, cases, |rng| random_view_case(rng, ty))
}

/// `cases` random GEMMs with long k over few output tiles from `seed` ([`random_deep_case`]: a
/// split of k through partial products, forced or automatic), each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::deep(&stream, FuzzType::F64, 0xbeef, 20)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn deep(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 29, cases, |rng| random_deep_case(rng, ty))
}

/// `cases` random mid-sized f16 or bf16 GEMMs over long k from `seed` ([`random_mid_case`]:
/// the automatic split in 2 parts on fast memory and its neighbours), each run twice and
/// checked. Other types draw the same shapes and run them on their own kernels.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::mid(&stream, FuzzType::Bf16, 0xbeef, 4)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn mid(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 83, cases, |rng| random_mid_case(rng, ty))
}

/// `cases` random f64 or exact f32 GEMMs on the DMMA stream-k kernels from `seed`
/// ([`random_stream_k_case`]), each run twice and checked (the two runs bit-identical: the
/// parts of a tile are added in block order).
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::stream_k(&stream, FuzzType::F64, 0xbeef, 4)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn stream_k(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 97, cases, |rng| random_stream_k_case(rng, ty))
}

/// `cases` random tall or wide GEMMs of one to three waves of output tiles over long k from
/// `seed` ([`random_wave_case`]), each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::waves(&stream, FuzzType::F32, 0xbeef, 4)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn waves(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 41, cases, |rng| random_wave_case(rng, ty))
}

/// `cases` random tf32 GEMMs whose register-fed operand is read in place by the wgmma kernels
/// from `seed` ([`random_in_place_case`]), each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz;
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::in_place(&stream, 0xbeef, 20)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn in_place(stream: &Arc<Stream>, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, 53, cases, random_in_place_case)
}

/// `cases` random f16, bf16 or tf32 GEMMs on the wgmma pairs from `seed`
/// ([`random_pair_case`]), each run twice and checked. The cases force the pairs' tiles on the
/// tensor-core family: other types run them on the tiles those knobs give them (f32 and f64 on
/// sm_90: the DMMA kernels' 128 x 128 and 128 x 64 tiles) or are refused, which the report
/// counts.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::pairs(&stream, FuzzType::Bf16, 0xbeef, 20)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn pairs(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 61, cases, |rng| random_pair_case(rng, ty))
}

/// `cases` random f16 or bf16 (`ty`) batches of small matrices whose operands are aligned only to
/// their element, at the short k where the wgmma kernels read them in place, from `seed`
/// ([`random_b16_in_place_case`]), each run twice and checked.
///
/// ```no_run
/// use cudrv::selftest::fuzz::{self, FuzzType};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let r = fuzz::b16_in_place(&stream, FuzzType::F16, 0xbeef, 20)?;
/// assert!(r.failures.is_empty(), "{r}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn b16_in_place(stream: &Arc<Stream>, ty: FuzzType, seed: u64, cases: usize) -> Result<Report> {
    run_drawn(stream, seed, ty as u64 + 97, cases, |rng| {
        random_b16_in_place_case(rng, ty)
    })
}
