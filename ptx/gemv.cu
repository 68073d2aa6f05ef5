// cudrv module `gemv`: y = alpha * op(A) x + beta * y, A column-major (m x n, leading dimension
// lda), f32, f64, f16 and bf16 (f16/bf16 accumulate in f32), any vector strides. The axpby
// (alpha, beta) is fused into the product.
//
// Kernels (T = f32 | f64 | f16 | bf16; Acc = f64 for f64, f32 otherwise):
//   gemv_n_<T>, gemv_nv_<T>: y (length m) = alpha * A x + beta * y.
//     block = (32, 8, 1); grid = (tile blocks, splits, 1). A row tile has ROWS = 32 * VEC * UR
//     rows: lane tx owns rows VEC * tx + 32 * VEC * u + e (u < UR, e < VEC) of it, so a warp load
//     is a contiguous 32 * VEC elements of one column. Warp ty sums columns j = c0 + ty + 8 v of
//     its split's column range, UC columns per step (UC * UR independent loads in flight). The
//     8 warps' sums meet in shared memory. Blocks loop over row tiles tile = blockIdx.x +
//     k * gridDim.x. splits == 1: the block writes y; splits > 1: it writes its partial sums to
//     work[split * m + row] (Acc) and gemv_finish_<T> completes y.
//     gemv_n: one element per load (VEC = 1), any lda and alignment, ROWS = 128.
//     gemv_nv: 16-byte loads (VEC = 16 / sizeof(T)); needs A 16-byte aligned and lda a multiple
//     of VEC. ROWS = 128 (f32, f64) or 256 (f16, bf16). Rows past m are handled per lane.
//   gemv_t_<T>, gemv_tv_<T>: y (length n) = alpha * A^T x + beta * y.
//     block = (256, 1, 1) = 8 warps; grid = (column blocks, splits, 1).
//     gemv_t: one element per load, any lda, alignment and incx. Warp w of block b takes
//     columns j = 8 * (b + k * gridDim.x) + w; its lanes stride down the rows of the split's
//     row range (UR elements per lane per step), then a shuffle reduction.
//     gemv_tv: 16-byte loads of A and x; needs A and x 16-byte aligned, lda a multiple of VEC,
//     incx == 1, and split boundaries (chunk) multiples of 512 rows. Four warps per column: block
//     b takes columns j = 2 * (b + k * gridDim.x) + w / 4, and warp w takes every fourth step
//     (32 * VEC * UR rows) of it, from step w % 4; the four sums meet in shared memory.
//     gemv_tv1: gemv_tv with one warp per column (block b takes columns 8 * (b + k * gridDim.x) + w)
//     and no barrier, for short columns, which four warps would leave mostly idle.
//     splits > 1: partials to work[split * n + j], then gemv_finish_<T>.
//   gemv_nr<LB>_<T>: y (length m) = alpha * A x + beta * y by row strips, LB = 8 or 16 bytes per
//     lane (every type) or 4 (f16, bf16; f32 for columns not 8-byte aligned). block = (32, 16, 1);
//     grid = (ceil(m / R), 1, 1). Block b owns the rows [R b, R (b + 1)): lane tx reads LB bytes
//     of each column from row R b + VEC tx (VEC = LB / element size, R = 32 * VEC); warp ty takes
//     the columns [ty per, (ty + 1) per), per = ceil(n / 16), 128 bytes of A in flight per lane. Needs A aligned to LB bytes and lda
//     a multiple of VEC; no split, no workspace.
//   (gemv90.cu adds gemv_nvc_<T> and gemv_nc_<T>, gemv_nv and gemv_n with the splits in a thread
//   block cluster, for sm_90.)
//   gemv_finish_<T>(y, work, len, splits, alpha, beta, incy): y[i] = alpha * sum_s work[s*len+i]
//     + beta * y[i]; block = (256, 1, 1), grid = (ceil(len / 256), 1, 1).
// x and y are passed already offset for negative increments (element i at x[i * incx]).
// beta == 0: y is not read. Column / row ranges of the splits: [s * chunk, min((s+1) * chunk, len)).
// A is read with ld.global.cg (cached in L2 only: it streams through once), x with ld.global.nc.

#include "gemv_common.cuh"

// gemv_n (and gemv90.cu's gemv_nc) are bounded to 3 blocks of 256 threads per multiprocessor (at
// most 85 registers): without the bound the driver's sm_90 compile of the compute_80 PTX gave
// f32, f64 and f16 2 blocks per SM, and the 16-bit kernels' loads of 2 bytes need the warps
// (H200, 2026-11-28: f16 N 50257 x 768 35.6 -> 25.6 us, 4095 x 4097 16.9 -> 13.4 us; ptxas
// 12.0 reports 64-80 registers and no spills for sm_80 and sm_90).
// Per type: the 16-byte kernels' shapes. N: VEC * UR rows and UC columns per thread per step
// (UC * UR 16-byte loads in flight); T: UR 16-byte loads of A (and of x) per lane per step,
// four warps per column.
#define GEMV(T, N, VEC, N_UR, N_UC, T_UR)                                                               \
    extern "C" __global__ void __launch_bounds__(256, 3) gemv_n_##N(GemvParams p) { gemv_n<T, 1, 4, 4>(p); } \
    extern "C" __global__ void __launch_bounds__(256, 4) gemv_nv_##N(GemvParams p) {                    \
        gemv_n<T, VEC, N_UR, N_UC>(p);                                                                  \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) gemv_t_##N(GemvParams p) { gemv_t<T, 1, 8>(p); }  \
    extern "C" __global__ void __launch_bounds__(256) gemv_tv_##N(GemvParams p) { gemv_tw<T, VEC, T_UR, 4>(p); } \
    extern "C" __global__ void __launch_bounds__(256) gemv_tv1_##N(GemvParams p) { gemv_tw<T, VEC, T_UR, 1>(p); } \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
        gemv_finish_##N(T* y, const El<T>::Acc* work, long long len, int splits, double alpha, double beta, \
                        long long incy) {                                                               \
        gemv_finish<T>(y, work, len, splits, alpha, beta, incy);                                        \
    }
// Row strips: LB bytes per lane, 16 warps.
#define GEMV_ROWS(T, N, LB)                                                                         \
    extern "C" __global__ void __launch_bounds__(512, 1) gemv_nr##LB##_##N(GemvParams p) { gemv_nr<T, LB, 16>(p); }
GEMV(float, f32, 4, 1, 8, 4)
GEMV(double, f64, 2, 2, 2, 4)
GEMV(__half, f16, 8, 1, 4, 2)
GEMV(__nv_bfloat16, bf16, 8, 1, 4, 2)
GEMV_ROWS(float, f32, 4)
GEMV_ROWS(float, f32, 8)
GEMV_ROWS(float, f32, 16)
GEMV_ROWS(double, f64, 8)
GEMV_ROWS(double, f64, 16)
GEMV_ROWS(__half, f16, 4)
GEMV_ROWS(__half, f16, 8)
GEMV_ROWS(__half, f16, 16)
GEMV_ROWS(__nv_bfloat16, bf16, 4)
GEMV_ROWS(__nv_bfloat16, bf16, 8)
GEMV_ROWS(__nv_bfloat16, bf16, 16)
