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
//     256 for f16 and bf16.

#include "gemv_common.cuh"

#define GEMV_CLUSTER(T, N, VEC, N_UR, N_UC)                                                          \
    extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(256, 4) gemv_nvc_##N(GemvParams p) { \
        gemv_n<T, VEC, N_UR, N_UC, 8>(p);                                                           \
    }
GEMV_CLUSTER(float, f32, 4, 2, 4)
GEMV_CLUSTER(double, f64, 2, 2, 2)
GEMV_CLUSTER(__half, f16, 8, 1, 4)
GEMV_CLUSTER(__nv_bfloat16, bf16, 8, 1, 4)
