// cudrv module `gemm_wg_gelu_f16`: the kernels of gemm_wg_f16 with gelu (x Phi(x), the erf form)
// applied in their TMA epilogue, in a module of their own so that only a process that asks for gelu
// JIT-compiles them. Kernel and launch contract: ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_gelu_f16, __half, ACT_GELU)
