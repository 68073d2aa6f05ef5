// cudrv module `gemm_wg_tf32`: tf32 GEMM kernels and the operand packer (sm_90a, wgmma +
// TMA); the kernel and its launch contract are in ptx/gemm_wg.cuh.

#include "gemm_wg_kernels.cuh"
#include "tile_transpose.cuh"

GEMM_WG_TF32(gemm_wg_tf32, ACT_NONE)
GEMM_WG_TF32_BROAD(gemm_wg_tf32)
GEMM_WG_TF32_HALF(gemm_wg_tf32)
GEMM_WG_TF32_PAIR(gemm_wg_tf32)

// MathMode::Tf32x3's products (src/blas/gemm/tf32x3.rs): tn, accumulators promoted every 4
// k-tiles (128 k), the tiles of gemm_wg_tf32 but the 128 x 256 one.
GEMM_WG_KERNEL_PROMOTED(gemm_wg_tf32x3_b_tn, 128, 192, 4, 4)
GEMM_WG_KERNEL_PROMOTED(gemm_wg_tf32x3_l_tn, 128, 128, 6, 4)
GEMM_WG_KERNEL_PROMOTED(gemm_wg_tf32x3_n_tn, 128, 64, 8, 4)
GEMM_WG_KERNEL_PROMOTED(gemm_wg_tf32x3_m_tn, 64, 96, 8, 4)
GEMM_WG_KERNEL_PROMOTED(gemm_wg_tf32x3_h_tn, 64, 64, 12, 4)

// Packs an n-contiguous f32 operand k-contiguous for the tf32 kernels (wgmma reads tf32 from
// shared memory only k-contiguous; the nt case has both operands m/n-contiguous), rounding to tf32 on the way (cvt.rna, as the mma.sync kernels do):
//   out[r * ld_out + p] = tf32(in[p * ld_in + r]),   r < count, p < k,
// in each matrix of a batch (matrix b at in + b * stride_in and out + b * stride_out).
// block = (32, 8, 1); grid = (ceil(count / 32), ceil(k / 32), matrices) (k / 32 and the
// matrices at most 65535).
extern "C" __global__ void __launch_bounds__(256)
    gemm_wg_pack_tf32(float* __restrict__ out, const float* __restrict__ in, long long count, long long k,
                      long long ld_in, long long ld_out, long long stride_in,
                      long long stride_out) {
    copy_tile_transposed<true>(out, in, count, k, ld_in, ld_out, stride_in, stride_out);
}
