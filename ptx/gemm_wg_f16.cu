// cudrv module `gemm_wg_f16`: f16 GEMM kernels (sm_90a, wgmma + TMA); the kernel and its
// launch contract are in ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_f16, __half, ACT_NONE)
GEMM_WG_OPS_BROAD(gemm_wg_f16, __half)
GEMM_WG_OPS_HALF(gemm_wg_f16, __half)
GEMM_WG_PAIR_OPS(gemm_wg_f16, __half)
