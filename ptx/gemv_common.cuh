#pragma once
// ptx/gemv_common.cuh: the GEMV kernels' templates, shared by the modules `gemv` (compute_80) and
// `gemv90` (compute_90, the cluster variant of the N kernel). The kernels, their launch contract
// and the parameter block are described in gemv.cu.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cluster.cuh"

struct GemvParams {
    unsigned long long a, x, y, work;
    long long m, n, lda, incx, incy, chunk;
    double alpha, beta;
    int splits;
    int pad;
};

enum : int { GEMV_WARPS = 8 };

// Storage type T, accumulator Acc, and the element loads.
template <typename T> struct El;
template <> struct El<float> {
    using Acc = float;
    static __device__ __forceinline__ float ld(const float* p) { return __ldg(p); }
    static __device__ __forceinline__ float ld_a(const float* p) { return __ldcg(p); }
    static __device__ __forceinline__ float to(float v) { return v; }
    static __device__ __forceinline__ float from(float v) { return v; }
    // 16 bytes = 4 elements.
    static __device__ __forceinline__ void unpack(uint4 q, float* o) {
        o[0] = __uint_as_float(q.x);
        o[1] = __uint_as_float(q.y);
        o[2] = __uint_as_float(q.z);
        o[3] = __uint_as_float(q.w);
    }
};
template <> struct El<double> {
    using Acc = double;
    static __device__ __forceinline__ double ld(const double* p) { return __ldg(p); }
    static __device__ __forceinline__ double ld_a(const double* p) { return __ldcg(p); }
    static __device__ __forceinline__ double to(double v) { return v; }
    static __device__ __forceinline__ double from(double v) { return v; }
    static __device__ __forceinline__ void unpack(uint4 q, double* o) {
        o[0] = __hiloint2double((int)q.y, (int)q.x);
        o[1] = __hiloint2double((int)q.w, (int)q.z);
    }
};
// f16 / bf16: loaded as 16-bit words and widened to f32 by W (lo / hi: the element in the low /
// high half of a 32-bit word); the two types differ only in W and their conversions.
struct HalfWords {
    static __device__ __forceinline__ float lo(unsigned int w) {
        return __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
    }
    static __device__ __forceinline__ float hi(unsigned int w) {
        return __half2float(__ushort_as_half((unsigned short)(w >> 16)));
    }
};
struct Bf16Words {
    static __device__ __forceinline__ float lo(unsigned int w) { return __uint_as_float(w << 16); }
    static __device__ __forceinline__ float hi(unsigned int w) { return __uint_as_float(w & 0xffff0000u); }
};
template <typename T, typename W> struct El16 {
    using Acc = float;
    static __device__ __forceinline__ float ld(const T* p) {
        return W::lo(__ldg(reinterpret_cast<const unsigned short*>(p)));
    }
    static __device__ __forceinline__ float ld_a(const T* p) {
        return W::lo(__ldcg(reinterpret_cast<const unsigned short*>(p)));
    }
    static __device__ __forceinline__ void unpack(uint4 q, float* o) {
        const unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            o[2 * i] = W::lo(w[i]);
            o[2 * i + 1] = W::hi(w[i]);
        }
    }
};
template <> struct El<__half> : El16<__half, HalfWords> {
    static __device__ __forceinline__ float to(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <> struct El<__nv_bfloat16> : El16<__nv_bfloat16, Bf16Words> {
    static __device__ __forceinline__ float to(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// Loads of A (ld.global.cg: it streams through once, so it is cached in L2 only) and x
// (ld.global.nc: blocks share it). A "raw" value is what one load returns: the element itself
// (VEC == 1) or 16 bytes (VEC > 1), unpacked to Acc only where it is used, which keeps the
// registers of the loads in flight at 4 per 16 bytes.
template <typename T, int VEC> struct Raw { using type = uint4; };
template <typename T> struct Raw<T, 1> { using type = typename El<T>::Acc; };

// VEC consecutive elements at p, of which the first `valid` exist (zero bits for the rest).
// VEC > 1: p is 16-byte aligned and a full vector is one 16-byte load.
template <typename T, int VEC, bool IS_A>
__device__ __forceinline__ typename Raw<T, VEC>::type load(const T* p, int valid) {
    if constexpr (VEC == 1) {
        using Acc = typename El<T>::Acc;
        return valid > 0 ? (IS_A ? El<T>::ld_a(p) : El<T>::ld(p)) : Acc(0);
    } else {
        if (valid >= VEC) return IS_A ? __ldcg(reinterpret_cast<const uint4*>(p)) : __ldg(reinterpret_cast<const uint4*>(p));
        union {
            uint4 q;
            unsigned short h[8];
            unsigned int w[4];
            unsigned long long d[2];
        } u;
        u.q = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            if (e < valid) {
                if constexpr (sizeof(T) == 2)
                    u.h[e] = __ldg(reinterpret_cast<const unsigned short*>(p) + e);
                else if constexpr (sizeof(T) == 4)
                    u.w[e] = __ldg(reinterpret_cast<const unsigned int*>(p) + e);
                else
                    u.d[e] = __ldg(reinterpret_cast<const unsigned long long*>(p) + e);
            }
        }
        return u.q;
    }
}

template <typename T, int VEC>
__device__ __forceinline__ void unpack(typename Raw<T, VEC>::type r, typename El<T>::Acc* o) {
    if constexpr (VEC == 1)
        o[0] = r;
    else
        El<T>::unpack(r, o);
}

template <typename T>
__device__ __forceinline__ void store_y(T* y, typename El<T>::Acc sum, double alpha, double beta) {
    using Acc = typename El<T>::Acc;
    Acc v = (Acc)alpha * sum;
    if (beta != 0.0) v += (Acc)beta * El<T>::to(*y);
    *y = El<T>::from(v);
}

__device__ __forceinline__ int clamp_valid(long long left, int vec) {
    return left <= 0 ? 0 : (left >= vec ? vec : (int)left);
}

// Row t's sum over the W warps' partial sums in shared memory, in warp order.
template <typename Acc, int W, int ROWS>
__device__ __forceinline__ Acc warps_sum(const Acc (&red)[W][ROWS], int t) {
    Acc sum = Acc(0);
#pragma unroll
    for (int q = 0; q < W; ++q) sum += red[q][t];
    return sum;
}

// The end of a row tile's reduction split over the CLUSTER blocks of a cluster (compute_90):
// each block adds its W warps' sums of the ROWS rows from r0 into `part`; after a cluster barrier
// block q adds the CLUSTER blocks' sums of rows [q ROWS / CLUSTER, (q + 1) ROWS / CLUSTER) in
// rank order, read from their shared memory, and writes them to y; a second barrier keeps every
// block's sums alive until they have been read. `tid` is the thread's index in its block.
template <typename T, int W, int ROWS, int CLUSTER, typename Acc>
__device__ __forceinline__ void cluster_rows_to_y(const Acc (&red)[W][ROWS], Acc* part, long long r0, int tid,
                                                  const GemvParams& p) {
    for (int t = tid; t < ROWS; t += 32 * W) part[t] = warps_sum(red, t);
    cluster_sync();
    constexpr int MINE = ROWS / CLUSTER;
    const unsigned q = cluster_rank();
    for (int t = tid; t < MINE; t += 32 * W) {
        const int row = (int)q * MINE + t;
        const long long r = r0 + row;
        if (r < p.m) {
            const unsigned addr = (unsigned)__cvta_generic_to_shared(&part[row]);
            Acc sum = Acc(0);
#pragma unroll
            for (int b = 0; b < CLUSTER; ++b) sum += cluster_load(addr, (unsigned)b, Acc(0));
            store_y<T>(reinterpret_cast<T*>(p.y) + r * p.incy, sum, p.alpha, p.beta);
        }
    }
    cluster_sync();
}

// One lane's sums over the columns [j, c_end) step 8 of its rows. FULL: every row exists, so
// the loads need no bounds (the common case; other lanes take FULL = false).
template <typename T, int VEC, int UR, int UC, bool FULL, int WARPS>
__device__ __forceinline__ void n_sums(const T* a0, const T* x, long long j, long long c_end, long long lda,
                                       long long incx, const int* valid, typename El<T>::Acc (*s)[VEC]) {
    using Acc = typename El<T>::Acc;
    // UC columns per step: UC * UR independent loads in flight per thread.
    for (; j + (UC - 1) * WARPS < c_end; j += UC * WARPS) {
        Acc xv[UC];
#pragma unroll
        for (int v = 0; v < UC; ++v) xv[v] = El<T>::ld(x + (j + v * WARPS) * incx);
        typename Raw<T, VEC>::type av[UC][UR];
#pragma unroll
        for (int v = 0; v < UC; ++v)
#pragma unroll
            for (int u = 0; u < UR; ++u)
                av[v][u] = load<T, VEC, true>(a0 + (j + v * WARPS) * lda + 32 * VEC * u, FULL ? VEC : valid[u]);
#pragma unroll
        for (int v = 0; v < UC; ++v)
#pragma unroll
            for (int u = 0; u < UR; ++u) {
                Acc a[VEC];
                unpack<T, VEC>(av[v][u], a);
#pragma unroll
                for (int e = 0; e < VEC; ++e) s[u][e] += a[e] * xv[v];
            }
    }
    for (; j < c_end; j += WARPS) {
        const Acc xv = El<T>::ld(x + j * incx);
#pragma unroll
        for (int u = 0; u < UR; ++u) {
            Acc a[VEC];
            unpack<T, VEC>(load<T, VEC, true>(a0 + j * lda + 32 * VEC * u, FULL ? VEC : valid[u]), a);
#pragma unroll
            for (int e = 0; e < VEC; ++e) s[u][e] += a[e] * xv;
        }
    }
}

// CLUSTER > 1 (compute_90 only, cluster_* from cluster.cuh): the splits of a row tile are the
// CLUSTER blocks of one thread block cluster (grid y = CLUSTER = splits). Each block leaves its
// partial sums of the tile's rows in shared memory; after a cluster barrier block q adds the
// CLUSTER partials of rows [q ROWS / CLUSTER, (q + 1) ROWS / CLUSTER) in rank order, read from
// the other blocks' shared memory, and writes y; a second barrier keeps every block's partials
// alive until they have been read. No workspace, no gemv_finish, the same sums every run.
template <typename T, int VEC, int UR, int UC, int CLUSTER = 1, int WARPS = GEMV_WARPS>
__device__ __forceinline__ void gemv_n(const GemvParams& p) {
    using Acc = typename El<T>::Acc;
    constexpr int ROWS = 32 * VEC * UR;
    static_assert(ROWS % CLUSTER == 0, "the cluster's blocks share a tile's rows");
    __shared__ Acc red[WARPS][ROWS];
    __shared__ Acc part[CLUSTER > 1 ? ROWS : 1];
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long tiles = (p.m + ROWS - 1) / ROWS;
    const long long c_begin = (long long)blockIdx.y * p.chunk;
    const long long c_end = min(c_begin + p.chunk, p.n);
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const long long r0 = tile * ROWS;
        Acc s[UR][VEC];
        int valid[UR];
#pragma unroll
        for (int u = 0; u < UR; ++u) {
            valid[u] = clamp_valid(p.m - (r0 + VEC * tx + 32 * VEC * u), VEC);
#pragma unroll
            for (int e = 0; e < VEC; ++e) s[u][e] = Acc(0);
        }
        const T* a0 = A + r0 + VEC * tx;
        bool full = true;
#pragma unroll
        for (int u = 0; u < UR; ++u) full = full && valid[u] == VEC;
        if (full)
            n_sums<T, VEC, UR, UC, true, WARPS>(a0, x, c_begin + ty, c_end, p.lda, p.incx, valid, s);
        else
            n_sums<T, VEC, UR, UC, false, WARPS>(a0, x, c_begin + ty, c_end, p.lda, p.incx, valid, s);
#pragma unroll
        for (int u = 0; u < UR; ++u)
#pragma unroll
            for (int e = 0; e < VEC; ++e) red[ty][VEC * tx + 32 * VEC * u + e] = s[u][e];
        __syncthreads();
        if constexpr (CLUSTER > 1) {
            cluster_rows_to_y<T, WARPS, ROWS, CLUSTER>(red, part, r0, ty * 32 + tx, p);
        } else {
            for (int t = ty * 32 + tx; t < ROWS; t += 32 * WARPS) {
                const long long r = r0 + t;
                if (r < p.m) {
                    const Acc sum = warps_sum(red, t);
                    if (p.splits == 1) {
                        store_y<T>(reinterpret_cast<T*>(p.y) + r * p.incy, sum, p.alpha, p.beta);
                    } else {
                        reinterpret_cast<Acc*>(p.work)[blockIdx.y * p.m + r] = sum;
                    }
                }
            }
            __syncthreads();
        }
    }
}

// Row strips (N): block b owns the rows [R b, R (b + 1)) of y, R = 32 * VEC with VEC = LB /
// sizeof(T): lane l reads LB bytes (VEC rows from R b + VEC l) of each column, so a warp load is
// R consecutive elements of one column. Warp w of the W takes the columns [w per, (w + 1) per),
// per = ceil(n / W), U = 128 / LB of them per step (128 bytes of A in flight per lane), A read
// with the streaming hint (ld.global.cs: every element is read once). The W warps' sums meet in
// shared memory, added in warp order, and the block writes its rows of y: no split, no
// workspace, no second kernel. Lanes whose rows run past m take every column element by element.
// CLUSTER > 1 (compute_90 only): the strip's columns are split in CLUSTER equal ranges over the
// CLUSTER blocks of a thread block cluster (grid y = CLUSTER, the cluster shape 1 x CLUSTER x 1;
// block y = q takes range q over its W warps). Each block leaves its warps' sums in shared memory;
// after a cluster barrier block q adds the CLUSTER partial sums of rows [q R / C, (q + 1) R / C)
// in rank order and writes them; a second barrier keeps every block's sums alive until read.
template <int LB> struct LaneRaw;
template <> struct LaneRaw<4> { using type = unsigned int; };
template <> struct LaneRaw<8> { using type = uint2; };
template <> struct LaneRaw<16> { using type = uint4; };

template <typename T, int LB>
__device__ __forceinline__ void lane_unpack(typename LaneRaw<LB>::type r, typename El<T>::Acc* o) {
    using Acc = typename El<T>::Acc;
    if constexpr (LB == 16) {
        El<T>::unpack(r, o);
    } else if constexpr (sizeof(T) == 8) {
        o[0] = __hiloint2double((int)r.y, (int)r.x);
    } else {
        Acc t[16 / sizeof(T)];
        if constexpr (LB == 8)
            El<T>::unpack(make_uint4(r.x, r.y, 0u, 0u), t);
        else
            El<T>::unpack(make_uint4(r, 0u, 0u, 0u), t);
#pragma unroll
        for (int e = 0; e < LB / (int)sizeof(T); ++e) o[e] = t[e];
    }
}

template <typename T, int LB, int W, int CLUSTER = 1>
__device__ __forceinline__ void gemv_nr(const GemvParams& p) {
    using Acc = typename El<T>::Acc;
    using Lane = typename LaneRaw<LB>::type;
    constexpr int VEC = LB / (int)sizeof(T), ROWS = 32 * VEC, U = 128 / LB;
    static_assert(ROWS % CLUSTER == 0, "the cluster's blocks share a strip's rows");
    __shared__ Acc red[W][ROWS];
    __shared__ Acc part[CLUSTER > 1 ? ROWS : 1];
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int lane = threadIdx.x, w = threadIdx.y;
    const long long r0 = (long long)blockIdx.x * ROWS, r = r0 + VEC * lane;
    // The block's column range (all of them without a cluster), then the warp's share of it.
    const long long span = (p.n + CLUSTER - 1) / CLUSTER;
    const long long b0 = CLUSTER > 1 ? min((long long)blockIdx.y * span, p.n) : 0;
    const long long b1 = CLUSTER > 1 ? min(b0 + span, p.n) : p.n;
    const long long per = (b1 - b0 + W - 1) / W;
    const long long c0 = min(b0 + w * per, b1), c1 = min(c0 + per, b1);
    Acc s[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) s[e] = Acc(0);
    const T* a0 = A + r;
    if (r + VEC <= p.m) {
        long long j = c0;
        for (; j + U <= c1; j += U) {
            Acc xv[U];
            Lane av[U];
#pragma unroll
            for (int v = 0; v < U; ++v) xv[v] = El<T>::ld(x + (j + v) * p.incx);
#pragma unroll
            for (int v = 0; v < U; ++v) av[v] = __ldcs(reinterpret_cast<const Lane*>(a0 + (j + v) * p.lda));
#pragma unroll
            for (int v = 0; v < U; ++v) {
                Acc a[VEC];
                lane_unpack<T, LB>(av[v], a);
#pragma unroll
                for (int e = 0; e < VEC; ++e) s[e] += a[e] * xv[v];
            }
        }
        for (; j < c1; ++j) {
            const Acc xj = El<T>::ld(x + j * p.incx);
            Acc a[VEC];
            lane_unpack<T, LB>(__ldcs(reinterpret_cast<const Lane*>(a0 + j * p.lda)), a);
#pragma unroll
            for (int e = 0; e < VEC; ++e) s[e] += a[e] * xj;
        }
    } else if (r < p.m) {
        for (long long j = c0; j < c1; ++j) {
            const Acc xj = El<T>::ld(x + j * p.incx);
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                if (r + e < p.m) s[e] += El<T>::ld_a(a0 + j * p.lda + e) * xj;
        }
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) red[w][VEC * lane + e] = s[e];
    __syncthreads();
    if constexpr (CLUSTER > 1) {
        cluster_rows_to_y<T, W, ROWS, CLUSTER>(red, part, r0, w * 32 + lane, p);
    } else {
        for (int t = w * 32 + lane; t < ROWS; t += 32 * W) {
            const long long row = r0 + t;
            if (row < p.m) store_y<T>(reinterpret_cast<T*>(p.y) + row * p.incy, warps_sum(red, t), p.alpha, p.beta);
        }
    }
}

// One lane's part of a column's dot product with x over rows [i, r_end) (i = the lane's first
// row), taking every WPC-th step of 32 * VEC * UR rows, summed over the warp (every lane gets
// the sum). A step is full for a lane when all its UR loads exist; only the first step that is
// not can hold rows of the range (those after it start past r_end), and only the warp whose
// step it is reads them, one vector (or part of one) at a time.
template <typename T, int VEC, int UR, int WPC>
__device__ __forceinline__ typename El<T>::Acc t_dot(const T* col, const T* x, long long i, long long r_end,
                                                     long long incx) {
    using Acc = typename El<T>::Acc;
    constexpr int STEP = 32 * VEC * UR;
    Acc s0 = Acc(0), s1 = Acc(0);
    // Full steps: UR loads of A and UR of x in flight per lane.
    for (; i + STEP - 32 * VEC + VEC <= r_end; i += (long long)STEP * WPC) {
        typename Raw<T, VEC>::type av[UR], xv[UR];
#pragma unroll
        for (int u = 0; u < UR; ++u) av[u] = load<T, VEC, true>(col + i + 32 * VEC * u, VEC);
#pragma unroll
        for (int u = 0; u < UR; ++u) xv[u] = load<T, VEC, false>(x + (i + 32 * VEC * u) * (VEC == 1 ? incx : 1), VEC);
#pragma unroll
        for (int u = 0; u < UR; ++u) {
            Acc a[VEC], b[VEC];
            unpack<T, VEC>(av[u], a);
            unpack<T, VEC>(xv[u], b);
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                if (u & 1)
                    s1 += a[e] * b[e];
                else
                    s0 += a[e] * b[e];
            }
        }
    }
    // The rest of the range, one vector (or part of one) at a time.
    for (; i < r_end; i += 32 * VEC) {
        const int valid = clamp_valid(r_end - i, VEC);
        Acc a[VEC], b[VEC];
        unpack<T, VEC>(load<T, VEC, true>(col + i, valid), a);
        unpack<T, VEC>(load<T, VEC, false>(x + i * (VEC == 1 ? incx : 1), valid), b);
#pragma unroll
        for (int e = 0; e < VEC; ++e) s0 += a[e] * b[e];
    }
    Acc s = s0 + s1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

// Column j's sum: y[j] (splits == 1) or its split's partial.
template <typename T>
__device__ __forceinline__ void t_store(const GemvParams& p, long long j, typename El<T>::Acc s) {
    if (p.splits == 1)
        store_y<T>(reinterpret_cast<T*>(p.y) + j * p.incy, s, p.alpha, p.beta);
    else
        reinterpret_cast<typename El<T>::Acc*>(p.work)[blockIdx.y * p.n + j] = s;
}

// One warp per column: warp w of block b takes columns 8 * (b + k * gridDim.x) + w.
template <typename T, int VEC, int UR> __device__ __forceinline__ void gemv_t(const GemvParams& p) {
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long r_begin = (long long)blockIdx.y * p.chunk;
    const long long r_end = min(r_begin + p.chunk, p.m);
    for (long long j = (long long)blockIdx.x * GEMV_WARPS + w; j < p.n; j += (long long)gridDim.x * GEMV_WARPS) {
        const auto s = t_dot<T, VEC, UR, 1>(A + j * p.lda, x, r_begin + VEC * lane, r_end, p.incx);
        if (lane == 0) t_store<T>(p, j, s);
    }
}

// WPC warps per column: the block's 8 warps take 8 / WPC columns, and the WPC warps of a column
// take every WPC-th step of its rows, so fewer columns are read at once for the same loads in
// flight; their sums meet in shared memory. Every warp reaches the barriers, also those whose
// column is past n.
template <typename T, int VEC, int UR, int WPC> __device__ __forceinline__ void gemv_tw(const GemvParams& p) {
    using Acc = typename El<T>::Acc;
    constexpr int COLS = GEMV_WARPS / WPC;
    __shared__ Acc red[GEMV_WARPS];
    const T* A = reinterpret_cast<const T*>(p.a);
    const T* x = reinterpret_cast<const T*>(p.x);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int c = w / WPC, phase = w % WPC;
    const long long r_begin = (long long)blockIdx.y * p.chunk;
    const long long r_end = min(r_begin + p.chunk, p.m);
    const long long groups = (p.n + COLS - 1) / COLS;
    for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
        const long long j = g * COLS + c;
        Acc s = Acc(0);
        if (j < p.n)
            s = t_dot<T, VEC, UR, WPC>(A + j * p.lda, x, r_begin + (long long)32 * VEC * UR * phase + VEC * lane,
                                       r_end, p.incx);
        if constexpr (WPC > 1) {
            if (lane == 0) red[w] = s;
            __syncthreads();
            if (phase == 0) {
                s = red[w];
#pragma unroll
                for (int q = 1; q < WPC; ++q) s += red[w + q];
            }
            __syncthreads();
        }
        if (lane == 0 && phase == 0 && j < p.n) t_store<T>(p, j, s);
    }
}

template <typename T>
__device__ __forceinline__ void gemv_finish(T* y, const typename El<T>::Acc* work, long long len, int splits,
                                            double alpha, double beta, long long incy) {
    using Acc = typename El<T>::Acc;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    Acc s = Acc(0);
    for (int k = 0; k < splits; ++k) s += work[k * len + i];
    store_y<T>(y + i * incy, s, alpha, beta);
}
