// cudrv module `gemm_wg_bf16`: bf16 GEMM kernels (sm_90a, wgmma + TMA); the kernel and its
// launch contract are in ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_bf16, __nv_bfloat16, ACT_NONE)
GEMM_WG_OPS_BROAD(gemm_wg_bf16, __nv_bfloat16)
GEMM_WG_OPS_HALF(gemm_wg_bf16, __nv_bfloat16)
GEMM_WG_PAIR_OPS(gemm_wg_bf16, __nv_bfloat16)
