// cudrv module `elementwise`: BLAS-1 style vector ops and activations, f32 and f64.
//
// Launch contract: 1-D, any grid and any block size. Every kernel walks its range with a
// grid-stride loop, so each element is handled exactly once whatever the launch shape (the Rust
// side uses block = 256, grid = min(ceil(n / 256), 4096)). n may be 0. Indices are 64-bit.
//
// Aliasing: scale/axpy/axpby/activations may run in place (y == x, out == x) and add/mul may
// have out == a, out == b or a == b; element i is read and then written by the same thread in
// the same iteration, so exact aliasing is safe. That is why no pointer here is __restrict__.
// Partially overlapping (shifted) ranges are not supported.
//
// Numerics: IEEE, no fast-math. axpy/axpby use an explicit fma. See docs/kernels/elementwise.md.

// ---------------------------------------------------------------------------------------------
// Per-type math (NVRTC provides these device functions without any header).
template <typename T> struct Math;

template <> struct Math<float> {
    static __device__ __forceinline__ float exp(float x) { return expf(x); }
    static __device__ __forceinline__ float tanh(float x) { return tanhf(x); }
    static __device__ __forceinline__ float erfc(float x) { return erfcf(x); }
    static __device__ __forceinline__ float fma(float a, float b, float c) { return fmaf(a, b, c); }
    static __device__ __forceinline__ float sqrt1_2() { return 0.707106781186547524400844362104849039f; }
};

template <> struct Math<double> {
    static __device__ __forceinline__ double exp(double x) { return ::exp(x); }
    static __device__ __forceinline__ double tanh(double x) { return ::tanh(x); }
    static __device__ __forceinline__ double erfc(double x) { return ::erfc(x); }
    static __device__ __forceinline__ double fma(double a, double b, double c) { return ::fma(a, b, c); }
    static __device__ __forceinline__ double sqrt1_2() { return 0.707106781186547524400844362104849039; }
};

// ---------------------------------------------------------------------------------------------
// Grid-stride driver: calls f(i) for every i in [0, n) exactly once across the whole grid.
template <typename F>
__device__ __forceinline__ void grid_stride(size_t n, F f) {
    const size_t stride = (size_t)blockDim.x * (size_t)gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        f(i);
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar activations.

// relu(x) = max(x, 0); NaN stays NaN (x < 0 is false for NaN), relu(-0.0) = -0.0.
template <typename T>
__device__ __forceinline__ T relu_op(T x) {
    return x < T(0) ? T(0) : x;
}

// sigmoid(x) = 1 / (1 + exp(-x)), evaluated so that exp never overflows:
//   x >= 0: 1 / (1 + exp(-x))        exp(-x) in (0, 1]
//   x <  0: exp(x) / (1 + exp(x))    exp(x)  in (0, 1)
// so sigmoid(+inf) = 1, sigmoid(-inf) = 0, no inf/inf NaN; sigmoid(NaN) = NaN (takes the
// second branch, exp(NaN) = NaN).
template <typename T>
__device__ __forceinline__ T sigmoid_op(T x) {
    if (x >= T(0)) {
        return T(1) / (T(1) + Math<T>::exp(-x));
    }
    const T e = Math<T>::exp(x);
    return e / (T(1) + e);
}

template <typename T>
__device__ __forceinline__ T tanh_op(T x) {
    return Math<T>::tanh(x);
}

// Exact (erf) GELU: 0.5 * x * (1 + erf(x / sqrt(2))).
// Evaluated as 0.5 * x * erfc(-x / sqrt(2)), which is the same function (1 + erf(z) =
// erfc(-z)) but keeps full relative accuracy for negative x, where 1 + erf(z) would cancel
// (at x = -5 in f32, 1 + erf loses about 3 decimal digits). x / sqrt(2) is computed as
// x * (1/sqrt(2)) rounded to T. When the erfc factor underflows to 0 (x < about -14 in f32,
// -38 in f64) the result is +0, which also makes gelu(-inf) = 0 rather than -inf * 0 = NaN.
// gelu(+inf) = +inf, gelu(NaN) = NaN.
template <typename T>
__device__ __forceinline__ T gelu_op(T x) {
    const T h = T(0.5) * Math<T>::erfc(-x * Math<T>::sqrt1_2());
    return h == T(0) ? T(0) : x * h;
}

// ---------------------------------------------------------------------------------------------
// Kernel bodies.

template <typename T>
__device__ __forceinline__ void fill_impl(T* out, T value, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = value; });
}

template <typename T>
__device__ __forceinline__ void scale_impl(T* y, const T* x, T alpha, size_t n) {
    grid_stride(n, [=](size_t i) { y[i] = alpha * x[i]; });
}

template <typename T>
__device__ __forceinline__ void axpy_impl(T* y, const T* x, T alpha, size_t n) {
    grid_stride(n, [=](size_t i) { y[i] = Math<T>::fma(alpha, x[i], y[i]); });
}

template <typename T>
__device__ __forceinline__ void axpby_impl(T* y, const T* x, T alpha, T beta, size_t n) {
    grid_stride(n, [=](size_t i) { y[i] = Math<T>::fma(alpha, x[i], beta * y[i]); });
}

template <typename T>
__device__ __forceinline__ void add_impl(T* out, const T* a, const T* b, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = a[i] + b[i]; });
}

template <typename T>
__device__ __forceinline__ void mul_impl(T* out, const T* a, const T* b, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = a[i] * b[i]; });
}

template <typename T>
__device__ __forceinline__ void relu_impl(T* out, const T* x, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = relu_op(x[i]); });
}

template <typename T>
__device__ __forceinline__ void sigmoid_impl(T* out, const T* x, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = sigmoid_op(x[i]); });
}

template <typename T>
__device__ __forceinline__ void tanh_impl(T* out, const T* x, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = tanh_op(x[i]); });
}

template <typename T>
__device__ __forceinline__ void gelu_impl(T* out, const T* x, size_t n) {
    grid_stride(n, [=](size_t i) { out[i] = gelu_op(x[i]); });
}

// ---------------------------------------------------------------------------------------------
// Exported kernels (unmangled names; parameter lists are a contract with the Rust side).

#define CUDRV_ELEMENTWISE(t, T)                                                                   \
    extern "C" __global__ void fill_##t(T* out, T value, size_t n) {                            \
        fill_impl<T>(out, value, n);                                                            \
    }                                                                                           \
    extern "C" __global__ void scale_##t(T* y, const T* x, T alpha, size_t n) {                 \
        scale_impl<T>(y, x, alpha, n);                                                          \
    }                                                                                           \
    extern "C" __global__ void axpy_##t(T* y, const T* x, T alpha, size_t n) {                  \
        axpy_impl<T>(y, x, alpha, n);                                                           \
    }                                                                                           \
    extern "C" __global__ void axpby_##t(T* y, const T* x, T alpha, T beta, size_t n) {         \
        axpby_impl<T>(y, x, alpha, beta, n);                                                    \
    }                                                                                           \
    extern "C" __global__ void add_##t(T* out, const T* a, const T* b, size_t n) {              \
        add_impl<T>(out, a, b, n);                                                              \
    }                                                                                           \
    extern "C" __global__ void mul_##t(T* out, const T* a, const T* b, size_t n) {              \
        mul_impl<T>(out, a, b, n);                                                              \
    }                                                                                           \
    extern "C" __global__ void relu_##t(T* out, const T* x, size_t n) {                         \
        relu_impl<T>(out, x, n);                                                                \
    }                                                                                           \
    extern "C" __global__ void sigmoid_##t(T* out, const T* x, size_t n) {                      \
        sigmoid_impl<T>(out, x, n);                                                             \
    }                                                                                           \
    extern "C" __global__ void tanh_##t(T* out, const T* x, size_t n) {                         \
        tanh_impl<T>(out, x, n);                                                                \
    }                                                                                           \
    extern "C" __global__ void gelu_##t(T* out, const T* x, size_t n) {                         \
        gelu_impl<T>(out, x, n);                                                                \
    }

CUDRV_ELEMENTWISE(f32, float)
CUDRV_ELEMENTWISE(f64, double)
