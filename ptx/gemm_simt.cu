// cudrv module `gemm_simt`: GEMM on the CUDA cores, any shape, any leading dimension, any
// alignment: f32 (exact f32 math), f64, and f16 / bf16 storage with f32 math (the fallback for
// operands the tensor-core kernels cannot load with 16-byte copies). Fused epilogue.
//
// The problem is the same ROW-MAJOR one as in gemm_tc.cu (see there):
//   D[r][c] = act(alpha * sum_p X[r][p] * Y[p][c] + beta * D[r][c] + bias[c])
//   X[r][p] at x[r * ldx + p] when xk else x[r + p * ldx];  Y[p][c] at y[c * ldy + p] when yk
//   else y[p * ldy + c];  D[r][c] at d[r * ldd + c].
// Kernel names: gemm_simt_<type>_<tile>_<opA><opB> with cuBLAS's column-major ops:
//   xk = (opB == 'n'), yk = (opA == 't').  <type>: f32, f64, f16, bf16.
//   <tile>: l = 128x128 block tile, 8x8 outputs per thread (f32 only);
//           s = 64x64, 4x4 outputs per thread.
//
// Launch contract: block = (256, 1, 1); grid = (ceil(m/BM) * ceil(n/BN), batch, 1) with
// batch <= 65535; no dynamic shared memory. beta == 0: D is not read. bias == 0: no bias.
// act: 0 none, 1 relu, 2 gelu (erf form), 3 sigmoid, 4 tanh. k == 0 is allowed. m, n >= 1.
//
// Design: a BM x BK tile of X and a BK x BN tile of Y per step, loaded with bounds checks (zero
// outside the matrix) into registers one step ahead, stored k-major into a double-buffered
// shared tile (one barrier per step); each thread accumulates a TM x TN register block made of
// four quadrants (rows ty*TM/2 + [0, TM/2) and BM/2 + ..., likewise for columns) so that a warp's
// shared-memory reads are broadcasts (X) or consecutive 16-byte vectors (Y).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct GemmParams {
    unsigned long long x, y, d, bias;
    long long m, n, k;
    long long ldx, ldy, ldd;
    long long sx, sy, sd;
    double alpha, beta;
    int act;
    int batch;
};

enum : int { ACT_NONE = 0, ACT_RELU = 1, ACT_GELU = 2, ACT_SIGMOID = 3, ACT_TANH = 4 };

__device__ __forceinline__ float activate(float v, int act) {
    switch (act) {
    case ACT_RELU: return v < 0.f ? 0.f : v;
    case ACT_GELU: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    case ACT_SIGMOID: return 1.f / (1.f + expf(-v));
    case ACT_TANH: return tanhf(v);
    default: return v;
    }
}
__device__ __forceinline__ double activate(double v, int act) {
    switch (act) {
    case ACT_RELU: return v < 0.0 ? 0.0 : v;
    case ACT_GELU: return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case ACT_TANH: return tanh(v);
    default: return v;
    }
}

template <typename T, typename A> struct Cvt {
    static __device__ __forceinline__ A to(T v) { return (A)v; }
    static __device__ __forceinline__ T from(A v) { return (T)v; }
};
template <> struct Cvt<__half, float> {
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct Cvt<__nv_bfloat16, float> {
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// Reads N consecutive values from 16-byte aligned shared memory.
template <typename A, int N> __device__ __forceinline__ void lds(A* dst, const A* src) {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
}
template <> __device__ __forceinline__ void lds<float, 4>(float* dst, const float* src) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
}
template <> __device__ __forceinline__ void lds<float, 2>(float* dst, const float* src) {
    const float2 v = *reinterpret_cast<const float2*>(src);
    dst[0] = v.x, dst[1] = v.y;
}
template <> __device__ __forceinline__ void lds<double, 2>(double* dst, const double* src) {
    const double2 v = *reinterpret_cast<const double2*>(src);
    dst[0] = v.x, dst[1] = v.y;
}

template <typename T, typename A, int BM, int BN, int BK, int TM, int TN, bool XK, bool YK>
__device__ __forceinline__ void gemm_simt(const GemmParams& p) {
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    constexpr int PAD = 16 / sizeof(A) > 4 ? 16 / sizeof(A) : 4;
    constexpr int XE = BM * BK / NT, YE = BN * BK / NT;  // elements each thread loads per step
    static_assert(NT == 256, "256 threads");
    static_assert(BM * BK % NT == 0 && BN * BK % NT == 0, "tiles divide among the threads");
    __shared__ __align__(16) A xs[2][BK][BM + PAD];
    __shared__ __align__(16) A ys[2][BK][BN + PAD];

    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const long long bz = blockIdx.y;
    const T* X = reinterpret_cast<const T*>(p.x) + bz * p.sx;
    const T* Y = reinterpret_cast<const T*>(p.y) + bz * p.sy;
    T* D = reinterpret_cast<T*>(p.d) + bz * p.sd;

    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    const int tile = blockIdx.x;
    const int per_group = 8 * tiles_n;
    const int first_m = (tile / per_group) * 8;
    const int gsize = min(tiles_m - first_m, 8);
    const int tm = first_m + (tile % per_group) % gsize;
    const int tn = (tile % per_group) / gsize;
    const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;

    A xr[XE], yr[YE];
    auto load = [&](long long k0) {
#pragma unroll
        for (int e = 0; e < XE; ++e) {
            const int i = tid + e * NT;
            const int r = XK ? i / BK : i % BM, kk = XK ? i % BK : i / BM;
            const long long gr = m0 + r, gk = k0 + kk;
            xr[e] = (gr < p.m && gk < p.k) ? Cvt<T, A>::to(XK ? X[gr * p.ldx + gk] : X[gr + gk * p.ldx]) : A(0);
        }
#pragma unroll
        for (int e = 0; e < YE; ++e) {
            const int i = tid + e * NT;
            const int c = YK ? i / BK : i % BN, kk = YK ? i % BK : i / BN;
            const long long gc = n0 + c, gk = k0 + kk;
            yr[e] = (gc < p.n && gk < p.k) ? Cvt<T, A>::to(YK ? Y[gc * p.ldy + gk] : Y[gk * p.ldy + gc]) : A(0);
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int e = 0; e < XE; ++e) {
            const int i = tid + e * NT;
            const int r = XK ? i / BK : i % BM, kk = XK ? i % BK : i / BM;
            xs[buf][kk][r] = xr[e];
        }
#pragma unroll
        for (int e = 0; e < YE; ++e) {
            const int i = tid + e * NT;
            const int c = YK ? i / BK : i % BN, kk = YK ? i % BK : i / BN;
            ys[buf][kk][c] = yr[e];
        }
    };

    A acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = A(0);

    const int KT = (int)((p.k + BK - 1) / BK);
    if (KT > 0) {
        load(0);
        store(0);
        __syncthreads();
    }
    for (int kt = 0; kt < KT; ++kt) {
        const int buf = kt & 1;
        if (kt + 1 < KT) load((long long)(kt + 1) * BK);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            A a[TM], b[TN];
            lds<A, TM / 2>(a, &xs[buf][kk][ty * (TM / 2)]);
            lds<A, TM / 2>(a + TM / 2, &xs[buf][kk][BM / 2 + ty * (TM / 2)]);
            lds<A, TN / 2>(b, &ys[buf][kk][tx * (TN / 2)]);
            lds<A, TN / 2>(b + TN / 2, &ys[buf][kk][BN / 2 + tx * (TN / 2)]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < KT) store(buf ^ 1);
        __syncthreads();
    }

    // Epilogue, one register row (i) of every thread at a time through shared memory, so that the
    // rolled loop that applies alpha, beta * D, bias and the activation exists once in the code
    // (an unrolled TM x TN epilogue would inline the activation TM * TN times) and stores to D are
    // coalesced.
    __shared__ __align__(16) A cbuf[TY][BN];
    const A alpha = (A)p.alpha, beta = (A)p.beta;
    const T* bias = reinterpret_cast<const T*>(p.bias);
    const int cols = (int)min((long long)BN, p.n - n0);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j)
            cbuf[ty][j < TN / 2 ? tx * (TN / 2) + j : BN / 2 + tx * (TN / 2) + j - TN / 2] = acc[i][j];
        __syncthreads();
        const int rofs = i < TM / 2 ? i : BM / 2 + i - TM / 2;  // row of thread-row r: r * TM/2 + rofs
#pragma unroll 1
        for (int e = tid; e < TY * BN; e += NT) {
            const int rr = e / BN, c = e % BN;
            const long long r = m0 + rr * (TM / 2) + rofs;
            if (r >= p.m || c >= cols) continue;
            A v = alpha * cbuf[rr][c];
            T* dp = D + r * p.ldd + (n0 + c);
            if (beta != A(0)) v += beta * Cvt<T, A>::to(*dp);
            if (bias) v += Cvt<T, A>::to(bias[n0 + c]);
            if (p.act) v = activate(v, p.act);
            *dp = Cvt<T, A>::from(v);
        }
        __syncthreads();
    }
}

#define GEMM_SIMT(NAME, T, A, BM, BN, BK, TM, TN, XK, YK)                                             \
    extern "C" __global__ void __launch_bounds__(256) NAME(GemmParams p) {                              \
        gemm_simt<T, A, BM, BN, BK, TM, TN, XK, YK>(p);                                                \
    }
#define GEMM_SIMT_OPS(TNAME, T, A, TILE, BM, BN, BK, TM, TN)                                           \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_nn, T, A, BM, BN, BK, TM, TN, true, false)                  \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_nt, T, A, BM, BN, BK, TM, TN, false, false)                 \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_tn, T, A, BM, BN, BK, TM, TN, true, true)                   \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_tt, T, A, BM, BN, BK, TM, TN, false, true)

GEMM_SIMT_OPS(f32, float, float, l, 128, 128, 8, 8, 8)
GEMM_SIMT_OPS(f32, float, float, s, 64, 64, 8, 4, 4)
GEMM_SIMT_OPS(f64, double, double, s, 64, 64, 8, 4, 4)
GEMM_SIMT_OPS(f16, __half, float, s, 64, 64, 8, 4, 4)
GEMM_SIMT_OPS(bf16, __nv_bfloat16, float, s, 64, 64, 8, 4, 4)
