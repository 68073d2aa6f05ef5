//! Which f16 / bf16 GEMMs the sm_90 decode-step kernel takes (no GPU: the router's arithmetic).

use super::*;
use crate::blas::gemm::skinny90::route;

/// The kernel `g` routes to with A, B, C at 256-byte aligned addresses (plus `offsets` elements)
/// on 132 multiprocessors of compute capability `cc` with an H100's memory (3.35 TB/s).
fn routed<T: GemmType>(g: &Gemm<T::Scalar>, offsets: [u64; 3], cc: (u32, u32)) -> Option<String> {
    routed_on::<T>(g, offsets, cc, 3.35e12)
}

/// [`routed`] on memory of `bandwidth` bytes per second.
fn routed_on<T: GemmType>(g: &Gemm<T::Scalar>, offsets: [u64; 3], cc: (u32, u32), bandwidth: f64) -> Option<String> {
    let plan = g.plan([1 << 28; 3], None).expect("plan");
    let [a, b, c] = offsets.map(|o| 0x1000_0000 + o * std::mem::size_of::<T>() as u64);
    route::<T, T::Scalar>(g, &plan, &g.params(&plan, [a, b, c], 0), 132, cc, Some(bandwidth)).map(|r| r.name())
}

#[test]
fn on_fast_memory_it_takes_whole_products_from_12_mib() {
    use Transpose::{N, T};
    let on = |g: &Gemm<f32>, bw| routed_on::<half::f16>(g, [0; 3], (9, 0), bw).is_some();
    let h200 = 4.8e12;
    // 6144 x 4096 (48 MiB), 2048 x 4096 (16 MiB), a batch of four 4096 x 4096: taken on an
    // H200's memory, left to the tiles on an H100's (and where the driver reports none).
    for g in [
        Gemm::new(T, N, 6144, 16, 4096),
        Gemm::new(T, N, 12288, 16, 4096),
        Gemm::new(T, N, 4096, 16, 4096).batched(4, 4096 * 4096, 16 * 4096, 4096 * 16),
    ] {
        assert!(on(&g, h200));
        assert!(!on(&g, 3.35e12));
    }
    assert!(on(&Gemm::new(T, N, 2048, 16, 4096), h200));
    // Weights the L2 keeps between calls (8 MiB, 4.5 MiB): the thin tiles.
    assert!(!on(&Gemm::new(T, N, 1024, 16, 4096), h200));
    assert!(!on(&Gemm::new(T, N, 1536, 16, 1536), h200));
    // The short side as C's rows: taken on either.
    assert!(on(&Gemm::new(T, N, 16, 1024, 4096), h200));
    let plan_none = Gemm::<f32>::new(T, N, 12288, 16, 4096);
    let plan = plan_none.plan([1 << 28; 3], None).expect("plan");
    let params = plan_none.params(&plan, [0x1000_0000; 3], 0);
    assert!(route::<half::f16, f32>(&plan_none, &plan, &params, 132, (9, 0), None).is_none());
    // The self-test's products take it on both memories.
    for (m, n, k, pads) in [
        (1600, 9, 4100, [4, 4, 3]),
        (12, 3000, 776, [0; 3]),
        (12, 6144, 1000, [0, 0, 5]),
    ] {
        let g = Gemm::<f32>::new(T, N, m, n, k).ld(k + pads[0], k + pads[1], m + pads[2]);
        assert!(on(&g, h200) && on(&g, 3.35e12), "{m}x{n}x{k}");
    }
}

#[test]
fn decode_steps_of_16_bit_types_take_it_on_sm_90() {
    use Transpose::{N, T};
    let sm90 = (9, 0);
    let tn = Gemm::<f32>::new(T, N, 4096, 16, 4096);
    assert_eq!(
        routed::<half::f16>(&tn, [0; 3], sm90).as_deref(),
        Some("gemm_skinny90_f16_k256")
    );
    assert_eq!(
        routed::<half::bf16>(&tn, [0; 3], sm90).as_deref(),
        Some("gemm_skinny90_bf16_k256")
    );
    // The short side as C's rows, row-major x W^T (k split through partial products on the
    // thin tiles otherwise).
    assert!(routed::<half::f16>(&Gemm::new(T, N, 16, 4096, 4096), [0; 3], sm90).is_some());
    let row = Gemm::<f32>::new(N, T, 16, 4096, 4096).layout(Layout::RowMajor);
    assert!(routed::<half::f16>(&row, [0; 3], sm90).is_some());
    // Large weights (172 MiB) with k not a multiple of 8 (the TMA zero-fills past k) on
    // leading dimensions of whole vectors, and a batch of them.
    let odd_k = Gemm::<f32>::new(T, N, 22016, 16, 4093).ld(4096, 4096, 22016);
    assert!(routed::<half::bf16>(&odd_k, [0; 3], sm90).is_some());
    let batch = Gemm::<f32>::new(T, N, 22016, 16, 4096).batched(2, 22016 * 4096, 16 * 4096, 22016 * 16);
    assert!(routed::<half::f16>(&batch, [0; 3], sm90).is_some());
    // The same with one weight matrix shared by the batch: the tiles (not yet run on a GPU).
    let shared = Gemm::<f32>::new(T, N, 22016, 16, 4096).batched(2, 0, 16 * 4096, 22016 * 16);
    assert!(routed::<half::f16>(&shared, [0; 3], sm90).is_none());
    // The short side as C's rows, whatever the weights (down to 2^21 elements).
    assert!(routed::<half::f16>(&Gemm::new(T, N, 16, 11008, 4096), [0; 3], sm90).is_some());
    assert!(routed::<half::f16>(&Gemm::new(T, N, 9, 2100, 1030).ld(1032, 1032, 12), [0; 3], sm90).is_some());
    // One matrix the thin tiles would split (few tiles, long k).
    assert!(routed::<half::f16>(&Gemm::new(T, N, 1000, 9, 4100).ld(4104, 4104, 1003), [0; 3], sm90).is_some());
}

#[test]
fn other_gemms_stay_on_the_tiles() {
    use Transpose::{N, T};
    let sm90 = (9, 0);
    let tn = Gemm::<f32>::new(T, N, 4096, 16, 4096);
    let none = |g: &Gemm<f32>, offsets, cc| routed::<half::f16>(g, offsets, cc).is_none();
    // Before sm_90 (no TMA), f32 and f64 (their own kernels).
    assert!(none(&tn, [0; 3], (8, 0)));
    assert!(routed::<f32>(&tn, [0; 3], sm90).is_none());
    assert!(routed::<f64>(&Gemm::new(T, N, 4096, 16, 4096), [0; 3], sm90).is_none());
    // An operand not k-contiguous, a short side of 17, small weights (1024 x 1024), weights
    // the thin tiles run whole and faster on the H100 (6144 x 4096, 12288 x 4096).
    assert!(none(&Gemm::new(N, N, 4096, 16, 4096), [0; 3], sm90));
    assert!(none(&Gemm::new(T, N, 4096, 17, 4096), [0; 3], sm90));
    assert!(none(&Gemm::new(T, N, 1024, 16, 1024), [0; 3], sm90));
    assert!(none(&Gemm::new(T, N, 6144, 16, 4096), [0; 3], sm90));
    assert!(none(&Gemm::new(T, N, 12288, 16, 4096), [0; 3], sm90));
    assert!(none(&Gemm::new(T, N, 768, 16, 3072), [0; 3], sm90));
    // A batch of four 4096 x 16 x 4096 (128 MiB of weights; -3.5% on the H100).
    assert!(none(&tn.batched(4, 4096 * 4096, 16 * 4096, 4096 * 16), [0; 3], sm90));
    assert!(!none(&Gemm::new(T, N, 22016, 16, 4096), [0; 3], sm90));
    assert!(!none(&Gemm::new(T, N, 8192, 16, 28672), [0; 3], sm90));
    // Rows not whole 16-byte vectors apart (tight odd k), an operand one element in.
    assert!(none(&Gemm::new(T, N, 4096, 16, 4095), [0; 3], sm90));
    assert!(none(&tn, [1, 0, 0], sm90));
    assert!(none(&tn, [0, 1, 0], sm90));
    // C anywhere: element stores.
    assert!(!none(&tn, [0, 0, 1], sm90));
    // Forced knobs, alpha 0 (nothing to read).
    assert!(none(&tn.kernel(Kernel::MmaSync), [0; 3], sm90));
    assert!(none(&tn.tile(Tile::Thin), [0; 3], sm90));
    assert!(none(&tn.alpha(0.0), [0; 3], sm90));
}

#[test]
fn tf32_decode_steps_take_it_on_fast_memory_only() {
    use Transpose::{N, T};
    let tf32 = |m, n, k| Gemm::<f32>::new(T, N, m, n, k).math(MathMode::Tf32);
    let on = |g: &Gemm<f32>, bw| routed_on::<f32>(g, [0; 3], (9, 0), bw);
    let (h200, h100) = (4.8e12, 3.35e12);
    assert_eq!(
        on(&tf32(6144, 16, 4096), h200).as_deref(),
        Some("gemm_skinny90_tf32_k128")
    );
    assert!(on(&tf32(16, 4096, 4096), h200).is_some());
    // The short side as C's columns on the H100's memory (its A/B is still to run); C's rows
    // take it there too, as for f16 and bf16.
    assert!(on(&tf32(6144, 16, 4096), h100).is_none());
    assert!(on(&tf32(12, 3000, 776), h100).is_some());
    // Exact f32 (its own kernels), rows not whole 16-byte vectors apart, sm_80.
    assert!(on(&Gemm::new(T, N, 6144, 16, 4096), h200).is_none());
    assert!(on(&tf32(6144, 16, 4097), h200).is_none());
    assert!(routed_on::<f32>(&tf32(6144, 16, 4096), [0; 3], (8, 0), h200).is_none());
    // Weights the L2 holds (1024 x 1024 x 4 bytes).
    assert!(on(&tf32(1024, 16, 1024), h200).is_none());
}
