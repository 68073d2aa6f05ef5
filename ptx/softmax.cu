// cudrv module `softmax`: row-wise softmax of a row-major matrix, f32 and f64.
//
//   out[r, c] = exp(x[r, c] - m_r) / sum_k exp(x[r, k] - m_r),   m_r = max_k x[r, k]
//
// Launch contract:
//   block = (256, 1, 1)  -- required (__launch_bounds__(256)). Any block size that is a
//                           multiple of 32 and <= 256 also works; others must not be used.
//   grid  = (G, 1, 1), any G >= 1; block b handles rows b, b + G, b + 2G, ... so G may be
//           smaller than rows (e.g. G = min(rows, some cap)).
// One block owns a whole row; its threads stride over the columns. rows or cols may be 0
// (nothing is written). out may equal x (in place): passes 1 and 2 read the row and end in a
// block barrier before pass 3 writes anything; in pass 3 each element is re-read and then
// written by the same thread; rows are disjoint between blocks and between loop iterations.
// Partially overlapping out/x is not supported.
//
// Numerics: subtracting the row max keeps every exp argument <= 0, so no overflow; the row sum
// is >= 1. Pass 3 recomputes exp instead of storing it. A NaN anywhere in a row makes that
// whole row NaN (the max propagates NaN); a row containing +inf, or a row of all -inf, gives
// NaN too (inf - inf), matching the usual framework behaviour.

// (Enumerators rather than namespace-scope constexpr variables: NVRTC emits the latter as
// .global variables in the PTX.)
enum : unsigned { SOFTMAX_BLOCK = 256, WARP = 32 };

template <typename T> struct Math;
template <> struct Math<float> {
    static __device__ __forceinline__ float exp(float x) { return expf(x); }
    static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
};
template <> struct Math<double> {
    static __device__ __forceinline__ double exp(double x) { return ::exp(x); }
    static __device__ __forceinline__ double neg_inf() {
        return __longlong_as_double((long long)0xfff0000000000000ull);
    }
};

template <typename T> struct SumOp {
    static __device__ __forceinline__ T apply(T a, T b) { return a + b; }
};
// NaN-propagating max.
template <typename T> struct MaxOp {
    static __device__ __forceinline__ T apply(T a, T b) { return (a > b || a != a) ? a : b; }
};

template <typename T, typename Op>
__device__ __forceinline__ T warp_allreduce(T v) {
#pragma unroll
    for (int offset = WARP / 2; offset > 0; offset >>= 1) {
        v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}

// Reduces v over the whole block and returns the result to every thread.
// scratch has one slot per warp plus one broadcast slot. Consecutive calls may reuse the same
// scratch without an extra barrier: the per-warp slots are only rewritten after the caller has
// passed this call's second barrier (by which time warp 0 has read them), and the broadcast
// slot is only rewritten after the next call's first barrier (by which time every thread has
// read it).
template <typename T, typename Op>
__device__ __forceinline__ T block_allreduce(T v, T identity, T* scratch) {
    const unsigned lane = threadIdx.x % WARP;
    const unsigned warp = threadIdx.x / WARP;
    const unsigned nwarps = (blockDim.x + WARP - 1) / WARP;
    v = warp_allreduce<T, Op>(v);
    if (lane == 0) {
        scratch[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? scratch[lane] : identity;
        v = warp_allreduce<T, Op>(v);
        if (lane == 0) {
            scratch[SOFTMAX_BLOCK / WARP] = v;
        }
    }
    __syncthreads();
    return scratch[SOFTMAX_BLOCK / WARP];
}

template <typename T>
__device__ __forceinline__ void softmax_rows_impl(T* out, const T* x, unsigned rows, unsigned cols) {
    __shared__ T scratch[SOFTMAX_BLOCK / WARP + 1];
    if (cols == 0) {
        return;
    }
    for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + (size_t)r * cols;
        T* outr = out + (size_t)r * cols;

        // Pass 1: row max.
        T m = Math<T>::neg_inf();
        for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
            m = MaxOp<T>::apply(m, xr[c]);
        }
        m = block_allreduce<T, MaxOp<T>>(m, Math<T>::neg_inf(), scratch);

        // Pass 2: sum of exp(x - max).
        T s = T(0);
        for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
            s += Math<T>::exp(xr[c] - m);
        }
        s = block_allreduce<T, SumOp<T>>(s, T(0), scratch);

        // Pass 3: normalise (writes may alias the reads above; see header).
        for (unsigned c = threadIdx.x; c < cols; c += blockDim.x) {
            outr[c] = Math<T>::exp(xr[c] - m) / s;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_f32(float* out, const float* x, unsigned int rows, unsigned int cols) {
    softmax_rows_impl<float>(out, x, rows, cols);
}

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_f64(double* out, const double* x, unsigned int rows, unsigned int cols) {
    softmax_rows_impl<double>(out, x, rows, cols);
}
