//! The aligned copies of unaligned operands: their storage, padding and strides.

use super::*;
use crate::blas::gemm::dispatch::choose_on;
use crate::blas::gemm::operand_copies::{aligned_params, operand_storage};
use crate::blas::gemm::params::GemmParams;

/// The kernels' form of `g` on buffers of the given lengths, A at address `a`, B at `b`.
fn params(g: &Gemm<f32>, lens: [usize; 3], a: u64, b: u64) -> (Plan, GemmParams) {
    let plan = g.plan(lens, None).unwrap();
    let p = g.params(&plan, [a, b, 0], 0);
    (plan, p)
}

/// The choice for `g` in element type `T` on an H100 (compute capability 9.0, 132
/// multiprocessors), A at address `a`, B at `b`, on buffers long enough for every problem here.
fn h100_choice<T: GemmType>(g: &Gemm<f32>, a: u64, b: u64) -> Choice {
    let (plan, p) = params(g, [1 << 30; 3], a, b);
    choose_on::<T, f32>(g, &plan, &p, (9, 0), 132, false).expect("choice")
}

#[test]
fn storage_follows_the_operands_contiguous_side() {
    // Column-major problems in the kernels' row-major form D = C^T = op(B)^T op(A)^T.
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
    ] {
        let g = Gemm::<f32>::new(ta, tb, 5, 7, 3);
        let (plan, p) = params(&g, [64, 64, 64], 0, 0);
        let [(xr, xc), (yr, yc)] = operand_storage(&plan, &p);
        // Each operand's rows x cols covers its m x k (or n x k) extent exactly once.
        assert_eq!(xr * xc, p.m * p.k, "{ta:?}{tb:?}");
        assert_eq!(yr * yc, p.n * p.k, "{ta:?}{tb:?}");
        // Its contiguous side fits its leading dimension.
        assert!(
            xc <= p.ldx && yc <= p.ldy,
            "{ta:?}{tb:?}: {xc} <= {}, {yc} <= {}",
            p.ldx,
            p.ldy
        );
    }
}

#[test]
fn copies_are_tight_padded_to_whole_vectors_or_lines_and_keep_shared_operands_shared() {
    // 4095 x 4097 x 1023 f16 (8 elements per 16 bytes), batch 3, B shared (stride 0).
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4095, 4097, 1023).batched(3, 4095 * 1023, 0, 4095 * 4097);
    let (plan, p) = params(&g, [3 * 4095 * 1023, 1023 * 4097, 3 * 4095 * 4097], 2, 6);
    let q = aligned_params(&plan, &p, [true, true], 8);
    let [(xr, xc), (yr, yc)] = operand_storage(&plan, &p);
    assert_eq!((q.x, q.y), (0, 0));
    // Rows of 1 KiB or more are padded to whole 128-byte lines, shorter ones to 16 bytes.
    let line = |c: i64| {
        if c * 2 >= 1024 {
            (c + 63) / 64 * 64
        } else {
            (c + 7) / 8 * 8
        }
    };
    assert_eq!(q.ldx, line(xc));
    assert_eq!(q.ldy, line(yc));
    // X is B (k-contiguous, 4097 x 1023), Y is A (m-contiguous, 1023 x 4095).
    assert_eq!((xc, yc), (1023, 4095));
    assert_eq!((q.ldx, q.ldy), (1024, 4096));
    // X (from B) is shared by the batch: one copy; Y (from A) gets back-to-back copies.
    assert_eq!(q.sx, if p.sx == 0 { 0 } else { xr * q.ldx });
    assert_eq!(q.sy, if p.sy == 0 { 0 } else { yr * q.ldy });
    assert_eq!((p.sx, p.sy), (0, 4095 * 1023));
    // Unmarked operands and everything else stay as they were.
    let r = aligned_params(&plan, &p, [false, true], 8);
    assert_eq!((r.x, r.ldx, r.sx), (p.x, p.ldx, p.sx));
    assert_eq!((r.m, r.n, r.k, r.ldd, r.sd), (p.m, p.n, p.k, p.ldd, p.sd));
}

/// f32 on the CUDA cores copies unaligned operands first where the copy pays (1 / m + 1 / n <=
/// 1 / 1024) and the aligned problem runs w or x; the kernel for the operands as they are is
/// its fallback. Below that, or with a knob forced, the unaligned kernel runs with no copy.
#[test]
fn f32_copies_unaligned_operands_for_w_where_that_pays() {
    let choice = h100_choice::<f32>;
    let (n, t) = (Transpose::N, Transpose::T);
    // 4095 x 4097 x 1023, both operands unaligned: both copied, w; l if there is no memory.
    let c = choice(&Gemm::new(n, n, 4095, 4097, 1023), 0, 0);
    assert_eq!((c.name.as_str(), c.align), ("gemm_simt_f32_w_nn", [true, true]));
    assert_eq!(c.fallback.as_ref().map(|f| f.name.as_str()), Some("gemm_simt_f32_l_nn"));
    assert_eq!(c.reported_name::<f32>(), "gemm_pack_b32+gemm_simt_f32_w_nn");
    // 2048 x 2048 x 2048 with lda = 2049, B aligned: only A copied (A is the kernels' Y).
    let c = choice(&Gemm::new(n, n, 2048, 2048, 2048).ld(2049, 2048, 2048), 0, 0);
    assert_eq!((c.name.as_str(), c.align), ("gemm_simt_f32_w_nn", [false, true]));
    // TN with 2048 rows of C, A one element in: A (the kernels' k-contiguous Y) is copied
    // transposed (from any layout), not also aligned; with B one element in, B (X) is aligned.
    let c = choice(&Gemm::new(t, n, 2048, 2048, 2048), 4, 0);
    assert_eq!(
        (c.name.as_str(), c.align, c.transpose_y),
        ("gemm_simt_f32_w_nn", [false, false], true)
    );
    // Its fallback is the unaligned operands' kernel, not w's for B as stored.
    let f = c.fallback.as_deref().expect("fallback");
    assert_eq!((f.name.as_str(), f.transpose_y), ("gemm_simt_f32_l_tn", false));
    let c = choice(&Gemm::new(t, n, 2048, 2048, 2048), 0, 4);
    assert_eq!(
        (c.name.as_str(), c.align, c.transpose_y),
        ("gemm_simt_f32_w_nn", [true, false], true)
    );
    // tests/gpu_blas.rs's cases: 2048 x 2048, leading dimensions one past tight.
    let c = choice(&Gemm::new(n, n, 2048, 2048, 136).ld(2049, 137, 2049), 0, 0);
    assert_eq!((c.name.as_str(), c.align), ("gemm_simt_f32_w_nn", [true, true]));
    let c = choice(&Gemm::new(t, t, 2048, 2048, 40).ld(41, 2049, 2049), 0, 0);
    assert_eq!(
        (c.name.as_str(), c.align, c.transpose_y),
        ("gemm_simt_f32_x_nt", [true, false], true)
    );
    // 2053 x 67: the copies would cost more than w gains.
    let c = choice(&Gemm::new(n, n, 2053, 67, 1999), 0, 0);
    assert!(c.fallback.is_none() && c.align == [false, false], "{c:?}");
    // A forced tile keeps the unaligned kernel.
    let c = choice(&Gemm::new(n, n, 4095, 4097, 1023).tile(Tile::Large), 0, 0);
    assert_eq!((c.name.as_str(), c.align), ("gemm_simt_f32_l_nn", [false, false]));
}

/// The tensor-core types' copies (aligned copies, tf32's packs) give way to the CUDA-core
/// kernels on the operands as they are when there is no memory for them: the automatic kernel
/// only (tests/gpu_blas.rs runs these two under a full pool).
#[test]
fn tensor_core_copies_fall_back_to_the_cuda_cores() {
    let (n, t) = (Transpose::N, Transpose::T);
    // f16 2049 x 64 x 2800, lda 2049: A (the kernels' Y) copied aligned.
    let g = Gemm::<f32>::new(n, n, 2049, 64, 2800);
    let c = h100_choice::<half::f16>(&g, 0, 0);
    assert_eq!(c.align, [false, true], "{c:?}");
    let f = c.fallback.as_deref().expect("fallback");
    assert_eq!(
        (f.name.as_str(), f.align, f.pack),
        ("gemm_simt_f16_s_nn", [false; 2], [false; 2])
    );
    // tf32 NT 64 x 1024 x 2800: B packed k-contiguous for wgmma; the fallback is exact f32.
    let g = Gemm::<f32>::new(n, t, 64, 1024, 2800).math(MathMode::Tf32);
    let c = h100_choice::<f32>(&g, 0, 0);
    assert!(c.pack.iter().any(|&p| p) && c.name.starts_with("gemm_wg_"), "{c:?}");
    let f = c.fallback.as_deref().expect("fallback");
    assert!(f.name.starts_with("gemm_simt_f32_") && f.pack == [false; 2], "{f:?}");
    // Forced onto the tensor cores: no fallback (the allocation's error is the answer).
    let c = h100_choice::<f32>(&g.kernel(Kernel::TensorCore), 0, 0);
    assert!(c.fallback.is_none(), "{c:?}");
}

/// tf32 on wgmma reads its register-fed operand (the m-contiguous one: A of NN, B of TT and NT)
/// in place where its rows are not 16 bytes apart and D is at most 2048 wide, and copies only
/// the other one; not on the 128 x 128 tile, nor with an activation (the twin kernels read
/// through the TMA only).
#[test]
fn tf32_reads_the_register_operand_in_place() {
    let choice = h100_choice::<f32>;
    let (n, t) = (Transpose::N, Transpose::T);
    // NN 2053 x 67 x 1999: A (m-contiguous, lda 2053) in place, B (ldb 1999) copied.
    let c = choice(&Gemm::new(n, n, 2053, 67, 1999).math(MathMode::Tf32), 0, 0);
    assert!(c.x_in_place && c.swap && c.align == [true, false], "{c:?}");
    assert!(
        c.reported_name::<f32>().starts_with("gemm_pack_b32+gemm_wg_tf32_"),
        "{c:?}"
    );
    let name = c.reported_name::<f32>();
    assert!(name.contains("_nn") && name.ends_with("/x-in-place"), "{name}");
    // lda 2056 with A one element in: the start is off 16 bytes, read in place too.
    let c = choice(
        &Gemm::new(n, n, 2053, 64, 2048)
            .ld(2056, 2048, 2053)
            .math(MathMode::Tf32),
        4,
        0,
    );
    assert!(c.x_in_place && c.align == [false, false], "{c:?}");
    // TT with ldb odd: B is X, in place; A (k-contiguous Y, lda 1999) copied.
    let c = choice(&Gemm::new(t, t, 67, 2053, 1999).math(MathMode::Tf32), 0, 0);
    assert!(c.x_in_place && !c.swap && c.align == [false, true], "{c:?}");
    // NT: B in place, A packed k-contiguous.
    let c = choice(&Gemm::new(n, t, 64, 2053, 1999).math(MathMode::Tf32), 0, 0);
    assert!(
        c.x_in_place && c.pack == [false, true] && c.align == [false, false],
        "{c:?}"
    );
    // D wider than 2048 (the kernels' n): A copied, as before; TT 12345 x 321 (X = B, D 12345
    // wide) likewise.
    let c = choice(&Gemm::new(n, n, 4095, 4097, 1023).math(MathMode::Tf32), 0, 0);
    assert!(!c.x_in_place && c.align == [true, true], "{c:?}");
    let c = choice(&Gemm::new(t, t, 12345, 321, 4567).math(MathMode::Tf32), 0, 0);
    assert!(!c.x_in_place && c.align == [true, true], "{c:?}");
    let c = choice(&Gemm::new(n, n, 12345, 321, 4567).math(MathMode::Tf32), 0, 0);
    assert!(c.x_in_place && c.align == [true, false], "{c:?}");
    // NT 2053 x 67: B (67 rows) is the one packed k-contiguous, the swapped kernel takes A into
    // registers, in place.
    let c = choice(&Gemm::new(n, t, 2053, 67, 1999).math(MathMode::Tf32), 0, 0);
    assert!(c.x_in_place && c.swap && c.pack == [true, false], "{c:?}");
    assert!(c.name.ends_with("_nn") && c.align == [false, false], "{c:?}");
    // Aligned operands: nothing to read in place.
    let c = choice(&Gemm::new(n, n, 2048, 64, 2048).math(MathMode::Tf32), 0, 0);
    assert!(!c.x_in_place && c.align == [false, false], "{c:?}");
    // The 128 x 128 tile and activations copy, as before.
    let g = Gemm::new(n, n, 2053, 2053, 1999).math(MathMode::Tf32).tile(Tile::Large);
    let c = choice(&g, 0, 0);
    assert!(!c.x_in_place && c.align == [true, true], "{c:?}");
    let g = Gemm::new(n, n, 2053, 67, 1999)
        .math(MathMode::Tf32)
        .activation(crate::blas::Activation::Relu);
    let c = choice(&g, 0, 0);
    assert!(!c.x_in_place, "{c:?}");
    // f16 (SS kernels) is not read in place.
    let c = h100_choice::<half::f16>(&Gemm::new(n, n, 2053, 67, 1999), 0, 0);
    assert!(!c.x_in_place, "{c:?}");
}

/// tf32 batches at k <= 128, where the automatic choice keeps the 128 x 128 tile: with an
/// unaligned X that tile copies X first, so a wide tile (128 x 192 or 128 x 256) reads it in
/// place instead; aligned operands, long k and a forced tile keep 128 x 128.
#[test]
fn tf32_short_k_batches_read_an_unaligned_x_in_place_on_a_wide_tile() {
    let choice = h100_choice::<f32>;
    let (n, t) = (Transpose::N, Transpose::T);
    let batched = |ta, tb, (m, nn, k): (usize, usize, usize), batch| {
        let (lda, ldb) = (if ta == n { m } else { k }, if tb == n { k } else { nn });
        Gemm::new(ta, tb, m, nn, k)
            .batched(
                batch,
                lda * if ta == n { k } else { m },
                ldb * if tb == n { nn } else { k },
                m * nn,
            )
            .math(MathMode::Tf32)
    };
    // NN 226 x 110 x 110 x 256 (lda 226: A's rows 904 bytes apart): in place on a wide tile.
    let c = choice(&batched(n, n, (226, 110, 110), 256), 0, 0);
    assert!(
        c.x_in_place && c.swap && matches!(c.tile, (128, 192) | (128, 256)),
        "{c:?}"
    );
    assert!(c.align == [true, false] && c.split_k.is_none(), "{c:?}");
    // TT 294 x 187 x 36 x 128: X is B, its rows 748 bytes apart (ldb 187), read in place on a
    // wide tile.
    let g = Gemm::new(t, t, 294, 187, 36)
        .ld(36, 187, 294)
        .batched(128, 36 * 294, 187 * 36, 294 * 187)
        .math(MathMode::Tf32);
    let c = choice(&g, 0, 0);
    assert!(c.x_in_place && !c.swap && c.tile.1 >= 192, "{c:?}");
    // Aligned operands keep 128 x 128 at short k.
    let c = choice(&batched(n, n, (224, 112, 112), 256), 0, 0);
    assert!(!c.x_in_place && c.tile == (128, 128), "{c:?}");
    // Past k = 128 the automatic tile is chosen as before (the wide tiles, in place).
    let c = choice(&batched(n, n, (226, 110, 300), 256), 0, 0);
    assert!(c.tile != (128, 128), "{c:?}");
    // A forced 128 x 128 tile still copies.
    let c = choice(&batched(n, n, (226, 110, 110), 256).tile(Tile::Large), 0, 0);
    assert!(
        !c.x_in_place && c.tile == (128, 128) && c.align == [true, true],
        "{c:?}"
    );
}

/// tf32 NT batches run on wgmma: one operand packed k-contiguous per matrix (the mma.sync
/// kernels ran them at 0.31-0.45x cuBLAS on an H200), and the other read in place where its
/// rows are not 16 bytes apart.
#[test]
fn tf32_nt_batches_pack_each_matrix_for_wgmma() {
    let (n, t) = (Transpose::N, Transpose::T);
    for (m, nn, k, batch) in [(226, 110, 110, 256), (81, 61, 154, 512), (64, 64, 64, 8)] {
        let g = Gemm::new(n, t, m, nn, k)
            .batched(batch, m * k, nn * k, m * nn)
            .math(MathMode::Tf32);
        let c = h100_choice::<f32>(&g, 0, 0);
        assert!(c.name.starts_with("gemm_wg_tf32_"), "{m}x{nn}x{k}: {c:?}");
        assert!(c.pack.iter().filter(|&&p| p).count() == 1, "{c:?}");
    }
}
