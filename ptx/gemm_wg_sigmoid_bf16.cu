// cudrv module `gemm_wg_sigmoid_bf16`: the kernels of gemm_wg_bf16 with sigmoid (1 / (1 + exp(-x)))
// applied in their TMA epilogue, in a module of their own so that only a process that asks for
// sigmoid JIT-compiles them. Kernel and launch contract: ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_OPS(gemm_wg_sigmoid_bf16, __nv_bfloat16, ACT_SIGMOID)
