// cudrv module `gemm_partials`: the second half of a k split through partial products
// (src/blas/gemm/partials.rs). A GEMM whose output tiles are too few to fill the GPU and whose k
// is long (64 x 64 x 65536) runs as `parts` GEMMs over consecutive ranges of k, queued as one
// strided batch of the ordinary kernels, each writing its partial product (alpha 1, beta 0, no
// bias, no activation) in the accumulator type (f32 for f16 and bf16, whose tensor-core kernels
// sum in f32) into a scratch buffer. This kernel adds the
// partial products and applies the GEMM's epilogue: D = act(alpha * sum + beta * D + bias).
//
//   p     : the GEMM's parameter block (src/blas/gemm/params.rs): d, ldd, m, n, bias, alpha,
//           beta, act are read; row-major D (the kernels' form), the bias indexed by D's column
//   ws    : parts partial products in the accumulator type A, product q's element (r, c) at
//           ws[(q * m + r) * ldw + c]
//   ldw   : the partial products' row length (>= n)
//   parts : how many partial products (>= 1)
//
// Kernels: gemm_partials_<t> for D of type t: f32 and f64 (their partial sums in their own type),
// f16 and bf16 (partial sums in f32; the sum, alpha, beta * D and the bias in f32, then one
// rounding to t, as the tensor-core kernels' own epilogue does).
// A block is 32 x 8 threads: threadIdx.x takes one of 32 consecutive outputs (in row-major order,
// so the loads of a warp are coalesced), threadIdx.y one of 8 lanes of the parts; lane y adds
// parts y, y + 8, y + 16, ... in that order, and thread (x, 0) then adds the 8 lanes' sums in
// lane order. The order of every addition is fixed by the launch shape, so the result does not
// depend on timing. With beta == 0, D is not read (NaN in D does not propagate). Launch contract:
// block = (32, 8, 1); grid = (any, 1, 1) (grid-stride over groups of 32 outputs); ws and D do not
// overlap. Indices are 64-bit.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"

enum : int { LANES = 8, WIDTH = 32 };

// The output type T to the accumulator type A (widen), and a sum of type A into T (put).
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* dp, float v) { *dp = v; }
__device__ __forceinline__ void put(double* dp, double v) { *dp = v; }
__device__ __forceinline__ void put(__half* dp, float v) { *dp = __float2half_rn(v); }
__device__ __forceinline__ void put(__nv_bfloat16* dp, float v) { *dp = __float2bfloat16_rn(v); }

template <typename A, typename T>
__device__ __forceinline__ void partials_impl(const GemmParams& p, const A* __restrict__ ws, long long ldw,
                                              int parts) {
    __shared__ A lane_sum[LANES][WIDTH + 1];
    const long long total = p.m * p.n;
    const long long plane = p.m * ldw;
    T* d = reinterpret_cast<T*>(p.d);
    const T* bias = reinterpret_cast<const T*>(p.bias);
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (long long base = (long long)blockIdx.x * WIDTH; base < total; base += (long long)gridDim.x * WIDTH) {
        const long long i = base + tx;
        const bool live = i < total;
        const long long r = live ? i / p.n : 0;
        const long long c = live ? i - r * p.n : 0;
        const A* src = ws + r * ldw + c;
        A s = A(0);
        if (live) {
            int q = ty;
            // Four independent loads in flight per thread; the additions stay in part order.
#pragma unroll 1
            for (; q + 3 * LANES < parts; q += 4 * LANES) {
                const A a0 = src[(long long)q * plane];
                const A a1 = src[(long long)(q + LANES) * plane];
                const A a2 = src[(long long)(q + 2 * LANES) * plane];
                const A a3 = src[(long long)(q + 3 * LANES) * plane];
                s += a0;
                s += a1;
                s += a2;
                s += a3;
            }
#pragma unroll 1
            for (; q < parts; q += LANES) s += src[(long long)q * plane];
        }
        lane_sum[ty][tx] = s;
        __syncthreads();
        if (ty == 0 && live) {
            A sum = lane_sum[0][tx];
#pragma unroll
            for (int l = 1; l < LANES; ++l) sum += lane_sum[l][tx];
            A v = (A)p.alpha * sum;
            T* dp = d + r * p.ldd + c;
            if (p.beta != 0.0) v += (A)p.beta * widen(*dp);
            if (bias) v += widen(bias[c]);
            if (p.act) v = activate(v, p.act);
            put(dp, v);
        }
        // The next group's lane sums overwrite this group's only after thread row 0 read them.
        __syncthreads();
    }
}

#define GEMM_PARTIALS(NAME, A, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                                 \
        NAME(GemmParams p, const A* __restrict__ ws, long long ldw, int parts) {                       \
        partials_impl<A, T>(p, ws, ldw, parts);                                                        \
    }
GEMM_PARTIALS(gemm_partials_f32, float, float)
GEMM_PARTIALS(gemm_partials_f64, double, double)
GEMM_PARTIALS(gemm_partials_f16, float, __half)
GEMM_PARTIALS(gemm_partials_bf16, float, __nv_bfloat16)
