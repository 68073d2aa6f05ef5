// cudrv module `gemm_partials`: the second half of a k split through partial products
// (src/blas/gemm/partials.rs). A GEMM whose output tiles are too few to fill the GPU and whose k
// is long (64 x 64 x 65536) runs as `parts` GEMMs over consecutive ranges of k, queued as one
// strided batch of the ordinary kernels, each writing its partial product (alpha 1, beta 0, no
// bias, no activation) in the accumulator type into a scratch buffer. This kernel adds the
// partial products and applies the GEMM's epilogue: D = act(alpha * sum + beta * D + bias).
//
//   p     : the GEMM's parameter block (src/blas/gemm/params.rs): d, ldd, m, n, bias, alpha,
//           beta, act are read; row-major D (the kernels' form), the bias indexed by D's column
//   ws    : parts partial products, product q's element (r, c) at ws[(q * m + r) * ldw + c]
//   ldw   : the partial products' row length (>= n)
//   parts : how many partial products (>= 1)
//
// Kernels: gemm_partials_f32, gemm_partials_f64 (the types whose accumulator is their own type).
// A block is 32 x 8 threads: threadIdx.x takes one of 32 consecutive outputs (in row-major order,
// so the loads of a warp are coalesced), threadIdx.y one of 8 lanes of the parts; lane y adds
// parts y, y + 8, y + 16, ... in that order, and thread (x, 0) then adds the 8 lanes' sums in
// lane order. The order of every addition is fixed by the launch shape, so the result does not
// depend on timing. With beta == 0, D is not read (NaN in D does not propagate). Launch contract:
// block = (32, 8, 1); grid = (any, 1, 1) (grid-stride over groups of 32 outputs); ws and D do not
// overlap. Indices are 64-bit.

#include "gemm_common.cuh"

enum : int { LANES = 8, WIDTH = 32 };

template <typename T>
__device__ __forceinline__ void partials_impl(const GemmParams& p, const T* __restrict__ ws, long long ldw,
                                              int parts) {
    __shared__ T lane_sum[LANES][WIDTH + 1];
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
        const T* src = ws + r * ldw + c;
        T s = T(0);
        if (live) {
            int q = ty;
            // Four independent loads in flight per thread; the additions stay in part order.
#pragma unroll 1
            for (; q + 3 * LANES < parts; q += 4 * LANES) {
                const T a0 = src[(long long)q * plane];
                const T a1 = src[(long long)(q + LANES) * plane];
                const T a2 = src[(long long)(q + 2 * LANES) * plane];
                const T a3 = src[(long long)(q + 3 * LANES) * plane];
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
            T sum = lane_sum[0][tx];
#pragma unroll
            for (int l = 1; l < LANES; ++l) sum += lane_sum[l][tx];
            T v = (T)p.alpha * sum;
            T* dp = d + r * p.ldd + c;
            if (p.beta != 0.0) v += (T)p.beta * *dp;
            if (bias) v += bias[c];
            if (p.act) v = activate(v, p.act);
            *dp = v;
        }
        // The next group's lane sums overwrite this group's only after thread row 0 read them.
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_partials_f32(GemmParams p, const float* __restrict__ ws, long long ldw, int parts) {
    partials_impl<float>(p, ws, ldw, parts);
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_partials_f64(GemmParams p, const double* __restrict__ ws, long long ldw, int parts) {
    partials_impl<double>(p, ws, ldw, parts);
}
