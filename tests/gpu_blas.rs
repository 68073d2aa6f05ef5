//! GPU tests of `cudrv::blas` against a CPU reference in f64: fresh random inputs (never zeros),
//! outputs poisoned (0xFF bytes, NaN in every float type) before each run, a shape sweep with odd
//! sizes, every op combination, both layouts, padded leading dimensions, batches, epilogues,
//! empty problems and error paths (C untouched).
//!
//! Bounds on ‖C − ref‖ / ‖ref‖: f32 < 1e-5, TF32 < 5e-3, f16/bf16 < 2e-2, f64 < 1e-12; NaN fails.

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::blas::{self, Activation, Gemm, GemmType, Kernel, Layout, MathMode, SplitK, Tile, Transpose};
use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Stream};
use half::{bf16, f16};

trait El: GemmType + Copy + Default + std::fmt::Debug + 'static {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn scalar(x: f64) -> Self::Scalar;
    /// The error bound for this type and math mode.
    fn bound(math: MathMode) -> f64;
}
impl El for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn bound(math: MathMode) -> f64 {
        match math {
            MathMode::Exact => 1e-5,
            MathMode::Tf32 => 5e-3,
        }
    }
}
impl El for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn scalar(x: f64) -> f64 {
        x
    }
    fn bound(_: MathMode) -> f64 {
        1e-12
    }
}
impl El for f16 {
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn bound(_: MathMode) -> f64 {
        2e-2
    }
}
impl El for bf16 {
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn scalar(x: f64) -> f32 {
        x as f32
    }
    fn bound(_: MathMode) -> f64 {
        2e-2
    }
}

/// ‖out − ref‖ / ‖ref‖ (absolute when ref is 0); infinite on any NaN or infinity in `out`.
fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    rel_err_floor(out, reference, 0.0)
}

/// ‖out − reference‖ / max(‖reference‖, floor); infinite when `out` has a NaN or an infinity.
fn rel_err_floor(out: &[f64], reference: &[f64], floor: f64) -> f64 {
    let (mut d, mut r) = (0.0, 0.0);
    for (o, x) in out.iter().zip(reference) {
        if !o.is_finite() {
            return f64::INFINITY;
        }
        d += (o - x) * (o - x);
        r += x * x;
    }
    let r = r.sqrt().max(floor);
    if r > 0.0 {
        d.sqrt() / r
    } else {
        d.sqrt()
    }
}

fn act(a: Activation, v: f64) -> f64 {
    match a {
        Activation::None => v,
        Activation::Relu => v.max(0.0),
        Activation::Gelu => 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2)),
        Activation::Sigmoid => 1.0 / (1.0 + (-v).exp()),
        Activation::Tanh => v.tanh(),
    }
}

/// erf to ~1e-15 (Abramowitz-Stegun is too coarse for the f64 bound; use the series / continued
/// fraction split).
fn erf(x: f64) -> f64 {
    if x.abs() < 2.5 {
        // Maclaurin series.
        let (mut sum, mut term, x2) = (x, x, x * x);
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // Continued fraction for erfc.
        let ax = x.abs();
        let mut f = 0.0;
        for n in (1..60).rev() {
            f = n as f64 / 2.0 / (ax + f);
        }
        let erfc = (-ax * ax).exp() / std::f64::consts::PI.sqrt() / (ax + f);
        (1.0 - erfc).copysign(x)
    }
}

#[derive(Clone, Debug)]
struct Case {
    ta: Transpose,
    tb: Transpose,
    m: usize,
    n: usize,
    k: usize,
    /// Extra elements added to each tight leading dimension.
    pad: usize,
    /// Leading dimensions rounded up to a multiple of this (8: tensor-core friendly).
    ld_align: usize,
    layout: Layout,
    alpha: f64,
    beta: f64,
    batch: usize,
    act: Activation,
    bias: bool,
    math: MathMode,
    kernel: Kernel,
    tile: Tile,
    split: SplitK,
    /// Extra elements between C matrices of a batch (beyond a multiple of 8).
    c_gap: usize,
}

impl Case {
    fn new(ta: Transpose, tb: Transpose, m: usize, n: usize, k: usize) -> Self {
        Case {
            ta,
            tb,
            m,
            n,
            k,
            pad: 0,
            ld_align: 1,
            layout: Layout::ColMajor,
            alpha: 1.0,
            beta: 0.0,
            batch: 1,
            act: Activation::None,
            bias: false,
            math: MathMode::Exact,
            kernel: Kernel::Auto,
            tile: Tile::Auto,
            split: SplitK::Auto,
            c_gap: 0,
        }
    }
}

const OPS: [(Transpose, Transpose); 4] = [
    (Transpose::N, Transpose::N),
    (Transpose::N, Transpose::T),
    (Transpose::T, Transpose::N),
    (Transpose::T, Transpose::T),
];

/// (rows, cols) stored, and the (inner, outer) of that storage for the layout.
fn storage(layout: Layout, rows: usize, cols: usize) -> (usize, usize) {
    match layout {
        Layout::ColMajor => (rows, cols),
        Layout::RowMajor => (cols, rows),
    }
}

/// Runs one case on the GPU and returns the relative error; panics when the padding of C or
/// another batch entry was touched.
fn run_case<T: El>(stream: &Arc<Stream>, rng: &mut Rng, c: &Case) -> f64 {
    let (m, n, k, batch) = (c.m, c.n, c.k, c.batch);
    let a_dims = if c.ta == Transpose::N { (m, k) } else { (k, m) };
    let b_dims = if c.tb == Transpose::N { (k, n) } else { (n, k) };
    let ld = |(r, cl): (usize, usize)| {
        let inner = storage(c.layout, r, cl).0.max(1) + c.pad;
        inner.div_ceil(c.ld_align) * c.ld_align
    };
    let (lda, ldb, ldc) = (ld(a_dims), ld(b_dims), ld((m, n)));
    let one = |(r, cl): (usize, usize), l: usize| {
        let (_, outer) = storage(c.layout, r, cl);
        if r == 0 || cl == 0 {
            0
        } else {
            (outer - 1) * l + storage(c.layout, r, cl).0
        }
    };
    // Batch strides: one matrix plus a little gap (a multiple of 8 elements).
    let (sa, sb, sc) = (
        (one(a_dims, lda) + 8).div_ceil(8) * 8,
        (one(b_dims, ldb) + 8).div_ceil(8) * 8,
        (one((m, n), ldc) + 8).div_ceil(8) * 8 + c.c_gap,
    );
    let len = |one: usize, s: usize| if batch > 1 { (batch - 1) * s + one } else { one }.max(1);
    let a_host: Vec<T> = (0..len(one(a_dims, lda), sa))
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let b_host: Vec<T> = (0..len(one(b_dims, ldb), sb))
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let bias_len = match c.layout {
        Layout::ColMajor => m,
        Layout::RowMajor => n,
    };
    let bias_host: Vec<T> = (0..bias_len.max(1))
        .map(|_| T::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    // C: random inside the matrices when beta reads them, poison (0xFF bytes) everywhere else.
    let c_len = len(one((m, n), ldc), sc);
    let at = |r: usize, cl: usize, l: usize| match c.layout {
        Layout::ColMajor => r + cl * l,
        Layout::RowMajor => r * l + cl,
    };
    let a_ref = |bi: usize, i: usize, p: usize| {
        let (r, cl) = if c.ta == Transpose::N { (i, p) } else { (p, i) };
        a_host[bi * sa + at(r, cl, lda)].to_f64()
    };
    let b_ref = |bi: usize, p: usize, j: usize| {
        let (r, cl) = if c.tb == Transpose::N { (p, j) } else { (j, p) };
        b_host[bi * sb + at(r, cl, ldb)].to_f64()
    };

    // SAFETY: every element is written by the memset just below before anything reads it.
    let mut c_dev = unsafe { DeviceBuffer::<T>::uninit(stream, c_len) }.unwrap();
    c_dev.memset_bytes(0xFF).unwrap();
    let mut c_init = c_dev.to_vec().unwrap();
    let mut in_matrix = vec![false; c_len];
    for bi in 0..batch {
        for j in 0..n {
            for i in 0..m {
                let idx = bi * sc + at(i, j, ldc);
                in_matrix[idx] = true;
                if c.beta != 0.0 {
                    c_init[idx] = T::from_f64(rng.uniform(-1.0, 1.0));
                }
            }
        }
    }
    c_dev.copy_from_slice(&c_init).unwrap();

    let a_dev = DeviceBuffer::from_slice(stream, &a_host).unwrap();
    let b_dev = DeviceBuffer::from_slice(stream, &b_host).unwrap();
    let bias_dev = DeviceBuffer::from_slice(stream, &bias_host).unwrap();
    let g = Gemm::<T::Scalar>::new(c.ta, c.tb, m, n, k)
        .alpha(T::scalar(c.alpha))
        .beta(T::scalar(c.beta))
        .ld(lda, ldb, ldc)
        .layout(c.layout)
        .batched(batch, sa, sb, sc)
        .math(c.math)
        .activation(c.act)
        .kernel(c.kernel)
        .tile(c.tile)
        .split_k(c.split);
    if c.bias {
        g.run_with_bias(&a_dev, &b_dev, &bias_dev, &mut c_dev)
    } else {
        g.run(&a_dev, &b_dev, &mut c_dev)
    }
    .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let out = c_dev.to_vec().unwrap();

    // `size` is the magnitude of what each element sums (|alpha| sum |a||b| + |beta c| + |bias|):
    // rounding errors scale with it, not with the result.
    let (mut got, mut want, mut size) = (Vec::new(), Vec::new(), 0.0f64);
    for bi in 0..batch {
        for j in 0..n {
            for i in 0..m {
                let (mut s, mut mag) = (0.0, 0.0);
                for p in 0..k {
                    let t = a_ref(bi, i, p) * b_ref(bi, p, j);
                    s += t;
                    mag += t.abs();
                }
                let idx = bi * sc + at(i, j, ldc);
                let mut v = c.alpha * s;
                mag *= c.alpha.abs();
                if c.beta != 0.0 {
                    v += c.beta * c_init[idx].to_f64();
                    mag += (c.beta * c_init[idx].to_f64()).abs();
                }
                if c.bias {
                    let b = bias_host[if c.layout == Layout::ColMajor { i } else { j }].to_f64();
                    v += b;
                    mag += b.abs();
                }
                want.push(act(c.act, v));
                got.push(out[idx].to_f64());
                size += mag * mag;
            }
        }
    }
    for (idx, inside) in in_matrix.iter().enumerate() {
        if !inside {
            assert!(
                out[idx].to_f64().is_nan(),
                "{c:?}: element {idx} outside C was written ({:?})",
                out[idx]
            );
        }
    }
    // ‖C − ref‖ / ‖ref‖, except where cancellation leaves the result smaller than half the size
    // of the terms it sums (tiny matrices with beta != 0: 1 x 1 x 1 with 0.75 a b - 0.5 c can come
    // out near zero): there the error is measured against half the terms' size, since rounding
    // the inputs (to tf32, f16, bf16) errs in proportion to the terms, not to their sum.
    rel_err_floor(&got, &want, size.sqrt() / 2.0)
}

fn sweep<T: El>(stream: &Arc<Stream>, rng: &mut Rng, cases: &[Case]) {
    let mut worst = (0.0f64, String::new());
    for c in cases {
        let e = run_case::<T>(stream, rng, c);
        let bound = T::bound(c.math);
        assert!(e < bound, "{} {c:?}: error {e:e} >= {bound:e}", T::NAME);
        if e > worst.0 {
            worst = (e, format!("{c:?}"));
        }
    }
    println!(
        "{}: {} cases, worst error {:.3e} ({})",
        T::NAME,
        cases.len(),
        worst.0,
        worst.1
    );
}

/// Odd shapes: (m, n, k).
const SHAPES: [(usize, usize, usize); 10] = [
    (1, 1, 1),
    (7, 33, 127),
    (129, 255, 257),
    (1000, 7, 129),
    (1, 300, 77),
    (300, 1, 77),
    (127, 129, 1),
    (64, 64, 64),
    (33, 1000, 255),
    (255, 257, 1000),
];

fn shape_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for (si, &(m, n, k)) in SHAPES.iter().enumerate() {
        for (oi, &(ta, tb)) in OPS.iter().enumerate() {
            for layout in [Layout::ColMajor, Layout::RowMajor] {
                let mut c = Case::new(ta, tb, m, n, k);
                c.layout = layout;
                c.kernel = kernel;
                c.math = math;
                c.ld_align = ld_align;
                c.pad = if (si + oi) % 3 == 0 { 0 } else { 5 };
                if (si + oi) % 2 == 1 {
                    c.alpha = 0.75;
                    c.beta = -0.5;
                }
                cases.push(c);
            }
        }
    }
    cases
}

/// Shapes large enough for the 128 x 128 tiles (>= 132 tiles).
fn big_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    OPS.iter()
        .enumerate()
        .map(|(i, &(ta, tb))| {
            let mut c = Case::new(ta, tb, 1100, 2100, 70);
            c.kernel = kernel;
            c.math = math;
            c.ld_align = ld_align;
            c.layout = if i % 2 == 0 { Layout::ColMajor } else { Layout::RowMajor };
            c.beta = 0.25;
            c
        })
        .collect()
}

fn epilogue_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, a) in [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ]
    .into_iter()
    .enumerate()
    {
        for layout in [Layout::ColMajor, Layout::RowMajor] {
            let mut c = Case::new(OPS[i % 4].0, OPS[i % 4].1, 77, 45, 33);
            c.layout = layout;
            c.act = a;
            c.bias = true;
            c.kernel = kernel;
            c.math = math;
            c.ld_align = ld_align;
            c.beta = if i % 2 == 0 { 0.0 } else { 0.5 };
            cases.push(c);
        }
    }
    cases
}

/// f32 shapes on which a forced wide tile splits k over 3 or 4 blocks per tile (k-tiles that do
/// not divide evenly, a short last k-tile, bias, activations, beta, both layouts).
fn split_k_cases() -> Vec<Case> {
    let shapes = [
        (1024, 1024, 1024),
        (1000, 1020, 1100),
        (900, 1030, 2050),
        (1024, 1000, 1027),
    ];
    let acts = [Activation::None, Activation::Relu, Activation::Gelu, Activation::None];
    OPS.iter()
        .enumerate()
        .map(|(i, &(ta, tb))| {
            let (m, n, k) = shapes[i];
            let mut c = Case::new(ta, tb, m, n, k);
            c.ld_align = 4;
            c.tile = Tile::Wide;
            c.layout = if i % 2 == 0 { Layout::ColMajor } else { Layout::RowMajor };
            c.act = acts[i];
            c.bias = i % 2 == 1;
            c.beta = if i >= 2 { -0.75 } else { 0.0 };
            c
        })
        .collect()
}

fn batch_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    OPS.iter()
        .map(|&(ta, tb)| {
            let mut c = Case::new(ta, tb, 37, 21, 19);
            c.batch = 3;
            c.kernel = kernel;
            c.math = math;
            c.ld_align = ld_align;
            c.beta = 1.5;
            c
        })
        .collect()
}

/// Shapes made of whole tiles of every f32 and f64 kernel, on each of `tiles`: full tiles store
/// straight from the registers when D's rows are 16-byte aligned and there is no activation.
/// Batches of 2 with C matrices 0 or 1 element apart beyond a multiple of 8 (the second leaves
/// the second matrix's rows misaligned), bias, beta, alpha, both layouts, and
/// one case with an activation (the path through shared memory).
fn whole_tile_cases(kernel: Kernel, ld_align: usize, tiles: &[Tile]) -> Vec<Case> {
    let mut v = Vec::new();
    for &tile in tiles {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
                for c_gap in [0, 1] {
                    let (m, n, k) = if j == 0 { (256, 512, 96) } else { (512, 256, 40) };
                    let mut c = Case::new(ta, tb, m, n, k);
                    (c.kernel, c.tile, c.ld_align, c.layout, c.c_gap) = (kernel, tile, ld_align, layout, c_gap);
                    c.batch = 2;
                    c.bias = (i + j) % 2 == 0;
                    (c.alpha, c.beta) = if i % 2 == 0 { (0.75, 0.5) } else { (1.0, 0.0) };
                    if i == 3 && c_gap == 0 {
                        c.act = Activation::Tanh;
                    }
                    v.push(c);
                }
            }
        }
    }
    v
}

fn all_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut v = shape_cases(kernel, math, ld_align);
    v.extend(big_cases(kernel, math, ld_align));
    v.extend(epilogue_cases(kernel, math, ld_align));
    v.extend(batch_cases(kernel, math, ld_align));
    v
}

/// The same cases on every forced block tile (Small, Large).
fn tile_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    tile_cases_on(kernel, math, ld_align, &[Tile::Small, Tile::Large], false)
}

/// The shape, big and epilogue cases (and the batch cases if `batched`) on each of `tiles`.
fn tile_cases_on(kernel: Kernel, math: MathMode, ld_align: usize, tiles: &[Tile], batched: bool) -> Vec<Case> {
    let mut v = Vec::new();
    for &tile in tiles {
        let mut cs = shape_cases(kernel, math, ld_align);
        cs.extend(big_cases(kernel, math, ld_align));
        cs.extend(epilogue_cases(kernel, math, ld_align));
        if batched {
            cs.extend(batch_cases(kernel, math, ld_align));
        }
        for c in &mut cs {
            c.tile = tile;
        }
        v.extend(cs);
    }
    v
}

#[test]
fn gemm_f32_exact() {
    let Some(ctx) = gpu!("gemm_f32_exact") else { return };
    let stream = ctx.new_stream().unwrap();
    // Every f32 kernel: Small = s, Narrow = u, Large = l here (unaligned leading dimensions).
    let f32_tiles = [Tile::Small, Tile::Narrow, Tile::Large];
    sweep::<f32>(&stream, &mut Rng::new(1), &all_cases(Kernel::Auto, MathMode::Exact, 1));
    sweep::<f32>(
        &stream,
        &mut Rng::new(13),
        &tile_cases_on(Kernel::Simt, MathMode::Exact, 1, &f32_tiles, true),
    );
    // Leading dimensions that are multiples of 4: the large tile then takes the kernel with
    // 16-byte copies (w), the automatic choice included.
    sweep::<f32>(&stream, &mut Rng::new(14), &all_cases(Kernel::Auto, MathMode::Exact, 4));
    sweep::<f32>(
        &stream,
        &mut Rng::new(15),
        &tile_cases_on(Kernel::Simt, MathMode::Exact, 4, &f32_tiles, true),
    );
    sweep::<f32>(&stream, &mut Rng::new(16), &split_k_cases());
    // Long k over few 128 x 256 tiles: the automatic choice splits k over 4 blocks per tile
    // (32 tiles, 1025 of k per block on 132 multiprocessors), with bias and beta.
    let mut long_k = Case::new(Transpose::N, Transpose::N, 1024, 1000, 4100);
    (long_k.ld_align, long_k.bias, long_k.beta) = (4, true, 0.5);
    sweep::<f32>(&stream, &mut Rng::new(21), &[long_k]);
    let all_f32 = [Tile::Auto, Tile::Small, Tile::Narrow, Tile::Large, Tile::Wide];
    sweep::<f32>(&stream, &mut Rng::new(20), &whole_tile_cases(Kernel::Simt, 4, &all_f32));
    sweep::<f32>(&stream, &mut Rng::new(22), &v_split_cases());
}

/// Long k over 8200 rows of 52 columns: on 132 multiprocessors the automatic choice takes the
/// 128 x 64 tile (v) with k split over 2 blocks (k = 2100, a short last k-tile) or 4 (k = 4100)
/// per tile (src/blas/gemm.rs asserts the choice). Every op, both layouts, aligned and unaligned
/// leading dimensions (full tiles from the registers or through shared memory), bias, beta,
/// alpha, one activation; and v forced in 3 parts on a small problem.
fn v_split_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (i, &(ta, tb)) in OPS.iter().enumerate() {
        for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
            let k = if i == 0 { 4100 } else { 2100 };
            // The kernels' D is 8200 x 52 either way (row-major C is the transposed problem).
            let (m, n) = if j == 0 { (52, 8200) } else { (8200, 52) };
            let mut c = Case::new(ta, tb, m, n, k);
            c.layout = layout;
            c.ld_align = if (i + j) % 2 == 0 { 4 } else { 1 };
            c.bias = i % 2 == 1;
            c.act = if i == 2 { Activation::Gelu } else { Activation::None };
            (c.alpha, c.beta) = if j == 1 { (0.75, -0.5) } else { (1.0, 0.0) };
            v.push(c);
        }
        // Forced: 3 parts on an edge-only problem (k = 333: 21 k-tiles, 7 per block).
        let mut c = Case::new(ta, tb, 130, 70, 333);
        (c.tile, c.split, c.bias, c.beta) = (Tile::Narrow, SplitK::Parts(3), true, 0.5);
        c.layout = if i % 2 == 0 { Layout::ColMajor } else { Layout::RowMajor };
        v.push(c);
    }
    v
}

#[test]
fn gemm_f64_dmma_and_simt() {
    let Some(ctx) = gpu!("gemm_f64_dmma_and_simt") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f64>(&stream, &mut Rng::new(2), &all_cases(Kernel::Auto, MathMode::Exact, 1));
    sweep::<f64>(
        &stream,
        &mut Rng::new(17),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 2),
    );
    sweep::<f64>(&stream, &mut Rng::new(18), &all_cases(Kernel::Simt, MathMode::Exact, 2));
    // The sm_80 m8n8k4 kernel, forced (on Hopper the tensor-core default is the sm_90 kernel).
    sweep::<f64>(
        &stream,
        &mut Rng::new(19),
        &all_cases(Kernel::MmaSync, MathMode::Exact, 2),
    );
    if ctx.compute_capability() < (9, 0) {
        println!("SKIPPED the sm_90 DMMA tiles: they need compute capability 9.0");
        return;
    }
    // The sm_90 DMMA kernels on every forced tile and k split (the split blocks of a tile add
    // their partial tiles through a thread block cluster's shared memory), with all shapes
    // (k = 1 leaves some parts without k), ops, layouts, epilogues and batches.
    // Mid-size problems: the automatic choice is m (128 x 64) at 1000^2 and, with k >= 512, s
    // split in 2 at 1500^2 (on the H100's 132 multiprocessors).
    let mid: Vec<Case> = OPS
        .iter()
        .enumerate()
        .flat_map(|(i, &(ta, tb))| {
            [(1000, 40 + 9 * i), (1000, 600 + 9 * i), (1500, 600 + 9 * i)].map(|(mn, k)| (i, ta, tb, mn, k))
        })
        .map(|(i, ta, tb, mn, k)| {
            let mut c = Case::new(ta, tb, mn, mn, k);
            (c.kernel, c.ld_align, c.beta, c.bias) = (Kernel::TensorCore, 2, 0.5, i % 2 == 0);
            c.layout = if i < 2 { Layout::ColMajor } else { Layout::RowMajor };
            c
        })
        .collect();
    sweep::<f64>(&stream, &mut Rng::new(39), &mid);
    // Small = s, Large = l, Narrow = m; Auto split in 2 = u2 on the small cases, s2 on big ones.
    let forced = [
        (Tile::Small, SplitK::Off),
        (Tile::Large, SplitK::Off),
        (Tile::Narrow, SplitK::Off),
        (Tile::Small, SplitK::Parts(2)),
        (Tile::Auto, SplitK::Parts(2)),
    ];
    for (seed, (tile, split)) in (40..).zip(forced) {
        let mut cs = all_cases(Kernel::TensorCore, MathMode::Exact, 2);
        for c in &mut cs {
            (c.tile, c.split) = (tile, split);
        }
        sweep::<f64>(&stream, &mut Rng::new(seed), &cs);
    }
    let dmma90 = [Tile::Auto, Tile::Small, Tile::Narrow, Tile::Large];
    sweep::<f64>(
        &stream,
        &mut Rng::new(45),
        &whole_tile_cases(Kernel::TensorCore, 2, &dmma90),
    );
    // A split the tile does not have is an InvalidArgument.
    let (a, b) = (
        DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap(),
        DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap(),
    );
    let mut c = DeviceBuffer::<f64>::zeroed(&stream, 64).unwrap();
    for (tile, parts, says) in [
        (Tile::Large, 2, "does not split"),
        (Tile::Narrow, 2, "does not split"),
        (Tile::Small, 3, "not 3"),
        (Tile::Auto, 4, "not 4"),
    ] {
        let r = Gemm::<f64>::new(Transpose::N, Transpose::N, 8, 8, 8)
            .tile(tile)
            .split_k(SplitK::Parts(parts))
            .run(&a, &b, &mut c);
        assert!(
            matches!(&r, Err(cudrv::Error::InvalidArgument(m)) if m.contains(says)),
            "{tile:?} in {parts} parts: {r:?}"
        );
    }
}

#[test]
fn gemm_tf32_tensor_cores() {
    let Some(ctx) = gpu!("gemm_tf32_tensor_cores") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f32>(
        &stream,
        &mut Rng::new(3),
        &all_cases(Kernel::TensorCore, MathMode::Tf32, 4),
    );
    sweep::<f32>(
        &stream,
        &mut Rng::new(14),
        &tile_cases(Kernel::TensorCore, MathMode::Tf32, 4),
    );
    // Unaligned leading dimensions fall back to the exact kernel.
    sweep::<f32>(&stream, &mut Rng::new(4), &shape_cases(Kernel::Auto, MathMode::Tf32, 1));
}

#[test]
fn gemm_f16_tensor_cores_and_fallback() {
    let Some(ctx) = gpu!("gemm_f16_tensor_cores_and_fallback") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(
        &stream,
        &mut Rng::new(5),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<f16>(
        &stream,
        &mut Rng::new(15),
        &tile_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<f16>(&stream, &mut Rng::new(6), &all_cases(Kernel::Simt, MathMode::Exact, 1));
}

#[test]
fn gemm_bf16_tensor_cores_and_fallback() {
    let Some(ctx) = gpu!("gemm_bf16_tensor_cores_and_fallback") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    sweep::<bf16>(
        &stream,
        &mut Rng::new(7),
        &all_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<bf16>(
        &stream,
        &mut Rng::new(16),
        &tile_cases(Kernel::TensorCore, MathMode::Exact, 8),
    );
    sweep::<bf16>(
        &stream,
        &mut Rng::new(8),
        &shape_cases(Kernel::Auto, MathMode::Exact, 1),
    );
}

/// The sm_90a kernels (wgmma + TMA) for f16 and bf16, forced, on each of their tiles. Compute
/// capability 9.0 only.
#[test]
fn gemm_wgmma_hopper() {
    let Some(ctx) = gpu!("gemm_wgmma_hopper") else {
        return;
    };
    if ctx.compute_capability() != (9, 0) {
        println!("SKIPPED gemm_wgmma_hopper: the wgmma kernels need compute capability 9.0");
        return;
    }
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(&stream, &mut Rng::new(21), &wg_cases(MathMode::Exact, 8));
    sweep::<f16>(&stream, &mut Rng::new(26), &odd_c_stride_cases());
    sweep::<bf16>(&stream, &mut Rng::new(22), &wg_cases(MathMode::Exact, 8));
    for (seed, acts) in [(28, false), (31, true)] {
        let cases = tma_store_wg_cases(MathMode::Exact, 8, acts);
        sweep::<f16>(&stream, &mut Rng::new(seed), &cases);
        sweep::<bf16>(&stream, &mut Rng::new(seed + 1), &cases);
    }
}

/// k split over the blocks of a wgmma tile (`split_rule` in ptx/gemm_wg.cuh): forced splits of
/// the 128 x 64 and 128 x 128 tiles in 2 to 64 parts (more parts than k-tiles, a short last part,
/// a single row tile whose second consumer has no rows), every op and layout, beta, bias,
/// activations, batches, tf32's transposed store; and the automatic split of decode-shaped and
/// long-k problems. Compute capability 9.0 only.
#[test]
fn gemm_wgmma_split_k() {
    let Some(ctx) = gpu!("gemm_wgmma_split_k") else {
        return;
    };
    if ctx.compute_capability() != (9, 0) {
        println!("SKIPPED gemm_wgmma_split_k: the wgmma kernels need compute capability 9.0");
        return;
    }
    let stream = ctx.new_stream().unwrap();
    for (ty, math, ld_align) in [
        ("f16", MathMode::Exact, 8),
        ("bf16", MathMode::Exact, 8),
        ("tf32", MathMode::Tf32, 4),
    ] {
        let cases = wg_split_cases(math, ld_align);
        let seed = 40 + ty.len() as u64;
        match ty {
            "f16" => sweep::<f16>(&stream, &mut Rng::new(seed), &cases),
            "bf16" => sweep::<bf16>(&stream, &mut Rng::new(seed), &cases),
            _ => sweep::<f32>(&stream, &mut Rng::new(seed), &cases),
        }
    }
}

fn wg_split_cases(math: MathMode, ld_align: usize) -> Vec<Case> {
    let acts = [Activation::None, Activation::Relu, Activation::Gelu, Activation::Tanh];
    // (m, n, k, tile, parts, batch)
    let shapes = [
        (100, 90, 3000, Tile::Narrow, 5, 1),
        (300, 40, 1111, Tile::Large, 3, 1),
        (60, 200, 2049, Tile::Auto, 16, 1),
        (130, 70, 700, Tile::Narrow, 64, 1),
        (72, 136, 900, Tile::Auto, 2, 3),
        (16, 1000, 4096, Tile::Auto, 0, 1),
        (1000, 16, 4096, Tile::Auto, 0, 1),
        (64, 64, 20000, Tile::Auto, 0, 1),
    ];
    let mut v = Vec::new();
    for (s, &(m, n, k, tile, parts, batch)) in shapes.iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            let mut c = Case::new(ta, tb, m, n, k);
            (c.kernel, c.math, c.ld_align, c.tile, c.batch) = (Kernel::Wgmma, math, ld_align, tile, batch);
            c.split = if parts == 0 { SplitK::Auto } else { SplitK::Parts(parts) };
            c.layout = if (s + i) % 2 == 0 {
                Layout::ColMajor
            } else {
                Layout::RowMajor
            };
            c.alpha = if i % 2 == 0 { 1.0 } else { 0.75 };
            c.beta = if (s + i) % 3 == 1 { -0.5 } else { 0.0 };
            c.bias = (s + i) % 2 == 1;
            c.act = acts[(s + 2 * i) % 4];
            off_wgmma_where_tf32_packs(&mut c);
            if c.kernel != Kernel::Wgmma {
                c.split = SplitK::Auto;
            }
            v.push(c);
        }
    }
    v
}

/// The f16 mma.sync kernels forced on a Hopper device (where wgmma is the default), both tiles.
#[test]
fn gemm_mma_sync_f16_on_hopper() {
    let Some(ctx) = gpu!("gemm_mma_sync_f16_on_hopper") else {
        return;
    };
    if ctx.compute_capability() != (9, 0) {
        println!("SKIPPED gemm_mma_sync_f16_on_hopper: compute capability 9.0 only");
        return;
    }
    let stream = ctx.new_stream().unwrap();
    sweep::<f16>(
        &stream,
        &mut Rng::new(24),
        &tile_cases(Kernel::MmaSync, MathMode::Exact, 8),
    );
    // Whole tiles of the mma.sync kernels (plain C = alpha A B stores from the accumulators) and
    // of the sm_80 f64 DMMA kernel, with the second C of a batch misaligned.
    let tc_tiles = [Tile::Small, Tile::Large];
    sweep::<f16>(
        &stream,
        &mut Rng::new(25),
        &whole_tile_cases(Kernel::MmaSync, 8, &tc_tiles),
    );
    let mut tf32 = whole_tile_cases(Kernel::MmaSync, 8, &tc_tiles);
    tf32.iter_mut().for_each(|c| c.math = MathMode::Tf32);
    sweep::<f32>(&stream, &mut Rng::new(26), &tf32);
    sweep::<f64>(
        &stream,
        &mut Rng::new(27),
        &whole_tile_cases(Kernel::MmaSync, 2, &[Tile::Auto]),
    );
}

/// tf32 with both operands m/n-contiguous (column-major op(A) = A, op(B) = B^T; in row-major
/// storage op(A) = A^T, op(B) = B) packs B, for batch 1 only: such batches take the best
/// tensor-core kernel that applies instead of wgmma. The other op combinations run batched on
/// wgmma.
fn off_wgmma_where_tf32_packs(c: &mut Case) {
    let (ta, tb) = match c.layout {
        Layout::ColMajor => (Transpose::N, Transpose::T),
        Layout::RowMajor => (Transpose::T, Transpose::N),
    };
    if c.math == MathMode::Tf32 && c.batch > 1 && c.ta == ta && c.tb == tb {
        c.kernel = Kernel::TensorCore;
    }
}

/// Every case on every forced wgmma tile (n, l, w).
fn wg_cases(math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut v = Vec::new();
    for tile in [Tile::Narrow, Tile::Large, Tile::Wide] {
        let mut cs = all_cases(Kernel::Wgmma, math, ld_align);
        for c in &mut cs {
            c.tile = tile;
            off_wgmma_where_tf32_packs(c);
        }
        v.extend(cs);
    }
    v
}

/// C = act(alpha A B (+ beta C, + bias)) on every wgmma tile, which leaves through TMA stores
/// where C's rows are 16-byte aligned and a multiple of 16 bytes long (C loaded by the TMA when
/// beta != 0; the transposed tf32 kernels add the bias by row): whole tiles and edge tiles
/// (clipped by the TMA; 200 and 1000 long rows end inside a box, 300 and 65 take the thread
/// stores), single matrices and batches of 3 whose C matrices are 0 or 1 element apart beyond a
/// multiple of 8 (1: the later matrices are misaligned and take the thread stores), every op,
/// both layouts, plain, beta, bias, and both. With `acts` every case also has an activation
/// (relu, gelu, sigmoid, tanh in turn): the kernels of the activation modules where the TMA
/// stores, the rolled epilogue of the others elsewhere.
fn tma_store_wg_cases(math: MathMode, ld_align: usize, acts: bool) -> Vec<Case> {
    let nonlinear = [
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];
    let shapes = [(256, 512, 64), (200, 300, 72), (136, 65, 100), (1000, 600, 40)];
    let mut v = Vec::new();
    for (t, tile) in [Tile::Narrow, Tile::Large, Tile::Wide].into_iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            for (j, layout) in [Layout::ColMajor, Layout::RowMajor].into_iter().enumerate() {
                for c_gap in [0, 1] {
                    let (m, n, k) = shapes[(t + i + j) % 4];
                    let mut c = Case::new(ta, tb, m, n, k);
                    (c.kernel, c.tile, c.math, c.ld_align, c.layout, c.c_gap) =
                        (Kernel::Wgmma, tile, math, ld_align, layout, c_gap);
                    c.batch = if c_gap == 1 || i % 2 == 0 { 3 } else { 1 };
                    c.alpha = if j == 0 { 0.75 } else { 1.0 };
                    c.pad = (i + t) % 3;
                    // plain, beta, bias, beta and bias
                    let e = (t + 2 * i + j + c_gap) % 4;
                    c.beta = if e % 2 == 1 { -0.5 } else { 0.0 };
                    c.bias = e >= 2;
                    if acts {
                        c.act = nonlinear[(t + i + 2 * j + c_gap) % 4];
                    }
                    v.push(c);
                }
            }
        }
    }
    v
}

/// A batch stride of C that is not a multiple of 16 bytes: the epilogue's 16-byte stores must
/// fall back for the misaligned batch entries.
fn odd_c_stride_cases() -> Vec<Case> {
    OPS.iter()
        .map(|&(ta, tb)| {
            let mut c = Case::new(ta, tb, 72, 40, 64);
            (c.batch, c.c_gap, c.ld_align, c.kernel) = (3, 3, 8, Kernel::Wgmma);
            c
        })
        .collect()
}

/// tf32 on the wgmma kernels (register-fed A for tt and nn, nn stored transposed, nt packed)
/// and on mma.sync forced on the same device. Compute capability 9.0 only.
#[test]
fn gemm_wgmma_hopper_tf32() {
    let Some(ctx) = gpu!("gemm_wgmma_hopper_tf32") else {
        return;
    };
    if ctx.compute_capability() != (9, 0) {
        println!("SKIPPED gemm_wgmma_hopper_tf32: the wgmma kernels need compute capability 9.0");
        return;
    }
    let stream = ctx.new_stream().unwrap();
    sweep::<f32>(
        &stream,
        &mut Rng::new(27),
        &odd_c_stride_cases()
            .iter()
            .map(|c| Case {
                math: MathMode::Tf32,
                ld_align: 4,
                kernel: Kernel::TensorCore,
                ..c.clone()
            })
            .collect::<Vec<_>>(),
    );
    sweep::<f32>(&stream, &mut Rng::new(23), &wg_cases(MathMode::Tf32, 4));
    for (seed, acts) in [(30, false), (31, true)] {
        let mut cases = tma_store_wg_cases(MathMode::Tf32, 4, acts);
        cases.iter_mut().for_each(off_wgmma_where_tf32_packs);
        sweep::<f32>(&stream, &mut Rng::new(seed), &cases);
    }
    sweep::<f32>(
        &stream,
        &mut Rng::new(25),
        &tile_cases(Kernel::MmaSync, MathMode::Tf32, 4),
    );
}

/// m, n and k of at most 32 run one block per matrix (`gemm_small_<t>`): every type, op and
/// layout, single matrices and batches up to 4096 (with shared operands: stride 0), padded
/// leading dimensions, beta, bias, activations, k = 1 and k = 32, alpha = 0.
#[test]
fn gemm_small_matrices_and_batches() {
    let Some(ctx) = gpu!("gemm_small_matrices_and_batches") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let acts = [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ];
    // (m, n, k, batch)
    let shapes = [
        (2, 2, 2, 1),
        (16, 16, 16, 4096),
        (32, 32, 32, 7),
        (5, 31, 1, 3),
        (17, 2, 29, 300),
        (32, 9, 32, 64),
        (3, 32, 20, 1000),
        (24, 24, 0, 2),
    ];
    let mut cases = Vec::new();
    for (s, &(m, n, k, batch)) in shapes.iter().enumerate() {
        for (i, &(ta, tb)) in OPS.iter().enumerate() {
            let mut c = Case::new(ta, tb, m, n, k);
            c.batch = batch;
            c.layout = if (s + i) % 2 == 0 {
                Layout::ColMajor
            } else {
                Layout::RowMajor
            };
            c.pad = (s + i) % 3;
            c.alpha = [1.0, 0.75, -1.5, 1.0][i];
            c.beta = if (s + i) % 3 == 1 { -0.5 } else { 0.0 };
            c.bias = (s + 2 * i) % 3 == 0;
            c.act = acts[(s + i) % 5];
            cases.push(c);
        }
    }
    sweep::<f32>(&stream, &mut Rng::new(61), &cases);
    let tf32: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            math: MathMode::Tf32,
            ..c.clone()
        })
        .collect();
    sweep::<f32>(&stream, &mut Rng::new(62), &tf32);
    sweep::<f64>(&stream, &mut Rng::new(63), &cases);
    sweep::<f16>(&stream, &mut Rng::new(64), &cases);
    sweep::<bf16>(&stream, &mut Rng::new(65), &cases);
    // Shared operands (stride 0), alpha = 0 with NaN inputs (not read), through the public API.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 9]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[2.0f32; 18]).unwrap();
    Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 3, 3)
        .alpha(0.0)
        .beta(0.5)
        .batched(2, 0, 0, 9)
        .run(&a, &a, &mut cc)
        .unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![1.0; 18]);
    let ones = DeviceBuffer::from_slice(&stream, &[1.0f32; 9]).unwrap();
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 3, 3).batched(2, 0, 0, 9);
    assert_eq!(g.kernel_name::<f32>(&ones, &ones, &cc).unwrap(), "gemm_small_f32");
    g.run(&ones, &ones, &mut cc).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![3.0; 18]);
}

#[test]
fn gemm_f32_small_tiles_and_k_zero_and_alpha_zero() {
    let Some(ctx) = gpu!("gemm_f32_small_tiles_and_k_zero_and_alpha_zero") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng::new(9);
    // k = 0: C = beta * C.
    let mut c = Case::new(Transpose::N, Transpose::N, 17, 9, 0);
    c.beta = 0.5;
    assert!(run_case::<f32>(&stream, &mut rng, &c) < 1e-6);
    // alpha = 0 with NaN in A: A is not read.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 6]).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 6]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[2.0f32; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 2, 3, 0.0, &a, 2, &b, 3, 0.5, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![1.0; 4]);
    // beta = 0 with NaN in C: C is not read.
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 6]).unwrap();
    let mut cc = DeviceBuffer::from_slice(&stream, &[f32::NAN; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 2, 3, 1.0, &a, 2, &b, 3, 0.0, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![3.0; 4]);
    // Empty problems leave C alone.
    let mut cc = DeviceBuffer::from_slice(&stream, &[7.0f32; 4]).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 0, 2, 3, 1.0, &a, 1, &b, 3, 0.0, &mut cc, 1).unwrap();
    blas::gemm(Transpose::N, Transpose::N, 2, 0, 3, 1.0, &a, 2, &b, 3, 0.0, &mut cc, 2).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![7.0; 4]);
    // The row-major convenience.
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap(); // 2 x 3
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap(); // 3 x 2
    let mut cc = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    blas::matmul(&a, &b, &mut cc, 2, 2, 3).unwrap();
    assert_eq!(cc.to_vec().unwrap(), vec![4.0, 5.0, 10.0, 11.0]);
}

#[test]
fn gemm_errors_leave_c_untouched() {
    let Some(ctx) = gpu!("gemm_errors_leave_c_untouched") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 12]).unwrap();
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 12]).unwrap();
    let mut c = DeviceBuffer::from_slice(&stream, &[5.0f32; 9]).unwrap();
    let check = |e: cudrv::Error, what: &str| {
        assert!(matches!(e, cudrv::Error::InvalidArgument(_)), "{e}");
        assert!(e.to_string().contains(what), "{e}");
    };
    // lda < m
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 2, &b, 4, 0.0, &mut c, 3).unwrap_err(),
        "ldA = 2",
    );
    // B too short: 4 x 3 with ldb 5 needs 14
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 3, &b, 5, 0.0, &mut c, 3).unwrap_err(),
        "needs 14",
    );
    // ldc < m
    check(
        blas::gemm(Transpose::N, Transpose::N, 3, 3, 4, 1.0, &a, 3, &b, 4, 0.0, &mut c, 2).unwrap_err(),
        "ldC = 2",
    );
    // bias too short
    let bias = DeviceBuffer::from_slice(&stream, &[1.0f32; 2]).unwrap();
    check(
        Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
            .run_with_bias(&a, &b, &bias, &mut c)
            .unwrap_err(),
        "bias has 2",
    );
    // overlapping batch outputs (C is long enough: the stride is the problem)
    let mut c2 = DeviceBuffer::from_slice(&stream, &[5.0f32; 20]).unwrap();
    check(
        Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
            .batched(2, 0, 0, 4)
            .run(&a, &b, &mut c2)
            .unwrap_err(),
        "overlap",
    );
    assert_eq!(c2.to_vec().unwrap(), vec![5.0; 20]);
    // Exact f32 has no tensor-core kernel.
    check(
        Gemm::new(Transpose::N, Transpose::N, 3, 3, 4)
            .kernel(Kernel::TensorCore)
            .run(&a, &b, &mut c)
            .unwrap_err(),
        "tensor-core",
    );
    assert_eq!(c.to_vec().unwrap(), vec![5.0; 9]);
    // A forced tensor-core f64 run with an odd lda (3 doubles: not a multiple of 16 bytes) is
    // not refused: its operands are copied into aligned buffers first.
    let a64 = DeviceBuffer::from_slice(&stream, &[1.0f64; 12]).unwrap();
    let mut c64 = DeviceBuffer::from_slice(&stream, &[5.0f64; 9]).unwrap();
    let g = Gemm::new(Transpose::N, Transpose::N, 3, 3, 4).kernel(Kernel::TensorCore);
    let name = g.kernel_name(&a64, &a64, &c64).unwrap();
    assert!(name.starts_with("gemm_pack_b64+gemm_d"), "{name}");
    g.run(&a64, &a64, &mut c64).unwrap();
    assert_eq!(c64.to_vec().unwrap(), vec![4.0; 9]);
}

// ---------------------------------------------------------------------------------------------
// GEMV

trait GemvEl: blas::GemvType + El {
    /// The error bound of a GEMV result.
    const GEMV_BOUND: f64;
}
impl GemvEl for f32 {
    const GEMV_BOUND: f64 = 1e-5;
}
impl GemvEl for f64 {
    const GEMV_BOUND: f64 = 1e-12;
}
impl GemvEl for f16 {
    const GEMV_BOUND: f64 = 2e-2;
}
impl GemvEl for bf16 {
    const GEMV_BOUND: f64 = 2e-2;
}

#[allow(clippy::too_many_arguments)]
fn gemv_case<T: GemvEl>(
    stream: &Arc<Stream>,
    rng: &mut Rng,
    trans: Transpose,
    m: usize,
    n: usize,
    lda: usize,
    incx: isize,
    incy: isize,
    alpha: f64,
    beta: f64,
) -> f64 {
    let (lx, ly) = if trans == Transpose::N { (n, m) } else { (m, n) };
    let a_len = if m == 0 || n == 0 { 1 } else { (n - 1) * lda + m };
    let a: Vec<T> = (0..a_len).map(|_| T::from_f64(rng.uniform(-1.0, 1.0))).collect();
    let sx = ((lx.max(1) - 1) * incx.unsigned_abs() + 1).max(1);
    let sy = ((ly.max(1) - 1) * incy.unsigned_abs() + 1).max(1);
    let x: Vec<T> = (0..sx).map(|_| T::from_f64(rng.uniform(-1.0, 1.0))).collect();
    let mut y0: Vec<T> = vec![T::from_f64(f64::NAN); sy];
    let yi = |i: usize, inc: isize, len: usize| {
        if inc > 0 {
            i * inc as usize
        } else {
            (len - 1 - i) * inc.unsigned_abs()
        }
    };
    if beta != 0.0 {
        for i in 0..ly {
            y0[yi(i, incy, ly)] = T::from_f64(rng.uniform(-1.0, 1.0));
        }
    }
    let a_dev = DeviceBuffer::from_slice(stream, &a).unwrap();
    let x_dev = DeviceBuffer::from_slice(stream, &x).unwrap();
    let mut y_dev = DeviceBuffer::from_slice(stream, &y0).unwrap();
    blas::gemv(
        trans,
        m,
        n,
        T::from_f64(alpha),
        &a_dev,
        lda,
        &x_dev,
        incx,
        T::from_f64(beta),
        &mut y_dev,
        incy,
    )
    .unwrap();
    let y = y_dev.to_vec().unwrap();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for i in 0..ly {
        let mut s = 0.0;
        for p in 0..lx {
            let av = if trans == Transpose::N {
                a[i + p * lda]
            } else {
                a[p + i * lda]
            };
            s += av.to_f64() * x[yi(p, incx, lx)].to_f64();
        }
        let mut v = alpha * s;
        if beta != 0.0 {
            v += beta * y0[yi(i, incy, ly)].to_f64();
        }
        want.push(v);
        got.push(y[yi(i, incy, ly)].to_f64());
    }
    // Elements between the strided entries stay poisoned.
    let touched: std::collections::HashSet<usize> = (0..ly).map(|i| yi(i, incy, ly)).collect();
    for (i, v) in y.iter().enumerate() {
        if !touched.contains(&i) {
            assert!(v.to_f64().is_nan(), "gemv wrote y[{i}] outside the vector");
        }
    }
    rel_err(&got, &want)
}

fn gemv_sweep<T: GemvEl>(stream: &Arc<Stream>, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut worst = 0.0f64;
    let shapes = [
        (1, 1),
        (7, 33),
        (1000, 129),
        (129, 5000),
        (4096, 300),
        // A split reduction (1000 columns over 32 row tiles) with a partial last tile.
        (4001, 1000),
        (33, 70000),
        (70000, 33),
        (2048, 2048),
    ];
    let bound = T::GEMV_BOUND;
    let name = <T as GemmType>::NAME;
    for (si, &(m, n)) in shapes.iter().enumerate() {
        for trans in [Transpose::N, Transpose::T] {
            for (ii, &(incx, incy)) in [(1, 1), (2, -3), (-1, 2)].iter().enumerate() {
                let lda = m + if (si + ii) % 2 == 0 { 0 } else { 3 };
                let (alpha, beta) = if (si + ii) % 2 == 0 { (1.0, 0.0) } else { (-0.75, 0.5) };
                let e = gemv_case::<T>(stream, &mut rng, trans, m, n, lda, incx, incy, alpha, beta);
                assert!(
                    e < bound,
                    "gemv {name} {trans:?} {m}x{n} lda {lda} inc {incx},{incy}: error {e:e}"
                );
                worst = worst.max(e);
            }
        }
    }
    // 16-byte-aligned columns (lda a multiple of 8 elements) with a row count that is not: the
    // 16-byte kernels' partial vectors at the end of each column, for N and for T, whose row
    // splits (a few columns, many rows) end in one.
    for (m, n, lda) in [(8197, 40, 8200), (8197, 3000, 8200), (13, 9, 16)] {
        for trans in [Transpose::N, Transpose::T] {
            let e = gemv_case::<T>(stream, &mut rng, trans, m, n, lda, 1, 1, -0.75, 0.5);
            assert!(e < bound, "gemv {name} {trans:?} {m}x{n} lda {lda}: error {e:e}");
            worst = worst.max(e);
        }
    }
    // N reductions split 8-16 ways over aligned columns: on sm_90 the 8 blocks of a thread
    // block cluster (gemv_nvc) add their partial sums in shared memory; a partial last row
    // tile, strided vectors, beta.
    // Row strips on a large GPU (one block of 16 warps per 32 lanes x 4, 8 or 16 bytes of rows,
    // every column, for an A larger than L2), with a partial last strip.
    for (m, n, lda) in [
        (4100, 4000, 4104),
        (2048, 2048, 2048),
        (4285, 4000, 4288),
        (6141, 4500, 6144),
        (12669, 2100, 12672),
    ] {
        let e = gemv_case::<T>(stream, &mut rng, Transpose::N, m, n, lda, 2, -3, -0.75, 0.5);
        assert!(e < bound, "gemv {name} N {m}x{n} lda {lda} inc 2,-3: error {e:e}");
        worst = worst.max(e);
    }
    println!("gemv {name}: worst error {worst:.3e}");
}

#[test]
fn gemv_every_type() {
    let Some(ctx) = gpu!("gemv_every_type") else { return };
    let stream = ctx.new_stream().unwrap();
    gemv_sweep::<f32>(&stream, 11);
    gemv_sweep::<f64>(&stream, 12);
    gemv_sweep::<f16>(&stream, 13);
    gemv_sweep::<bf16>(&stream, 14);
    // alpha = 0: A and x not read.
    let a = DeviceBuffer::from_slice(&stream, &[f32::NAN; 4]).unwrap();
    let mut y = DeviceBuffer::from_slice(&stream, &[2.0f32; 2]).unwrap();
    blas::gemv(Transpose::N, 2, 2, 0.0, &a, 2, &a, 1, 0.5, &mut y, 1).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 2]);
    // Errors: lda < m, short x, zero increment; y untouched.
    let b = DeviceBuffer::from_slice(&stream, &[1.0f32; 4]).unwrap();
    for e in [
        blas::gemv(Transpose::N, 2, 2, 1.0, &b, 1, &b, 1, 0.0, &mut y, 1).unwrap_err(),
        blas::gemv(Transpose::N, 2, 2, 1.0, &b, 2, &b, 4, 0.0, &mut y, 1).unwrap_err(),
        blas::gemv(Transpose::T, 2, 2, 1.0, &b, 2, &b, 0, 0.0, &mut y, 1).unwrap_err(),
    ] {
        assert!(matches!(e, cudrv::Error::InvalidArgument(_)), "{e}");
    }
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 2]);
}
