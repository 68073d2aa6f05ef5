// cudrv module `gemm_small`: GEMMs whose m, n and k are all at most 32, in one block per matrix
// of a strided batch. The tiled kernels give such a matrix a whole tile (up to 128 x 256) and a
// pipeline built for long k; a batch of thousands of 16 x 16 x 16 products (attention heads,
// small MLPs) wastes nearly all of it. Here a block loads one matrix's X and Y whole into shared
// memory, each thread computes outputs with the full k loop, and the epilogue writes them.
//
// The problem is the row-major one of ptx/gemm_tc.cu (the Rust side maps cuBLAS's column-major
// GEMM onto it, X = op(B)^T, Y = op(A)^T):
//
//   D[r][c] = act(alpha * sum_p X[r][p] * Y[p][c] + beta * D[r][c] + bias[c]),   r < m, c < n, p < k
//
//   X[r][p] at x[r * ldx + p] when xk, else at x[r + p * ldx]
//   Y[p][c] at y[c * ldy + p] when yk, else at y[p * ldy + c]
//   D[r][c] at d[r * ldd + c]; batch entry b at x + b * sx, y + b * sy, d + b * sd
//
// Products and sums in f32 (f64 for f64), in order p = 0, 1, ..., k - 1 with fused multiply-adds,
// so the result does not depend on the launch. Kernels: gemm_small_f32 (also for tf32 math: exact
// f32 is within tf32's bound), gemm_small_f64, gemm_small_f16, gemm_small_bf16.
//
// Launch contract: params (GemmParams p, int xk, int yk) by value; block = (t, 1, 1) for any
// 1 <= t <= 256 (the host takes a quarter of m n rounded up to a warp: a thread per 4 outputs);
// grid = (g, 1, 1) for any g >= 1 (block i takes batch entries i, i + g, ...); dynamic shared
// memory (m (k + 1) + k (n + 1)) * sizeof(Acc) bytes (Acc: double for f64, else float);
// 1 <= m, n <= 32, 0 <= k <= 32 (k = 0: the sum is zero, X and Y are not read); beta == 0: D is
// not read; bias == 0: no bias. No alignment is needed.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"

template <typename T> struct Small;
template <> struct Small<float> {
    typedef float Acc;
    static __device__ __forceinline__ float to(float v) { return v; }
    static __device__ __forceinline__ float from(float v) { return v; }
};
template <> struct Small<double> {
    typedef double Acc;
    static __device__ __forceinline__ double to(double v) { return v; }
    static __device__ __forceinline__ double from(double v) { return v; }
};
template <> struct Small<__half> {
    typedef float Acc;
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct Small<__nv_bfloat16> {
    typedef float Acc;
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

template <typename T>
__device__ __forceinline__ void gemm_small(const GemmParams& p, int xk, int yk) {
    typedef typename Small<T>::Acc Acc;
    // X as xs[r * (k + 1) + p], Y as ys[p * (n + 1) + c], sized to the problem (dynamic shared
    // memory), so that small matrices leave room for many blocks per multiprocessor. In the
    // product a warp's threads share r and step c (xs read as a broadcast, ys along a row); the
    // padded rows spread the loads of an operand whose rows are not contiguous over the banks.
    extern __shared__ __align__(16) unsigned char small_smem[];
    const int m = (int)p.m, n = (int)p.n, k = (int)p.k;
    Acc* xs = reinterpret_cast<Acc*>(small_smem);
    Acc* ys = xs + m * (k + 1);
    const Acc alpha = (Acc)p.alpha, beta = (Acc)p.beta;
    const T* bias = reinterpret_cast<const T*>(p.bias);
    for (long long b = blockIdx.x; b < p.batch; b += gridDim.x) {
        const T* x = reinterpret_cast<const T*>(p.x) + b * p.sx;
        const T* y = reinterpret_cast<const T*>(p.y) + b * p.sy;
        T* d = reinterpret_cast<T*>(p.d) + b * p.sd;
        // Consecutive threads read consecutive addresses whichever side of X (Y) is contiguous.
        // (Loads batched 8 per thread before their stores, with 4 interleaved sums per thread,
        // measured 1.7x slower on 16 x 16 x 16 x 4096 on the H100.)
        for (int i = threadIdx.x; i < m * k; i += blockDim.x) {
            const int r = xk ? i / k : i % m, q = xk ? i % k : i / m;
            xs[r * (k + 1) + q] = Small<T>::to(x[xk ? (long long)r * p.ldx + q : r + (long long)q * p.ldx]);
        }
        for (int i = threadIdx.x; i < k * n; i += blockDim.x) {
            const int c = yk ? i / k : i % n, q = yk ? i % k : i / n;
            ys[q * (n + 1) + c] = Small<T>::to(y[yk ? (long long)c * p.ldy + q : (long long)q * p.ldy + c]);
        }
        __syncthreads();
        for (int o = threadIdx.x; o < m * n; o += blockDim.x) {
            const int r = o / n, c = o % n;
            Acc s = 0;
            for (int q = 0; q < k; ++q) s = fma(xs[r * (k + 1) + q], ys[q * (n + 1) + c], s);
            Acc v = alpha * s;
            T* out = d + (long long)r * p.ldd + c;
            if (beta != (Acc)0) v += beta * Small<T>::to(*out);
            if (bias) v += Small<T>::to(bias[c]);
            *out = Small<T>::from(activate(v, p.act));
        }
        // The next matrix's loads overwrite xs and ys.
        __syncthreads();
    }
}

#define GEMM_SMALL(NAME, T)                                                                           \
    extern "C" __global__ void __launch_bounds__(256) NAME(const GemmParams p, int xk, int yk) {      \
        gemm_small<T>(p, xk, yk);                                                                     \
    }

GEMM_SMALL(gemm_small_f32, float)
GEMM_SMALL(gemm_small_f64, double)
GEMM_SMALL(gemm_small_f16, __half)
GEMM_SMALL(gemm_small_bf16, __nv_bfloat16)
