#pragma once
// ptx/gemm_wg_kernels.cuh: the entry points of the wgmma GEMM modules (gemm_wg_<type>, and the
// activation twins gemm_wg_<act>_<type>): one `extern "C"` kernel per tile, op combination and
// activation, each an instance of the template in ptx/gemm_wg.cuh (the launch contract is there),
// and the sets of them each module holds.

#include "gemm_wg.cuh"

// ACT: ACT_NONE for the kernels of gemm_wg_<type>, which take an activation through the rolled
// epilogue only; an activation for those of gemm_wg_<act>_<type>, whose TMA epilogue applies it
// (any other activation takes the rolled epilogue there too).
// BM 64: one consumer warpgroup, block (256, 1, 1); the launch bound stays 384 so that every
// tile gets the same register budget (setmaxnreg below assumes it).
#define GEMM_WG_KERNEL_BM(NAME, T, BM, BN, STAGES, XK, YK, DT, ACT)                                           \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                         \
        NAME(const __grid_constant__ TensorMap tx, const __grid_constant__ TensorMap ty,                       \
             const __grid_constant__ TensorMap td, const GemmParams p, int flags, const WgSplit sp) {          \
        gemm_wg<T, BM, BN, STAGES, XK, YK, DT, ACT>(&tx, &ty, &td, p, flags, sp);                               \
    }
#define GEMM_WG_KERNEL(NAME, T, BN, STAGES, XK, YK, DT, ACT) GEMM_WG_KERNEL_BM(NAME, T, 128, BN, STAGES, XK, YK, DT, ACT)

// The tf32 kernels over split f32 operands (MathMode::Tf32x3): tn only (the split writes both
// operands k-contiguous), accumulators promoted every PROMOTE k-tiles (gemm_wg above). Their
// second accumulator set leaves the 128 x 256 tile without registers: 128 x 192 and smaller.
#define GEMM_WG_KERNEL_PROMOTED(NAME, BM, BN, STAGES, PROMOTE)                                                 \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                         \
        NAME(const __grid_constant__ TensorMap tx, const __grid_constant__ TensorMap ty,                       \
             const __grid_constant__ TensorMap td, const GemmParams p, int flags, const WgSplit sp) {          \
        gemm_wg<float, BM, BN, STAGES, true, true, false, ACT_NONE, PROMOTE>(&tx, &ty, &td, p, flags, sp);      \
    }

// One tile L (BM x BN, STAGES) of a 16-bit type in every op combination: P_L_<ops>.
#define GEMM_WG_TILE_OPS(P, L, T, BM, BN, STAGES, ACT)                                \
    GEMM_WG_KERNEL_BM(P##_##L##_nn, T, BM, BN, STAGES, true, false, false, ACT)      \
    GEMM_WG_KERNEL_BM(P##_##L##_nt, T, BM, BN, STAGES, false, false, false, ACT)     \
    GEMM_WG_KERNEL_BM(P##_##L##_tn, T, BM, BN, STAGES, true, true, false, ACT)       \
    GEMM_WG_KERNEL_BM(P##_##L##_tt, T, BM, BN, STAGES, false, true, false, ACT)

// The kernels of a 16-bit type, every op combination and tile: P_<tile>_<ops>.
#define GEMM_WG_OPS(P, T, ACT)                         \
    GEMM_WG_TILE_OPS(P, w, T, 128, 256, 4, ACT)        \
    GEMM_WG_TILE_OPS(P, l, T, 128, 128, 6, ACT)        \
    GEMM_WG_TILE_OPS(P, n, T, 128, 64, 8, ACT)

// The 128 x 192 tile of a 16-bit type, every op combination: P_b_<ops>. Only the plain modules
// (gemm_wg_<type>) hold it; with an activation it applies it in the rolled epilogue. 4 stages of
// (128 + 192) x 128 bytes; it does not split k (the split code is for BN <= 128).
#define GEMM_WG_OPS_BROAD(P, T) GEMM_WG_TILE_OPS(P, b, T, 128, 192, 4, ACT_NONE)

// The tf32 kernels: P_<tile>_<ops>.
//   tn: both operands k-contiguous, both read by wgmma from shared memory.
//   tt: X m-contiguous, loaded into registers (rounded to tf32) as wgmma's A operand.
//   nn: the tt kernel on the transposed problem. The host passes X and Y swapped (the caller's
//       m-contiguous operand as X, the k-contiguous one as Y, m and n swapped) and the kernel
//       stores D transposed (D[r][c] at d[c * ldd + r]; the bias is indexed by r).
#define GEMM_WG_TF32(P, ACT)                                            \
    GEMM_WG_KERNEL(P##_w_tn, float, 256, 4, true, true, false, ACT)     \
    GEMM_WG_KERNEL(P##_l_tn, float, 128, 6, true, true, false, ACT)     \
    GEMM_WG_KERNEL(P##_n_tn, float, 64, 8, true, true, false, ACT)      \
    GEMM_WG_KERNEL(P##_w_tt, float, 256, 4, false, true, false, ACT)    \
    GEMM_WG_KERNEL(P##_l_tt, float, 128, 6, false, true, false, ACT)    \
    GEMM_WG_KERNEL(P##_n_tt, float, 64, 8, false, true, false, ACT)     \
    GEMM_WG_KERNEL(P##_w_nn, float, 256, 4, false, true, true, ACT)     \
    GEMM_WG_KERNEL(P##_l_nn, float, 128, 6, false, true, true, ACT)     \
    GEMM_WG_KERNEL(P##_n_nn, float, 64, 8, false, true, true, ACT)

// One tf32 tile L (BM x BN, STAGES) in its op combinations tn, tt, nn (as above): P_L_<ops>.
#define GEMM_WG_TF32_TILE_OPS(P, L, BM, BN, STAGES)                                        \
    GEMM_WG_KERNEL_BM(P##_##L##_tn, float, BM, BN, STAGES, true, true, false, ACT_NONE)    \
    GEMM_WG_KERNEL_BM(P##_##L##_tt, float, BM, BN, STAGES, false, true, false, ACT_NONE)   \
    GEMM_WG_KERNEL_BM(P##_##L##_nn, float, BM, BN, STAGES, false, true, true, ACT_NONE)

// The tf32 128 x 192 tile, in gemm_wg_tf32 only.
#define GEMM_WG_TF32_BROAD(P) GEMM_WG_TF32_TILE_OPS(P, b, 128, 192, 4)

// The 64-row tiles (one consumer warpgroup, block (256, 1, 1)), in the plain modules only, for
// problems under a wave of 128-row tiles: h = 64 x 64 (12 stages), m = 64 x 96 (8 stages). They
// do not split k. P_<tile>_<ops> for a 16-bit type, every op combination.
#define GEMM_WG_OPS_HALF(P, T)                          \
    GEMM_WG_TILE_OPS(P, h, T, 64, 64, 12, ACT_NONE)     \
    GEMM_WG_TILE_OPS(P, m, T, 64, 96, 8, ACT_NONE)

// The tf32 64-row tiles, in gemm_wg_tf32 only.
#define GEMM_WG_TF32_HALF(P)                    \
    GEMM_WG_TF32_TILE_OPS(P, h, 64, 64, 12)     \
    GEMM_WG_TF32_TILE_OPS(P, m, 64, 96, 8)
