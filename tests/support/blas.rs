//! Shared by the GPU BLAS tests (tests/gpu_blas.rs, tests/gpu_blas_hopper.rs): element types
//! with their error bounds, the CPU reference in f64, one GEMM case (`Case`) run against it with
//! fresh random inputs and poisoned outputs (`run_case`, `sweep`), and the case sets.

use std::sync::Arc;

use cudrv::blas::{Activation, Gemm, GemmType, Kernel, Layout, MathMode, SplitK, Tile, Transpose};
use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Stream};
use half::{bf16, f16};

pub trait El: GemmType + Copy + Default + std::fmt::Debug + 'static {
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
            MathMode::Exact | MathMode::Tf32x3 => 1e-5,
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
pub fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    rel_err_floor(out, reference, 0.0)
}

/// ‖out − reference‖ / max(‖reference‖, floor); infinite when `out` has a NaN or an infinity.
pub fn rel_err_floor(out: &[f64], reference: &[f64], floor: f64) -> f64 {
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

pub fn act(a: Activation, v: f64) -> f64 {
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
pub fn erf(x: f64) -> f64 {
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
pub struct Case {
    pub ta: Transpose,
    pub tb: Transpose,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Extra elements added to each tight leading dimension.
    pub pad: usize,
    /// Leading dimensions rounded up to a multiple of this (8: tensor-core friendly).
    pub ld_align: usize,
    pub layout: Layout,
    pub alpha: f64,
    pub beta: f64,
    pub batch: usize,
    pub act: Activation,
    pub bias: bool,
    pub math: MathMode,
    pub kernel: Kernel,
    pub tile: Tile,
    pub split: SplitK,
    /// Extra elements between C matrices of a batch (beyond a multiple of 8).
    pub c_gap: usize,
    /// The GEMM runs with the stream's pool capped at what it holds (emptied first): copies and
    /// scratch above the pool's threshold for a segment of their own find no memory. The pool
    /// must hold as much after the GEMM.
    pub full_pool: bool,
}

impl Case {
    pub fn new(ta: Transpose, tb: Transpose, m: usize, n: usize, k: usize) -> Self {
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
            full_pool: false,
        }
    }
}

pub const OPS: [(Transpose, Transpose); 4] = [
    (Transpose::N, Transpose::N),
    (Transpose::N, Transpose::T),
    (Transpose::T, Transpose::N),
    (Transpose::T, Transpose::T),
];

/// (rows, cols) stored, and the (inner, outer) of that storage for the layout.
pub fn storage(layout: Layout, rows: usize, cols: usize) -> (usize, usize) {
    match layout {
        Layout::ColMajor => (rows, cols),
        Layout::RowMajor => (cols, rows),
    }
}

/// Runs one case on the GPU and returns the relative error; panics when the padding of C or
/// another batch entry was touched.
pub fn run_case<T: El>(stream: &Arc<Stream>, rng: &mut Rng, c: &Case) -> f64 {
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
    let mut gemm = || {
        if c.bias {
            g.run_with_bias(&a_dev, &b_dev, &bias_dev, &mut c_dev)
        } else {
            g.run(&a_dev, &b_dev, &mut c_dev)
        }
    };
    let run = if c.full_pool {
        on_full_pool(stream, &format!("{c:?}"), gemm)
    } else {
        gemm().and_then(|()| stream.synchronize())
    };
    run.unwrap_or_else(|e| panic!("{c:?}: {e}"));
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

/// Runs `gemm` with `stream`'s pool emptied and capped at what it holds (copies and scratch
/// above the pool's threshold for a segment of their own find no memory), then lifts the cap;
/// asserts that the pool holds as much as before (`what` names the GEMM) and returns the GEMM's
/// result once the stream has synchronized.
pub fn on_full_pool(stream: &Arc<Stream>, what: &str, gemm: impl FnOnce() -> cudrv::Result<()>) -> cudrv::Result<()> {
    let pool = stream.context().memory_pool();
    stream.synchronize().unwrap();
    pool.empty_cache();
    let reserved = pool.stats().reserved_bytes;
    pool.set_limit(Some(reserved as usize));
    let run = gemm().and_then(|()| stream.synchronize());
    pool.set_limit(None);
    assert_eq!(
        pool.stats().reserved_bytes,
        reserved,
        "{what}: the GEMM reserved more memory"
    );
    run
}

pub fn sweep<T: El>(stream: &Arc<Stream>, rng: &mut Rng, cases: &[Case]) {
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
pub const SHAPES: [(usize, usize, usize); 10] = [
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

pub fn shape_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
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
pub fn big_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
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

pub fn epilogue_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
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
pub fn split_k_cases() -> Vec<Case> {
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

pub fn batch_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
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
pub fn whole_tile_cases(kernel: Kernel, ld_align: usize, tiles: &[Tile]) -> Vec<Case> {
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

pub fn all_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    let mut v = shape_cases(kernel, math, ld_align);
    v.extend(big_cases(kernel, math, ld_align));
    v.extend(epilogue_cases(kernel, math, ld_align));
    v.extend(batch_cases(kernel, math, ld_align));
    v
}

/// The same cases on every forced block tile (Small, Large).
pub fn tile_cases(kernel: Kernel, math: MathMode, ld_align: usize) -> Vec<Case> {
    tile_cases_on(kernel, math, ld_align, &[Tile::Small, Tile::Large], false)
}

/// The shape, big and epilogue cases (and the batch cases if `batched`) on each of `tiles`.
pub fn tile_cases_on(kernel: Kernel, math: MathMode, ld_align: usize, tiles: &[Tile], batched: bool) -> Vec<Case> {
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
