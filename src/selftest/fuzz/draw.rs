//! Drawing random GEMM cases for the fuzz test: shapes by class (tiny, mid, decode-like, long k
//! over few tiles, several waves), ops, layout, leading-dimension padding, batch layout,
//! offsets, scalars, epilogue and forced knobs.

use super::{FuzzType, GemmCase};
use crate::blas::{Activation, Kernel, Layout, SplitK, Tile, Transpose};
use crate::selftest::Rng;

pub(super) fn range(rng: &mut Rng, lo: usize, hi: usize) -> usize {
    lo + rng.next_u64() as usize % (hi - lo + 1)
}

/// No activation three times in four, else one of the four.
pub(super) fn activation(rng: &mut Rng) -> Activation {
    if rng.next_u64() % 4 == 0 {
        rng.pick(&Activation::APPLIED)
    } else {
        Activation::None
    }
}

/// Draws a random GEMM case of type `ty` (see the module docs for what is varied). With `large`,
/// some cases are several waves of the GPU in size; without it every case stays small enough
/// for a quick pass.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_gemm_case(&mut Rng::new(3), fuzz::FuzzType::Bf16, false);
/// assert_eq!(case.ty, fuzz::FuzzType::Bf16);
/// println!("{case}");
/// ```
pub fn random_gemm_case(rng: &mut Rng, ty: FuzzType, large: bool) -> GemmCase {
    // Two cases in three are aligned (every dim, leading dimension and offset a multiple of 8
    // elements): those reach the tensor-core kernels; the rest take any value.
    let aligned = rng.next_u64() % 3 != 0;
    let dim = |rng: &mut Rng, lo: usize, hi: usize| {
        let v = range(rng, lo, hi);
        if aligned {
            (v.div_ceil(8) * 8).max(8)
        } else {
            v
        }
    };
    let class = rng.next_u64() % if large { 10 } else { 7 };
    let (m, n, k) = match class {
        0 => (dim(rng, 1, 40), dim(rng, 1, 40), dim(rng, 1, 40)),
        1 | 2 => (dim(rng, 1, 300), dim(rng, 1, 300), dim(rng, 1, 300)),
        3 => (dim(rng, 64, 1100), dim(rng, 64, 1100), dim(rng, 16, 700)),
        // Decode-like: few rows or few columns, long k.
        // One case in four has a single row or column (a GEMV, or a decode step's token).
        4 => {
            let a = if rng.next_u64() % 4 == 0 { 1 } else { dim(rng, 1, 64) };
            let b = dim(rng, 256, 3000);
            let k = dim(rng, 256, 3000);
            if rng.next_u64() % 2 == 0 {
                (a, b, k)
            } else {
                (b, a, k)
            }
        }
        // Long k over few tiles: the k-split paths.
        5 => (dim(rng, 16, 256), dim(rng, 16, 256), dim(rng, 1024, 8192)),
        6 => (dim(rng, 300, 700), dim(rng, 300, 700), dim(rng, 8, 200)),
        // Several waves of tiles: persistent blocks take several tiles each.
        7 | 8 => (dim(rng, 1000, 3000), dim(rng, 1000, 3000), dim(rng, 16, 600)),
        _ => (dim(rng, 1500, 4000), dim(rng, 1500, 4000), dim(rng, 200, 2000)),
    };
    let ops = (
        rng.pick(&[Transpose::N, Transpose::T]),
        rng.pick(&[Transpose::N, Transpose::T]),
    );
    let layout = if rng.next_u64() % 5 == 0 {
        Layout::RowMajor
    } else {
        Layout::ColMajor
    };
    let mut ld_pad = [0usize; 3];
    for p in ld_pad.iter_mut() {
        *p = match rng.next_u64() % 6 {
            0 if !aligned => range(rng, 1, 13),
            0 | 1 => 8 * range(rng, 1, 4),
            _ => 0,
        };
    }
    let batch = if rng.next_u64() % 7 == 0 {
        // Tiny and small matrices (one block or tile each) also in large batches.
        if (class == 0 || (class <= 2 && m.max(n) <= 128)) && rng.next_u64() % 2 == 0 {
            range(rng, 5, 300)
        } else {
            range(rng, 2, 4)
        }
    } else {
        1
    };
    let stride = |rng: &mut Rng| match rng.next_u64() % 4 {
        0 => Some(0),
        _ => None,
    };
    let strides = (
        stride(rng),
        stride(rng),
        if aligned {
            rng.pick(&[0, 0, 8])
        } else {
            rng.pick(&[0, 5, 8])
        },
    );
    let mut offsets = [0usize; 3];
    if !aligned && rng.next_u64() % 3 == 0 {
        offsets[(rng.next_u64() % 3) as usize] = range(rng, 1, 3);
    }
    let alpha = rng.pick(&[1.0, 1.0, -0.75, 0.5, 1.5]);
    let beta = rng.pick(&[0.0, 0.0, 1.0, 0.5, -1.25]);
    let bias = rng.next_u64() % 4 == 0;
    let act = activation(rng);
    // Tf32x3 takes the exact kernels on most drawn shapes unless a tensor-core family is forced:
    // half its cases force one (the split, then the tf32 kernel the family names).
    let knobs = if ty == FuzzType::F32x3 && rng.next_u64() % 2 == 0 {
        let kernel = rng.pick(&[Kernel::TensorCore, Kernel::TensorCore, Kernel::Wgmma, Kernel::MmaSync]);
        // Each promoted tile, and the 128 x 256 one (not promoted).
        let tile = rng.pick(&[
            Tile::Auto,
            Tile::Auto,
            Tile::Auto,
            Tile::Broad,
            Tile::Large,
            Tile::Narrow,
            Tile::Medium,
            Tile::Half,
            Tile::Wide,
        ]);
        (kernel, tile, SplitK::Auto)
    } else if rng.next_u64() % 6 == 0 {
        let kernel = rng.pick(&[
            Kernel::Auto,
            Kernel::Auto,
            Kernel::Simt,
            Kernel::TensorCore,
            Kernel::MmaSync,
            Kernel::Wgmma,
        ]);
        let tile = rng.pick(&[
            Tile::Auto,
            Tile::Small,
            Tile::Large,
            Tile::Broad,
            Tile::Wide,
            Tile::Narrow,
            Tile::Half,
            Tile::Medium,
            Tile::Thin,
            Tile::LargePair,
            Tile::NarrowPair,
        ]);
        let split = match ty {
            FuzzType::F32 | FuzzType::F64 => rng.pick(&[
                SplitK::Auto,
                SplitK::Off,
                SplitK::Parts(2),
                SplitK::Parts(3),
                SplitK::Parts(4),
            ]),
            // The wgmma kernels' split: more parts than k-tiles included.
            _ => rng.pick(&[
                SplitK::Auto,
                SplitK::Off,
                SplitK::Parts(2),
                SplitK::Parts(3),
                SplitK::Parts(7),
                SplitK::Parts(16),
                SplitK::Parts(64),
            ]),
        };
        (kernel, tile, split)
    } else if ty == FuzzType::F32 && rng.next_u64() % 3 == 0 {
        // Exact f32 has two automatic families: the f64 tensor cores where the device's f64
        // units are fast (Hopper), the CUDA cores elsewhere; a third of the cases keep the CUDA
        // cores' automatic choice covered there too.
        (Kernel::Simt, Tile::Auto, SplitK::Auto)
    } else {
        (Kernel::Auto, Tile::Auto, SplitK::Auto)
    };
    GemmCase {
        ty,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad,
        batch,
        strides,
        offsets,
        scalars: (alpha, beta),
        bias,
        act,
        knobs,
        tf32_exact_inputs: rng.next_u64() % 2 == 0,
    }
}

/// Draws a GEMM with one short side (2 to 16) whose operands are both contiguous along k (a
/// decode step's linear layer, column-major TN or row-major NT): the shapes of the skinny kernel
/// (`gemm_skinny_<t>`), both orientations, with and without its split of k, batches, bias,
/// activation and scalars; one case in six has a leading dimension that is not a whole 16-byte
/// vector (and so runs on the tiled kernels). For f16 and bf16 one case in six is a decode step
/// their sm_90 TMA kernel (`gemm_skinny90_<t>`) takes: k-contiguous operands of whole 16-byte
/// vectors, the short side C's rows, at least 2^21 weights. The other types draw any op pair,
/// and one case in six forces [`Tile::Thin`]: they run such products on their thin tensor-core
/// tiles (f64 also long k through partial products), which take every layout. For f64 one case
/// in four has a short side of 17 to 80, which its thin tiles also take where 16-wide strips fit
/// it better than 64-wide tiles.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_skinny_case(&mut Rng::new(3), fuzz::FuzzType::F64);
/// let (m, n, _) = case.dims;
/// assert!(m.min(n) <= 80);
/// ```
pub fn random_skinny_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    skinny_case(rng, ty, false)
}

/// Draws an f16, bf16 or tf32 decode step for the sm_90 TMA kernel (`gemm_skinny90_<t>`) whose
/// operands are views that both start the same number of elements (1 to a 16-byte vector less
/// one) past a 16-byte boundary, as [`random_skinny_case`] draws them, with at least 7M weights
/// (past the kernel's thresholds in either orientation on fast memory); leading dimensions of
/// whole vectors, k itself included (rows the maps' extended k overlaps).
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_view_case(&mut Rng::new(3), fuzz::FuzzType::Tf32);
/// let [a, b, _] = case.offsets;
/// assert!(a % 4 != 0 && a % 4 == b % 4);
/// ```
pub fn random_view_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    skinny_case(rng, ty, true)
}

/// [`random_skinny_case`], or with `view` [`random_view_case`].
fn skinny_case(rng: &mut Rng, ty: FuzzType, view: bool) -> GemmCase {
    let short = if ty == FuzzType::F64 && rng.next_u64() % 4 == 0 {
        range(rng, 17, 80)
    } else {
        range(rng, 2, 16)
    };
    let long = match rng.next_u64() % 3 {
        0 => range(rng, 17, 600),
        1 => range(rng, 600, 5000),
        _ => range(rng, 5000, 12000),
    };
    let mut k = match rng.next_u64() % 3 {
        0 => range(rng, 1, 300),
        1 => range(rng, 300, 3000),
        _ => range(rng, 3000, 9000),
    };
    // Keeps the host's inputs and reference small.
    k = k.min((20_000_000 / long).max(1));
    let (m, n) = if rng.next_u64() % 2 == 0 {
        (long, short)
    } else {
        (short, long)
    };
    let layout = if rng.next_u64() % 4 == 0 {
        Layout::RowMajor
    } else {
        Layout::ColMajor
    };
    let ops = match layout {
        // The other types run such products on their thin tensor-core tiles, which take every
        // op pair.
        _ if ty != FuzzType::F32 => (
            rng.pick(&[Transpose::N, Transpose::T]),
            rng.pick(&[Transpose::N, Transpose::T]),
        ),
        Layout::ColMajor => (Transpose::T, Transpose::N),
        Layout::RowMajor => (Transpose::N, Transpose::T),
    };
    // A's and B's leading dimension is k plus this: whole 16-byte vectors (of f32, and so of
    // f64; of f16 and bf16, the TMA's rule for their sm_90 decode kernel), or one element more.
    let vec = if matches!(ty, FuzzType::F16 | FuzzType::Bf16) {
        8
    } else {
        4
    };
    let whole = k.next_multiple_of(vec) - k + vec * range(rng, 0, 2);
    let pad = if rng.next_u64() % 6 == 0 { whole + 1 } else { whole };
    let both = |rng: &mut Rng| rng.pick(&[None, None, Some(0)]);
    let batch = if rng.next_u64() % 5 == 0 { range(rng, 2, 3) } else { 1 };
    // f16, bf16 and tf32: one case in six a decode step for their sm_90 TMA kernel
    // (k-contiguous operands of whole 16-byte vectors, at least 2^21 weights).
    let tma = matches!(ty, FuzzType::F16 | FuzzType::Bf16 | FuzzType::Tf32) && (rng.next_u64() % 6 == 0 || view);
    let (ops, layout, m, n, k, pad) = if tma {
        let long = range(rng, 600, 12000);
        let least = if view { 7_000_000 } else { 1 << 21 };
        let k = range(rng, least / long + 1, (20_000_000 / long).max(least / long + 2));
        let pad = k.next_multiple_of(vec) - k + vec * range(rng, 0, 1);
        if rng.next_u64() % 2 == 0 {
            ((Transpose::T, Transpose::N), Layout::ColMajor, short, long, k, pad)
        } else {
            ((Transpose::N, Transpose::T), Layout::RowMajor, long, short, k, pad)
        }
    } else {
        (ops, layout, m, n, k, pad)
    };
    GemmCase {
        ty,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad: [pad, pad, rng.pick(&[0, 1, 3])],
        batch,
        strides: (both(rng), both(rng), rng.pick(&[0, 5])),
        // Whole 16-byte vectors or single elements (an unaligned view: f32's skinny kernel reads
        // the long operand from its start rounded down, the short one in vectors when it is as
        // far in, else element-wise in the `u` kernel); one case in four both as far in.
        offsets: if ty == FuzzType::F32 {
            let same = range(rng, 1, 3);
            if rng.next_u64() % 4 == 0 {
                [same, same + 4 * range(rng, 0, 1), range(rng, 0, 3)]
            } else {
                [rng.pick(&[0, 4, 0, 1, 3]), rng.pick(&[0, 4, 0, 2]), range(rng, 0, 3)]
            }
        } else if tma {
            // Whole 16-byte vectors, or one case in three both views the same number of
            // elements past a vector (the decode kernel maps them from the boundary below), and
            // one in eight each at any such offset (mostly different ones: the thin tiles'
            // element variants).
            match if view { 0 } else { rng.next_u64() % 24 } {
                0..=7 => {
                    let same = range(rng, 1, vec - 1);
                    [same, same + vec * range(rng, 0, 1), range(rng, 0, 3)]
                }
                8..=10 => [range(rng, 1, vec - 1), range(rng, 0, vec - 1), range(rng, 0, 3)],
                _ => [rng.pick(&[0, 8]), rng.pick(&[0, 8]), range(rng, 0, 3)],
            }
        } else {
            [rng.pick(&[0, 8, 4, 1]), rng.pick(&[0, 8, 4, 1]), range(rng, 0, 3)]
        },
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs: if ty != FuzzType::F32 && !tma && rng.next_u64() % 6 == 0 {
            (Kernel::Auto, Tile::Thin, SplitK::Auto)
        } else {
            (Kernel::Auto, Tile::Auto, SplitK::Auto)
        },
        tf32_exact_inputs: false,
    }
}

/// Draws an f16 or bf16 GEMM of 768 to 1216 per side (multiples of 64: 36 to 100 output tiles of
/// 128 x 128) over k from 16384 to 17000, automatic knobs: the mid-sized products that the
/// automatic choice splits through partial products in 2 parts on fast memory (`mid_parts` in
/// src/blas/gemm/partials.rs), and their neighbours it leaves alone; any ops and layout.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_mid_case(&mut Rng::new(3), fuzz::FuzzType::F16);
/// let (m, n, k) = case.dims;
/// assert!(m % 64 == 0 && n % 64 == 0 && k >= 16384);
/// ```
pub fn random_mid_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    let side = |rng: &mut Rng| 64 * range(rng, 12, 19);
    let (m, n) = (side(rng), side(rng));
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    GemmCase {
        ty,
        ops: (t(rng), t(rng)),
        dims: (m, n, range(rng, 16384, 17000)),
        layout: rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]),
        ld_pad: [rng.pick(&[0, 0, 8]), rng.pick(&[0, 0, 8]), rng.pick(&[0, 1])],
        batch: 1,
        strides: (None, None, 0),
        offsets: [0, 0, rng.pick(&[0, 0, 1])],
        scalars: (rng.pick(&[1.0, -0.75]), rng.pick(&[0.0, 0.0, 1.0])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs: (Kernel::Auto, Tile::Auto, SplitK::Auto),
        tf32_exact_inputs: false,
    }
}

/// Draws a GEMM with long k over few output tiles (m and n up to 300, k from 2000 to 40000; for
/// f64 and f32 one case in four below 4096, where the DMMA tiles' automatic split starts at
/// 2048): the shapes of a split of k through partial products. Three cases in four force
/// [`SplitK::Partials`] (2 to 256 parts, more than k holds included, sometimes with a forced
/// kernel family or tile), the rest leave the choice to dispatch; any ops, layout, leading
/// dimension, offset, scalars and epilogue; batch 1.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_deep_case(&mut Rng::new(3), fuzz::FuzzType::F64);
/// let (m, n, k) = case.dims;
/// assert!(m <= 300 && n <= 300 && k >= 2000);
/// ```
pub fn random_deep_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    let side = |rng: &mut Rng| match rng.next_u64() % 4 {
        0 => range(rng, 1, 16),
        1 => range(rng, 17, 300),
        _ => rng.pick(&[32, 64, 64, 128, 256]),
    };
    let (m, n) = (side(rng), side(rng));
    // Keeps the host's inputs and reference small.
    // f64 and f32 (on the DMMA tiles of sm_90): one case in four below 4096, where their
    // automatic split starts at 2048. The other types' automatic splits start at 4096.
    let dmma = matches!(ty, FuzzType::F64 | FuzzType::F32);
    let k = if dmma && rng.next_u64() % 4 == 0 {
        range(rng, 2000, 4095)
    } else {
        range(rng, 2000, 40000).min(24_000_000 / (m + n))
    };
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    let ops = (t(rng), t(rng));
    let layout = rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]);
    let pad = |rng: &mut Rng| rng.pick(&[0, 0, 0, 1, 3, 8]);
    let knobs = if rng.next_u64() % 4 != 0 {
        // f16 and bf16 split on the tensor-core kernels only (their f32 partial sums): wgmma's
        // where the TMA can read the operands (Auto tries it first), else mma.sync's.
        let other = match ty {
            FuzzType::F16 | FuzzType::Bf16 => rng.pick(&[Kernel::MmaSync, Kernel::Wgmma]),
            _ => Kernel::Simt,
        };
        let kernel = rng.pick(&[Kernel::Auto, Kernel::Auto, Kernel::Auto, other, Kernel::TensorCore]);
        let tile = rng.pick(&[
            Tile::Auto,
            Tile::Auto,
            Tile::Small,
            Tile::Narrow,
            Tile::Large,
            Tile::Thin,
        ]);
        let parts = rng.pick(&[2, 3, 5, 8, 16, 33, 64, 128, 256]);
        (kernel, tile, SplitK::Partials(parts))
    } else {
        (Kernel::Auto, Tile::Auto, SplitK::Auto)
    };
    let mut offsets = [0usize; 3];
    if rng.next_u64() % 4 == 0 {
        offsets[(rng.next_u64() % 3) as usize] = range(rng, 1, 3);
    }
    GemmCase {
        ty,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad: [pad(rng), pad(rng), pad(rng)],
        batch: 1,
        strides: (None, None, 0),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs,
        tf32_exact_inputs: rng.next_u64() % 2 == 0,
    }
}

/// Draws a tall (or wide) GEMM of one to three waves of output tiles over long k: a long side
/// of 8192 to 24576 and a short side of 64 to 384 (at least 1.2 million outputs), k from 2048
/// to 8192 (less where the host's inputs would pass 72 million elements). These reach f32's k
/// split past a wave of its `v` tiles and the tensor-core tiles' uneven last rounds. Any op
/// pair and layout; one case in four has an unaligned leading dimension or offset; one in five
/// forces a tile or a split.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_wave_case(&mut Rng::new(3), fuzz::FuzzType::F32);
/// let (m, n, k) = case.dims;
/// assert!(m.max(n) >= 8192 && m * n >= 1_200_000 && k >= 1024);
/// ```
pub fn random_wave_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    let aligned = rng.next_u64() % 4 != 0;
    let short = if aligned {
        rng.pick(&[64, 96, 128, 128, 192, 256, 256, 320, 384])
    } else {
        range(rng, 65, 383)
    };
    let long = range(rng, 8192, 24576).max(1_200_000usize.div_ceil(short));
    let long = if aligned { long.next_multiple_of(8) } else { long };
    // Keeps the host's inputs (and the upload) under about 72 million elements.
    let k = range(rng, 2048, 8192).min(72_000_000 / (long + short));
    let k = if aligned { k / 8 * 8 } else { k };
    let (m, n) = if rng.next_u64() % 4 == 0 {
        (short, long)
    } else {
        (long, short)
    };
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    let ops = (t(rng), t(rng));
    let layout = rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]);
    let mut ld_pad = [0usize; 3];
    let mut offsets = [0usize; 3];
    if aligned {
        ld_pad[(rng.next_u64() % 3) as usize] = rng.pick(&[0, 8, 32]);
    } else {
        let which = (rng.next_u64() % 3) as usize;
        if rng.next_u64() % 2 == 0 {
            ld_pad[which] = range(rng, 1, 7);
        } else {
            offsets[which] = range(rng, 1, 3);
        }
    }
    let knobs = if rng.next_u64() % 5 == 0 {
        let tile = rng.pick(&[
            Tile::Auto,
            Tile::Small,
            Tile::Half,
            Tile::Medium,
            Tile::Narrow,
            Tile::Large,
            Tile::Broad,
            Tile::Wide,
        ]);
        let split = rng.pick(&[SplitK::Auto, SplitK::Off, SplitK::Parts(2), SplitK::Parts(3)]);
        (Kernel::Auto, tile, split)
    } else {
        (Kernel::Auto, Tile::Auto, SplitK::Auto)
    };
    GemmCase {
        ty,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad,
        batch: 1,
        strides: (None, None, 0),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs,
        tf32_exact_inputs: rng.next_u64() % 2 == 0,
    }
}
