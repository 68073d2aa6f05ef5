// cudrv module `gemm_wg_tf32`: tf32 GEMM kernels and the operand packer (sm_90a, wgmma +
// TMA); the kernel and its launch contract are in ptx/gemm_wg.cuh.

#include "gemm_wg.cuh"

GEMM_WG_TF32(gemm_wg_tf32, ACT_NONE)
GEMM_WG_TF32_BROAD(gemm_wg_tf32)
GEMM_WG_TF32_HALF(gemm_wg_tf32)

// Packs an n-contiguous f32 operand k-contiguous for the tf32 kernels (wgmma reads tf32 from
// shared memory only k-contiguous; the nt case has both operands m/n-contiguous), rounding to tf32 on the way (cvt.rna, as the mma.sync kernels do):
//   out[r * ld_out + p] = tf32(in[p * ld_in + r]),   r < count, p < k.
// block = (32, 8, 1); grid = (ceil(count / 32), ceil(k / 32), 1) (k / 32 <= 65535).
extern "C" __global__ void __launch_bounds__(256)
    gemm_wg_pack_tf32(float* __restrict__ out, const float* __restrict__ in, long long count, long long k,
                      long long ld_in, long long ld_out) {
    __shared__ float tile[32][33];
    const long long r0 = (long long)blockIdx.x * 32, p0 = (long long)blockIdx.y * 32;
#pragma unroll
    for (int j = threadIdx.y; j < 32; j += 8) {
        const long long p = p0 + j, r = r0 + threadIdx.x;
        tile[j][threadIdx.x] = (p < k && r < count) ? in[p * ld_in + r] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int j = threadIdx.y; j < 32; j += 8) {
        const long long r = r0 + j, p = p0 + threadIdx.x;
        if (r < count && p < k) {
            unsigned t;
            asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(t) : "f"(tile[threadIdx.x][j]));
            out[r * ld_out + p] = __uint_as_float(t);
        }
    }
}
