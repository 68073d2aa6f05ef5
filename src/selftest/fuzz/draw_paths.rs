//! Drawing GEMM cases aimed at one kernel path each, for the fuzz test's families of the same
//! names (families.rs): wgmma reading its register operand in place (tf32, and f16 / bf16),
//! the wgmma pairs (clusters of 2 sharing loads), and stream-k on the DMMA tiles. The general
//! draws (shapes by class, layout, padding, batches, scalars, epilogue, knobs) are in draw.rs.

use super::draw::{activation, range};
use super::{FuzzType, GemmCase};
use crate::blas::{Activation, Kernel, Layout, SplitK, Tile, Transpose};
use crate::selftest::Rng;

/// Draws a tf32 GEMM whose m- or n-contiguous operand (the one the wgmma kernels take into
/// registers) has rows that are not 16 bytes apart, or starts off a 16-byte boundary: column-
/// major NN (A), TT (B) and NT (the operand of more rows; the other is packed), or the row-major
/// problems of the same storage (NN, TT, TN). The wgmma kernel is forced, its tile one of the
/// automatic choice, 128 x 64, 128 x 256, 128 x 192, 64 x 64 and 64 x 96, the 128 x 64 tile
/// also with a split of k; batches (a shared operand included), scalars and bias vary; a quarter
/// of the cases are batches of 40-300 small matrices at k <= 128 on the automatic tile (NT
/// packs each matrix). These run the kernels that read that operand in place (reported with
/// `/x-in-place`); the tile of 128 x 128 copies it aligned first.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_in_place_case(&mut Rng::new(3));
/// assert_eq!(case.ty, fuzz::FuzzType::Tf32);
/// assert!(case.ld_pad[0] % 4 != 0 || case.ld_pad[1] % 4 != 0 || case.offsets != [0; 3]);
/// ```
pub fn random_in_place_case(rng: &mut Rng) -> GemmCase {
    use Transpose::{N, T};
    // The column-major problem: NN reads A m-contiguous, TT and NT read B n-contiguous.
    let col_ops = rng.pick(&[(N, N), (T, T), (N, T)]);
    let layout = rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]);
    // A row-major problem is the column-major one of the operands swapped (and their ops).
    let (ops, a_side) = match layout {
        Layout::ColMajor => (col_ops, col_ops == (N, N)),
        Layout::RowMajor => ((col_ops.1, col_ops.0), col_ops != (N, N)),
    };
    // Shape classes: small, tall, wide, and batches of small matrices at short k (where the
    // automatic choice moves from the 128 x 128 tile to a wide one that reads X in place).
    let class = rng.next_u64() % 4;
    let (m, n, k) = match class {
        0 => (range(rng, 1, 400), range(rng, 1, 400), range(rng, 1, 600)),
        1 => (range(rng, 500, 3000), range(rng, 1, 200), range(rng, 200, 2500)),
        2 => (range(rng, 1, 200), range(rng, 500, 3000), range(rng, 200, 2500)),
        _ => (range(rng, 60, 400), range(rng, 60, 400), range(rng, 1, 128)),
    };
    let mut ld_pad = [0usize; 3];
    let mut offsets = [0usize; 3];
    // NT packs the operand of fewer rows k-contiguous and reads the other in place: either.
    let i = if col_ops == (N, T) {
        (rng.next_u64() % 2) as usize
    } else {
        usize::from(!a_side)
    };
    if rng.next_u64() % 4 == 0 {
        offsets[i] = range(rng, 1, 3);
        ld_pad[i] = rng.pick(&[0, 4, 8]);
    } else {
        ld_pad[i] = rng.pick(&[1, 2, 3, 5, 7, 13]);
    }
    // The other operand: aligned, or copied aligned first.
    ld_pad[1 - i] = rng.pick(&[0, 0, 1, 8]);
    ld_pad[2] = rng.pick(&[0, 0, 3]);
    let tile = rng.pick(&[
        Tile::Auto,
        Tile::Auto,
        Tile::Narrow,
        Tile::Wide,
        Tile::Broad,
        Tile::Half,
        Tile::Medium,
    ]);
    let (tile, split, batch) = if class == 3 {
        (Tile::Auto, SplitK::Auto, range(rng, 40, 300))
    } else {
        let split = match tile {
            Tile::Auto | Tile::Narrow => rng.pick(&[SplitK::Auto, SplitK::Off, SplitK::Parts(2), SplitK::Parts(5)]),
            _ => SplitK::Auto,
        };
        (tile, split, if rng.next_u64() % 5 == 0 { range(rng, 2, 3) } else { 1 })
    };
    let stride = |rng: &mut Rng| if rng.next_u64() % 4 == 0 { Some(0) } else { None };
    GemmCase {
        ty: FuzzType::Tf32,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad,
        batch,
        strides: (stride(rng), stride(rng), 0),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: Activation::None,
        knobs: (Kernel::Wgmma, tile, split),
        tf32_exact_inputs: rng.next_u64() % 2 == 0,
    }
}

/// Draws an f16, bf16 or tf32 GEMM (`ty`) on the wgmma pairs ([`Tile::LargePair`],
/// [`Tile::NarrowPair`] forced with [`Kernel::TensorCore`]: operands the tensor memory
/// accelerator cannot read are copied aligned first): a single column of tiles (every pair's
/// second tile past D), mid sizes with odd and even tile columns, and more pairs than the GPU
/// holds clusters at once (the persistent loop); k from 1 to 6000, every op (tf32 has pairs for
/// its `tn` kernel only: its other ops run the tiles alone), both layouts, batches (a shared
/// operand included), scalars, bias and activations (which pairs apply in their rolled
/// epilogue).
///
/// ```
/// use cudrv::blas::Tile;
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_pair_case(&mut Rng::new(3), fuzz::FuzzType::F16);
/// assert!(matches!(case.knobs.1, Tile::LargePair | Tile::NarrowPair));
/// ```
pub fn random_pair_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    let tile = rng.pick(&[Tile::LargePair, Tile::NarrowPair]);
    let bn = if tile == Tile::LargePair { 128 } else { 64 };
    let (a, b) = match rng.next_u64() % 4 {
        // One column of tiles: each pair's second tile lies past D.
        0 => (range(rng, 1, 600), range(rng, 1, bn)),
        1 => (range(rng, 100, 1500), range(rng, 100, 1500)),
        // More pairs than clusters fit at once.
        2 => (range(rng, 2000, 4200), range(rng, 2000, 4200)),
        _ => (range(rng, 1, 300), range(rng, 300, 3000)),
    };
    let (m, n) = if rng.next_u64() % 2 == 0 { (a, b) } else { (b, a) };
    let k = if rng.next_u64() % 5 == 0 {
        range(rng, 1, 64)
    } else {
        range(rng, 65, if m.max(n) > 2000 { 2500 } else { 6000 })
    };
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    // tf32's pairs are its tn kernel: column-major A^T B, or row-major A B^T, most of the time.
    let (ops, layout) = if ty == FuzzType::Tf32 && rng.next_u64() % 4 != 0 {
        rng.pick(&[
            ((Transpose::T, Transpose::N), Layout::ColMajor),
            ((Transpose::N, Transpose::T), Layout::RowMajor),
        ])
    } else {
        ((t(rng), t(rng)), rng.pick(&[Layout::ColMajor, Layout::RowMajor]))
    };
    let mut ld_pad = [0usize; 3];
    for p in &mut ld_pad {
        *p = rng.pick(&[0, 0, 8, 3]);
    }
    let mut offsets = [0usize; 3];
    if rng.next_u64() % 6 == 0 {
        offsets[(rng.next_u64() % 3) as usize] = range(rng, 1, 3);
    }
    let batch = if m.max(n) <= 1500 && rng.next_u64() % 4 == 0 {
        range(rng, 2, 3)
    } else {
        1
    };
    let stride = |rng: &mut Rng| if rng.next_u64() % 4 == 0 { Some(0) } else { None };
    GemmCase {
        ty,
        ops,
        dims: (m, n, k),
        layout,
        ld_pad,
        batch,
        strides: (stride(rng), stride(rng), rng.pick(&[0, 0, 8])),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs: (Kernel::TensorCore, tile, SplitK::Auto),
        tf32_exact_inputs: rng.next_u64() % 2 == 0,
    }
}

/// Draws an f16 or bf16 (`ty`) batch of small matrices whose operands are aligned only to their
/// element (a leading dimension or a start that is not a multiple of 16 bytes), at the short k
/// where the wgmma kernels read both operands in place (`gemm_wgu_<t>_<tile>_<ops>`,
/// `in_place_pays`) and, one case in five, past it (the aligned copy): every op, both
/// layouts, 2-400 matrices of 1-300 per side, a shared operand, scalars, bias and activations;
/// the tile automatic or forced (64 x 64 and 128 x 64, which have in-place kernels; 128 x 128,
/// which copies), on the automatic kernel or on wgmma forced.
///
/// ```
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_b16_in_place_case(&mut Rng::new(3), fuzz::FuzzType::Bf16);
/// assert!(case.batch >= 2 && case.dims.2 >= 1);
/// assert!(case.ld_pad[..2].iter().any(|p| p % 8 != 0) || case.offsets[..2].iter().any(|o| o % 8 != 0));
/// ```
pub fn random_b16_in_place_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    // Half the cases within the 128 x 64 tile's limit, 3 in 10 up to the 64 x 64 tile's, the
    // rest past both (the aligned copy).
    let (narrow, max_k) = (crate::blas::IN_PLACE_MAX_K_NARROW, crate::blas::IN_PLACE_MAX_K);
    let k = match rng.next_u64() % 10 {
        0..=4 => range(rng, 1, narrow),
        5..=7 => range(rng, narrow + 1, max_k),
        _ => range(rng, max_k + 1, max_k + 64),
    };
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    // Both operands off 16 bytes, or one (the other aligned, or copied as the rule says).
    let mut ld_pad = [0usize; 3];
    let mut offsets = [0usize; 3];
    let odd = |rng: &mut Rng| rng.pick(&[1, 2, 3, 5, 7, 13]);
    let both = rng.next_u64() % 2 == 0;
    let first = (rng.next_u64() % 2) as usize;
    for i in 0..2 {
        if both || i == first {
            if rng.next_u64() % 4 == 0 {
                offsets[i] = range(rng, 1, 7);
                ld_pad[i] = rng.pick(&[0, 8]);
            } else {
                ld_pad[i] = odd(rng);
            }
        } else {
            ld_pad[i] = rng.pick(&[0, 8]);
        }
    }
    ld_pad[2] = rng.pick(&[0, 0, 3]);
    // 128 x 64 twice: its limit of k is the shorter.
    let tile = rng.pick(&[
        Tile::Auto,
        Tile::Auto,
        Tile::Half,
        Tile::Narrow,
        Tile::Narrow,
        Tile::Large,
    ]);
    let kernel = rng.pick(&[Kernel::Auto, Kernel::Wgmma]);
    let stride = |rng: &mut Rng| if rng.next_u64() % 5 == 0 { Some(0) } else { None };
    GemmCase {
        ty,
        ops: (t(rng), t(rng)),
        dims: (range(rng, 1, 300), range(rng, 1, 300), k),
        layout: rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]),
        ld_pad,
        batch: range(rng, 2, 400),
        strides: (stride(rng), stride(rng), rng.pick(&[0, 0, 8])),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        knobs: (kernel, tile, SplitK::Auto),
        tf32_exact_inputs: false,
    }
}

/// Draws an f64 or exact f32 GEMM on the DMMA stream-k kernels (`Tile::Narrow` forced with a
/// split of 2-64 parts, one matrix): 1 to about 190 output tiles of 128 x 64 (sides 1-1600), k
/// from 0 to 3000 (one in eight at most 48: fewer k-tiles than blocks asked for, and k = 0),
/// so the grid's blocks share tiles in one to many parts, start and end mid-tile and park their
/// sums in both slots. Any op pair and layout; one case in three has a leading dimension one
/// longer or an offset (the element variants); scalars, bias and activation as elsewhere.
///
/// ```
/// use cudrv::blas::{SplitK, Tile};
/// use cudrv::selftest::{fuzz, Rng};
/// let case = fuzz::random_stream_k_case(&mut Rng::new(5), fuzz::FuzzType::F64);
/// assert_eq!(case.knobs.1, Tile::Narrow);
/// assert!(matches!(case.knobs.2, SplitK::Parts(p) if p >= 2));
/// assert_eq!(case.batch, 1);
/// ```
pub fn random_stream_k_case(rng: &mut Rng, ty: FuzzType) -> GemmCase {
    let side = |rng: &mut Rng| {
        if rng.next_u64() % 4 == 0 {
            range(rng, 1, 200)
        } else {
            range(rng, 100, 1600)
        }
    };
    let (m, n) = (side(rng), side(rng));
    let k = if rng.next_u64() % 8 == 0 {
        range(rng, 0, 48)
    } else {
        range(rng, 49, 3000)
    };
    let parts = rng.pick(&[2, 2, 3, 4, 5, 7, 16, 64]);
    let t = |rng: &mut Rng| rng.pick(&[Transpose::N, Transpose::T]);
    let mut ld_pad = [0usize; 3];
    let mut offsets = [0usize; 3];
    if rng.next_u64() % 3 == 0 {
        let which = (rng.next_u64() % 3) as usize;
        if rng.next_u64() % 2 == 0 {
            ld_pad[which] = 1;
        } else {
            offsets[which] = 1;
        }
    }
    GemmCase {
        ty,
        ops: (t(rng), t(rng)),
        dims: (m, n, k),
        layout: rng.pick(&[Layout::ColMajor, Layout::ColMajor, Layout::RowMajor]),
        ld_pad,
        batch: 1,
        strides: (None, None, 0),
        offsets,
        scalars: (rng.pick(&[1.0, 1.0, -0.75, 0.5]), rng.pick(&[0.0, 0.0, 1.0, -1.25])),
        bias: rng.next_u64() % 3 == 0,
        act: activation(rng),
        // Exact f32 takes the DMMA kernels only when the tensor-core family is named with the
        // forced tile (the CUDA cores split k on their own 32 x 64 tile).
        knobs: (
            if ty == FuzzType::F32 {
                Kernel::TensorCore
            } else {
                Kernel::Auto
            },
            Tile::Narrow,
            SplitK::Parts(parts),
        ),
        tf32_exact_inputs: false,
    }
}
