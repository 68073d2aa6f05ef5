//! Randomized differential GPU tests of `cudrv::blas` (`cudrv::selftest::fuzz`): thousands of
//! seeded GEMM cases over every type (f32, tf32, f16, bf16, f64, f32 in MathMode::Tf32x3), op pair, layout, alignment,
//! leading dimension, batch layout, alpha/beta, bias and activation, tile and k split, each run
//! twice (bit-identical) and checked entry by entry against an f64 CPU reference; GEMV likewise.
//!
//! Seeds: a fixed list plus one fresh seed per run, each printed. `CUDRV_FUZZ_SEEDS=0x1234,99`
//! replays exactly those seeds; `CUDRV_FUZZ_CASES=N` sets the GEMM cases per type and seed
//! (default 150; the GEMV cases per type and seed are a third of that).
//!
//! Without a GPU every test reports itself skipped; with `REQUIRE_GPU=1` that is a failure.

#[path = "support/gpu.rs"]
mod gpu;

use std::io::Write;
use std::time::Instant;

use cudrv::blas::{Activation, Kernel, Layout, SplitK, Tile, Transpose};
use cudrv::selftest::fuzz::{self, FuzzType, GemmCase, Report};

/// The GEMM types, in the order the multi-type tests run them.
const EVERY_TYPE: [FuzzType; 5] = [
    FuzzType::F32,
    FuzzType::Tf32,
    FuzzType::F64,
    FuzzType::F16,
    FuzzType::Bf16,
];

/// Seeds every run checks.
const FIXED_SEEDS: [u64; 2] = [0x5EED_0001, 0x2026_1124];

/// Written past libtest's capture, so the seeds show in every log.
fn say(line: &str) {
    let _ = std::io::stdout().lock().write_all(format!("{line}\n").as_bytes());
}

fn parse_seed(s: &str) -> u64 {
    let s = s.trim();
    let v = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    v.unwrap_or_else(|_| panic!("CUDRV_FUZZ_SEEDS: `{s}` is not a number"))
}

/// The seeds of this run: CUDRV_FUZZ_SEEDS, or the fixed ones and a fresh one.
fn seeds() -> Vec<u64> {
    if let Ok(list) = std::env::var("CUDRV_FUZZ_SEEDS") {
        return list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(parse_seed)
            .collect();
    }
    let fresh = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
        ^ (std::process::id() as u64).rotate_left(32);
    let mut s = FIXED_SEEDS.to_vec();
    s.push(fresh);
    s
}

fn cases() -> usize {
    std::env::var("CUDRV_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

fn check(what: &str, reports: Vec<Report>) {
    let mut failed = 0;
    let mut total = 0;
    for r in &reports {
        say(format!("{what}: {r}").trim_end());
        failed += r.failures.len();
        total += r.cases;
    }
    let mut kernels = std::collections::BTreeMap::new();
    for r in &reports {
        for (k, n) in &r.kernels {
            *kernels.entry(k.clone()).or_insert(0) += n;
        }
    }
    say(&format!(
        "{what}: {total} cases over {} kernels: {kernels:?}",
        kernels.len()
    ));
    assert_eq!(
        failed,
        0,
        "{what}: {failed} of {total} cases failed; replay with CUDRV_FUZZ_SEEDS={}",
        reports
            .iter()
            .map(|r| format!("{:#x}", r.seed))
            .collect::<Vec<_>>()
            .join(",")
    );
}

/// A column-major product of tight operands, alpha 1, the given beta, automatic choices.
fn plain_case(ty: FuzzType, ops: (Transpose, Transpose), dims: (usize, usize, usize), beta: f64) -> GemmCase {
    GemmCase {
        ty,
        ops,
        dims,
        layout: Layout::ColMajor,
        ld_pad: [0; 3],
        batch: 1,
        strides: (None, None, 0),
        offsets: [0; 3],
        scalars: (1.0, beta),
        bias: false,
        act: Activation::None,
        knobs: (Kernel::Auto, Tile::Auto, SplitK::Auto),
        tf32_exact_inputs: false,
    }
}

/// The GEMM fuzz of `ty` over every seed of [`seeds`], on a new stream of `ctx`: its reports and
/// the seconds it took.
fn gemm_reports(ctx: &std::sync::Arc<cudrv::Context>, ty: FuzzType) -> (Vec<Report>, f64) {
    let stream = ctx.new_stream().expect("stream");
    let start = Instant::now();
    let reports = seeds()
        .into_iter()
        .map(|seed| fuzz::gemm(&stream, ty, seed, cases(), true).expect("fuzz run"))
        .collect();
    (reports, start.elapsed().as_secs_f64())
}

fn gemm_fuzz(name: &str, ty: FuzzType) {
    let Some(ctx) = gpu!(name) else { return };
    let (reports, secs) = gemm_reports(&ctx, ty);
    check(&format!("{name} ({secs:.1} s)"), reports);
}

#[test]
fn gemm_fuzz_f32() {
    gemm_fuzz("gemm_fuzz_f32", FuzzType::F32);
}

#[test]
fn gemm_fuzz_tf32() {
    gemm_fuzz("gemm_fuzz_tf32", FuzzType::Tf32);
}

/// f32 in `MathMode::Tf32x3`: both its routes must have run (the split and its tf32 product, on
/// a device with tf32 tensor cores, and the exact kernels), within f32's bound plus the split's.
#[test]
fn gemm_fuzz_f32x3() {
    let Some(ctx) = gpu!("gemm_fuzz_f32x3") else { return };
    let (reports, secs) = gemm_reports(&ctx, FuzzType::F32x3);
    let ran = |prefix: &str| {
        reports
            .iter()
            .flat_map(|r| r.kernels.keys())
            .any(|k| k.starts_with(prefix))
    };
    // The exact kernels: the CUDA cores, or the f64 tensor cores where exact f32 runs on them.
    let (split, exact) = (
        ran("gemm_split_tf32x3+"),
        ran("gemm_simt_f32") || ran("gemm_dmma90_f32"),
    );
    check(&format!("gemm_fuzz_f32x3 ({secs:.1} s)"), reports);
    if ctx.compute_capability() >= (8, 0) {
        assert!(split, "no case ran the tf32x3 split");
    }
    assert!(exact, "no case ran the exact kernels");
}

#[test]
fn gemm_fuzz_f16() {
    gemm_fuzz("gemm_fuzz_f16", FuzzType::F16);
}

#[test]
fn gemm_fuzz_bf16() {
    gemm_fuzz("gemm_fuzz_bf16", FuzzType::Bf16);
}

/// f64, and on compute capability 9.0 (with at least 100 cases per seed) also the 8-byte
/// variants of the square DMMA tiles (`su`, `mu`, ...: unaligned operands read in place) must
/// have run.
#[test]
fn gemm_fuzz_f64() {
    let Some(ctx) = gpu!("gemm_fuzz_f64") else { return };
    let (reports, secs) = gemm_reports(&ctx, FuzzType::F64);
    let eight_byte = ["lu", "mu", "su", "uu", "s2u", "u2u"]
        .iter()
        .filter(|t| {
            reports
                .iter()
                .any(|r| r.kernels.keys().any(|k| k.contains(&format!("gemm_dmma90_f64_{t}_"))))
        })
        .count();
    check(&format!("gemm_fuzz_f64 ({secs:.1} s)"), reports);
    // With the default 150 cases per seed all six run; a short run (CUDRV_FUZZ_CASES) may
    // draw fewer unaligned cases.
    if ctx.compute_capability() >= (9, 0) && cases() >= 100 {
        assert!(
            eight_byte >= 3,
            "only {eight_byte} of the square tiles' 8-byte variants ran"
        );
    }
}

/// f32 GEMMs with one short side on the skinny kernel: both orientations, with and without its
/// split of k, operands at odd element offsets (and, for operands it does not take, the tiled
/// kernels); the kernel must have run each way.
#[test]
fn gemm_fuzz_skinny() {
    let Some(ctx) = gpu!("gemm_fuzz_skinny") else { return };
    let stream = ctx.new_stream().expect("stream");
    let start = Instant::now();
    let reports: Vec<Report> = seeds()
        .into_iter()
        .map(|seed| fuzz::skinny(&stream, FuzzType::F32, seed, cases() / 2).expect("fuzz run"))
        .collect();
    let ran = |want: &dyn Fn(&str) -> bool| {
        reports
            .iter()
            .any(|r| r.kernels.keys().any(|k| k.starts_with("gemm_skinny_") && want(k)))
    };
    let (plain, split) = (ran(&|k| !k.contains("/split")), ran(&|k| k.contains("/split")));
    // Its `u` kernel: an operand one element into its buffer.
    let any = ran(&|k| k.contains("s2u"));
    check(
        &format!("gemm_fuzz_skinny f32 ({:.1} s)", start.elapsed().as_secs_f64()),
        reports,
    );
    assert!(
        plain && split && any,
        "the skinny kernel ran unsplit {plain}, split {split}, on unaligned operands {any}"
    );
}

/// GEMMs with one short side (2 to 16) on the thin tiles: f64 (DMMA), f16, bf16 and tf32
/// (mma.sync), any op pair and layout, automatic and forced [`Tile::Thin`], f64 with and without
/// a split of k through partial products, views at odd offsets: each type must have run both of
/// its thin tiles (16 x 64 for a short m of the kernels' row-major D, 64 x 16 for a short n), f64
/// also their variants for operands aligned only to their element; f16, bf16 and tf32 on compute
/// capability 9.0 also the TMA-fed decode kernel (`gemm_skinny90_<t>`), on aligned operands and
/// on views both the same number of bytes past a 16-byte boundary.
#[test]
fn gemm_fuzz_thin() {
    let Some(ctx) = gpu!("gemm_fuzz_thin") else { return };
    let stream = ctx.new_stream().expect("stream");
    for (ty, prefix) in [
        (FuzzType::F64, "gemm_dmma90_f64"),
        (FuzzType::F16, "gemm_tc_f16"),
        (FuzzType::Bf16, "gemm_tc_bf16"),
        (FuzzType::Tf32, "gemm_tc_tf32"),
    ] {
        if ty == FuzzType::F64 && ctx.compute_capability() < (9, 0) {
            println!("gemm_fuzz_thin f64: skipped (its thin tiles need compute capability 9.0)");
            continue;
        }
        let start = Instant::now();
        let mut reports: Vec<Report> = seeds()
            .into_iter()
            .map(|seed| fuzz::skinny(&stream, ty, seed, cases() / 2).expect("fuzz run"))
            .collect();
        let ran = |tile: &str| {
            reports
                .iter()
                .any(|r| r.kernels.keys().any(|k| k.contains(&format!("{prefix}_{tile}_"))))
        };
        let (rows, cols) = (ran("t"), ran("h"));
        // The variants for operands aligned only to their element (f64: 8-byte copies; f16,
        // bf16, tf32: rows read from their start rounded down to 16 bytes).
        let unaligned = ran("tu") && ran("hu");
        // f16, bf16 and tf32 on compute capability 9.0: decode steps with both operands
        // k-contiguous and aligned for the TMA take the TMA-fed kernel (gemm_skinny90_<t>).
        let sm90 = ty != FuzzType::F64 && ctx.compute_capability() >= (9, 0);
        let tma = !sm90
            || reports
                .iter()
                .any(|r| r.kernels.keys().any(|k| k.starts_with("gemm_skinny90_")));
        // ... and so do such steps on views past a 16-byte boundary, both as far in (half of
        // them with the short side the caller's m, which the kernel always takes).
        if sm90 {
            reports.extend(
                seeds()
                    .into_iter()
                    .map(|seed| fuzz::views(&stream, ty, seed, (cases() / 10).max(8)).expect("fuzz run")),
            );
        }
        let views = !sm90
            || reports.iter().any(|r| {
                r.kernels
                    .keys()
                    .any(|k| k.starts_with("gemm_skinny90_") && k.ends_with("/view"))
            });
        check(
            &format!("gemm_fuzz_thin {} ({:.1} s)", ty.name(), start.elapsed().as_secs_f64()),
            reports,
        );
        assert!(
            rows && cols && unaligned && tma && views,
            "{}: the thin tiles ran: 16 x 64 {rows}, 64 x 16 {cols}, unaligned {unaligned}; the TMA-fed \
             decode kernel (sm_90 f16 / bf16 / tf32) {tma}, on views past a 16-byte boundary {views}",
            ty.name()
        );
    }
}

/// GEMMs with long k over few output tiles, split through partial products (forced and
/// automatic) in every type (f16 and bf16 with f32 partial sums): every type must have run the
/// split. f16 and bf16 on compute capability 9.0 also mid-sized products over long k, which fast
/// memory splits in 2 parts on wgmma.
#[test]
fn gemm_fuzz_partials() {
    let Some(ctx) = gpu!("gemm_fuzz_partials") else { return };
    let stream = ctx.new_stream().expect("stream");
    for ty in EVERY_TYPE {
        let start = Instant::now();
        let reports: Vec<Report> = seeds()
            .into_iter()
            .map(|seed| fuzz::deep(&stream, ty, seed, cases() / 5).expect("fuzz run"))
            .collect();
        let split = reports
            .iter()
            .any(|r| r.kernels.keys().any(|k| k.contains("/partials")));
        // f16 and bf16 split on both kernel families that write f32 partial sums (wgmma's on
        // compute capability 9.0).
        let wgmma_split = reports.iter().any(|r| {
            r.kernels
                .keys()
                .any(|k| k.starts_with("gemm_wg_") && k.contains("/partials"))
        });
        let hopper = ctx.compute_capability() >= (9, 0);
        check(
            &format!(
                "gemm_fuzz_partials {} ({:.1} s)",
                ty.name(),
                start.elapsed().as_secs_f64()
            ),
            reports,
        );
        assert!(split, "{}: no case ran a split through partial products", ty.name());
        if hopper && matches!(ty, FuzzType::F16 | FuzzType::Bf16) {
            assert!(wgmma_split, "{}: no case split on the wgmma kernels", ty.name());
            // Mid-sized products over long k: on every memory (H100 and H200) the automatic
            // choice splits most of them in 2 parts on wgmma.
            let start = Instant::now();
            let mid: Vec<Report> = seeds()
                .into_iter()
                .map(|seed| fuzz::mid(&stream, ty, seed, (cases() / 50).max(3)).expect("fuzz run"))
                .collect();
            let halves = mid.iter().any(|r| {
                r.kernels
                    .keys()
                    .any(|k| k.contains("gemm_wg_") && k.contains("/partials2"))
            });
            check(
                &format!(
                    "gemm_fuzz_partials mid {} ({:.1} s)",
                    ty.name(),
                    start.elapsed().as_secs_f64()
                ),
                mid,
            );
            assert!(halves, "{}: no mid-sized product split in 2 parts on wgmma", ty.name());
        }
    }
}

#[test]
fn gemv_fuzz_every_type() {
    let Some(ctx) = gpu!("gemv_fuzz_every_type") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    let reports = seeds()
        .into_iter()
        .map(|seed| fuzz::gemv(&stream, seed, cases() / 3, true).expect("fuzz run"))
        .collect();
    check("gemv_fuzz_every_type", reports);
}

#[test]
fn wgmma_race_shapes_repeat() {
    let Some(ctx) = gpu!("wgmma_race_shapes_repeat") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    use FuzzType::{Bf16, Tf32, F16};
    use Transpose::{N, T};
    type Shape = (FuzzType, (Transpose, Transpose), (usize, usize, usize));
    let shapes: &[Shape] = &[
        (F16, (N, N), (128, 11008, 4096)),
        (F16, (T, N), (128, 11008, 4096)),
        (Bf16, (N, N), (128, 11008, 4096)),
        (F16, (N, T), (3640, 3952, 1584)),
        (F16, (T, N), (4896, 3336, 3224)),
        (F16, (T, T), (2616, 1440, 1968)),
        (Bf16, (N, T), (2352, 4840, 792)),
        (Tf32, (N, N), (3000, 5000, 700)),
        (Tf32, (N, N), (1648, 7488, 72)),
        (Tf32, (N, N), (3264, 11456, 3088)),
        (Tf32, (N, N), (5160, 8352, 3048)),
        (Tf32, (T, N), (3456, 2224, 640)),
        (Tf32, (T, N), (824, 5472, 1184)),
        (Tf32, (T, T), (1192, 3984, 5320)),
        (Bf16, (T, N), (4664, 3920, 248)),
        (F16, (N, T), (600, 4088, 176)),
        (F16, (N, T), (4472, 488, 192)),
        (Bf16, (N, T), (1368, 3872, 432)),
        // A language model's output layer at decode: vocabulary x 64 tokens x hidden.
        (Tf32, (N, N), (151936, 64, 3584)),
        // The 64-row tiles (one consumer warpgroup): 64 x 96 (f16 TN, tf32) and 64 x 64.
        (F16, (T, N), (768, 1024, 3072)),
        (Bf16, (T, N), (4096, 128, 4096)),
        (F16, (N, N), (128, 4096, 4096)),
        (Tf32, (N, N), (768, 1024, 3072)),
        (Tf32, (N, N), (1000, 504, 1000)),
    ];
    let mut reports = Vec::new();
    for (i, &(ty, ops, dims)) in shapes.iter().enumerate() {
        for beta in [0.0, 0.5] {
            let case = plain_case(ty, ops, dims, beta);
            reports.push(fuzz::gemm_case(&stream, &case, 20, 0xACE0 + i as u64).expect("case"));
        }
    }
    check("wgmma_race_shapes_repeat", reports);
}

/// Tall and wide GEMMs of one to three waves of output tiles over long k (`fuzz::waves`) in
/// every type, and two fixed products that f32 splits over `v` tiles past a wave of them
/// (22016 x 128 x 4096 in 3 parts): the f32 split must have run. f64 and f32 also run fixed
/// products that the DMMA tiles split in 2 on 32 x 32 tiles by the pairs' model (`dmma90_tile`),
/// which must have run there on a device of 132 multiprocessors, and f32 two products with a
/// short side whose unaligned operands the DMMA tiles must read in place (no aligned copy).
#[test]
fn gemm_fuzz_waves() {
    let Some(ctx) = gpu!("gemm_fuzz_waves") else { return };
    let stream = ctx.new_stream().expect("stream");
    for ty in EVERY_TYPE {
        let start = Instant::now();
        let per_seed = if ty == FuzzType::F32 {
            cases() / 15
        } else {
            cases() / 40
        };
        let run_seeds = seeds();
        let mut reports: Vec<Report> = run_seeds
            .iter()
            .map(|&seed| fuzz::waves(&stream, ty, seed, per_seed.max(1)).expect("fuzz run"))
            .collect();
        if ty == FuzzType::F32 {
            use Transpose::{N, T};
            // Past a wave of tiles: aligned operands split k over w tiles (3 parts on the H100),
            // leading dimensions one longer over v tiles (3 parts); on the CUDA cores, which a
            // Hopper's automatic choice leaves for its f64 tensor cores.
            let cases = [
                ((N, N), (22016, 128, 4096), [0; 3]),
                ((T, N), (11008, 256, 4096), [0; 3]),
                ((N, N), (22016, 128, 4096), [1, 1, 0]),
                ((T, N), (11008, 256, 4096), [1, 1, 0]),
            ];
            for (i, (ops, dims, ld_pad)) in cases.into_iter().enumerate() {
                let case = GemmCase {
                    ld_pad,
                    knobs: (Kernel::Simt, Tile::Auto, SplitK::Auto),
                    ..plain_case(ty, ops, dims, 0.5)
                };
                reports.push(fuzz::gemm_case(&stream, &case, 2, 0x3A7E + i as u64).expect("case"));
            }
        }
        if ty == FuzzType::Tf32 {
            use Transpose::{N, T};
            // Rows an odd multiple of 16 bytes apart (4016 bytes), read where they lie: the
            // automatic choice takes 128 x 128 over 128 x 64 (`odd_line_rows`), tt and the
            // swapped nn; also leading dimensions 4 longer than 1000-element rows.
            let cases = [
                ((N, N), (1004, 1004, 1004), [0; 3]),
                ((T, T), (1004, 1004, 3004), [0; 3]),
                ((N, N), (1004, 1004, 500), [0; 3]),
                ((T, T), (1000, 1000, 1000), [4, 4, 0]),
                ((N, N), (1000, 1000, 1000), [4, 4, 4]),
            ];
            // Inputs from the run's last seed (the fresh one unless replayed; each report prints it).
            let seed = run_seeds.last().copied().unwrap_or(0x11E5);
            for (i, (ops, dims, ld_pad)) in cases.into_iter().enumerate() {
                let case = GemmCase {
                    ld_pad,
                    ..plain_case(ty, ops, dims, 0.5)
                };
                reports.push(fuzz::gemm_case(&stream, &case, 2, seed ^ i as u64).expect("case"));
            }
            for kernel in ["gemm_wg_tf32_l_nn", "gemm_wg_tf32_l_tt"] {
                let ran = reports.iter().any(|r| r.kernels.keys().any(|k| k.starts_with(kernel)));
                assert!(ran, "tf32: no straddling-row case ran {kernel}");
            }
        }
        // The DMMA rules below are an H100's / H200's: compute capability 9.0 with fast f64
        // units (exact f32 runs on them) and 132 multiprocessors (the rounds of the model).
        let h100 = ctx.compute_capability() == (9, 0) && ctx.limits().multiprocessor_count == 132;
        if matches!(ty, FuzzType::F64 | FuzzType::F32) {
            use Transpose::{N, T};
            // Products that must run a given DMMA kernel (f32 only where marked): the kernel's
            // letters after `gemm_dmma90_<type>_`, `u` for the 32 x 32 tile unsplit (aligned or
            // its element variant), or "in place" for no aligned copy first.
            // - u2 where the pairs' model puts it ahead of s2: a short side over 64-wide tiles,
            //   one round of pairs against two of u, leading dimensions one longer; f32 from a
            //   smaller margin. And one to one and a half waves of u tiles (`U2_OVER_U_MAX_BUSIEST`).
            // - Exact f32 on whole u tiles where s2 leaves slots empty (`F32_U_OVER_S2_MAX_FILL`):
            //   aligned, and copied aligned.
            // - Exact f32 with a short side over long k and unaligned rows: the element variants
            //   read in place (`F32_ELEMENT_SIDE`).
            // - The element variants in three blocks per multiprocessor over short k (`element_q`).
            // (f32 only, ops, m x n x k, ld_pad, the kernel it must run)
            type DmmaCase = (
                bool,
                (Transpose, Transpose),
                (usize, usize, usize),
                [usize; 3],
                &'static str,
            );
            let cases: [DmmaCase; 11] = [
                (false, (N, N), (600, 400, 2500), [0; 3], "u2"),
                (false, (T, T), (28, 4386, 3703), [0; 3], "u2"),
                (false, (N, T), (1061, 224, 1549), [1, 1, 0], "u2"),
                (false, (N, N), (216, 665, 3590), [0; 3], "u2"),
                (false, (T, T), (619, 275, 1130), [1, 1, 0], "u2"),
                (true, (T, N), (1691, 162, 1636), [0; 3], "u2"),
                (true, (N, N), (64, 5664, 1776), [0; 3], "u"),
                (true, (T, T), (1249, 271, 2524), [0; 3], "u"),
                (true, (T, T), (26, 6083, 1438), [0; 3], "in place"),
                (true, (N, N), (4878, 22, 3977), [0; 3], "in place"),
                (false, (N, N), (3826, 373, 195), [0; 3], "qu"),
            ];
            let prefix = format!("gemm_dmma90_{}_", ty.name());
            // "in place": every kernel the case ran is a DMMA one (no aligned copy in any run);
            // otherwise some run took the named kernel.
            let ran = |report: &Report, want: &str| {
                let mut keys = report.kernels.keys();
                match want {
                    "in place" => keys.all(|k| k.starts_with(&prefix)),
                    "u" => keys.any(|k| k.contains(&format!("{prefix}u_")) || k.contains(&format!("{prefix}uu_"))),
                    letters => keys.any(|k| k.contains(&format!("{prefix}{letters}"))),
                }
            };
            let seed = run_seeds.last().copied().unwrap_or(0x0B2);
            let cases = cases.into_iter().filter(|c| !c.0 || ty == FuzzType::F32);
            for (i, (_, ops, dims, ld_pad, want)) in cases.enumerate() {
                let case = GemmCase {
                    ld_pad,
                    ..plain_case(ty, ops, dims, 0.5)
                };
                let report = fuzz::gemm_case(&stream, &case, 2, seed ^ (0x0B2 + i as u64)).expect("case");
                let ran = ran(&report, want);
                assert!(
                    ran || !h100,
                    "{}: {ops:?} {dims:?} did not run {want}: {:?}",
                    ty.name(),
                    report.kernels
                );
                reports.push(report);
            }
        }
        let split_over = |tile: &str| {
            reports.iter().any(|r| {
                r.kernels
                    .keys()
                    .any(|k| k.starts_with(&format!("gemm_simt_f32_{tile}_")) && k.contains("/split"))
            })
        };
        let (v_split, w_split) = (split_over("v"), split_over("w"));
        check(
            &format!("gemm_fuzz_waves {} ({:.1} s)", ty.name(), start.elapsed().as_secs_f64()),
            reports,
        );
        if ty == FuzzType::F32 {
            assert!(v_split, "f32: no case split k over v tiles");
            assert!(w_split, "f32: no case split k over w tiles");
        }
    }
}

/// f64 and exact f32 GEMMs forced onto the DMMA stream-k kernels (`fuzz::stream_k`: Narrow with
/// 2-64 parts over 1 to about 190 tiles, k from 0), each run twice: on compute capability 9.0
/// both the 16-byte kernels (`k`) and the element variants (`ku`) must have run. (No automatic
/// choice takes stream-k.)
#[test]
fn gemm_fuzz_stream_k() {
    let Some(ctx) = gpu::sm90("gemm_fuzz_stream_k", "the sm_90 DMMA kernels") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    for ty in [FuzzType::F64, FuzzType::F32] {
        let start = Instant::now();
        let reports: Vec<Report> = seeds()
            .into_iter()
            .map(|seed| fuzz::stream_k(&stream, ty, seed, (cases() / 3).max(4)).expect("fuzz run"))
            .collect();
        let ran = |tile: &str| {
            let name = format!("gemm_dmma90_{}_{tile}_", ty.name());
            reports.iter().any(|r| r.kernels.keys().any(|k| k.contains(&name)))
        };
        let (whole, element) = (ran("k"), ran("ku"));
        check(
            &format!(
                "gemm_fuzz_stream_k {} ({:.1} s)",
                ty.name(),
                start.elapsed().as_secs_f64()
            ),
            reports,
        );
        assert!(whole && element, "{}: stream-k ran: k {whole}, ku {element}", ty.name());
    }
}

/// tf32 GEMMs whose m- or n-contiguous operand has rows that are not 16 bytes apart
/// (`fuzz::in_place`), on the wgmma kernels that read it in place: each of the tiles 128 x 64
/// (also split), 128 x 256, 128 x 192, 64 x 64 and 64 x 96 must have read it in place, in the
/// `tt` kernels and the swapped `nn` ones. Needs compute capability 9.0.
#[test]
fn gemm_fuzz_tf32_in_place() {
    let Some(ctx) = gpu::sm90("gemm_fuzz_tf32_in_place", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    let start = Instant::now();
    let reports: Vec<Report> = seeds()
        .into_iter()
        .map(|seed| fuzz::in_place(&stream, seed, cases() / 2).expect("fuzz run"))
        .collect();
    let ran = |what: &str| {
        reports
            .iter()
            .any(|r| r.kernels.keys().any(|k| k.contains(what) && k.ends_with("/x-in-place")))
    };
    let missing: Vec<String> = ["n", "w", "b", "h", "m"]
        .iter()
        .flat_map(|t| [format!("gemm_wg_tf32_{t}_tt"), format!("gemm_wg_tf32_{t}_nn")])
        .chain(["/split".to_string()])
        .filter(|w| !ran(w))
        .collect();
    check(
        &format!("gemm_fuzz_tf32_in_place ({:.1} s)", start.elapsed().as_secs_f64()),
        reports,
    );
    assert!(missing.is_empty(), "never read X in place: {missing:?}");
}

/// f16, bf16 and tf32 GEMMs on the wgmma pairs (`fuzz::pairs`: two blocks of a cluster share
/// X's loads through the TMA's multicast, `pair_rule` in ptx/gemm_wg.cuh), which
/// compute-sanitizer cannot check: both pair tiles of every type must have run. Needs compute
/// capability 9.0.
#[test]
fn gemm_fuzz_pairs() {
    let Some(ctx) = gpu::sm90("gemm_fuzz_pairs", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    for (ty, name) in [
        (FuzzType::F16, "f16"),
        (FuzzType::Bf16, "bf16"),
        (FuzzType::Tf32, "tf32"),
    ] {
        let start = Instant::now();
        let reports: Vec<Report> = seeds()
            .into_iter()
            .map(|seed| fuzz::pairs(&stream, ty, seed, (cases() / 5).max(4)).expect("fuzz run"))
            .collect();
        let missing: Vec<String> = ["p", "q"]
            .iter()
            .map(|t| format!("gemm_wg_{name}_{t}_"))
            .filter(|w| !reports.iter().any(|r| r.kernels.keys().any(|k| k.contains(w.as_str()))))
            .collect();
        check(
            &format!("gemm_fuzz_pairs {name} ({:.1} s)", start.elapsed().as_secs_f64()),
            reports,
        );
        assert!(missing.is_empty(), "{name}: never ran {missing:?}");
    }
}

/// f16 and bf16 batches of small matrices whose operands are aligned only to their element, at
/// short k (`fuzz::b16_in_place`), where the wgmma kernels read both operands in place through
/// cp.async granules shifted into the swizzled stages (ptx/gemm_wg_in_place.cuh), which
/// compute-sanitizer cannot follow into wgmma: every tile (64 x 64, 128 x 64) and op pair of each
/// type must have run. Needs compute capability 9.0.
#[test]
fn gemm_fuzz_b16_in_place() {
    let Some(ctx) = gpu::sm90("gemm_fuzz_b16_in_place", "the wgmma kernels") else {
        return;
    };
    let stream = ctx.new_stream().expect("stream");
    for (ty, name) in [(FuzzType::F16, "f16"), (FuzzType::Bf16, "bf16")] {
        let start = Instant::now();
        let reports: Vec<Report> = seeds()
            .into_iter()
            .map(|seed| fuzz::b16_in_place(&stream, ty, seed, (cases() / 2).max(8)).expect("fuzz run"))
            .collect();
        let missing: Vec<String> = ["h", "n"]
            .iter()
            .flat_map(|t| ["nn", "nt", "tn", "tt"].map(|o| format!("gemm_wgu_{name}_{t}_{o}")))
            .filter(|w| {
                !reports
                    .iter()
                    .any(|r| r.kernels.keys().any(|k| k.starts_with(w.as_str())))
            })
            .collect();
        check(
            &format!("gemm_fuzz_b16_in_place {name} ({:.1} s)", start.elapsed().as_secs_f64()),
            reports,
        );
        assert!(missing.is_empty(), "{name}: never ran {missing:?}");
    }
}
