// A 32 x 32 tile of a strided f32 matrix copied transposed, for the GEMM operand copies
// (gemm_wg_pack_tf32 in gemm_wg_tf32.cu, gemm_transpose_b32 in gemm_pack.cu), in each matrix of
// a batch (matrix b at in + b * stride_in and out + b * stride_out):
//   out[r * ld_out + p] = cvt(in[p * ld_in + r]),   r < count, p < k,
// cvt rounding to tf32 when TF32, else the identity. Block (32, 8, 1) moves the tile (blockIdx.x
// over r, blockIdx.y over p) through shared memory padded to 33 columns, so that the reads along
// r and the writes along p are both coalesced and free of bank conflicts; blockIdx.z is the
// matrix (gridDim.z = the matrices of one launch: at most 65535). Indices are 64-bit.
#pragma once

template <bool TF32>
__device__ __forceinline__ void copy_tile_transposed(float* __restrict__ out, const float* __restrict__ in,
                                                     long long count, long long k, long long ld_in,
                                                     long long ld_out, long long stride_in, long long stride_out) {
    __shared__ float tile[32][33];
    const long long r0 = (long long)blockIdx.x * 32, p0 = (long long)blockIdx.y * 32;
    in += blockIdx.z * stride_in;
    out += blockIdx.z * stride_out;
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
            if constexpr (TF32) {
                unsigned t;
                asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(t) : "f"(tile[threadIdx.x][j]));
                out[r * ld_out + p] = __uint_as_float(t);
            } else {
                out[r * ld_out + p] = tile[threadIdx.x][j];
            }
        }
    }
}
