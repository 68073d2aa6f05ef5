// cudrv module `gemm_skinny`: f32 GEMMs with one short side (at most 16: a decode step's tokens)
// whose operands are both contiguous along k, on the CUDA cores. Such a product is memory-bound
// (4096 x 16 x 4096 does 8 FLOP per byte of the large operand), so the kernel reads the large
// operand once, at the rate of a GEMV, instead of computing the 32- to 256-wide tiles of the GEMM
// kernels over 16 rows that exist. (An f64 instantiation ran at 0.51-0.76x of cuBLAS on the H100;
// f64 runs such products on its thin DMMA tiles, 16 x 64 and 64 x 16, at 0.95-1.07x:
// docs/kernels/gemm-dmma.md.)
//
// The problem, in the terms of src/blas/gemm/skinny.rs (the kernels' row-major D = X Y with X
// and Y both k-contiguous, seen from its long side):
//   D(l, s) = act(alpha * sum_p G[l][p] * H[s][p] + beta * D(l, s) + bias)
//   G[l][p] at g[l * ldg + p] (l < L: the long side), H[s][p] at h[s * ldh + p] (s < S <= 16),
//   D(l, s) at d[l * dl + s * ds]; bias[l] when bias_on_l, else bias[s]; batch z adds z * sg,
//   z * sh, z * sd. Any k >= 1. G: g 16-byte aligned, or g = G's start rounded down to 16 bytes
//   with `shift` = the elements it was rounded down by, the same for every row and matrix (ldg
//   and sg whole 16-byte vectors): the kernel then runs over k' = k + shift with G's elements
//   [shift, k + shift) and H's read `shift` earlier, so G keeps its 16-byte loads (an unaligned
//   view of the weights; an element-wise variant measured 0.63x of cuBLAS on 11008 x 16 x 4096
//   at an odd offset). H: 16-byte vectors when ldh and sh are whole vectors and h is H's start
//   rounded down by the same `shift` (both operands views at the same offset, or both aligned);
//   otherwise (the `u` kernel, which the router picks) it is copied element by element with
//   cp.async from H's own start.
//
// Kernels: gemm_skinny_<t>_r<R>s<STEPS>, block = (32, 8, 1), grid = (ceil(L / (8 R)), splits,
// batch), dynamic shared memory 2 * 16 * KT * sizeof(T) with KT = 32 * VEC * STEPS (VEC = 16 /
// sizeof(T)). Warp w of block b owns the rows l = (8 b + w) R + [0, R); in each step st of a k
// tile lane q reads the 16-byte vector of each of them at k = kt + 32 VEC st + VEC q. Split y
// sums k in [y chunk, min((y + 1) chunk, k)) (chunk a multiple of KT); with splits > 1 it writes
// its partial sums to work[((z splits + y) L + l) S + s] and gemm_skinny_finish_<t> adds them in
// split order and applies the epilogue.
//
// Design. H's k tile (16 x KT, zero beyond S and k) is staged in shared memory, double-buffered,
// so one barrier per tile orders it: the tile t + 1 buffer is written after tile t's compute, and
// was last read in tile t - 1's compute, which every thread finished before the barrier ending
// tile t - 1. The next tile's G and H elements are loaded into registers before the current tile
// is computed, so a warp keeps 32 VEC R STEPS elements of G in flight while it computes. Each
// lane accumulates R x 16 sums over its share of k (H read from shared memory at the same k as
// its G elements: consecutive across lanes, no bank conflicts; each H value serves R rows). At
// the end a warp's R x 16 sums are reduced across its lanes by recursive halving: at each of the
// 5 levels a lane keeps the half of its values its lane bit selects and adds its partner's copy
// of that half (R 16 - R 16 / 32 shuffles, not 5 R 16), leaving lane q the sums R 16 / 32 q + [0,
// R 16 / 32).

#include "gemm_common.cuh"
#include "gemm_cp_async.cuh"

struct SkinnyParams {
    unsigned long long g, h, d, bias, work;
    long long L, S, k;
    long long ldg, ldh, dl, ds;
    long long sg, sh, sd;
    long long chunk;
    double alpha, beta;
    int act, bias_on_l, shift;
};

template <typename T> struct Vec16;
template <> struct Vec16<float> {
    using type = float4;
    static constexpr int N = 4;
    static __device__ __forceinline__ void split(float4 v, float* o) { o[0] = v.x, o[1] = v.y, o[2] = v.z, o[3] = v.w; }
    static __device__ __forceinline__ float4 join(const float* o) { return make_float4(o[0], o[1], o[2], o[3]); }
};

constexpr int SKINNY_S = 16, SKINNY_WARPS = 8;

// VEC elements of a row (k-contiguous, starting at `base`) from k = kk, zeros before lo and from
// k1 on (and for a row that does not exist); one 16-byte load unless `any` (base + kk not
// 16-byte aligned) or the vector crosses lo or k1.
template <typename T>
__device__ __forceinline__ void load_vec(T* o, const T* base, bool row_ok, long long kk, long long lo, long long k1,
                                         bool any) {
    using V = Vec16<T>;
    constexpr int VEC = V::N;
    if (row_ok && !any && kk >= lo && kk + VEC <= k1) {
        V::split(__ldcg(reinterpret_cast<const typename V::type*>(base + kk)), o);
    } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) o[e] = (row_ok && kk + e >= lo && kk + e < k1) ? base[kk + e] : T(0);
    }
}

template <typename T>
__device__ __forceinline__ void skinny_out(const SkinnyParams& p, T sum, long long z, long long l, long long s) {
    T* dp = reinterpret_cast<T*>(p.d) + z * p.sd + l * p.dl + s * p.ds;
    T v = T(p.alpha) * sum;
    if (p.beta != 0.0) v += T(p.beta) * *dp;
    if (p.bias) v += reinterpret_cast<const T*>(p.bias)[p.bias_on_l ? l : s];
    if (p.act) v = activate(v, p.act);
    *dp = v;
}

// One level of the lane reduction: the 2 HALF values v[0, 2 HALF) become HALF, the half that
// lane bit OFF selects plus the partner lane's copy of it.
template <typename T, int HALF, int OFF> __device__ __forceinline__ void halve(T* v, int lane) {
    const bool up = (lane & OFF) != 0;
#pragma unroll
    for (int i = 0; i < HALF; ++i) {
        const T send = up ? v[i] : v[i + HALF];
        const T keep = up ? v[i + HALF] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
    }
}

// ANY: the variant for an H of any layout, copied element by element; the plain kernel reads H
// in 16-byte vectors from its start rounded down by G's shift (both paths in one kernel
// spilled).
template <typename T, int R, int STEPS, bool ANY>
__device__ __forceinline__ void gemm_skinny(const SkinnyParams& p) {
    using V = Vec16<T>;
    constexpr int VEC = V::N, KT = 32 * VEC * STEPS, NV = R * SKINNY_S, HV = SKINNY_S * KT / VEC,
                  HPT = HV / (32 * SKINNY_WARPS);
    static_assert(HV % (32 * SKINNY_WARPS) == 0, "the H tile is whole vectors per thread");
    static_assert(NV % 32 == 0, "the lane reduction leaves whole values per lane");
    extern __shared__ __align__(16) unsigned char skinny_smem[];
    T* hs = reinterpret_cast<T*>(skinny_smem);
    const int lane = threadIdx.x, w = threadIdx.y, tid = w * 32 + lane;
    const long long z = blockIdx.z;
    const T* G = reinterpret_cast<const T*>(p.g) + z * p.sg;
    const T* H = reinterpret_cast<const T*>(p.h) + z * p.sh;
    const long long l0 = ((long long)blockIdx.x * SKINNY_WARPS + w) * R;
    // k' = k + shift: G's elements [shift, k'), H's the same k' read `shift` earlier.
    const long long lo = p.shift, k0 = (long long)blockIdx.y * p.chunk, k1 = min(k0 + p.chunk, p.k + lo);

    const int tiles = (int)((k1 - k0 + KT - 1) / KT);

    T acc[R][SKINNY_S];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int s = 0; s < SKINNY_S; ++s) acc[r][s] = T(0);

    T a[STEPS][R][VEC], an[STEPS][R][VEC], hn[HPT][VEC];
    auto load_g = [&](T (&dst)[STEPS][R][VEC], long long kt) {
#pragma unroll
        for (int st = 0; st < STEPS; ++st)
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const long long l = l0 + r;
                load_vec<T>(dst[st][r], G + (l < p.L ? l : 0) * p.ldg, l < p.L, kt + 32 * VEC * st + VEC * lane, lo, k1,
                            false);
            }
    };
    auto load_h = [&](long long kt) {
#pragma unroll
        for (int i = 0; i < HPT; ++i) {
            const int v = tid + i * 32 * SKINNY_WARPS, s = v / (KT / VEC), c = (v % (KT / VEC)) * VEC;
            load_vec<T>(hn[i], H + (s < p.S ? s : 0) * p.ldh, s < p.S, kt + c, lo, k1, false);
        }
    };
    // ANY: H's tile element by element with 4-byte cp.async straight into shared memory (no
    // registers held across the compute), zero outside [lo, k1) and past S.
    auto copy_h = [&](int buf, long long kt) {
        constexpr int PER = SKINNY_S * KT / (32 * SKINNY_WARPS);
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            const int v = tid + i * 32 * SKINNY_WARPS, s = v / KT, c = v % KT;
            const long long j = kt + c;
            const bool ok = s < p.S && j >= lo && j < k1;
            const T* src = ok ? H + s * p.ldh + (j - lo) : H;
            cp_async<sizeof(T)>(smem_addr(hs + (buf * SKINNY_S + s) * KT + c), src, ok ? (int)sizeof(T) : 0);
        }
        cp_async_commit();
    };
    auto store_h = [&](int buf) {
#pragma unroll
        for (int i = 0; i < HPT; ++i) {
            const int v = tid + i * 32 * SKINNY_WARPS, s = v / (KT / VEC), c = (v % (KT / VEC)) * VEC;
            *reinterpret_cast<typename V::type*>(hs + (buf * SKINNY_S + s) * KT + c) = V::join(hn[i]);
        }
    };

    if (tiles > 0) {
        load_g(a, k0);
        if constexpr (ANY) {
            copy_h(0, k0);
        } else {
            load_h(k0);
            store_h(0);
        }
    }
    if constexpr (ANY) cp_async_wait<0>();
    __syncthreads();
#pragma unroll 1
    for (int t = 0; t < tiles; ++t) {
        const bool more = t + 1 < tiles;
        if (more) {
            load_g(an, k0 + (long long)(t + 1) * KT);
            // The other buffer was last read in tile t - 1, before the barrier that ended it.
            if constexpr (ANY)
                copy_h((t + 1) & 1, k0 + (long long)(t + 1) * KT);
            else
                load_h(k0 + (long long)(t + 1) * KT);
        }
        const T* hb = hs + (t & 1) * SKINNY_S * KT;
#pragma unroll
        for (int st = 0; st < STEPS; ++st)
#pragma unroll
            for (int s = 0; s < SKINNY_S; ++s) {
                T b[VEC];
                V::split(*reinterpret_cast<const typename V::type*>(hb + s * KT + 32 * VEC * st + VEC * lane), b);
#pragma unroll
                for (int r = 0; r < R; ++r)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) acc[r][s] = fma(a[st][r][e], b[e], acc[r][s]);
            }
        if (more) {
            if constexpr (!ANY) store_h((t + 1) & 1);
#pragma unroll
            for (int st = 0; st < STEPS; ++st)
#pragma unroll
                for (int r = 0; r < R; ++r)
#pragma unroll
                    for (int e = 0; e < VEC; ++e) a[st][r][e] = an[st][r][e];
        }
        if constexpr (ANY) cp_async_wait<0>();
        __syncthreads();
    }

    // Recursive halving across the warp: v[i] is sum (r, s) with i = r * 16 + s.
    T v[NV];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int s = 0; s < SKINNY_S; ++s) v[r * SKINNY_S + s] = acc[r][s];
    halve<T, NV / 2, 16>(v, lane);
    halve<T, NV / 4, 8>(v, lane);
    halve<T, NV / 8, 4>(v, lane);
    halve<T, NV / 16, 2>(v, lane);
    halve<T, NV / 32, 1>(v, lane);
    constexpr int PER = NV / 32;
    const int splits = gridDim.y;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int idx = lane * PER + j, r = idx / SKINNY_S, s = idx % SKINNY_S;
        const long long l = l0 + r;
        if (l >= p.L || s >= p.S) continue;
        if (splits > 1) {
            T* work = reinterpret_cast<T*>(p.work);
            work[((z * splits + blockIdx.y) * p.L + l) * p.S + s] = v[j];
        } else {
            skinny_out<T>(p, v[j], z, l, s);
        }
    }
}

// Adds the splits' partial sums in split order and applies the epilogue: one thread per output,
// grid = (ceil(L S / 256), 1, batch), block = 256.
template <typename T>
__device__ __forceinline__ void gemm_skinny_finish(const SkinnyParams& p, int splits) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, z = blockIdx.z;
    if (i >= p.L * p.S) return;
    const T* work = reinterpret_cast<const T*>(p.work);
    T sum = T(0);
    for (int y = 0; y < splits; ++y) sum += work[(z * splits + y) * p.L * p.S + i];
    skinny_out<T>(p, sum, z, i / p.S, i % p.S);
}

#define SKINNY(T, N, R, STEPS, MINB, ANY, SUFFIX)                                                           \
    extern "C" __global__ void __launch_bounds__(256, MINB) gemm_skinny_##N##_r##R##s##STEPS##SUFFIX(SkinnyParams p) { \
        gemm_skinny<T, R, STEPS, ANY>(p);                                                                  \
    }
SKINNY(float, f32, 2, 2, 2, false, )
// The variant for an H of any layout (copied element by element).
SKINNY(float, f32, 2, 2, 2, true, u)

extern "C" __global__ void __launch_bounds__(256) gemm_skinny_finish_f32(SkinnyParams p, int splits) {
    gemm_skinny_finish<float>(p, splits);
}
