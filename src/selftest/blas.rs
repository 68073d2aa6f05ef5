//! The selftest's checks of the bundled BLAS kernels: every GEMM kernel variant (type, kernel
//! family, tile, op combination) against an f64 CPU reference, and the GEMV kernels'
//! (`gemv.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::blas::{Activation, Gemm, Kernel, MathMode, SplitK, Tile, Transpose};
use crate::error::Result;
use crate::memory::{DeviceBuffer, DeviceSlice};
use crate::selftest::sweeps::{element_pads, sweep_shape, DMMA90_SWEEP, ELEMENT_OPS};
use crate::selftest::{letter_of, rel_error, Check, Element, Rng};
use crate::stream::Stream;

/// Every activation, which the checks cycle through.
pub(super) const ACTIVATIONS: [Activation; 5] = [
    Activation::None,
    Activation::Relu,
    Activation::Gelu,
    Activation::Sigmoid,
    Activation::Tanh,
];

/// One column-major GEMM with bias and activation, checked against the CPU; `Err` on a failure
/// to run, `Ok(error)` otherwise.
#[allow(clippy::too_many_arguments)]
fn gemm_case<T: Element>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    (ta, tb): (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
    [pad_a, pad_b, pad_c]: [usize; 3],
    math: MathMode,
    kernel: Kernel,
    (tile, split): (Tile, SplitK),
    act: Activation,
) -> Result<f64>
where
    T::Scalar: From<f32>,
{
    let (ra, ca) = if ta == Transpose::N { (m, k) } else { (k, m) };
    let (rb, cb) = if tb == Transpose::N { (k, n) } else { (n, k) };
    // Leading dimensions longer than the matrices by their pads.
    let (lda, ldb, ldc) = (ra + pad_a, rb + pad_b, m + pad_c);
    let a: Vec<T> = rng.vec(lda * ca, -1.0, 1.0);
    let b: Vec<T> = rng.vec(ldb * cb, -1.0, 1.0);
    let c0: Vec<T> = rng.vec(ldc * n, -1.0, 1.0);
    let bias: Vec<T> = rng.vec(m, -0.5, 0.5);
    let (alpha, beta) = (0.75f32, -0.5f32);
    let at = |i: usize, p: usize| {
        if ta == Transpose::N {
            a[i + p * lda]
        } else {
            a[p + i * lda]
        }
        .to_f64()
    };
    let bt = |p: usize, j: usize| {
        if tb == Transpose::N {
            b[p + j * ldb]
        } else {
            b[j + p * ldb]
        }
        .to_f64()
    };
    let mut want = vec![0.0f64; m * n];
    for j in 0..n {
        for i in 0..m {
            let dot: f64 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
            let x = alpha as f64 * dot + beta as f64 * c0[i + j * ldc].to_f64() + bias[i].to_f64();
            want[i + j * m] = act.op().map_or(x, |f| f.reference(x));
        }
    }
    let da = DeviceBuffer::from_slice(stream, &a)?;
    let db = DeviceBuffer::from_slice(stream, &b)?;
    let dbias = DeviceBuffer::from_slice(stream, &bias)?;
    let mut dc = DeviceBuffer::from_slice(stream, &c0)?;
    Gemm::<T::Scalar>::new(ta, tb, m, n, k)
        .alpha(T::Scalar::from(alpha))
        .beta(T::Scalar::from(beta))
        .ld(lda, ldb, ldc)
        .math(math)
        .kernel(kernel)
        .tile(tile)
        .split_k(split)
        .activation(act)
        .run_with_bias(&da, &db, &dbias, &mut dc)?;
    let out = dc.to_vec()?;
    let got: Vec<f64> = (0..m * n).map(|e| out[e % m + (e / m) * ldc].to_f64()).collect();
    Ok(rel_error(&got, &want))
}

/// Every variant of one element type's GEMM kernels: `prefix` names them
/// (`{prefix}_{tile}_{ops}`); `tiles` the tiles (and k splits) the family has, with the kernel
/// names' tile part and the padding of the leading dimensions.
#[allow(clippy::too_many_arguments)]
fn sweep<T: Element>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    prefix: &str,
    math: MathMode,
    kernel: Kernel,
    tiles: &[(Tile, SplitK, &str, usize)],
    tol: f64,
    out: &mut Vec<Check>,
    covered: &mut BTreeSet<String>,
    acts: &[Activation],
) where
    T::Scalar: From<f32>,
{
    use Transpose::{N, T as Tr};
    for &(tile, split, letter, pad) in tiles {
        let shape = sweep_shape(letter);
        let mut all = true;
        for ops in [(N, N), (N, Tr), (Tr, N), (Tr, Tr)] {
            // Cycle through the activations across all checks, so every one is exercised.
            let act = acts[out.len() % acts.len()];
            let name = format!("gemm {prefix}_{letter}_{}{}", letter_of(ops.0), letter_of(ops.1));
            let result = gemm_case::<T>(stream, rng, ops, shape, [pad; 3], math, kernel, (tile, split), act);
            let what = format!("{}x{}x{} ld+{pad} +bias {act:?}", shape.0, shape.1, shape.2);
            let check = Check::new(name, what, tol, result);
            all &= check.passed;
            out.push(check);
        }
        // The four op combinations map one-to-one onto the four kernels of the family and tile.
        if all {
            for ops in ["nn", "nt", "tn", "tt"] {
                covered.insert(format!("{prefix}_{letter}_{ops}"));
            }
        }
    }
}

/// The wgmma sweeps of one module family (`gemm_wg`, or `gemm_wg_<act>` with an activation's
/// twins) for each of its types: `{module}_f16`, `{module}_bf16` and `{module}_tf32`.
fn wgmma_sweeps(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    module: &str,
    tiles: &[(Tile, SplitK, &str, usize)],
    out: &mut Vec<Check>,
    covered: &mut BTreeSet<String>,
    acts: &[Activation],
) {
    let (k, exact) = (Kernel::Wgmma, MathMode::Exact);
    sweep::<half::f16>(
        stream,
        rng,
        &format!("{module}_f16"),
        exact,
        k,
        tiles,
        2e-2,
        out,
        covered,
        acts,
    );
    sweep::<half::bf16>(
        stream,
        rng,
        &format!("{module}_bf16"),
        exact,
        k,
        tiles,
        2e-2,
        out,
        covered,
        acts,
    );
    sweep::<f32>(
        stream,
        rng,
        &format!("{module}_tf32"),
        MathMode::Tf32,
        k,
        tiles,
        5e-3,
        out,
        covered,
        acts,
    );
}

/// The wgmma pairs (two blocks of a cluster share X's loads: `pair_rule` in ptx/gemm_wg.cuh),
/// in the plain modules: f16 and bf16 in every op combination (cycling through the activations,
/// which pairs apply in their rolled epilogue), tf32 in its `tn` kernel (its other ops run the
/// tiles alone).
fn wgmma_pairs(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    let pairs = [
        (Tile::LargePair, SplitK::Auto, "p", 0),
        (Tile::NarrowPair, SplitK::Auto, "q", 0),
    ];
    let (wg, exact) = (Kernel::Wgmma, MathMode::Exact);
    let acts = &ACTIVATIONS;
    sweep::<half::f16>(stream, rng, "gemm_wg_f16", exact, wg, &pairs, 2e-2, out, covered, acts);
    sweep::<half::bf16>(stream, rng, "gemm_wg_bf16", exact, wg, &pairs, 2e-2, out, covered, acts);
    for (tile, split, letter, pad) in pairs {
        let shape = sweep_shape(letter);
        let runs = [((Transpose::T, Transpose::N), acts[out.len() % acts.len()])];
        let detail = format!("{}x{}x{} ld+{pad} +bias", shape.0, shape.1, shape.2);
        kernel_rows(
            out,
            covered,
            &format!("gemm_wg_tf32_{letter}_tn"),
            &detail,
            5e-3,
            &runs,
            &mut |ops, act| {
                gemm_case::<f32>(
                    stream,
                    rng,
                    ops,
                    shape,
                    [pad; 3],
                    MathMode::Tf32,
                    wg,
                    (tile, split),
                    act,
                )
            },
        );
    }
}

/// The aligned copies of unaligned operands (`gemm_pack_b16/b32/b64`): a forced tensor-core GEMM
/// on leading dimensions one element longer than the matrices (137 and 49: no multiple of 16
/// bytes for any type), in the op combinations that copy an m- or n-contiguous operand (NN) and a
/// k-contiguous one (TT), checked against the CPU and named after the copy kernel.
fn aligned_copies(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T as Tr};
    let shape = (136, 72, 48);
    let no_tile = (Tile::Auto, SplitK::Auto);
    let tc = Kernel::TensorCore;
    let runs = [((N, N), Activation::None), ((Tr, Tr), Activation::None)];
    let detail = "136x72x48 ld+1 +bias, tensor cores";
    let mut each = |bits: u32, tol: f64, case: &mut dyn FnMut((Transpose, Transpose), Activation) -> Result<f64>| {
        kernel_rows(out, covered, &format!("gemm_pack_b{bits}"), detail, tol, &runs, case);
    };
    each(16, 2e-2, &mut |ops, act| {
        gemm_case::<half::f16>(stream, rng, ops, shape, [1; 3], MathMode::Exact, tc, no_tile, act)
    });
    each(32, 5e-3, &mut |ops, act| {
        gemm_case::<f32>(stream, rng, ops, shape, [1; 3], MathMode::Tf32, tc, no_tile, act)
    });
    each(64, 1e-12, &mut |ops, act| {
        gemm_case::<f64>(stream, rng, ops, shape, [1; 3], MathMode::Exact, tc, no_tile, act)
    });
}

/// The transposed copy of a k-contiguous f32 B (`gemm_transpose_b32`, before the CUDA-core
/// kernels with 16-byte copies): TN and TT on the paired tile, forced, with 1600 columns of C
/// (the copy's least is 1536), checked against the CPU and named after the copy kernel.
fn transposed_copies(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T as Tr};
    let runs = [((Tr, N), Activation::None), ((Tr, Tr), Activation::None)];
    let detail = "136x1600x48 +bias on gemm_simt_f32_x";
    kernel_rows(
        out,
        covered,
        "gemm_transpose_b32",
        detail,
        1e-5,
        &runs,
        &mut |ops, act| {
            let tile = (Tile::Broad, SplitK::Auto);
            gemm_case::<f32>(
                stream,
                rng,
                ops,
                (136, 1600, 48),
                [0; 3],
                MathMode::Exact,
                Kernel::Simt,
                tile,
                act,
            )
        },
    );
}

/// The thin mma.sync tiles' variants for k-contiguous operands aligned only to their element
/// (`gemm_tc_<type>_{tu,hu}_<ops>`): for each op pair with a k-contiguous operand, the
/// k-contiguous operands' leading dimensions one element longer ([`element_pads`]), the thin tile
/// forced. A CPU test (src/blas/gemm/tests/selftest_names.rs) checks that each picks the kernel it
/// names.
fn thin_element_variants(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    let k = Kernel::MmaSync;
    let thin = (Tile::Thin, SplitK::Auto);
    for letter in ["tu", "hu"] {
        let shape = sweep_shape(letter);
        for (ops, o) in ELEMENT_OPS {
            let pads = element_pads(ops);
            let act = ACTIVATIONS[out.len() % ACTIVATIONS.len()];
            let what = format!("{}x{}x{} pads {pads:?} +bias {act:?}", shape.0, shape.1, shape.2);
            let runs: [(&str, f64, Result<f64>); 3] = [
                (
                    "f16",
                    2e-2,
                    gemm_case::<half::f16>(stream, rng, ops, shape, pads, MathMode::Exact, k, thin, act),
                ),
                (
                    "bf16",
                    2e-2,
                    gemm_case::<half::bf16>(stream, rng, ops, shape, pads, MathMode::Exact, k, thin, act),
                ),
                (
                    "tf32",
                    5e-3,
                    gemm_case::<f32>(stream, rng, ops, shape, pads, MathMode::Tf32, k, thin, act),
                ),
            ];
            for (ty, tol, result) in runs {
                let name = format!("gemm_tc_{ty}_{letter}_{o}");
                Check::new(format!("gemm {name}"), what.clone(), tol, result).record(out, covered, [name]);
            }
        }
    }
}

/// [`MathMode::Tf32x3`] forced onto the tensor cores: the split (`gemm_split_tf32x3`, which
/// reads each operand k-contiguous or not as the ops make it) in every op pair with an
/// activation and a bias, and on compute capability 9.0 each tile of the promoted tf32 kernels
/// (`gemm_wg_tf32x3_<tile>_tn`) forced, at f32's tolerance. A check covers the kernels that
/// [`Gemm::kernel_name`] reports for it, and fails where that is not the product it names.
fn tf32x3_products(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T as Tr};
    let hopper = stream.context().compute_capability() == (9, 0);
    let tiles: &[(Tile, &str)] = if hopper {
        &[
            (Tile::Broad, "b"),
            (Tile::Large, "l"),
            (Tile::Narrow, "n"),
            (Tile::Medium, "m"),
            (Tile::Half, "h"),
        ]
    } else {
        &[(Tile::Auto, "")]
    };
    let (m, n, k) = (200, 136, 72);
    for &(tile, letter) in tiles {
        for ops in [(N, N), (N, Tr), (Tr, N), (Tr, Tr)] {
            let act = ACTIVATIONS[out.len() % ACTIVATIONS.len()];
            let g = Gemm::<f32>::new(ops.0, ops.1, m, n, k)
                .math(MathMode::Tf32x3)
                .kernel(Kernel::TensorCore)
                .tile(tile);
            let promoted = format!("gemm_wg_tf32x3_{letter}_tn");
            let ran = (|| {
                let buf = |len| DeviceBuffer::<f32>::zeroed(stream, len);
                g.kernel_name(&buf(m * k)?, &buf(k * n)?, &buf(m * n)?)
            })();
            let result = match ran {
                Ok(name) if name.starts_with("gemm_split_tf32x3+") && (!hopper || name.ends_with(&promoted)) => {
                    gemm_case::<f32>(
                        stream,
                        rng,
                        ops,
                        (m, n, k),
                        [0; 3],
                        MathMode::Tf32x3,
                        Kernel::TensorCore,
                        (tile, SplitK::Auto),
                        act,
                    )
                }
                Ok(name) => Err(crate::error::invalid(format_args!("ran {name}"))),
                Err(e) => Err(e),
            };
            let label = if hopper {
                format!("gemm gemm_split_tf32x3+{promoted}")
            } else {
                "gemm gemm_split_tf32x3".to_string()
            };
            let what = format!("{m}x{n}x{k} {}{} +bias {act:?}", letter_of(ops.0), letter_of(ops.1));
            let covers = std::iter::once("gemm_split_tf32x3".to_string()).chain(hopper.then_some(promoted));
            Check::new(label, what, 1e-5, result).record(out, covered, covers);
        }
    }
}

/// The skinny kernels (`gemm_skinny_f32_*`, and `gemm_skinny_finish_f32` after a split of k),
/// which f32 GEMMs with one side of 2 to 16 and both operands k-contiguous run (TN): 1000 x 16 x
/// 700 (the short side is D's columns) with gelu, 16 x 300 x 4096 (its rows, k split), with beta
/// and a bias; 1000 x 16 x 700 with the short operand's rows one element longer (the `u`
/// kernel); and 333 x 7 x 501 on leading dimensions one longer, which stays on the tiled
/// kernels.
fn skinny_products(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    for (dims, pads, act) in [
        ((1000, 16, 700), [0; 3], Activation::Gelu),
        ((16, 300, 4096), [0; 3], Activation::None),
        ((333, 7, 501), [1; 3], Activation::Tanh),
        // The short operand one element longer per row: the `u` kernel (element-wise H).
        ((1000, 16, 700), [0, 1, 1], Activation::Relu),
    ] {
        let (name, check) = tn_check::<f32>(stream, rng, dims, pads, (act, MathMode::Exact), 1e-5);
        // A split of k also ran the finishing kernel.
        let covers: Vec<String> = if name.starts_with("gemm_skinny_") {
            let finish = name.contains("/split").then(|| "gemm_skinny_finish_f32".to_string());
            std::iter::once(name.split('/').next().unwrap_or_default().to_string())
                .chain(finish)
                .collect()
        } else {
            Vec::new()
        };
        check.record(out, covered, covers);
    }
}

/// One column-major TN GEMM of `dims` (leading dimensions `pads` longer than the tightest) with
/// automatic knobs, a bias and `act`, checked against the CPU with `tol`, and the kernel it ran
/// (`kernel_name`, empty when it could not say).
fn tn_check<T: Element>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    pads: [usize; 3],
    (act, math): (Activation, MathMode),
    tol: f64,
) -> (String, Check)
where
    T::Scalar: From<f32>,
{
    let ops = (Transpose::T, Transpose::N);
    let [pa, pb, pc] = pads;
    let name = (|| {
        let zeros = |len: usize| DeviceBuffer::from_slice(stream, &vec![T::from_f64(0.0); len]);
        let (a, b, c) = (zeros((k + pa) * m)?, zeros((k + pb) * n)?, zeros((m + pc) * n)?);
        Gemm::<T::Scalar>::new(ops.0, ops.1, m, n, k)
            .ld(k + pa, k + pb, m + pc)
            .math(math)
            .kernel_name(&a, &b, &c)
    })()
    .unwrap_or_default();
    let auto = (Tile::Auto, SplitK::Auto);
    let result = gemm_case::<T>(stream, rng, ops, (m, n, k), pads, math, Kernel::Auto, auto, act);
    let check = Check::new(
        format!("gemm {name} tn"),
        format!("{m}x{n}x{k} pads {pads:?} +bias {act:?}"),
        tol,
        result,
    );
    (name, check)
}

/// The sm_90 decode-step kernels for f16, bf16 and tf32 (`gemm_skinny90_<t>_k<KB>`, TMA-fed
/// mma.sync), which GEMMs with one side of at most 16, both operands k-contiguous (TN) and
/// aligned to the TMA's rules run on compute capability 9.0: 1600 x 9 x 4100 (the short side is
/// C's columns, few tiles and long k; k ends inside a 16-byte vector and inside a stage) with
/// gelu, 12 x 3000 x 776 (C's rows) and 12 x 6144 x 1000 (96 tiles: whole tiles per block, the
/// others stream-k), each with beta and a bias, on leading dimensions of whole vectors.
fn skinny90_products(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    for (dims, pads, act) in [
        ((1600, 9, 4100), [4, 4, 3], Activation::Gelu),
        ((12, 3000, 776), [0, 0, 0], Activation::None),
        ((12, 6144, 1000), [0, 0, 5], Activation::None),
    ] {
        for (name, check) in [
            tn_check::<half::f16>(stream, rng, dims, pads, (act, MathMode::Exact), 2e-2),
            tn_check::<half::bf16>(stream, rng, dims, pads, (act, MathMode::Exact), 2e-2),
            tn_check::<f32>(stream, rng, dims, pads, (act, MathMode::Tf32), 2e-2),
        ] {
            let covers = name.starts_with("gemm_skinny90_").then_some(name);
            check.record(out, covered, covers);
        }
    }
}

/// The sum of a split of k through partial products (`gemm_partials_<t>` of every type but tf32,
/// which shares f32's):
/// 70 x 50 x 3001 in 5 parts (four batched, a shorter last one) on leading dimensions one
/// longer, NN and TT, each with an activation, beta and a bias.
fn partial_products(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T as Tr};
    let shape = (70, 50, 3001);
    let knobs = (Tile::Auto, SplitK::Partials(5));
    let runs = [((N, N), ACTIVATIONS[1]), ((Tr, Tr), ACTIVATIONS[3])];
    let detail = "70x50x3001 /5 ld+1 +bias";
    let (k, e) = (Kernel::Auto, MathMode::Exact);
    kernel_rows(
        out,
        covered,
        "gemm_partials_f32",
        detail,
        1e-5,
        &runs,
        &mut |ops, act| gemm_case::<f32>(stream, rng, ops, shape, [1; 3], e, k, knobs, act),
    );
    kernel_rows(
        out,
        covered,
        "gemm_partials_f64",
        detail,
        1e-12,
        &runs,
        &mut |ops, act| gemm_case::<f64>(stream, rng, ops, shape, [1; 3], e, k, knobs, act),
    );
    // f16 and bf16: the parts' f32 sums from the wgmma kernels (compute capability 9.0; else
    // mma.sync's), rounded once at the end.
    kernel_rows(
        out,
        covered,
        "gemm_partials_f16",
        detail,
        2e-2,
        &runs,
        &mut |ops, act| gemm_case::<half::f16>(stream, rng, ops, shape, [1; 3], e, k, knobs, act),
    );
    kernel_rows(
        out,
        covered,
        "gemm_partials_bf16",
        detail,
        2e-2,
        &runs,
        &mut |ops, act| gemm_case::<half::bf16>(stream, rng, ops, shape, [1; 3], e, k, knobs, act),
    );
}

/// One check row per `(ops, activation)` of `runs` for the kernel `name` (`gemm <name> <ops>`,
/// described as `<detail> <activation>`); the kernel counts as covered when every row passed.
fn kernel_rows(
    out: &mut Vec<Check>,
    covered: &mut BTreeSet<String>,
    name: &str,
    detail: &str,
    tol: f64,
    runs: &[((Transpose, Transpose), Activation)],
    case: &mut dyn FnMut((Transpose, Transpose), Activation) -> Result<f64>,
) {
    let mut all = true;
    for &(ops, act) in runs {
        let label = format!("gemm {name} {}{}", letter_of(ops.0), letter_of(ops.1));
        let check = Check::new(label, format!("{detail} {act:?}"), tol, case(ops, act));
        all &= check.passed;
        out.push(check);
    }
    if all {
        covered.insert(name.to_string());
    }
}

/// The one-block-per-matrix kernels (`gemm_small_<t>`), which every GEMM with m, n and k of at
/// most 32 and automatic knobs runs: 17 x 23 x 29 on leading dimensions one longer, every op
/// combination, each with an activation, beta and a bias.
fn small_matrices(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T as Tr};
    let shape = (17, 23, 29);
    let auto = (Tile::Auto, SplitK::Auto);
    let runs: Vec<_> = [(N, N), (N, Tr), (Tr, N), (Tr, Tr)]
        .into_iter()
        .enumerate()
        .map(|(i, ops)| (ops, ACTIVATIONS[i + 1]))
        .collect();
    let detail = "17x23x29 ld+1 +bias";
    let (e, k) = (MathMode::Exact, Kernel::Auto);
    let mut each = |name: &str, tol: f64, case: &mut dyn FnMut((Transpose, Transpose), Activation) -> Result<f64>| {
        kernel_rows(out, covered, name, detail, tol, &runs, case)
    };
    each("gemm_small_f32", 1e-5, &mut |ops, act| {
        gemm_case::<f32>(stream, rng, ops, shape, [1; 3], e, k, auto, act)
    });
    each("gemm_small_f64", 1e-12, &mut |ops, act| {
        gemm_case::<f64>(stream, rng, ops, shape, [1; 3], e, k, auto, act)
    });
    each("gemm_small_f16", 2e-2, &mut |ops, act| {
        gemm_case::<half::f16>(stream, rng, ops, shape, [1; 3], e, k, auto, act)
    });
    each("gemm_small_bf16", 2e-2, &mut |ops, act| {
        gemm_case::<half::bf16>(stream, rng, ops, shape, [1; 3], e, k, auto, act)
    });
}

pub(crate) fn run(stream: &Arc<Stream>, seed: u64) -> (Vec<Check>, BTreeSet<String>) {
    let mut rng = Rng::new(seed ^ 0xB1A5);
    let (mut out, mut covered) = (Vec::new(), BTreeSet::new());
    let both = [(Tile::Small, SplitK::Auto, "s", 0), (Tile::Large, SplitK::Auto, "l", 0)];
    // The mma.sync kernels: 64 x 64, 128 x 128 and the thin 16 x 64 and 64 x 16.
    let tc_tiles = [
        both[0],
        both[1],
        (Tile::Thin, SplitK::Auto, "t", 0),
        (Tile::Thin, SplitK::Auto, "h", 0),
    ];
    let small = [(Tile::Small, SplitK::Auto, "s", 0)];
    // f32 on the CUDA cores: w needs operands aligned for 16-byte copies, so l runs on
    // leading dimensions one element longer than the matrices; u is the automatic choice for a
    // problem this small (fewer 64 x 64 tiles than multiprocessors); v is the 128 x 64 tile with
    // k split over blocks; x is the 128 x 128 tile of two blocks per SM (aligned operands).
    let f32_simt = [
        (Tile::Small, SplitK::Auto, "s", 0),
        (Tile::Large, SplitK::Auto, "w", 0),
        (Tile::Broad, SplitK::Auto, "x", 0),
        (Tile::Large, SplitK::Auto, "l", 1),
        (Tile::Auto, SplitK::Auto, "u", 0),
        (Tile::Narrow, SplitK::Parts(2), "v", 0),
    ];
    let tc = stream.context().compute_capability() >= (8, 0);
    let (s, r) = (stream, &mut rng);
    sweep::<f32>(
        s,
        r,
        "gemm_simt_f32",
        MathMode::Exact,
        Kernel::Simt,
        &f32_simt,
        1e-5,
        &mut out,
        &mut covered,
        &ACTIVATIONS,
    );
    sweep::<f64>(
        s,
        r,
        "gemm_simt_f64",
        MathMode::Exact,
        Kernel::Simt,
        &small,
        1e-12,
        &mut out,
        &mut covered,
        &ACTIVATIONS,
    );
    sweep::<half::f16>(
        s,
        r,
        "gemm_simt_f16",
        MathMode::Exact,
        Kernel::Simt,
        &small,
        2e-2,
        &mut out,
        &mut covered,
        &ACTIVATIONS,
    );
    sweep::<half::bf16>(
        s,
        r,
        "gemm_simt_bf16",
        MathMode::Exact,
        Kernel::Simt,
        &small,
        2e-2,
        &mut out,
        &mut covered,
        &ACTIVATIONS,
    );
    if tc {
        let k = Kernel::MmaSync;
        sweep::<half::f16>(
            s,
            r,
            "gemm_tc_f16",
            MathMode::Exact,
            k,
            &tc_tiles,
            2e-2,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        );
        sweep::<half::bf16>(
            s,
            r,
            "gemm_tc_bf16",
            MathMode::Exact,
            k,
            &tc_tiles,
            2e-2,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        );
        sweep::<f32>(
            s,
            r,
            "gemm_tc_tf32",
            MathMode::Tf32,
            k,
            &tc_tiles,
            5e-3,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        );
        sweep::<f64>(
            s,
            r,
            "gemm_dmma_f64",
            MathMode::Exact,
            k,
            &small,
            1e-12,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        );
    }
    if tc {
        aligned_copies(s, r, &mut out, &mut covered);
        transposed_copies(s, r, &mut out, &mut covered);
        thin_element_variants(s, r, &mut out, &mut covered);
        tf32x3_products(s, r, &mut out, &mut covered);
    }
    small_matrices(s, r, &mut out, &mut covered);
    skinny_products(s, r, &mut out, &mut covered);
    if tc && stream.context().compute_capability() >= (9, 0) {
        skinny90_products(s, r, &mut out, &mut covered);
    }
    partial_products(s, r, &mut out, &mut covered);
    if tc && stream.context().compute_capability() >= (9, 0) {
        // The sm_90 f64 DMMA kernels (module gemm_dmma90): DMMA90_SWEEP.
        sweep::<f64>(
            s,
            r,
            "gemm_dmma90_f64",
            MathMode::Exact,
            Kernel::TensorCore,
            &DMMA90_SWEEP,
            1e-12,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        ); // Exact f32 on the same tiles (module gemm_dmma90_f32): f32 operands converted to f64,
           // f64 sums, D rounded once: f32's tolerance with room to spare.
        sweep::<f32>(
            s,
            r,
            "gemm_dmma90_f32",
            MathMode::Exact,
            Kernel::TensorCore,
            &DMMA90_SWEEP,
            1e-5,
            &mut out,
            &mut covered,
            &ACTIVATIONS,
        );
    }
    if stream.context().compute_capability() == (9, 0) {
        // The sm_90a kernels: modules gemm_wg_<type> without an activation, and their twins in
        // gemm_wg_<act>_<type>, which a D aligned for the TMA runs with that activation (136
        // rows are 16-byte multiples for every type). tf32's `nt` packs its operands first, so a
        // passing tf32 sweep covers the packer too.
        let wide = [
            (Tile::Narrow, SplitK::Auto, "n", 0),
            (Tile::Large, SplitK::Auto, "l", 0),
            (Tile::Wide, SplitK::Auto, "w", 0),
        ];
        for act in ACTIVATIONS {
            let module = act
                .op()
                .map_or("gemm_wg".to_string(), |f| format!("gemm_wg_{}", f.name()));
            wgmma_sweeps(s, r, &module, &wide, &mut out, &mut covered, &[act]);
        }
        // The 128 x 192 and 64-row tiles live in the plain modules only; an activation runs
        // there in the rolled epilogue, so their checks cycle through every activation.
        let broad = [
            (Tile::Broad, SplitK::Auto, "b", 0),
            (Tile::Half, SplitK::Auto, "h", 0),
            (Tile::Medium, SplitK::Auto, "m", 0),
        ];
        wgmma_sweeps(s, r, "gemm_wg", &broad, &mut out, &mut covered, &ACTIVATIONS);
        wgmma_pairs(s, r, &mut out, &mut covered);
        crate::selftest::wg_in_place::checks(s, r, &mut out, &mut covered);
        if ["n", "l", "w"]
            .iter()
            .all(|t| covered.contains(&format!("gemm_wg_tf32_{t}_nn")))
        {
            covered.insert("gemm_wg_pack_tf32".to_string());
        }
    }
    crate::selftest::gemv::checks(stream, &mut rng, &mut out, &mut covered);
    (out, covered)
}
