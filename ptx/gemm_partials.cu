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
// A thread takes one chunk of V consecutive outputs of a row (16 bytes of the accumulator type:
// V = 4 for f32, 2 for f64; ldw is a multiple of 4, so chunks of the scratch are 16-byte
// aligned) and one of L lanes of the parts: block (W, L), threadIdx.x picks one of W consecutive
// chunks (in row-major order, so a warp's loads are coalesced), threadIdx.y = lane y sums parts
// y, y + L, y + 2 L, ... in that order, one vector load per part and 8 parts' loads in flight;
// thread (x, 0) then adds the L lanes' sums in lane order and applies the epilogue. L is chosen
// by the host from the problem's shape and the GPU's multiprocessor count (more lanes for few
// outputs of many parts), so the order of every addition is fixed by the problem on a given
// GPU: the result does not depend on timing. A row's last chunk, when n is not a multiple of V,
// reads only its columns below n (the padding columns are never read). With beta == 0, D is not
// read (NaN in D does not propagate). Launch contract: block = (W, L, 1) with W * L <= 256,
// grid = (any, 1, 1) (grid-stride over groups of W chunks, m * ceil(n / V) chunks in all);
// dynamic shared memory W * L * 16 bytes when L > 1; ws and D do not overlap.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"

enum : int { IN_FLIGHT = 8 };

// The output type T to the accumulator type A (widen), and a sum of type A into T (put).
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* dp, float v) { *dp = v; }
__device__ __forceinline__ void put(double* dp, double v) { *dp = v; }
__device__ __forceinline__ void put(__half* dp, float v) { *dp = __float2half_rn(v); }
__device__ __forceinline__ void put(__nv_bfloat16* dp, float v) { *dp = __float2bfloat16_rn(v); }

// The activation, out of line: the epilogue's V unrolled outputs share one copy of it.
template <typename A> __device__ __noinline__ A activate_out(A v, int act) { return activate(v, act); }

// 16 bytes of the accumulator type: the vector one load moves.
template <typename A> struct Vec;
template <> struct Vec<float> {
    using type = float4;
    static constexpr int N = 4;
    __device__ static void add(float* s, const float4& v) { s[0] += v.x, s[1] += v.y, s[2] += v.z, s[3] += v.w; }
};
template <> struct Vec<double> {
    using type = double2;
    static constexpr int N = 2;
    __device__ static void add(double* s, const double2& v) { s[0] += v.x, s[1] += v.y; }
};

// Adds to `s` the V outputs at `src` of parts q0, q0 + step, q0 + 2 step, ... below `parts`
// (part q at src + q * plane), in that order; `full` when all V lie below n (one vector load
// per part), else only the first `cols` are read.
template <typename A>
__device__ __forceinline__ void sum_parts(A (&s)[Vec<A>::N], const A* __restrict__ src, long long plane, int q0,
                                          int step, int parts, bool full, int cols) {
    using V = Vec<A>;
    if (full) {
        const typename V::type* p = reinterpret_cast<const typename V::type*>(src);
        const long long vplane = plane / V::N;
        // Groups of IN_FLIGHT parts: every load of a group is issued before its additions (the
        // last group's loads past `parts` are skipped, not added).
#pragma unroll 1
        for (int q = q0; q < parts; q += IN_FLIGHT * step) {
            typename V::type v[IN_FLIGHT];
#pragma unroll
            for (int j = 0; j < IN_FLIGHT; ++j)
                if (q + j * step < parts) v[j] = __ldcg(p + (long long)(q + j * step) * vplane);
#pragma unroll
            for (int j = 0; j < IN_FLIGHT; ++j)
                if (q + j * step < parts) V::add(s, v[j]);
        }
    } else {
#pragma unroll 1
        for (int q = q0; q < parts; q += step)
#pragma unroll
            for (int j = 0; j < V::N; ++j)
                if (j < cols) s[j] += __ldcg(src + (long long)q * plane + j);
    }
}

template <typename A, typename T>
__device__ __forceinline__ void partials_impl(const GemmParams& p, const A* __restrict__ ws, long long ldw,
                                              int parts) {
    constexpr int VN = Vec<A>::N;
    extern __shared__ __align__(16) unsigned char lane_bytes[];  // [L][W][VN] of A when L > 1
    A* const lane_sum = reinterpret_cast<A*>(lane_bytes);
    const int W = blockDim.x, L = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    const long long per_row = (p.n + VN - 1) / VN;
    const long long chunks = p.m * per_row;
    const long long plane = p.m * ldw;
    T* d = reinterpret_cast<T*>(p.d);
    const T* bias = reinterpret_cast<const T*>(p.bias);
    // The loop's bounds are the block's (every thread passes the same barriers).
    for (long long base = (long long)blockIdx.x * W; base < chunks; base += (long long)gridDim.x * W) {
        const long long i = base + tx;
        const bool live = i < chunks;
        // 32-bit division where the chunks allow it (the common case), 64-bit otherwise.
        const long long r =
            !live ? 0 : chunks <= 0x7fffffffll ? (long long)((unsigned)i / (unsigned)per_row) : i / per_row;
        const long long c = live ? (i - r * per_row) * VN : 0;
        const int cols = (int)min((long long)VN, p.n - c);
        A s[VN];
#pragma unroll
        for (int j = 0; j < VN; ++j) s[j] = A(0);
        if (live) sum_parts<A>(s, ws + r * ldw + c, plane, ty, L, parts, cols == VN, cols);
        if (L > 1) {
#pragma unroll
            for (int j = 0; j < VN; ++j) lane_sum[(ty * W + tx) * VN + j] = s[j];
            __syncthreads();
            if (ty == 0) {
#pragma unroll 1
                for (int l = 1; l < L; ++l)
#pragma unroll
                    for (int j = 0; j < VN; ++j) s[j] += lane_sum[(l * W + tx) * VN + j];
            }
            // The next group's lane sums overwrite this group's only after lane 0 read them.
            __syncthreads();
        }
        if (ty != 0 || !live) continue;
        T* dp = d + r * p.ldd + c;
#pragma unroll
        for (int j = 0; j < VN; ++j) {
            if (j >= cols) break;
            A v = (A)p.alpha * s[j];
            if (p.beta != 0.0) v += (A)p.beta * widen(dp[j]);
            if (bias) v += widen(bias[c + j]);
            if (p.act) v = activate_out(v, p.act);
            put(dp + j, v);
        }
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
