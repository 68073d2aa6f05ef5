#pragma once
// ptx/gemm_wg_kernels.cuh: the entry points of the wgmma GEMM modules (gemm_wg_<type>, and the
// activation twins gemm_wg_<act>_<type>): one `extern "C"` kernel per tile, op combination and
// activation, each an instance of the template in ptx/gemm_wg.cuh, the sets of them each module
// holds, and their launch contract.

#include "gemm_wg.cuh"

// Launch contract (the template and its ordering rules are in ptx/gemm_wg.cuh):
//   params (by value): TensorMap tx, TensorMap ty (3-D maps built by the Rust side with
//   cuTensorMapEncodeTiled: dims {inner, outer, batch}, 128-byte swizzle, boxes as in
//   ptx/gemm_wg.cuh; pairs: a k-contiguous X's box is 64 rows),
//   TensorMap td (D: dims {n, m, batch}, row stride ldd, batch stride sd, 128-byte swizzle, box
//   {128 bytes, 64 rows}; DT kernels: dims {m, n, batch}, box {32, 32}; used only when flags bit
//   0 is set: written, and read when beta != 0), GemmParams p (x, y, d,
//   bias pointers; m, n, k; ldx; ldd; sx, sy, sd; alpha, beta; act), int flags (bit 0 "dstore":
//   td is valid; bit 1 "x_in_place", the tf32 tt / nn kernels of gemm_wg_tf32 other than the
//   128 x 128 tile's only: X is read from x at ldx / sx by 4-byte copies, x 4-byte aligned, any
//   ldx and sx, and tx is unused: ptx/gemm_wg_x_in_place.cuh),
//   WgSplit sp (parts 1, or for the n and l tiles the k split: 1 <= kper, parts = ceil(ktiles /
//   kper) with ktiles = ceil(k / BK), ws holding tiles * parts * 128 * BN floats and counters
//   2 * tiles zeroed u32s, which the kernel leaves zeroed).
//   block = (128 * (1 + BM / 64), 1, 1): 384, or 256 for the 64-row tiles; grid = (g, 1, 1) for
//   any g >= 1 (the host uses min(units, SMs); units = ceil(m/BM) * ceil(n/BN) * batch * parts;
//   pairs: any even g, the host 2 * min(ceil(m/BM) * ceil(n/(2 BN)) * batch, clusters that fit));
//   dynamic shared memory = STAGES * (BM + BN') * 128 + 32768 (epilogue: four 8 KiB staging
//   boxes, or the two 9 KiB chunks) + 2048 (alignment, barriers) bytes, BN' = BN rounded up to
//   64 columns for a 16-bit n-contiguous Y: at most 231424 (w: 4 stages, b: 4 stages (198656),
//   l: 6 stages, n: 8 stages, h: 12, m: 8); the host asks 231424 for every tile. The 64-row
//   tiles do not split k (parts 1) and store 16-bit 64 x 96 tiles through the chunks (the TMA
//   stores whole boxes of 64 columns).
//   x, y 16-byte aligned, ldx, ldy, sx, sy multiples of 16 bytes (TMA rules; X in place: see
//   flags). A batch index
//   b reads tensor-map coordinate b when sx (sy) != 0, else 0 (a shared operand).
//   beta == 0: D is not read. bias == 0: no bias. act: 0 none, 1 relu, 2 gelu (erf form),
//   3 sigmoid, 4 tanh; f16 / bf16 also ACT_PARTIAL_F32 (a part of a k split through partial
//   products: D is an f32 scratch, see the epilogue; flags 0, alpha 1, beta 0, no bias).
//   m, n, k >= 1 (k == 0 and alpha == 0 go to gemm_tc).
//   The launch may overlap the stream's previous kernel (programmatic dependent launch): every
//   thread runs griddepcontrol.wait before its first access to global memory (pdl_rule in
//   ptx/gemm_wg.cuh).

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

// The pairs (`pair_rule` in ptx/gemm_wg.cuh): two blocks of a cluster share X's loads, each
// computing one of two tiles side by side; the launch's grid x is even.
#define GEMM_WG_KERNEL_PAIR(NAME, T, BN, STAGES, XK, YK)                                                        \
    extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)                               \
        NAME(const __grid_constant__ TensorMap tx, const __grid_constant__ TensorMap ty,                       \
             const __grid_constant__ TensorMap td, const GemmParams p, int flags, const WgSplit sp) {          \
        gemm_wg<T, 128, BN, STAGES, XK, YK, false, ACT_NONE, 0, 2>(&tx, &ty, &td, p, flags, sp);                \
    }

// The pairs of a 16-bit type, every op combination: P_p_<ops> (128 x 128), P_q_<ops> (128 x 64).
#define GEMM_WG_PAIR_OPS(P, T)                                    \
    GEMM_WG_KERNEL_PAIR(P##_p_nn, T, 128, 6, true, false)         \
    GEMM_WG_KERNEL_PAIR(P##_p_nt, T, 128, 6, false, false)        \
    GEMM_WG_KERNEL_PAIR(P##_p_tn, T, 128, 6, true, true)          \
    GEMM_WG_KERNEL_PAIR(P##_p_tt, T, 128, 6, false, true)         \
    GEMM_WG_KERNEL_PAIR(P##_q_nn, T, 64, 8, true, false)          \
    GEMM_WG_KERNEL_PAIR(P##_q_nt, T, 64, 8, false, false)         \
    GEMM_WG_KERNEL_PAIR(P##_q_tn, T, 64, 8, true, true)           \
    GEMM_WG_KERNEL_PAIR(P##_q_tt, T, 64, 8, false, true)

// The tf32 pairs: tn only (both operands k-contiguous through the TMA).
#define GEMM_WG_TF32_PAIR(P)                                      \
    GEMM_WG_KERNEL_PAIR(P##_p_tn, float, 128, 6, true, true)      \
    GEMM_WG_KERNEL_PAIR(P##_q_tn, float, 64, 8, true, true)

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
//   tt: X m-contiguous, loaded into registers (raw f32 bits, truncated by wgmma) as wgmma's A operand.
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

// The kernels that read X and Y in place (IP in ptx/gemm_wg.cuh; modules gemm_wgu_<type>):
// P_<tile>_<ops> for a 16-bit type, every op combination, on the tiles h = 64 x 64 (7 stages,
// 4 staging slots) and n = 128 x 64 (3, 4): the producer's staging slots take the shared memory
// of the stages they lack. Dispatch runs them for batches at short k only (`in_place_pays` in
// src/blas/gemm/wg_in_place.rs), where they were measured faster than the aligned copy; the
// 128 x 128 tile was built and dropped (no automatic choice took it). Operands aligned to their
// element only (any address, leading dimension and batch stride); tx and ty unused (pass any
// maps); no activation through the TMA.
#define GEMM_WG_KERNEL_IP(NAME, T, BM, BN, STAGES, SLOTS, XK, YK)                                                    \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                         \
        NAME(const __grid_constant__ TensorMap tx, const __grid_constant__ TensorMap ty,                       \
             const __grid_constant__ TensorMap td, const GemmParams p, int flags, const WgSplit sp) {          \
        gemm_wg<T, BM, BN, STAGES, XK, YK, false, ACT_NONE, 0, 1, SLOTS>(&tx, &ty, &td, p, flags, sp);           \
    }
#define GEMM_WG_IP_TILE_OPS(P, L, T, BM, BN, STAGES, SLOTS)                      \
    GEMM_WG_KERNEL_IP(P##_##L##_nn, T, BM, BN, STAGES, SLOTS, true, false)       \
    GEMM_WG_KERNEL_IP(P##_##L##_nt, T, BM, BN, STAGES, SLOTS, false, false)      \
    GEMM_WG_KERNEL_IP(P##_##L##_tn, T, BM, BN, STAGES, SLOTS, true, true)        \
    GEMM_WG_KERNEL_IP(P##_##L##_tt, T, BM, BN, STAGES, SLOTS, false, true)
#define GEMM_WG_IP_OPS(P, T)                               \
    GEMM_WG_IP_TILE_OPS(P, h, T, 64, 64, 7, 4)             \
    GEMM_WG_IP_TILE_OPS(P, n, T, 128, 64, 3, 4)

// The tf32 64-row tiles, in gemm_wg_tf32 only.
#define GEMM_WG_TF32_HALF(P)                    \
    GEMM_WG_TF32_TILE_OPS(P, h, 64, 64, 12)     \
    GEMM_WG_TF32_TILE_OPS(P, m, 64, 96, 8)
