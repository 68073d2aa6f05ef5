// Column-major GEMM and GEMV for cudrv-compat's `cublas` module, with cuBLAS's conventions:
// op(A) is m x k, op(B) is k x n, C is m x n with leading dimension ldc; transa/transb are
// 0 (N) or 1 (T); beta == 0 means C (or y) is not read. f16/bf16 accumulate in f32.
// Compiled once to blas.ptx by gen.py (NVRTC 12.0, compute_80, PTX ISA 8.0); no headers needed.
// The fallback behind cudrv::blas: used for streams without a cudrv stream, or with
// CUDRV_COMPAT_BLAS=bundled.

typedef unsigned short u16;
struct h16 { u16 v; };
struct b16 { u16 v; };

__device__ __forceinline__ float ld(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ double ld(const double* p, long long i) { return p[i]; }
__device__ __forceinline__ float ld(const h16* p, long long i) {
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(p[i].v));
    return r;
}
__device__ __forceinline__ float ld(const b16* p, long long i) {
    return __uint_as_float(((unsigned)p[i].v) << 16);
}
__device__ __forceinline__ void st(float* p, long long i, float x) { p[i] = x; }
__device__ __forceinline__ void st(double* p, long long i, double x) { p[i] = x; }
__device__ __forceinline__ void st(h16* p, long long i, float x) {
    u16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
    p[i].v = r;
}
__device__ __forceinline__ void st(b16* p, long long i, float x) {
    u16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    p[i].v = r;
}

#define TS 16

template <typename T, typename A>
__device__ void gemm(int ta, int tb, int m, int n, int k, A alpha, const T* a, int lda, long long sa,
                     const T* b, int ldb, long long sb, A beta, T* c, int ldc, long long sc) {
    __shared__ A as[TS][TS + 1];
    __shared__ A bs[TS][TS + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.x * TS + tx;
    int j = blockIdx.y * TS + ty;
    long long z = blockIdx.z;
    a += z * sa;
    b += z * sb;
    c += z * sc;
    A acc = 0;
    for (int p0 = 0; p0 < k; p0 += TS) {
        int p = p0 + ty;
        as[tx][ty] = (i < m && p < k)
            ? (A)ld(a, ta ? (long long)p + (long long)i * lda : (long long)i + (long long)p * lda) : (A)0;
        int q = p0 + tx;
        bs[tx][ty] = (q < k && j < n)
            ? (A)ld(b, tb ? (long long)j + (long long)q * ldb : (long long)q + (long long)j * ldb) : (A)0;
        __syncthreads();
#pragma unroll
        for (int r = 0; r < TS; r++) acc += as[tx][r] * bs[r][ty];
        __syncthreads();
    }
    if (i < m && j < n) {
        long long o = (long long)i + (long long)j * ldc;
        A v = alpha * acc;
        if (beta != (A)0) v += beta * (A)ld(c, o);
        st(c, o, v);
    }
}

template <typename T, typename A>
__device__ void gemv(int trans, int m, int n, A alpha, const T* a, int lda, const T* x, int incx, A beta, T* y,
                     int incy) {
    int rows = trans ? n : m;  // length of y
    int cols = trans ? m : n;  // length of x
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= rows) return;
    A acc = 0;
    for (int s = 0; s < cols; s++) {
        long long ai = trans ? (long long)s + (long long)t * lda : (long long)t + (long long)s * lda;
        long long xi = incx > 0 ? (long long)s * incx : (long long)(cols - 1 - s) * (-incx);
        acc += (A)ld(a, ai) * (A)ld(x, xi);
    }
    long long yi = incy > 0 ? (long long)t * incy : (long long)(rows - 1 - t) * (-incy);
    A v = alpha * acc;
    if (beta != (A)0) v += beta * (A)ld(y, yi);
    st(y, yi, v);
}

#define GEMM(name, T, A)                                                                                   \
    extern "C" __global__ void name(int ta, int tb, int m, int n, int k, A alpha, const T* a, int lda,     \
                                    long long sa, const T* b, int ldb, long long sb, A beta, T* c, int ldc, \
                                    long long sc) {                                                        \
        gemm<T, A>(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc);                      \
    }
GEMM(compat_gemm_f32, float, float)
GEMM(compat_gemm_f64, double, double)
GEMM(compat_gemm_f16, h16, float)
GEMM(compat_gemm_bf16, b16, float)

#define GEMV(name, T, A)                                                                                  \
    extern "C" __global__ void name(int trans, int m, int n, A alpha, const T* a, int lda, const T* x,    \
                                    int incx, A beta, T* y, int incy) {                                   \
        gemv<T, A>(trans, m, n, alpha, a, lda, x, incx, beta, y, incy);                                   \
    }
GEMV(compat_gemv_f32, float, float)
GEMV(compat_gemv_f64, double, double)
