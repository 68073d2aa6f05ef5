//! Where the fill arm of the f64 `s2` rule asks for the pairs' model's twentieth: operands whose
//! rows are all 32 bytes apart take `s` unsplit where the model puts the split under 5% ahead;
//! row strides 16 bytes off the sector, exact f32 and the element variants keep the split
//! (H100, 2026-12-07; docs/kernels/gemm-dmma.md).

use super::*;

/// The kernel the automatic choice runs for `m x n x k` in `T` on an H100 with B `b_offset`
/// bytes into its buffer and tight leading dimensions.
fn kernel<T: GemmType + Copy + From<u8> + Into<f64>>(
    ops: (Transpose, Transpose),
    (m, n, k): (usize, usize, usize),
    b_offset: u64,
) -> String {
    choose_on_h100(&Gemm::<T>::new(ops.0, ops.1, m, n, k), b_offset, true).name
}

#[test]
fn s2_fill_arm_needs_the_model_on_sector_rows() {
    let (nn, tn, nt) = (
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
    );
    // llama2-7b 12288 x 128 x 4096: the model puts s2 4% ahead; s ran 3-5% faster.
    assert_eq!(kernel::<f64>(tn, (12288, 128, 4096), 0), "gemm_dmma90_f64_s_tn");
    assert_eq!(kernel::<f64>(nn, (12288, 128, 4096), 0), "gemm_dmma90_f64_s_nn");
    assert_eq!(kernel::<f64>(nt, (12288, 128, 4096), 0), "gemm_dmma90_f64_s_nt");
    // k = 4098: rows of 8 k bytes = 16 (mod 32), the split stays.
    assert_eq!(kernel::<f64>(tn, (12288, 128, 4098), 0), "gemm_dmma90_f64_s2_tn");
    // Exact f32 on the same tiles keeps the split (not measured against s there).
    assert_eq!(kernel::<f32>(tn, (12288, 128, 4096), 0), "gemm_dmma90_f32_s2_tn");
    // B one element into its buffer: the element variant, which keeps the split.
    assert_eq!(kernel::<f64>(tn, (12288, 128, 4096), 8), "gemm_dmma90_f64_s2u_tn");
    // Where the model puts the split a twentieth ahead or more, it stays: 1536^3 (0.89),
    // 768 x 1024 x 3072 (0.79), 4096 x 128 x 4096.
    for dims in [(1536, 1536, 1536), (768, 1024, 3072), (4096, 128, 4096)] {
        assert_eq!(kernel::<f64>(tn, dims, 0), "gemm_dmma90_f64_s2_tn", "{dims:?}");
    }
}
