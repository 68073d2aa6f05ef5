// cudrv module `gemv`: y = alpha * op(A) x + beta * y, A column-major (m x n, leading dimension
// lda), f32 and f64, any vector strides. The axpby (alpha, beta) is fused into the product.
//
// Kernels (T = f32 | f64):
//   gemv_n_<T>: y (length m) = alpha * A x + beta * y.
//     block = (32, 8, 1); grid = (ceil(m / 128), splits, 1). Lane tx owns rows r0 + tx + 32 u
//     (u < 4); warp ty sums columns j = c0 + ty + 8 v of its split's column range; the 8 warps'
//     sums meet in shared memory. splits == 1: the block writes y itself. splits > 1: it writes
//     its partial sums to work[split * m + row] and gemv_finish_<T> completes y.
//   gemv_t_<T>: y (length n) = alpha * A^T x + beta * y.
//     block = (256, 1, 1) = 8 warps; grid = (ceil(n / 8), splits, 1). Warp w owns column
//     j = 8 * blockIdx.x + w, lanes stride down the rows of the split's row range, then a
//     shuffle reduction. splits > 1: partials to work[split * n + j], then gemv_finish_<T>.
//   gemv_finish_<T>(y, work, len, splits, alpha, beta, incy): y[i] = alpha * sum_s work[s*len+i]
//     + beta * y[i]; block = (256, 1, 1), grid = (ceil(len / 256), 1, 1).
// x and y are passed already offset for negative increments (element i at x[i * incx]).
// beta == 0: y is not read. Column / row ranges of the splits: chunk = ceil(len / splits).

struct GemvParams {
    unsigned long long a, x, y, work;
    long long m, n, lda, incx, incy, chunk;
    double alpha, beta;
    int splits;
    int pad;
};

enum : int { GEMV_ROWS = 128, GEMV_WARPS = 8 };

template <typename T> __device__ __forceinline__ T ldg(const T* p) { return __ldg(p); }

template <typename T> __device__ __forceinline__ void gemv_n(const GemvParams& p) {
    __shared__ T red[GEMV_WARPS][GEMV_ROWS];
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long r0 = (long long)blockIdx.x * GEMV_ROWS;
    const long long c_begin = (long long)blockIdx.y * p.chunk;
    const long long c_end = min(c_begin + p.chunk, p.n);
    T s[4] = {T(0), T(0), T(0), T(0)};
    bool in[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) in[u] = r0 + tx + 32 * u < p.m;
    long long j = c_begin + ty;
    // Four columns per step: 16 independent loads in flight per thread.
    for (; j + 3 * GEMV_WARPS < c_end; j += 4 * GEMV_WARPS) {
        T xv[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) xv[v] = ldg(x + (j + v * GEMV_WARPS) * p.incx);
        T av[4][4];
#pragma unroll
        for (int v = 0; v < 4; ++v)
#pragma unroll
            for (int u = 0; u < 4; ++u)
                av[v][u] = in[u] ? ldg(A + (j + v * GEMV_WARPS) * p.lda + r0 + tx + 32 * u) : T(0);
#pragma unroll
        for (int v = 0; v < 4; ++v)
#pragma unroll
            for (int u = 0; u < 4; ++u) s[u] += av[v][u] * xv[v];
    }
    for (; j < c_end; j += GEMV_WARPS) {
        const T xv = ldg(x + j * p.incx);
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (in[u]) s[u] += ldg(A + j * p.lda + r0 + tx + 32 * u) * xv;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) red[ty][tx + 32 * u] = s[u];
    __syncthreads();
    const int t = ty * 32 + tx;
    if (t < GEMV_ROWS) {
        const long long r = r0 + t;
        if (r < p.m) {
            T sum = T(0);
#pragma unroll
            for (int w = 0; w < GEMV_WARPS; ++w) sum += red[w][t];
            if (p.splits == 1) {
                T* y = reinterpret_cast<T*>(p.y) + r * p.incy;
                const T v = (T)p.alpha * sum;
                *y = p.beta != 0.0 ? v + (T)p.beta * *y : v;
            } else {
                reinterpret_cast<T*>(p.work)[blockIdx.y * p.m + r] = sum;
            }
        }
    }
}

template <typename T> __device__ __forceinline__ void gemv_t(const GemvParams& p) {
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long j = (long long)blockIdx.x * GEMV_WARPS + w;
    if (j >= p.n) return;
    const long long r_begin = (long long)blockIdx.y * p.chunk;
    const long long r_end = min(r_begin + p.chunk, p.m);
    const T* col = A + j * p.lda;
    T s0 = T(0), s1 = T(0);
    long long i = r_begin + lane;
    for (; i + 32 * 7 < r_end; i += 32 * 8) {
        T av[8], xv[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) av[u] = ldg(col + i + 32 * u);
#pragma unroll
        for (int u = 0; u < 8; ++u) xv[u] = ldg(x + (i + 32 * u) * p.incx);
#pragma unroll
        for (int u = 0; u < 8; u += 2) {
            s0 += av[u] * xv[u];
            s1 += av[u + 1] * xv[u + 1];
        }
    }
    for (; i < r_end; i += 32) s0 += ldg(col + i) * ldg(x + i * p.incx);
    T s = s0 + s1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) {
        if (p.splits == 1) {
            T* y = reinterpret_cast<T*>(p.y) + j * p.incy;
            const T v = (T)p.alpha * s;
            *y = p.beta != 0.0 ? v + (T)p.beta * *y : v;
        } else {
            reinterpret_cast<T*>(p.work)[blockIdx.y * p.n + j] = s;
        }
    }
}

template <typename T>
__device__ __forceinline__ void gemv_finish(T* y, const T* work, long long len, int splits, double alpha, double beta,
                                            long long incy) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    T s = T(0);
    for (int k = 0; k < splits; ++k) s += work[k * len + i];
    T* yp = y + i * incy;
    const T v = (T)alpha * s;
    *yp = beta != 0.0 ? v + (T)beta * *yp : v;
}

#define GEMV(T, N)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256) gemv_n_##N(GemvParams p) { gemv_n<T>(p); }       \
    extern "C" __global__ void __launch_bounds__(256) gemv_t_##N(GemvParams p) { gemv_t<T>(p); }       \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
        gemv_finish_##N(T* y, const T* work, long long len, int splits, double alpha, double beta,      \
                        long long incy) {                                                               \
        gemv_finish<T>(y, work, len, splits, alpha, beta, incy);                                        \
    }
GEMV(float, f32)
GEMV(double, f64)
