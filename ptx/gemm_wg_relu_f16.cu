// cudrv module `gemm_wg_relu_f16`: the kernels of gemm_wg_f16 with relu (max(x, 0)) applied in
// their TMA epilogue, in a module of their own so that only a process that asks for relu JIT-
// compiles them. Kernel and launch contract: ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_relu_f16, __half, ACT_RELU)
