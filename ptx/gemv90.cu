// cudrv module `gemv90`: the N kernel of module `gemv` (see gemv.cu) with its reduction split over
// the 8 blocks of a thread block cluster (sm_90 and later), whose partial sums meet in shared
// memory instead of a workspace and a second kernel.
//
//   gemv_nvc_<T>: y (length m) = alpha * A x + beta * y, as gemv_nv_<T> (16-byte loads: A 16-byte
//     aligned, lda a multiple of 16 bytes). block = (32, 8, 1); grid = (tile blocks, 8, 1), the
//     8 blocks of a column of the grid form a cluster (compile-time cluster shape 1 x 8 x 1) and
//     take the column ranges [s * chunk, min((s + 1) * chunk, n)), s = 0..7, of the same row
//     tiles. `work` and `splits` are not used. Row tiles of 32 * VEC * UR rows: 256 for f32
//     (UR 2: a warp reads 1 KB of a column per step; gemv_nv_f32 reads 512 bytes), 128 for f64,
//     256 for f16 and bf16. f64, f16 and bf16 take twice gemv_nv's columns per step (8 16-byte
//     loads in flight per thread; f64 4 columns x 2 rows) at three blocks per SM: each cluster
//     reads its tile over 8 blocks only, so every block needs more of its reads in flight than
//     a block of the split (f32's 8 x 2 rows would spill).
//   gemv_nc_<T>: the same for gemv_n_<T> (one element per load: any lda and alignment), row tiles
//     of 128 rows. For the odd N products a split would otherwise finish with gemv_finish: one
//     launch instead of two, no workspace.
//   gemv_nc16_<T>: gemv_nc_<T> over 16 blocks per cluster (1 x 16 x 1, a non-portable cluster
//     size: the host allows it on the function before it asks the cluster occupancy) and row
//     tiles of 64 rows (UR 2): four times the blocks of gemv_nc on the smallest odd products.

#include "gemv_common.cuh"

#define GEMV_CLUSTER(T, N, VEC, N_UR, N_UC, MINB)                                                        \
    extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(256, MINB) gemv_nvc_##N(GemvParams p) { \
        gemv_n<T, VEC, N_UR, N_UC, 8>(p);                                                           \
    }
GEMV_CLUSTER(float, f32, 4, 2, 4, 4)
GEMV_CLUSTER(double, f64, 2, 2, 4, 3)
GEMV_CLUSTER(__half, f16, 8, 1, 8, 3)
GEMV_CLUSTER(__nv_bfloat16, bf16, 8, 1, 8, 3)

// gemv_nc<SUFFIX>_<T>: the element-wise kernel (one element per load) over UR groups of 32 rows
// per tile and clusters of C blocks.
#define GEMV_CLUSTER_ANY(T, N, SUFFIX, UR, C)                                                          \
    extern "C" __global__ void __cluster_dims__(1, C, 1) __launch_bounds__(256, 3) gemv_nc##SUFFIX##_##N( \
        GemvParams p) {                                                                               \
        gemv_n<T, 1, UR, 4, C>(p);                                                                    \
    }
#define GEMV_CLUSTERS_ANY(T, N) GEMV_CLUSTER_ANY(T, N, , 4, 8) GEMV_CLUSTER_ANY(T, N, 16, 2, 16)
GEMV_CLUSTERS_ANY(float, f32)
GEMV_CLUSTERS_ANY(double, f64)
GEMV_CLUSTERS_ANY(__half, f16)
GEMV_CLUSTERS_ANY(__nv_bfloat16, bf16)

// gemv_nr<LB>c<C>_<T>: the row strips of gemv_nr<LB>_<T> (gemv.cu) with each strip's columns
// split in C ranges over the C blocks of a thread block cluster (compile-time cluster shape
// 1 x C x 1; grid = (strips, C, 1), block = (32, 16, 1)), whose partial sums meet in shared
// memory: C times the blocks of the plain strips, still one launch and no workspace.
#define GEMV_ROWS_CLUSTER(T, N, LB, C)                                                                  \
    extern "C" __global__ void __cluster_dims__(1, C, 1) __launch_bounds__(512, 1) gemv_nr##LB##c##C##_##N( \
        GemvParams p) {                                                                                 \
        gemv_nr<T, LB, 16, C>(p);                                                                       \
    }
#define GEMV_ROWS_CLUSTERS(T, N, LB) GEMV_ROWS_CLUSTER(T, N, LB, 2) GEMV_ROWS_CLUSTER(T, N, LB, 4)
GEMV_ROWS_CLUSTERS(float, f32, 4)
GEMV_ROWS_CLUSTERS(float, f32, 8)
GEMV_ROWS_CLUSTERS(float, f32, 16)
GEMV_ROWS_CLUSTERS(double, f64, 8)
GEMV_ROWS_CLUSTERS(double, f64, 16)
GEMV_ROWS_CLUSTERS(__half, f16, 4)
GEMV_ROWS_CLUSTERS(__half, f16, 8)
GEMV_ROWS_CLUSTERS(__half, f16, 16)
GEMV_ROWS_CLUSTERS(__nv_bfloat16, bf16, 4)
GEMV_ROWS_CLUSTERS(__nv_bfloat16, bf16, 8)
GEMV_ROWS_CLUSTERS(__nv_bfloat16, bf16, 16)
