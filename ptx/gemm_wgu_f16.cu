// cudrv module `gemm_wgu_f16`: f16 GEMM kernels (sm_90a, wgmma) that read X and Y in place,
// aligned only to their element; the kernel and its launch contract are in ptx/gemm_wg.cuh and
// ptx/gemm_wg_kernels.cuh, the producer in ptx/gemm_wg_in_place.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_IP_OPS(gemm_wgu_f16, __half)
