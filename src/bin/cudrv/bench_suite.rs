//! `cudrv bench gemm --suite`: a fixed set of GEMM shapes that stands for real use, each timed
//! against cuBLAS in the same run, with a per-type summary (geometric mean and worst ratio).
//!
//! Where the shapes come from (layer sizes from the models' published configurations; the
//! activations row-major as in PyTorch, so a linear layer `y = x W^T` is cuBLAS's column-major
//! `C = op(A) op(B)` with `op(A) = W^T` (TN), `m` = output features, `n` = tokens, `k` = input
//! features):
//!
//! * `llama2-7b`: hidden 4096, MLP 11008, vocabulary 32000 (fused QKV 12288, fused gate/up
//!   22016), at decode (1, 16 tokens), a small batch of sequences (128) and prefill (2048).
//! * `llama3-8b`: grouped-query attention (fused QKV 6144), MLP 14336 (fused 28672), vocabulary
//!   128256.
//! * `llama2-70b`: hidden 8192, MLP 28672 (fused 57344), at 16 and 4096 tokens.
//! * `gpt2`: hidden 768, MLP 3072, vocabulary 50257 (odd: every C of the LM head is unaligned),
//!   at 1 and 1024 tokens.
//! * `attention`: per-head products as strided batches (batch x heads matrices): scores
//!   `S = Q K^T` (TN, `m` = keys, `n` = queries, `k` = head dimension) and `O = P V` (NN), for
//!   BERT-base (12 heads x batch 32, 128 tokens, head 64), a 512-token model and a 2048-token
//!   one with head 128; and many small matrices (512 x 64^3, 4096 x 16^3).
//! * `odd`: odd and prime sizes (4095x4097x1023, 997x1009x1013, ...): every leading dimension
//!   unaligned.
//! * `ld`: aligned sizes on leading dimensions a few elements longer than the matrices, and
//!   operands starting one element into their buffer (a view at an odd offset).
//! * `ops`: every op pair (NT, TN, TT) on a square and an odd size.
//! * `k`: k from 16 to 65536 (8192^2 x 64, 64 x 8192^2, 256^2 x 65536, ...).
//!
//! Inputs are uniform in [-1, 1] from a seed per case; both libraries start from a zero C with
//! beta 0, and every row compares the two results (`diff`, relative Frobenius norm). A diff above
//! the type's bound (scaled by sqrt(k / 1024) for f32) marks the row MISMATCH and the command
//! exits non-zero.

use std::ffi::c_void;
use std::sync::Arc;

use cudrv::blas::{Gemm, Kernel, MathMode, SplitK, Tile, Transpose};
use cudrv::memory::ValidAsZeroBits;
use cudrv::selftest::{FromF64, Rng};
use cudrv::{DeviceBuffer, DeviceSlice, Result, Stream};
use half::{bf16, f16};

use crate::bench_compare::{
    diff_bound, kernel_label, print_summary, ratio_cells, rel_diff, split_suffix, tile_letter, BenchType,
};
use crate::cublas::{self, Cublas};
use crate::timing::time_pair;

use Transpose::{N, T};

/// One GEMM of the suite.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// Where the shape comes from (see the module documentation).
    pub group: &'static str,
    /// `op(A)`, `op(B)`.
    pub ops: (Transpose, Transpose),
    /// `m, n, k`.
    pub dims: (usize, usize, usize),
    /// Elements each leading dimension (A, B, C) has beyond the tightest.
    pub pad: [usize; 3],
    /// Elements A, B and C start past their allocation's start.
    pub offset: usize,
    /// Matrices in the strided batch (1: a plain GEMM).
    pub batch: usize,
}

fn case(group: &'static str, ops: (Transpose, Transpose), dims: (usize, usize, usize)) -> Case {
    Case {
        group,
        ops,
        dims,
        pad: [0; 3],
        offset: 0,
        batch: 1,
    }
}

/// A linear layer `out x in` applied to `tokens` row-major activations (TN).
fn linear(group: &'static str, out: usize, input: usize, tokens: usize) -> Case {
    case(group, (T, N), (out, tokens, input))
}

fn batched(group: &'static str, ops: (Transpose, Transpose), dims: (usize, usize, usize), batch: usize) -> Case {
    Case {
        batch,
        ..case(group, ops, dims)
    }
}

/// A case given on the command line (`--suite --shapes MxNxKxB`), in the group `shapes`.
pub(crate) fn adhoc(ops: (Transpose, Transpose), dims: (usize, usize, usize), batch: usize) -> Case {
    batched("shapes", ops, dims, batch)
}

fn padded(dims: (usize, usize, usize), pad: [usize; 3], offset: usize) -> Case {
    Case {
        pad,
        offset,
        ..case("ld", (N, N), dims)
    }
}

/// The suite's GEMM cases, in a fixed order.
pub(crate) fn gemm_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for tokens in [1, 16, 128, 2048] {
        for (out, input) in [(12288, 4096), (4096, 4096), (22016, 4096), (4096, 11008)] {
            v.push(linear("llama2-7b", out, input, tokens));
        }
    }
    v.push(linear("llama2-7b", 32000, 4096, 1));
    v.push(linear("llama2-7b", 32000, 4096, 128));
    for tokens in [16, 2048] {
        for (out, input) in [(6144, 4096), (28672, 4096), (4096, 14336)] {
            v.push(linear("llama3-8b", out, input, tokens));
        }
    }
    v.push(linear("llama3-8b", 128256, 4096, 16));
    for tokens in [16, 4096] {
        for (out, input) in [(8192, 8192), (57344, 8192), (8192, 28672)] {
            v.push(linear("llama2-70b", out, input, tokens));
        }
    }
    for tokens in [1, 1024] {
        for (out, input) in [(2304, 768), (768, 768), (3072, 768), (768, 3072), (50257, 768)] {
            v.push(linear("gpt2", out, input, tokens));
        }
    }
    // Attention: scores (TN: keys x queries x head dim) and outputs (NN: head dim x queries x
    // keys), batch x heads matrices.
    for (seq, d, bh) in [(128, 64, 384), (512, 64, 96), (2048, 128, 32)] {
        v.push(batched("attention", (T, N), (seq, seq, d), bh));
        v.push(batched("attention", (N, N), (d, seq, seq), bh));
    }
    v.push(batched("attention", (N, N), (64, 64, 64), 512));
    v.push(batched("attention", (N, N), (16, 16, 16), 4096));
    for dims in [
        (4095, 4097, 1023),
        (3000, 5000, 700),
        (777, 1531, 2049),
        (12345, 321, 4567),
        (1000, 1000, 1000),
        (997, 1009, 1013),
        (31, 4099, 257),
        (2053, 67, 1999),
        (4097, 4097, 4097),
    ] {
        v.push(case("odd", (N, N), dims));
    }
    v.push(padded((2048, 2048, 2048), [1, 1, 1], 0));
    v.push(padded((4096, 1024, 4096), [3, 5, 0], 0));
    v.push(padded((1024, 1024, 1024), [0, 0, 0], 1));
    v.push(Case {
        offset: 1,
        ..linear("ld", 11008, 4096, 16)
    });
    for ops in [(N, T), (T, N), (T, T)] {
        v.push(case("ops", ops, (2048, 2048, 2048)));
    }
    v.push(case("ops", (T, T), (1023, 1025, 1027)));
    v.push(case("ops", (N, T), (1023, 1025, 1027)));
    for dims in [
        (128, 128, 16),
        (4096, 4096, 16),
        (8192, 8192, 64),
        (64, 8192, 8192),
        (1024, 1024, 32768),
        (256, 256, 65536),
        (64, 64, 65536),
    ] {
        v.push(case("k", (N, N), dims));
    }
    v
}

/// Runs the suite for `types` and prints each row, then a summary per type; `Ok(false)` when a
/// result differed from cuBLAS's by more than the type's bound.
/// Whether `--only` keeps case `c`: its group or `MxNxK` contains one of the items (every case
/// when there are none).
fn selected(c: &Case, only: &[String]) -> bool {
    let (m, n, k) = c.dims;
    let what = format!("{} {m}x{n}x{k}", c.group);
    only.is_empty() || only.iter().any(|o| what.contains(o.as_str()))
}

/// `--only`'s items, refused before anything runs when they keep no case of the suite.
pub(crate) fn check_only(only: &[String]) -> Result<()> {
    let cases = gemm_cases();
    if cases.iter().any(|c| selected(c, only)) {
        return Ok(());
    }
    let mut groups: Vec<&str> = cases.iter().map(|c| c.group).collect();
    groups.dedup();
    Err(cudrv::Error::InvalidArgument(format!(
        "--only {}: no suite case's group or MxNxK contains it (groups: {})",
        only.join(","),
        groups.join(", ")
    )))
}

/// What `run_gemm` runs beside the types: a filter on the cases and the forced choices.
pub(crate) struct SuiteOpts<'a> {
    /// Cases to run instead of the suite's (`--shapes` with `--suite`; none: the suite).
    pub cases: &'a [Case],
    /// Keep the cases whose group or `MxNxK` contains one of these (all when empty).
    pub only: &'a [String],
    /// (tile, kernel, split) choices, each case runs once per choice; `[(Auto, Auto, Auto)]`
    /// is the plain suite.
    pub sels: &'a [(Tile, Kernel, SplitK)],
    /// Timed batches per figure.
    pub trials: usize,
    /// End each row with the kernels cudrv ran (`Gemm::kernel_name`).
    pub names: bool,
}

/// The forced choice as the `sel` column writes it: tile letter, kernel, `/parts` or `/pN`.
fn sel_name((tile, kernel, split): (Tile, Kernel, SplitK)) -> String {
    let kernel = match kernel {
        Kernel::Auto => String::new(),
        k => format!(":{}", kernel_label(k)),
    };
    format!("{}{kernel}{}", tile_letter(tile), split_suffix(split))
}

pub(crate) fn run_gemm(
    stream: &Arc<Stream>,
    cublas: Option<&Cublas>,
    h100: bool,
    types: &[String],
    opts: &SuiteOpts<'_>,
) -> Result<bool> {
    let trials = opts.trials;
    let cases: Vec<Case> = if opts.cases.is_empty() {
        gemm_cases().into_iter().filter(|c| selected(c, opts.only)).collect()
    } else {
        opts.cases.to_vec()
    };
    let auto = (Tile::Auto, Kernel::Auto, SplitK::Auto);
    let plain = opts.sels.iter().all(|&s| s == auto);
    println!(
        "\nthe GEMM suite: {} cases per type (src/bin/cudrv/bench_suite.rs says where each group comes from); \
         column-major, C = op(A) op(B), beta 0; ld+ = elements added to lda, ldb, ldc; off = elements A, B, C start into their buffers; \
         TFLOP/s = 2 m n k batch / median time; ratio = cudrv / cuBLAS (batches alternating){}",
        cases.len(),
        if h100 { "; peak = H100 SXM datasheet" } else { "" }
    );
    println!(
        "{:<5} {:<10} {:<3} {:>18} {:>5} {:>9} {:>4} {:>9} {:>9} {:>7} {:>6} {:>9}",
        "type", "group", "ops", "m x n x k", "batch", "ld+", "off", "cudrv", "cuBLAS", "ratio", "%peak", "diff"
    );
    let mut ok = true;
    let mut rows = Vec::new();
    for ty in types {
        for (c, &sel) in cases.iter().flat_map(|c| opts.sels.iter().map(move |s| (c, s))) {
            let r = match ty.as_str() {
                "f32" => one::<f32>(stream, cublas, c, MathMode::Exact, cublas::COMPUTE_32F, trials, sel),
                "f32x3" => one::<f32>(stream, cublas, c, MathMode::Tf32x3, cublas::COMPUTE_32F, trials, sel),
                "tf32" => one::<f32>(
                    stream,
                    cublas,
                    c,
                    MathMode::Tf32,
                    cublas::COMPUTE_32F_FAST_TF32,
                    trials,
                    sel,
                ),
                "f16" => one::<f16>(stream, cublas, c, MathMode::Exact, cublas::COMPUTE_32F, trials, sel),
                "bf16" => one::<bf16>(stream, cublas, c, MathMode::Exact, cublas::COMPUTE_32F, trials, sel),
                _ => one::<f64>(stream, cublas, c, MathMode::Exact, cublas::COMPUTE_64F, trials, sel),
            };
            let r = match r {
                Ok(r) => r,
                Err(e) if !plain => {
                    println!(
                        "{ty:<5} {:<10} {:?} {:?} {}: {e}",
                        c.group,
                        c.dims,
                        c.batch,
                        sel_name(sel)
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            let (m, n, k) = c.dims;
            let flops = 2.0 * m as f64 * n as f64 * k as f64 * c.batch as f64;
            let ours = flops / r.ours / 1e12;
            let theirs = r.theirs.map(|t| flops / t / 1e12);
            let bound = diff_bound(ty, k);
            let good = r.diff.map_or(true, |d| d < bound);
            ok &= good;
            let letter = |t| if t == N { 'n' } else { 't' };
            let cells = ratio_cells(ty, h100, ours, theirs, r.diff);
            println!(
                "{:<5} {:<10} {:<3} {:>18} {:>5} {:>9} {:>4} {:>9.2} {:>9} {:>7} {:>6} {:>9}{}{}{}",
                ty,
                c.group,
                format!("{}{}", letter(c.ops.0), letter(c.ops.1)),
                format!("{m}x{n}x{k}"),
                c.batch,
                format!("{},{},{}", c.pad[0], c.pad[1], c.pad[2]),
                c.offset,
                ours,
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                if plain {
                    String::new()
                } else {
                    format!(" {}", sel_name(sel))
                },
                if opts.names {
                    format!(" {}", r.kernel)
                } else {
                    String::new()
                },
                if good { "" } else { "  MISMATCH" }
            );
            if let (Some(t), true) = (theirs, plain) {
                rows.push((
                    ty.clone(),
                    ours / t,
                    format!("{} {m}x{n}x{k} batch {}", c.group, c.batch),
                ));
            }
        }
    }
    if plain {
        print_summary(types, &rows, 0.85);
    }
    Ok(ok)
}

/// Seconds per call of cudrv and of cuBLAS, the relative difference of their results, and the
/// kernels cudrv ran.
struct Measured {
    ours: f64,
    theirs: Option<f64>,
    diff: Option<f64>,
    kernel: String,
}

/// The stored extent (rows, columns) of `op(X)`'s operand for `op(X)` of `rows x cols`.
fn stored(op: Transpose, rows: usize, cols: usize) -> (usize, usize) {
    if op == N {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

fn one<T: BenchType + FromF64 + ValidAsZeroBits>(
    stream: &Arc<Stream>,
    cublas: Option<&Cublas>,
    c: &Case,
    math: MathMode,
    compute: i32,
    trials: usize,
    (tile, kernel, split): (Tile, Kernel, SplitK),
) -> Result<Measured> {
    let (m, n, k) = c.dims;
    let (ra, ca) = stored(c.ops.0, m, k);
    let (rb, cb) = stored(c.ops.1, k, n);
    let (lda, ldb, ldc) = (ra + c.pad[0], rb + c.pad[1], m + c.pad[2]);
    let (sa, sb, sc) = (lda * ca, ldb * cb, ldc * n);
    let off = c.offset;
    let mut rng = Rng::new((m * 31 + n * 7 + k) as u64 ^ (c.batch as u64) << 40);
    let a = DeviceBuffer::from_slice(stream, &rng.vec::<T>(off + sa * c.batch, -1.0, 1.0))?;
    let b = DeviceBuffer::from_slice(stream, &rng.vec::<T>(off + sb * c.batch, -1.0, 1.0))?;
    let mut c1 = DeviceBuffer::<T>::zeroed(stream, off + sc * c.batch)?;
    let g = Gemm::<T::Scalar>::new(c.ops.0, c.ops.1, m, n, k)
        .ld(lda, ldb, ldc)
        .batched(c.batch, sa, sb, sc)
        .math(math)
        .tile(tile)
        .kernel(kernel)
        .split_k(split);
    let (av, bv) = (a.slice(off..)?, b.slice(off..)?);
    // For `--names`: the planning and dispatch of `run` alone, so it fails only where `run`
    // fails too (the error then in the name, and `run`'s below).
    let kernel = g
        .kernel_name(&av, &bv, &c1.slice(off..)?)
        .unwrap_or_else(|e| format!("(no kernel name: {e})"));
    let ours = |c1: &mut DeviceBuffer<T>| -> Result<()> { g.run(&av, &bv, &mut c1.slice_mut(off..)?) };
    let Some(cb) = cublas else {
        let t = crate::timing::time(stream, trials, || ours(&mut c1))?;
        return Ok(Measured {
            ours: t.device,
            theirs: None,
            diff: None,
            kernel,
        });
    };
    let c2 = DeviceBuffer::<T>::zeroed(stream, off + sc * c.batch)?;
    let (a32, b32, a64, b64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
    let (ap, bp): (*const c_void, *const c_void) = if compute == cublas::COMPUTE_64F {
        (&a64 as *const f64 as _, &b64 as *const f64 as _)
    } else {
        (&a32 as *const f32 as _, &b32 as *const f32 as _)
    };
    let bytes = std::mem::size_of::<T>() as u64 * off as u64;
    let (pa, pb, pc) = (a.device_ptr() + bytes, b.device_ptr() + bytes, c2.device_ptr() + bytes);
    let (t_ours, t_theirs) = time_pair(
        stream,
        trials,
        || ours(&mut c1),
        || {
            // SAFETY: a, b and c2 hold off + batch * stride elements of T, and each matrix's
            // extent at its leading dimension lies within one stride; the scalars match the
            // compute type.
            unsafe {
                cb.gemm_strided(
                    c.dims,
                    (c.ops.0 == T, c.ops.1 == T),
                    ap,
                    (pa, lda, sa),
                    (pb, ldb, sb),
                    bp,
                    (pc, ldc, sc),
                    c.batch,
                    T::CUDA_TYPE,
                    compute,
                )
            }
            .map_err(cudrv::Error::InvalidArgument)
        },
    )?;
    let diff = rel_diff(&c1.to_vec()?, &c2.to_vec()?);
    Ok(Measured {
        ours: t_ours.device,
        theirs: Some(t_theirs.device),
        diff: Some(diff),
        kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_choices_are_labelled_as_the_gemm_rows_label_them() {
        assert_eq!(sel_name((Tile::Auto, Kernel::Auto, SplitK::Auto)), "a");
        assert_eq!(sel_name((Tile::Narrow, Kernel::Wgmma, SplitK::Parts(4))), "n:wgmma/4");
        assert_eq!(
            sel_name((Tile::Auto, Kernel::MmaSync, SplitK::Partials(16))),
            "a:mma/p16"
        );
        assert_eq!(sel_name((Tile::Large, Kernel::Auto, SplitK::Off)), "l/1");
    }

    #[test]
    fn the_suite_has_at_least_60_cases_every_group_and_every_op_pair() {
        let cases = gemm_cases();
        assert!(cases.len() >= 60, "{} cases", cases.len());
        for g in [
            "llama2-7b",
            "llama3-8b",
            "llama2-70b",
            "gpt2",
            "attention",
            "odd",
            "ld",
            "ops",
            "k",
        ] {
            assert!(cases.iter().any(|c| c.group == g), "no {g} case");
        }
        for ops in [(N, N), (N, T), (T, N), (T, T)] {
            assert!(cases.iter().any(|c| c.ops == ops), "no {ops:?} case");
        }
        let ks: Vec<usize> = cases.iter().map(|c| c.dims.2).collect();
        assert_eq!((ks.iter().min(), ks.iter().max()), (Some(&16), Some(&65536)));
        assert!(cases.iter().any(|c| c.batch >= 512));
        assert!(cases.iter().any(|c| c.offset > 0) && cases.iter().any(|c| c.pad.iter().any(|&p| p > 0)));
        // Decode sizes: m or n from 1 to 128.
        assert!(cases.iter().any(|c| c.dims.1 == 1) && cases.iter().any(|c| c.dims.1 == 128));
    }
}
