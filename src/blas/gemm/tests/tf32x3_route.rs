//! MathMode::Tf32x3 (no GPU): which products split, and the tf32 product over the split copies.

use super::super::tf32x3::{broad_over_large, inner, packed_lens, packed_strides, splits};
use super::super::{Gemm, Kernel};
use crate::blas::{Layout, MathMode, Transpose};

const H100: (u32, u32) = (9, 0);

fn g(m: usize, n: usize, k: usize) -> Gemm<f32> {
    Gemm::new(Transpose::N, Transpose::T, m, n, k).math(MathMode::Tf32x3)
}

#[test]
fn large_products_split_small_ones_run_exact() {
    assert!(splits(&g(2048, 2048, 2048), H100).unwrap());
    assert!(splits(&g(1024, 1024, 512), H100).unwrap());
    assert!(splits(&g(768, 768, 768), H100).unwrap());
    assert!(splits(&g(4096, 4096, 64), H100).unwrap());
    assert!(splits(&g(12345, 321, 4567), H100).unwrap());
    // Small, short or thin: the exact kernels.
    assert!(!splits(&g(256, 256, 256), H100).unwrap());
    assert!(!splits(&g(512, 512, 2048), H100).unwrap());
    assert!(!splits(&g(1024, 1024, 256), H100).unwrap());
    assert!(!splits(&g(128, 4096, 4096), H100).unwrap());
    assert!(!splits(&g(64, 64, 64).batched(4096, 4096, 4096, 4096), H100).unwrap());
    assert!(!splits(&g(16, 8192, 8192), H100).unwrap());
    assert!(!splits(&g(4096, 4096, 16), H100).unwrap());
    // An operand longer than one split launch takes (65535 blocks of 32 vectors).
    assert!(splits(&g(65535 * 32, 256, 256), H100).unwrap());
    assert!(!splits(&g(65535 * 32 + 1, 256, 256), H100).unwrap());
    assert!(!splits(&g(256, 3_000_000, 256), H100).unwrap());
    assert!(splits(&g(256, 3_000_000, 256).kernel(Kernel::Wgmma), H100).is_err());
    // Before tf32 tensor cores, never automatically; forced, an error.
    assert!(!splits(&g(2048, 2048, 2048), (7, 5)).unwrap());
    assert!(splits(&g(2048, 2048, 2048).kernel(Kernel::TensorCore), (7, 5)).is_err());
    // Forced either way.
    assert!(splits(&g(8, 8, 8).kernel(Kernel::Wgmma), H100).unwrap());
    assert!(!splits(&g(4096, 4096, 4096).kernel(Kernel::Simt), H100).unwrap());
    // alpha 0 or k 0: A and B are not read.
    assert!(!splits(&g(4096, 4096, 4096).alpha(0.0), H100).unwrap());
    assert!(!splits(&g(4096, 4096, 0).kernel(Kernel::TensorCore), H100).unwrap());
}

#[test]
fn the_product_over_the_copies_is_k_contiguous_tf32() {
    // Column-major: TN; row-major: NT; k tripled, rows of 3k rounded to 16 bytes.
    let col = inner(&g(100, 60, 33), packed_strides(&g(100, 60, 33)));
    assert_eq!(
        (col.trans_a, col.trans_b, col.k, col.math),
        (Transpose::T, Transpose::N, 99, MathMode::Tf32)
    );
    assert_eq!(col.ld, [Some(100), Some(100), None]);
    assert_eq!(packed_lens(&g(100, 60, 33)), [100 * 100, 60 * 100]);
    let row = g(100, 60, 33).layout(Layout::RowMajor).ld(40, 70, 61);
    let r = inner(&row, packed_strides(&row));
    assert_eq!(
        (r.trans_a, r.trans_b, r.ld),
        (Transpose::N, Transpose::T, [Some(100), Some(100), Some(61)])
    );
    // Batches: a copy per matrix, one where the batch shares the operand.
    let b = g(64, 32, 16).batched(5, 0, 16 * 32, 64 * 32);
    assert_eq!(packed_strides(&b), [0, 32 * 48]);
    assert_eq!(packed_lens(&b), [64 * 48, 32 * 48 * 5]);
    assert_eq!(inner(&b, packed_strides(&b)).strides, [0, 32 * 48, 64 * 32]);
    // The plan of the product over the copies checks out against their lengths.
    let [la, lb] = packed_lens(&b);
    inner(&b, packed_strides(&b)).plan([la, lb, 64 * 32 * 5], None).unwrap();
}

#[test]
fn the_promoted_wide_tile_where_its_rounds_are_full() {
    // 132 multiprocessors: 128 x 192 where it fills its rounds, 128 x 128 where 128 x 192's last
    // round would be a third full (2048^2: 176 tiles against 256).
    for (dims, broad) in [
        ((2048, 2048), false),
        ((1536, 1536), true),
        ((4096, 4096), true),
        ((8192, 8192), true),
        ((3000, 5000), true),
        ((321, 12345), true),
    ] {
        assert_eq!(broad_over_large(dims, 1, 132), broad, "{dims:?}");
    }
}
