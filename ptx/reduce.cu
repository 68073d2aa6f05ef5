// cudrv module `reduce`: sum and max of a vector, f32 and f64, in two passes.
//
// Launch contract:
//   block = (256, 1, 1)  -- required (kernels are compiled with __launch_bounds__(256); the
//                           shared scratch holds one slot per warp, 8 warps). Any block size
//                           that is a multiple of 32 and <= 256 also works; others must not be
//                           used.
//   grid  = (G, 1, 1), any G >= 1 (the Rust side uses G <= 1024).
// Every block grid-strides over x[0, n) and writes exactly one value, partials[blockIdx.x]:
// the reduction of the elements it visited (the identity if it visited none). So partials must
// hold at least G elements. A second launch with grid = 1 over the G partials (n = G) leaves
// the final result in partials[0]; in that grid = 1 pass partials may be the same buffer as x
// (all reads finish before the single write). With G > 1, partials must not overlap x.
//
// Identities: sum of an empty range is +0, max of an empty range is -infinity.
// NaN: max propagates NaN (any NaN element makes the result NaN); sum propagates it by IEEE.
// Order: each thread accumulates serially in T over its strided elements, then a warp
// butterfly (shfl_xor) tree and a tree over the 8 warp results. The result is deterministic
// for a fixed (n, G, block), but differs in rounding from a sequential sum.

// (Enumerators rather than namespace-scope constexpr variables: NVRTC emits the latter as
// .global variables in the PTX.)
enum : unsigned { REDUCE_BLOCK = 256, WARP = 32 };

template <typename T> struct Limits;
template <> struct Limits<float> {
    static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
};
template <> struct Limits<double> {
    static __device__ __forceinline__ double neg_inf() {
        return __longlong_as_double((long long)0xfff0000000000000ull);
    }
};

template <typename T> struct SumOp {
    static __device__ __forceinline__ T identity() { return T(0); }
    static __device__ __forceinline__ T apply(T a, T b) { return a + b; }
};

// max that returns NaN if either operand is NaN (fmax would drop it).
template <typename T> struct MaxOp {
    static __device__ __forceinline__ T identity() { return Limits<T>::neg_inf(); }
    static __device__ __forceinline__ T apply(T a, T b) { return (a > b || a != a) ? a : b; }
};

// Butterfly reduction over a full warp: every lane ends with the warp's result.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset >>= 1) {
        v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}

template <typename T, typename Op>
__device__ __forceinline__ void reduce_impl(T* partials, const T* x, size_t n) {
    __shared__ T warp_results[REDUCE_BLOCK / WARP];

    // 1. Per-thread serial accumulation over a grid-stride walk.
    T acc = Op::identity();
    const size_t stride = (size_t)blockDim.x * (size_t)gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        acc = Op::apply(acc, x[i]);
    }

    // 2. Reduce within each warp, then across the block's warps in warp 0.
    const unsigned lane = threadIdx.x % WARP;
    const unsigned warp = threadIdx.x / WARP;
    const unsigned nwarps = (blockDim.x + WARP - 1) / WARP;
    acc = warp_reduce<T, Op>(acc);
    if (lane == 0) {
        warp_results[warp] = acc;
    }
    __syncthreads();
    if (warp == 0) {
        acc = lane < nwarps ? warp_results[lane] : Op::identity();
        acc = warp_reduce<T, Op>(acc);
        if (lane == 0) {
            partials[blockIdx.x] = acc;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) reduce_sum_f32(float* partials, const float* x, size_t n) {
    reduce_impl<float, SumOp<float>>(partials, x, n);
}

extern "C" __global__ void __launch_bounds__(256) reduce_sum_f64(double* partials, const double* x, size_t n) {
    reduce_impl<double, SumOp<double>>(partials, x, n);
}

extern "C" __global__ void __launch_bounds__(256) reduce_max_f32(float* partials, const float* x, size_t n) {
    reduce_impl<float, MaxOp<float>>(partials, x, n);
}

extern "C" __global__ void __launch_bounds__(256) reduce_max_f64(double* partials, const double* x, size_t n) {
    reduce_impl<double, MaxOp<double>>(partials, x, n);
}
