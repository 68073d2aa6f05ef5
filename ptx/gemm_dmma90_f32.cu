// cudrv module `gemm_dmma90_f32`: f32 GEMM on the f64 tensor cores (sm_90 and later): the
// gemm_dmma90 kernels (ptx/gemm_dmma90.cuh) on f32 operands and an f32 D. Each operand element is
// copied into shared memory as f32 and converted, exactly, to f64 as its fragment is read; the
// products are exact and summed in f64 by mma.sync m16n8k4 / m16n8k8 .f64; the epilogue computes
// alpha * sum + beta * D + bias (and the activation) in f64 and rounds to f32 once. The result is
// at least as accurate as f32 arithmetic (cuBLAS's CUBLAS_COMPUTE_32F) on every input, inf and NaN
// as in f32 (a sum that overflows f32 only in an intermediate step stays finite).
//
// Why: on Hopper (H100, H200) the f64 tensor cores run 2 m n k at about the f32 CUDA cores' peak,
// but one DMMA replaces 256-512 FFMAs of issue slots, which the CUDA-core kernels need for their
// shared-memory reads and address arithmetic (docs/kernels/gemm-dmma.md, "f32 on the f64 tensor
// cores"). Only on devices whose f64 units run at half the f32 rate or better (the host checks
// the device's single-to-double performance ratio); elsewhere f32 stays on the CUDA cores.
//
// Kernel names: gemm_dmma90_f32_<tile>_<opA><opB>, the tiles of gemm_dmma90.cu (l, m, p, s, q,
// u, s2, u2, q2, k, t, h) with the same threads, BK and stages, and <tile>u variants that copy 4 bytes
// at a time (operands aligned only to their element, any leading dimension and batch stride).
// Launch contract: gemm_dmma90.cu's, with f32 x, y, d and bias; x, y 16-byte aligned and ldx,
// ldy (sx, sy for batches) multiples of 4 except for the <tile>u variants. Dynamic shared memory:
// the larger of STAGES * 4 * (slot(BM) + slot(BN)) with slot(rows) = max(rows * (BK + 4), BK *
// (rows + 8)), and the f64 C tile BM * (BN + 8) * 8 bytes (src/blas/gemm/dmma90.rs).
// Bank layout of the 4-byte fragment reads (a half-warp's g = 0..7, t = 0..3): g * (BK + 4) + t
// with BK + 4 = 4 (mod 32) for k-contiguous tiles, t * (rows + 8) + g with rows + 8 = 8 or 24
// (mod 32) otherwise: 32 distinct banks either way.

#include "gemm_dmma90.cuh"

// Each tile with 16-byte copies and its element variant (the letter with a `u`).
#define GEMM_DMMA90F_TILE(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, ROT)                           \
    GEMM_DMMA90_OPS_T(gemm_dmma90_f32_, float, TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, 4, ROT)   \
    GEMM_DMMA90_OPS_T(gemm_dmma90_f32_, float, TILE##u, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, 1, ROT)

//                tile  BM   BN  WM WN  BK ST KS SPLIT MINB ROT
GEMM_DMMA90F_TILE(l, 128, 128, 2, 4, 16, 4, 4, 1, 1, false)
GEMM_DMMA90F_TILE(m, 128, 64, 4, 2, 16, 4, 8, 1, 1, false)
GEMM_DMMA90F_TILE(s, 64, 64, 2, 2, 16, 3, 8, 1, 2, false)
GEMM_DMMA90F_TILE(u, 32, 32, 2, 2, 16, 4, 8, 1, 1, false)
GEMM_DMMA90F_TILE(s2, 64, 64, 2, 2, 16, 3, 8, 2, 2, false)
GEMM_DMMA90F_TILE(u2, 32, 32, 2, 2, 16, 4, 8, 2, 1, false)
GEMM_DMMA90F_TILE(k, 128, 64, 4, 2, 16, 4, 8, 0, 1, false)
GEMM_DMMA90F_TILE(t, 16, 64, 1, 4, 32, 4, 8, 1, 2, false)
GEMM_DMMA90F_TILE(h, 64, 16, 4, 1, 32, 4, 8, 1, 2, false)
GEMM_DMMA90F_TILE(p, 128, 64, 2, 2, 16, 3, 8, 1, 2, true)
GEMM_DMMA90F_TILE(q, 64, 64, 2, 2, 16, 3, 8, 1, 3, true)
GEMM_DMMA90F_TILE(q2, 64, 64, 2, 2, 16, 3, 8, 2, 3, true)
