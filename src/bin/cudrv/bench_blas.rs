//! `cudrv bench gemm` / `cudrv bench gemv`: cudrv's BLAS beside cuBLAS, measured in the same
//! process, on the same stream, with the same inputs.
//!
//! cuBLAS is loaded here, at run time, through libloading, only to compare; the cudrv library
//! never links or loads it. (The binary cannot use the crate's dev-dependencies, so the real
//! `cudarc` is available to the criterion benches only; loading `libcublas` by hand keeps
//! `cudrv bench` useful on a user's machine: they see the ratio on their own GPU.) Without
//! cuBLAS (none found, or `CUDRV_LIBCUBLAS` names a library that does not load) the table shows
//! cudrv's figures alone.
//!
//! Options: `--types f32,tf32,f16,bf16,f64` (gemm, and `f32x3`: f32 in `MathMode::Tf32x3`
//! against cuBLAS's exact f32, on request; gemv takes f32,f64,f16,bf16, default f32),
//! `--sizes 256,1024` (square sizes; gemv runs N at each and T up to 16384), `--no-skinny`,
//! `--suite` (gemm: the shape suite of `bench_suite.rs`, with a per-type summary; `--names` ends
//! each of its rows with the kernels cudrv ran), `--shapes 8192x8192x64,...` (gemm: m x n x k
//! shapes instead of `--sizes` and the skinny ones; with `--suite`, `MxNxKxB` adds a strided batch
//! of B and the shapes run as suite rows in place of the suite's cases; gemv: `MxN` or `MxNxLDA`,
//! each in N and T, instead of `--sizes`), `--trials N` (timed
//! batches, median reported), `--tiles auto,s,n,l,b,w,t` (gemm: force block tiles, one row each),
//! `--kernels auto,simt,tc,mma,wgmma` (gemm: force kernel families, one row each per tile; a
//! combination that does not apply prints `n/a`), `--splits auto,off,2,4,p16` (gemm: force how k
//! is split between blocks, one row each, `pN` through N partial products; the tile column shows
//! `/parts`), `--ops nn,nt,tn,tt` (gemm: op(A) op(B), column-major, one row each; default nn),
//! `--beta B` (gemm: C = A B + B C in both libraries, default 0; with |B| < 1 the repeated calls
//! stay bounded and both converge to the same C), `--epilogue bias,relu,gelu,sigmoid,tanh` (gemm:
//! one row each; cudrv runs `C = act(A B + bias)` fused, cuBLAS the plain `C = A B`, which a fused
//! epilogue can at best match; diff then compares cudrv's C with act(cuBLAS's C + bias) computed
//! on the host; `none`, the default, is the plain product in both).

use std::ffi::c_void;
use std::sync::Arc;

use cudrv::blas::{self, Activation, Gemm, Kernel, MathMode, SplitK, Tile, Transpose};
use cudrv::selftest::Rng;
use cudrv::{Context, DeviceBuffer, DeviceSlice, DeviceSliceMut, Result, Stream};
use half::{bf16, f16};

use crate::bench_compare::{
    diff_bound, kernel_label, print_summary, ratio_cells, rel_diff, split_suffix, tile_letter, BenchType,
};
use crate::cublas;
use crate::timing::{time, time_pair, Timing};

/// Parses a comma-separated option value, item by item.
fn list<T>(value: &str, item: impl Fn(&str) -> Result<T>) -> Result<Vec<T>> {
    value.split(',').map(item).collect()
}

fn err(msg: String) -> cudrv::Error {
    cudrv::Error::InvalidArgument(msg)
}

struct Opts {
    types: Vec<String>,
    sizes: Vec<usize>,
    /// gemm: m x n x k shapes given with --shapes (replace --sizes and the skinny shapes); gemv:
    /// m x n x lda, each run in N and T.
    shapes: Vec<(usize, usize, usize)>,
    /// gemm: the strided batch of each of `shapes` (`MxNxKxB`; 1 when not given).
    batches: Vec<usize>,
    skinny: bool,
    trials: usize,
    /// gemm: beta for both libraries (C = alpha A B + beta C).
    beta: f64,
    tiles: Vec<Tile>,
    kernels: Vec<Kernel>,
    splits: Vec<SplitK>,
    ops: Vec<(Transpose, Transpose)>,
    /// gemm: fused epilogues, one row each.
    epilogues: Vec<Epilogue>,
    /// gemm: run the shape suite (src/bin/cudrv/bench_suite.rs) instead of sizes and shapes.
    suite: bool,
    /// gemm --suite: keep only the cases whose group or `MxNxK` contains one of these.
    only: Vec<String>,
    /// gemm --suite: end each row with the kernels cudrv ran (`Gemm::kernel_name`).
    names: bool,
}

/// A fused GEMM epilogue of the bench: the bias (added to each row of the column-major C) and an
/// activation after it.
#[derive(Copy, Clone, PartialEq)]
struct Epilogue {
    bias: bool,
    act: Activation,
}

impl Epilogue {
    const NONE: Epilogue = Epilogue {
        bias: false,
        act: Activation::None,
    };

    fn parse(t: &str) -> Result<Epilogue> {
        let (bias, act) = match t {
            "none" => (false, Activation::None),
            "bias" => (true, Activation::None),
            "relu" => (true, Activation::Relu),
            "gelu" => (true, Activation::Gelu),
            "sigmoid" => (true, Activation::Sigmoid),
            "tanh" => (true, Activation::Tanh),
            _ => {
                return Err(err(format!(
                    "bad epilogue {t:?}; choose none, bias, relu, gelu, sigmoid, tanh"
                )))
            }
        };
        Ok(Epilogue { bias, act })
    }

    fn name(self) -> &'static str {
        match (self.bias, self.act) {
            (false, _) => "",
            (true, Activation::None) => "+b",
            (true, Activation::Relu) => "+br",
            (true, Activation::Gelu) => "+bg",
            (true, Activation::Sigmoid) => "+bs",
            (true, Activation::Tanh) => "+bt",
        }
    }

    /// act(v + bias), in f64 on the host (the library's reference functions).
    fn apply(self, v: f64, bias: f64) -> f64 {
        let v = if self.bias { v + bias } else { v };
        self.act.op().map_or(v, |f| f.reference(v))
    }
}

/// The options of `cudrv bench gemm` / `bench gemv` (see `cudrv help`), checked before any
/// driver call: a usage error is reported as such, with or without a GPU.
pub struct Options(Opts);

/// Parses the options of bench `what` (`gemm` or `gemv`).
pub fn options(what: &str, args: &[String]) -> Result<Options> {
    let (types, sizes): (&[&str], &[usize]) = match what {
        "gemm" => (
            &["f32", "tf32", "f16", "bf16", "f64", "f32x3"],
            &[256, 512, 1024, 2048, 4096, 8192],
        ),
        _ => (&["f32", "f64", "f16", "bf16"], &[1024, 4096, 6144, 8192, 16384, 32768]),
    };
    let default_types = if what == "gemm" {
        // f32x3 (MathMode::Tf32x3 against cuBLAS's exact f32) on request only.
        types[..5].join(",")
    } else {
        "f32".to_string()
    };
    let mut o = parse(args, &default_types, sizes)?;
    if o.names && !(what == "gemm" && o.suite) {
        return Err(err("--names goes with bench gemm --suite".into()));
    }
    // The suite compares plain C = op(A) op(B) with cuBLAS; a beta or an epilogue it would not
    // run must not pass unnoticed.
    if o.suite && (o.beta != 0.0 || o.epilogues.iter().any(|e| e.bias || e.act != Activation::None)) {
        return Err(err(
            "--beta and --epilogue go with --shapes or --sizes without --suite (the suite runs C = op(A) op(B))".into(),
        ));
    }
    if what == "gemm" {
        if let Some((m, n, _)) = o.shapes.iter().zip(&o.batches).find(|(_, &b)| b == 0).map(|(s, _)| *s) {
            return Err(err(format!(
                "bad shape \"{m}x{n}\"; write MxNxK, or MxNxKxB for a strided batch of B"
            )));
        }
    }
    if what == "gemv" {
        // MxN (lda = m) or MxNxLDA: batch 0 marks the two-number form.
        if o.batches.iter().any(|&b| b > 1) {
            return Err(err("bench gemv --shapes takes MxN or MxNxLDA".into()));
        }
        for (s, b) in o.shapes.iter_mut().zip(&o.batches) {
            if *b == 0 {
                s.2 = s.0;
            }
            if s.0 == 0 || s.1 == 0 || s.2 < s.0 {
                return Err(err(format!(
                    "bad gemv shape {}x{}x{}: m, n >= 1, lda >= m",
                    s.0, s.1, s.2
                )));
            }
        }
    }
    if what == "gemv" && o.suite && !args.iter().any(|a| a == "--types") {
        o.types = types.iter().map(|t| t.to_string()).collect();
    }
    if let Some(bad) = o.types.iter().find(|t| !types.contains(&t.as_str())) {
        return Err(err(format!(
            "unknown type {bad:?} for bench {what}; choose from {}",
            types.join(", ")
        )));
    }
    Ok(Options(o))
}

fn parse(args: &[String], default_types: &str, default_sizes: &[usize]) -> Result<Opts> {
    let mut o = Opts {
        types: default_types.split(',').map(String::from).collect(),
        sizes: default_sizes.to_vec(),
        shapes: Vec::new(),
        batches: Vec::new(),
        skinny: true,
        trials: 15,
        beta: 0.0,
        tiles: vec![Tile::Auto],
        kernels: vec![Kernel::Auto],
        splits: vec![SplitK::Auto],
        ops: vec![(Transpose::N, Transpose::N)],
        epilogues: vec![Epilogue::NONE],
        suite: false,
        only: Vec::new(),
        names: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| err(format!("{a} needs a value")));
        match a.as_str() {
            "--types" => o.types = value()?.split(',').map(String::from).collect(),
            "--sizes" => o.sizes = list(&value()?, |s| s.parse().map_err(|_| err(format!("bad size {s:?}"))))?,
            "--no-skinny" => o.skinny = false,
            "--suite" => o.suite = true,
            "--names" => o.names = true,
            "--only" => {
                o.only = value()?.split(',').map(String::from).collect();
                crate::bench_suite::check_only(&o.only)?;
            }
            "--shapes" => {
                let shapes = list(&value()?, |t| {
                    let d: Vec<usize> = t.split('x').filter_map(|v| v.parse().ok()).collect();
                    match d[..] {
                        // gemv's MxN (lda = m); `options` turns it away for gemm.
                        [m, n] => Ok(((m, n, 0), 0)),
                        [m, n, k] => Ok(((m, n, k), 1)),
                        [m, n, k, b] if b >= 1 => Ok(((m, n, k), b)),
                        _ => Err(err(format!(
                            "bad shape {t:?}; write MxNxK, or MxNxKxB for a strided batch of B (gemv: MxN or MxNxLDA)"
                        ))),
                    }
                })?;
                (o.shapes, o.batches) = shapes.into_iter().unzip();
            }
            "--tiles" => {
                o.tiles = list(&value()?, |t| match t {
                    "auto" => Ok(Tile::Auto),
                    "s" => Ok(Tile::Small),
                    "l" => Ok(Tile::Large),
                    "w" => Ok(Tile::Wide),
                    "b" => Ok(Tile::Broad),
                    "h" => Ok(Tile::Half),
                    "m" => Ok(Tile::Medium),
                    "n" => Ok(Tile::Narrow),
                    "t" => Ok(Tile::Thin),
                    "p" => Ok(Tile::LargePair),
                    "q" => Ok(Tile::NarrowPair),
                    _ => Err(err(format!(
                        "bad tile {t:?}; choose auto, s, h, m, n, l, b, w, t, p, q"
                    ))),
                })?
            }
            "--kernels" => {
                o.kernels = list(&value()?, |t| match t {
                    "auto" => Ok(Kernel::Auto),
                    "simt" => Ok(Kernel::Simt),
                    "tc" => Ok(Kernel::TensorCore),
                    "mma" => Ok(Kernel::MmaSync),
                    "wgmma" => Ok(Kernel::Wgmma),
                    _ => Err(err(format!("bad kernel {t:?}; choose auto, simt, tc, mma, wgmma"))),
                })?
            }
            "--splits" => {
                o.splits = list(&value()?, |t| match t {
                    "auto" => Ok(SplitK::Auto),
                    "off" | "1" => Ok(SplitK::Off),
                    _ => match t.strip_prefix('p').unwrap_or(t).parse::<u32>() {
                        Ok(p) if p > 1 && t.starts_with('p') => Ok(SplitK::Partials(p)),
                        Ok(p) if p > 1 => Ok(SplitK::Parts(p)),
                        _ => Err(err(format!(
                            "bad split {t:?}; choose auto, off, a part count, or p and a part count (partial products)"
                        ))),
                    },
                })?
            }
            "--ops" => {
                o.ops = list(&value()?, |t| {
                    let op = |c| match c {
                        'n' => Ok(Transpose::N),
                        't' => Ok(Transpose::T),
                        _ => Err(err(format!("bad ops {t:?}; choose nn, nt, tn, tt"))),
                    };
                    let mut ch = t.chars();
                    match (ch.next(), ch.next(), ch.next()) {
                        (Some(a), Some(b), None) => Ok((op(a)?, op(b)?)),
                        _ => Err(err(format!("bad ops {t:?}; choose nn, nt, tn, tt"))),
                    }
                })?
            }
            "--trials" => o.trials = value()?.parse().map_err(|_| err("bad --trials".into()))?,
            "--beta" => o.beta = value()?.parse().map_err(|_| err("bad --beta".into()))?,
            "--epilogue" => o.epilogues = list(&value()?, Epilogue::parse)?,
            other => return Err(err(format!("unknown option {other:?}"))),
        }
    }
    Ok(o)
}

pub fn run(what: &str, options: Options) -> Result<bool> {
    let Options(o) = options;
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let name = ctx.device().name()?;
    println!("bench {what} on {name} (driver CUDA {})", cudrv::driver_version()?);
    let cublas = match cublas::Cublas::load(stream.raw() as *mut c_void) {
        Ok(c) => {
            println!("reference: cuBLAS from {} (loaded for comparison only)", c.path);
            Some(c)
        }
        Err(why) => {
            println!("reference: none (cuBLAS not loaded: {why}); set CUDRV_LIBCUBLAS to compare");
            None
        }
    };
    let h100 = name.contains("H100");
    match what {
        "gemm" => gemm_bench(&ctx, &stream, cublas.as_ref(), h100, &o),
        _ => gemv_bench(&stream, cublas.as_ref(), h100, &o),
    }
}

/// A note for f32 rows whose tile or split is forced while the kernel family is left automatic
/// on compute capability 9.0: there the automatic choice runs exact f32 on the f64 tensor cores,
/// but a forced tile or split names the CUDA-core tiles (`Tile`'s documentation), so those rows
/// compare other kernels than the automatic row's unless `--kernels tc` is given.
fn f32_forced_note(o: &Opts, cc: (u32, u32)) -> Option<&'static str> {
    let forced =
        o.tiles.iter().any(|&t| t != Tile::Auto) || o.splits.iter().any(|&s| !matches!(s, SplitK::Auto | SplitK::Off));
    (cc == (9, 0) && o.types.iter().any(|t| t == "f32") && forced && o.kernels.contains(&Kernel::Auto)).then_some(
        "note: f32 rows with a forced tile or split and --kernels auto run the CUDA-core kernels; \
         the automatic choice here runs exact f32 on the f64 tensor cores, whose tiles --kernels tc forces",
    )
}

fn gemm_bench(
    ctx: &Arc<Context>,
    stream: &Arc<Stream>,
    cublas: Option<&cublas::Cublas>,
    h100: bool,
    o: &Opts,
) -> Result<bool> {
    if let Some(note) = f32_forced_note(o, ctx.compute_capability()) {
        eprintln!("{note}");
    }
    if o.suite {
        let mut sels = Vec::new();
        for &t in &o.tiles {
            for &k in &o.kernels {
                for &sp in &o.splits {
                    sels.push((t, k, sp));
                }
            }
        }
        // --shapes with --suite: those shapes (each op of --ops, strided batches as given) in
        // place of the suite's cases.
        let mut cases = Vec::new();
        for (&dims, &batch) in o.shapes.iter().zip(&o.batches) {
            for &ops in &o.ops {
                cases.push(crate::bench_suite::adhoc(ops, dims, batch));
            }
        }
        let suite = crate::bench_suite::SuiteOpts {
            cases: &cases,
            only: &o.only,
            sels: &sels,
            trials: o.trials,
            names: o.names,
        };
        return crate::bench_suite::run_gemm(stream, cublas, h100, &o.types, &suite);
    }
    if o.batches.iter().any(|&b| b != 1) {
        return Err(err("--shapes MxNxKxB (a strided batch) runs with --suite only".into()));
    }
    let mut shapes: Vec<(usize, usize, usize)> = o.sizes.iter().map(|&s| (s, s, s)).collect();
    if !o.shapes.is_empty() {
        shapes = o.shapes.clone();
    } else if o.skinny {
        shapes.extend([(8192, 8192, 64), (64, 8192, 8192), (4096, 11008, 4096)]);
    }
    let _ = ctx;
    println!(
        "\ncolumn-major, op(A) op(B) as in the ops column (--ops; default NN), C = A B + {} C, random inputs in [-1, 1]; TFLOP/s = 2mnk / median time (cudrv and cuBLAS batches alternate); ratio = cudrv / cuBLAS; \
         diff = |C_cudrv - C_cublas| / |C_cublas|; \
         host us = cudrv/cuBLAS host time per call to enqueue (median){}",
        o.beta,
        if h100 { "; peak = H100 SXM datasheet" } else { "" }
    );
    println!(
        "{:<5} {:<6} {:<4} {:<6} {:>20} {:>10} {:>10} {:>7} {:>7} {:>10} {:>13}",
        "type", "ops", "tile", "kernel", "m x n x k", "cudrv", "cuBLAS", "ratio", "%peak", "diff", "host us"
    );
    let mut ok = true;
    for ty in &o.types {
        for &shape in &shapes {
            let mut combos = Vec::new();
            for &op in &o.ops {
                for &t in &o.tiles {
                    for &k in &o.kernels {
                        for &sp in &o.splits {
                            for &e in &o.epilogues {
                                combos.push((op, t, k, sp, e));
                            }
                        }
                    }
                }
            }
            for (ops, tile, kernel, split, epi) in combos {
                let letter = |t| if t == Transpose::N { 'n' } else { 't' };
                let oname = format!("{}{}{}", letter(ops.0), letter(ops.1), epi.name());
                let c = cublas;
                let (kname, tname) = (
                    kernel_label(kernel),
                    format!("{}{}", tile_letter(tile), split_suffix(split)),
                );
                let sel = (tile, kernel, ops, split, epi);
                let r = match ty.as_str() {
                    "f32" => one_gemm::<f32>(stream, c, shape, MathMode::Exact, sel, cublas::COMPUTE_32F, o),
                    "tf32" => one_gemm::<f32>(stream, c, shape, MathMode::Tf32, sel, cublas::COMPUTE_32F_FAST_TF32, o),
                    "f32x3" => one_gemm::<f32>(stream, c, shape, MathMode::Tf32x3, sel, cublas::COMPUTE_32F, o),
                    "f16" => one_gemm::<f16>(stream, c, shape, MathMode::Exact, sel, cublas::COMPUTE_32F, o),
                    "bf16" => one_gemm::<bf16>(stream, c, shape, MathMode::Exact, sel, cublas::COMPUTE_32F, o),
                    "f64" => one_gemm::<f64>(stream, c, shape, MathMode::Exact, sel, cublas::COMPUTE_64F, o),
                    other => {
                        return Err(err(format!(
                            "unknown type {other:?}; choose f32, tf32, f16, bf16, f64, f32x3"
                        )))
                    }
                };
                let (m, n, k) = shape;
                let r = match r {
                    Ok(r) => r,
                    // A forced family / tile that does not apply here (e.g. wgmma with the 64 x 64 tile).
                    Err(cudrv::Error::InvalidArgument(_)) if kernel != Kernel::Auto || split != SplitK::Auto => {
                        println!(
                            "{:<5} {:<6} {:<4} {:<6} {:>20} {:>10}",
                            ty,
                            oname,
                            tname,
                            kname,
                            format!("{m}x{n}x{k}"),
                            "n/a"
                        );
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let flops = 2.0 * m as f64 * n as f64 * k as f64;
                let ours = flops / r.0.device / 1e12;
                let theirs = r.1.map(|t| flops / t.device / 1e12);
                let host = format!(
                    "{:.1}/{}",
                    r.0.host * 1e6,
                    r.1.map_or("-".into(), |t| format!("{:.1}", t.host * 1e6))
                );
                let bound = diff_bound(ty, k);
                let good = r.2.map_or(true, |d| d < bound);
                ok &= good;
                let cells = ratio_cells(ty, h100, ours, theirs, r.2);
                println!(
                    "{:<5} {:<6} {:<4} {:<6} {:>20} {:>10.2} {:>10} {:>7} {:>7} {:>10} {:>13}{}",
                    ty,
                    oname,
                    tname,
                    kname,
                    format!("{m}x{n}x{k}"),
                    ours,
                    cells[0],
                    cells[1],
                    cells[2],
                    cells[3],
                    host,
                    if good { "" } else { "  MISMATCH" }
                );
            }
        }
    }
    Ok(ok)
}

/// (cudrv seconds, cuBLAS seconds, relative difference of the results).
fn one_gemm<T: BenchType>(
    stream: &Arc<Stream>,
    cublas: Option<&cublas::Cublas>,
    (m, n, k): (usize, usize, usize),
    math: MathMode,
    (tile, kernel, (ta, tb), split, epi): (Tile, Kernel, (Transpose, Transpose), SplitK, Epilogue),
    compute: i32,
    o: &Opts,
) -> Result<(Timing, Option<Timing>, Option<f64>)> {
    let (trials, beta) = (o.trials, o.beta);
    if epi != Epilogue::NONE && beta != 0.0 {
        return Err(err("--epilogue other than none needs --beta 0".into()));
    }
    let mut rng = Rng::new((m * 31 + n * 7 + k) as u64);
    let host = |len: usize, rng: &mut Rng| {
        (0..len)
            .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
            .collect::<Vec<T>>()
    };
    let a = DeviceBuffer::from_slice(stream, &host(m * k, &mut rng))?;
    let b = DeviceBuffer::from_slice(stream, &host(k * n, &mut rng))?;
    let mut c = DeviceBuffer::from_slice(stream, &host(m * n, &mut rng))?;
    let bias_host = host(m, &mut rng);
    let bias = DeviceBuffer::from_slice(stream, &bias_host)?;
    let g = Gemm::<T::Scalar>::new(ta, tb, m, n, k)
        .beta(T::scalar(beta))
        .math(math)
        .tile(tile)
        .split_k(split)
        .kernel(kernel)
        .activation(epi.act);
    let run = |c: &mut DeviceBuffer<T>| {
        if epi.bias {
            g.run_with_bias(&a, &b, &bias, c)
        } else {
            g.run(&a, &b, c)
        }
    };
    let Some(cb) = cublas else {
        return Ok((time(stream, trials, || run(&mut c))?, None, None));
    };
    // With beta != 0 both start from the same C; repeated calls then converge to the same
    // fixed point when |beta| < 1.
    let mut c2 = DeviceBuffer::from_slice(stream, &c.to_vec()?)?;
    let (a32, b32) = (1.0f32, beta as f32);
    let (a64, b64) = (1.0f64, beta);
    let (ap, bp): (*const c_void, *const c_void) = if compute == cublas::COMPUTE_64F {
        (&a64 as *const f64 as _, &b64 as *const f64 as _)
    } else {
        (&a32 as *const f32 as _, &b32 as *const f32 as _)
    };
    let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), c2.device_ptr());
    let ours = || run(&mut c);
    let (ours, theirs) = time_pair(stream, trials, ours, || {
        // SAFETY: a, b, c2 hold m*k, k*n, m*n elements of T; the scalars match the compute type.
        unsafe {
            cb.gemm(
                (m, n, k),
                (ta == Transpose::T, tb == Transpose::T),
                ap,
                pa,
                pb,
                bp,
                pc,
                T::CUDA_TYPE,
                compute,
            )
        }
        .map_err(err)
    })?;
    let mut expect = c2.to_vec()?;
    if epi != Epilogue::NONE {
        // Column-major C: element i + m j is row i, which takes bias[i].
        for (idx, v) in expect.iter_mut().enumerate() {
            *v = T::from_f64(epi.apply(v.to_f64(), bias_host[idx % m].to_f64()));
        }
    }
    let diff = rel_diff(&c.to_vec()?, &expect);
    c2.memset_bytes(0)?;
    Ok((ours, Some(theirs), Some(diff)))
}

/// One GEMV row of the bench: op, m, n, lda.
type GemvShape = (Transpose, usize, usize, usize);

/// The GEMV suite (`bench gemv --suite`): square sizes from 1024 to 32768 in N and T, odd sizes,
/// tall and wide matrices of the decode shapes of the GEMM suite (hidden x MLP x vocabulary of
/// Llama-2-7B and GPT-2), and (f32) leading dimensions one element longer than the rows.
fn gemv_suite() -> Vec<GemvShape> {
    let mut v = Vec::new();
    for s in [1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768] {
        v.push((Transpose::N, s, s, s));
        v.push((Transpose::T, s, s, s));
    }
    for (m, n) in [
        (4095, 4097),
        (1023, 1025),
        (12289, 4099),
        (11008, 4096),
        (4096, 11008),
        (32000, 4096),
        (50257, 768),
    ] {
        v.push((Transpose::N, m, n, m));
        v.push((Transpose::T, m, n, m));
    }
    for s in [4096, 8192] {
        v.push((Transpose::N, s, s, s + 1));
        v.push((Transpose::T, s, s, s + 1));
    }
    v
}

fn gemv_bench(stream: &Arc<Stream>, cublas: Option<&cublas::Cublas>, h100: bool, o: &Opts) -> Result<bool> {
    let mut shapes: Vec<GemvShape> = Vec::new();
    for &s in &o.sizes {
        shapes.push((Transpose::N, s, s, s));
        if s <= 16384 {
            shapes.push((Transpose::T, s, s, s));
        }
    }
    if o.suite {
        shapes = gemv_suite();
    } else if !o.shapes.is_empty() {
        shapes = o
            .shapes
            .iter()
            .flat_map(|&(m, n, lda)| [(Transpose::N, m, n, lda), (Transpose::T, m, n, lda)])
            .collect();
    } else if o.skinny {
        shapes.extend([
            (Transpose::T, 32768, 8192, 32768),
            (Transpose::T, 8192, 32768, 8192),
            (Transpose::N, 32768, 8192, 32768),
            (Transpose::N, 8192, 32768, 8192),
            // lda = m + 1: columns not 16-byte aligned, so the element-wise kernels run.
            (Transpose::N, 8192, 8192, 8193),
            (Transpose::T, 8192, 8192, 8193),
        ]);
    }
    // The copy ceiling: a 1 GiB device-to-device copy, bytes read + written.
    let copy_bw = {
        let n = 1usize << 28;
        let src = DeviceBuffer::from_slice(stream, &vec![1.0f32; n])?;
        let mut dst = DeviceBuffer::<f32>::zeroed(stream, n)?;
        let t = time(stream, o.trials, || dst.copy_from_device(&src))?;
        2.0 * (n * 4) as f64 / t.device / 1e9
    };
    println!(
        "\ny = op(A) x, beta = 0; GB/s = (m n + m + n) * element bytes / median time (cudrv and cuBLAS batches alternate); ratio = cuBLAS time / cudrv \
         time; device copy = {copy_bw:.0} GB/s{}",
        if h100 { " (H100 HBM3 datasheet 3350)" } else { "" }
    );
    println!("reference: cublasSgemv for f32, cublasGemmEx with one column (f32 compute) for the others");
    println!(
        "{:<5} {:<3} {:>13} {:>6} {:>9} {:>9} {:>9} {:>7} {:>8} {:>9}",
        "type", "op", "m x n", "lda", "cudrv", "cuBLAS", "us", "ratio", "%copy", "diff"
    );
    let mut ok = true;
    let mut ratios: Vec<(String, f64, String)> = Vec::new();
    for ty in &o.types {
        for &shape in &shapes {
            if ty != "f32" && shape.3 != shape.1 {
                continue;
            }
            let r = match ty.as_str() {
                "f32" => one_gemv::<f32>(stream, cublas, shape, o.trials),
                "f64" => one_gemv::<f64>(stream, cublas, shape, o.trials),
                "f16" => one_gemv::<f16>(stream, cublas, shape, o.trials),
                "bf16" => one_gemv::<bf16>(stream, cublas, shape, o.trials),
                other => return Err(err(format!("unknown type {other:?}; choose f32, f64, f16, bf16"))),
            }?;
            let (trans, m, n, lda) = shape;
            let bound = match ty.as_str() {
                "f32" => 1e-5,
                "f64" => 1e-12,
                _ => 2e-2,
            };
            let good = r.diff.map_or(true, |d| d < bound);
            ok &= good;
            let bytes = ((m * n + m + n) * r.bytes) as f64;
            let ours_bw = bytes / r.ours / 1e9;
            println!(
                "{:<5} {:<3} {:>13} {:>6} {:>9.0} {:>9} {:>9.1} {:>7} {:>8.1} {:>9}{}",
                ty,
                if trans == Transpose::N { "N" } else { "T" },
                format!("{m}x{n}"),
                if lda == m {
                    "m".to_string()
                } else {
                    format!("m+{}", lda - m)
                },
                ours_bw,
                r.theirs.map_or("-".into(), |t| format!("{:.0}", bytes / t / 1e9)),
                r.ours * 1e6,
                r.theirs.map_or("-".into(), |t| format!("{:.3}", t / r.ours)),
                100.0 * ours_bw / copy_bw,
                r.diff.map_or("-".into(), |d| format!("{d:.1e}")),
                if good { "" } else { "  MISMATCH" }
            );
            if let Some(t) = r.theirs {
                let op = if trans == Transpose::N { "N" } else { "T" };
                ratios.push((ty.clone(), t / r.ours, format!("{op} {m}x{n} lda {lda}")));
            }
        }
    }
    if o.suite {
        print_summary(&o.types, &ratios, 0.95);
    }
    Ok(ok)
}

/// One GEMV measurement: seconds per call of cudrv and of cuBLAS, the relative difference of
/// their results, and the element size.
struct GemvRun {
    ours: f64,
    theirs: Option<f64>,
    diff: Option<f64>,
    bytes: usize,
}

fn one_gemv<T: BenchType + blas::GemvType>(
    stream: &Arc<Stream>,
    cublas: Option<&cublas::Cublas>,
    (trans, m, n, lda): GemvShape,
    trials: usize,
) -> Result<GemvRun> {
    let mut rng = Rng::new((m + 3 * n + lda) as u64);
    let host = |len: usize, rng: &mut Rng| {
        (0..len)
            .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
            .collect::<Vec<T>>()
    };
    let a = DeviceBuffer::from_slice(stream, &host((n - 1) * lda + m, &mut rng))?;
    let (lx, ly) = if trans == Transpose::N { (n, m) } else { (m, n) };
    let x = DeviceBuffer::from_slice(stream, &host(lx, &mut rng))?;
    let mut y = DeviceBuffer::from_slice(stream, &host(ly, &mut rng))?;
    let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
    let bytes = std::mem::size_of::<T>();
    let Some(cb) = cublas else {
        return Ok(GemvRun {
            ours: time(stream, trials, || {
                blas::gemv(trans, m, n, one, &a, lda, &x, 1, zero, &mut y, 1)
            })?
            .device,
            theirs: None,
            diff: None,
            bytes,
        });
    };
    let mut y2 = DeviceBuffer::from_slice(stream, &vec![zero; ly])?;
    let (pa, px, py) = (a.device_ptr(), x.device_ptr(), y2.device_ptr());
    let (a32, b32, a64, b64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (ap, bp, compute): (*const c_void, *const c_void, i32) = if T::CUDA_TYPE == cublas::R_64F {
        (&a64 as *const f64 as _, &b64 as *const f64 as _, cublas::COMPUTE_64F)
    } else {
        (&a32 as *const f32 as _, &b32 as *const f32 as _, cublas::COMPUTE_32F)
    };
    let ours = || blas::gemv(trans, m, n, one, &a, lda, &x, 1, zero, &mut y, 1);
    let (ours, theirs) = time_pair(stream, trials, ours, || {
        // SAFETY: a holds (n - 1) * lda + m elements (lda == m outside f32), x and y2 have the
        // lengths the op needs; the scalars match the compute type.
        unsafe {
            if T::CUDA_TYPE == cublas::R_32F {
                cb.sgemv(if trans == Transpose::N { 0 } else { 1 }, m, n, pa, lda, px, py)
            } else if trans == Transpose::N {
                // y (m x 1) = A (m x n) x (n x 1)
                cb.gemm((m, 1, n), (false, false), ap, pa, px, bp, py, T::CUDA_TYPE, compute)
            } else {
                // y^T (1 x n) = x^T (1 x m) A (m x n)
                cb.gemm((1, n, m), (false, false), ap, px, pa, bp, py, T::CUDA_TYPE, compute)
            }
        }
        .map_err(err)
    })?;
    let diff = rel_diff(&y.to_vec()?, &y2.to_vec()?);
    y2.memset_bytes(0)?;
    Ok(GemvRun {
        ours: ours.device,
        theirs: Some(theirs.device),
        diff: Some(diff),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::{f32_forced_note, parse};

    fn opts(args: &str) -> super::Opts {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse(&args, "f32", &[1024]).expect("the options parse")
    }

    #[test]
    fn f32_rows_with_forced_tiles_on_hopper_get_a_note() {
        let hopper = (9, 0);
        assert!(f32_forced_note(&opts("--tiles auto,s"), hopper).is_some());
        assert!(f32_forced_note(&opts("--splits 2"), hopper).is_some());
        // The tensor-core family forced, the automatic choice, no f32, or another device: none.
        assert!(f32_forced_note(&opts("--tiles s --kernels tc"), hopper).is_none());
        assert!(f32_forced_note(&opts("--splits auto,off"), hopper).is_none());
        assert!(f32_forced_note(&opts("--types f64 --tiles s"), hopper).is_none());
        assert!(f32_forced_note(&opts("--tiles s"), (8, 0)).is_none());
    }
}
