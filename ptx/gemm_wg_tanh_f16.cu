// cudrv module `gemm_wg_tanh_f16`: the kernels of gemm_wg_f16 with tanh (tanh(x)) applied in their
// TMA epilogue, in a module of their own so that only a process that asks for tanh JIT-compiles
// them. Kernel and launch contract: ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_tanh_f16, __half, ACT_TANH)
