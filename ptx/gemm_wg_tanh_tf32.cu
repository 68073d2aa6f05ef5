// cudrv module `gemm_wg_tanh_tf32`: the kernels of gemm_wg_tf32 with tanh (tanh(x)) applied in
// their TMA epilogue, in a module of their own so that only a process that asks for tanh JIT-
// compiles them. Kernel and launch contract: ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"

GEMM_WG_TF32(gemm_wg_tanh_tf32, ACT_TANH)
