//! Which GEMMs the skinny kernel takes, and its launch shape (no GPU: the router's arithmetic).

use super::*;
use crate::blas::gemm::skinny::{route, SkinnyRoute};

/// The route of `g` with A, B, C at 256-byte aligned addresses, on 132 multiprocessors.
fn routed<T: GemmType>(g: &Gemm<T::Scalar>, offsets: [u64; 3]) -> Option<SkinnyRoute> {
    let lens = [1 << 28; 3];
    let plan = g.plan(lens, None).expect("plan");
    let [a, b, c] = offsets.map(|o| 0x1000_0000 + o * std::mem::size_of::<T>() as u64);
    route::<T, T::Scalar>(g, &plan, &g.params(&plan, [a, b, c], 0), 132, (9, 0))
}

#[test]
fn decode_steps_take_the_skinny_kernel_in_both_orientations_and_layouts() {
    use Transpose::{N, T};
    // A linear layer over 16 tokens: column-major TN, and row-major x W^T (NT).
    let col = routed::<f32>(&Gemm::new(T, N, 4096, 16, 4096), [0; 3]).expect("column-major TN");
    assert_eq!(col.name(), "gemm_skinny_f32_r2s2");
    let row = Gemm::new(N, T, 16, 4096, 4096).layout(Layout::RowMajor);
    assert_eq!(routed::<f32>(&row, [0; 3]).map(|r| r.name()), Some(col.name()));
    // The short side as C's rows. tf32 leaves the shapes its thin tensor-core tiles take (a
    // column-major TN decode step) to them; where those do not apply (16 x 4096: 64 of the
    // 64 x 16 tiles, under 3/4 of a wave), it runs this kernel (exact f32).
    assert!(routed::<f32>(&Gemm::new(T, N, 16, 4096, 4096), [0; 3]).is_some());
    assert!(routed::<f32>(&Gemm::new(T, N, 4096, 2, 4096).math(MathMode::Tf32), [0; 3]).is_none());
    assert!(routed::<f32>(&Gemm::new(T, N, 16, 4096, 4096).math(MathMode::Tf32), [0; 3]).is_some());
}

#[test]
fn few_rows_split_k_in_whole_tiles() {
    use Transpose::{N, T};
    // 300 long rows in blocks of 16: 19 blocks, 132 / 19 = 6 wanted, k of 4096 has 16 tiles of
    // 256, so at most 4 splits of 1024.
    let r = routed::<f32>(&Gemm::new(T, N, 16, 300, 4096), [0; 3]).expect("routed");
    assert_eq!((r.splits, r.name()), (4, "gemm_skinny_f32_r2s2/split4".to_string()));
    // A full wave of row blocks: no split; short k: no split.
    assert_eq!(
        routed::<f32>(&Gemm::new(T, N, 4096, 16, 4096), [0; 3]).map(|r| r.splits),
        Some(1)
    );
    assert_eq!(
        routed::<f32>(&Gemm::new(T, N, 300, 16, 700), [0; 3]).map(|r| r.splits),
        Some(1)
    );
}

#[test]
fn other_gemms_stay_on_the_tiles() {
    use Transpose::{N, T};
    let none = |g: &Gemm<f32>, offsets| routed::<f32>(g, offsets).is_none();
    // An operand not k-contiguous, a short side of 17, a tiny product.
    assert!(none(&Gemm::new(N, N, 4096, 16, 4096), [0; 3]));
    assert!(none(&Gemm::new(T, T, 4096, 16, 4096), [0; 3]));
    assert!(none(&Gemm::new(T, N, 4096, 17, 4096), [0; 3]));
    assert!(none(&Gemm::new(T, N, 20, 16, 20), [0; 3]));
    // The long operand's rows not whole 16-byte vectors apart: an odd k (tight leading
    // dimensions).
    assert!(none(&Gemm::new(T, N, 4096, 16, 4095), [0; 3]));
    // Forced knobs, alpha 0 (nothing to read), f64 (its DMMA tiles measured faster).
    assert!(none(&Gemm::new(T, N, 4096, 16, 4096).kernel(Kernel::Simt), [0; 3]));
    assert!(none(&Gemm::new(T, N, 4096, 16, 4096).alpha(0.0), [0; 3]));
    assert!(routed::<f64>(&Gemm::new(T, N, 4096, 16, 4096), [0; 3]).is_none());
}

#[test]
fn unaligned_starts_take_the_u_kernel() {
    use Transpose::{N, T};
    let name = |offsets| routed::<f32>(&Gemm::new(T, N, 4096, 16, 4096), offsets).map(|r| r.name());
    // The long operand (A) one element in: read from its start rounded down; the short one (B)
    // one element in: read element by element. Both in the one-vector `u` kernel.
    assert_eq!(name([1, 0, 0]).as_deref(), Some("gemm_skinny_f32_r2s2u"));
    assert_eq!(name([0, 3, 0]).as_deref(), Some("gemm_skinny_f32_r2s2u"));
    assert_eq!(name([0, 0, 0]).as_deref(), Some("gemm_skinny_f32_r2s2"));
    // Both one (or three) elements in: both read in vectors from their starts rounded down.
    assert_eq!(name([1, 1, 0]).as_deref(), Some("gemm_skinny_f32_r2s2"));
    assert_eq!(name([3, 7, 1]).as_deref(), Some("gemm_skinny_f32_r2s2"));
    assert_eq!(name([1, 3, 0]).as_deref(), Some("gemm_skinny_f32_r2s2u"));
    let r = routed::<f32>(&Gemm::new(T, N, 4096, 16, 4096), [1, 1, 0]).expect("routed");
    assert_eq!((r.params.shift, r.params.g % 16, r.params.h % 16), (1, 0, 0));
    // k 4097 with tight leading dimensions: the long operand's rows are not vectors apart.
    assert!(routed::<f32>(&Gemm::new(T, N, 4096, 16, 4097), [0; 3]).is_none());
}
