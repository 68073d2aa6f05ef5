// cudrv module `gemm_tc`: GEMM on tensor cores with mma.sync (sm_80+): f16 / bf16 / tf32 inputs
// with f32 accumulation, and f64 on the DMMA units (gemm_dmma_*, at the end); fused epilogue.
//
// Every kernel computes a ROW-MAJOR problem (the Rust side maps cuBLAS's column-major one onto it:
// column-major C = op(A) op(B) is row-major D = C^T = op(B)^T op(A)^T, so X = op(B)^T, Y = op(A)^T):
//
//   D[r][c] = act(alpha * sum_p X[r][p] * Y[p][c] + beta * D[r][c] + bias[c]),   r < m, c < n, p < k
//
//   X[r][p] at x[r * ldx + p] when X is k-contiguous ("xk"), else at x[r + p * ldx]
//   Y[p][c] at y[c * ldy + p] when Y is k-contiguous ("yk"), else at y[p * ldy + c]
//   D[r][c] at d[r * ldd + c]
//
// Kernel names: gemm_tc_<type>_<tile>_<opA><opB> with the cuBLAS (column-major) ops:
//   xk = (opB == 'n'), yk = (opA == 't').  <type>: f16, bf16, tf32 (f32 storage, tf32 math).
//   <tile>: l = 128x128, 4 warps (2 x 2) of 64x64, 4 stages; s = 64x64, 4 warps of 32x32, 4 stages;
//   both with 64 bytes of k per stage. The thin tiles for a side of at most 16 (a decode step's
//   tokens: a memory-bound product, so the long operand is streamed 256 bytes of k per row and
//   stage): t = 16x64, 4 warps (1 x 4) of 16x16; h = 64x16, 4 warps (4 x 1); 4 stages. tu and hu
//   are t and h for k-contiguous operands aligned only to their element (any address, leading
//   dimension and batch stride): each row is copied 16 bytes at a time from its start rounded
//   down, one chunk more per stage, and its fragments are read at the row's shift. (Copying such
//   operands 4 bytes at a time took 160-240 registers and spilled: not kept.)
//   (A 128x256 tile of 8 warps, 3 stages, measured 10-15% slower than l on the H100 and was
//   removed; the template takes any BM, BN, WM, WN, STAGES, BKB with the static_asserts holding;
//   16x32 and 32x16 thin tiles of 2 warps measured slower than t and h: docs/kernels/gemm-mma-sync.md.)
//
// Launch contract:
//   block = (32 * WM * WN, 1, 1) = (128, 1, 1); grid = (ceil(m/BM) * ceil(n/BN), batch, 1)
//   (batch <= 65535); dynamic shared memory = STAGES * (tc_slot(BM) + tc_slot(BN)) bytes, a slot
//   holding either layout of its operand tile: STAGES * 80 * (BM + BN) for l (81920) and s
//   (40960); t and h 98304; all but s need the opt-in above 48 KiB.
//   x, y, d, bias 16-byte aligned; ldx, ldy, sx, sy multiples of 16 / sizeof(T) (cp.async moves 16
//   bytes at a time; partial chunks at the matrix edges are zero-filled by cp.async's src-size),
//   except for tu / hu's k-contiguous operands (aligned to their element only).
//   beta == 0: D is not read (NaN in D does not propagate), as in cuBLAS. bias == 0: no bias.
//   act: 0 none, 1 relu, 2 gelu (erf form), 3 sigmoid, 4 tanh; f16 / bf16 also ACT_PARTIAL_F32 (a part
//   of a split through partial products: alpha * sum as f32 into D, ldd a multiple of 4).
//   k == 0 is allowed (D = act(beta * D + bias)). m, n >= 1.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"
#include "gemm_cp_async.cuh"
#include "mma_sync.cuh"

// Bytes of a stage's slot for an operand tile of `rows` rows and `bkb` bytes of k: the larger of
// its k-contiguous layout, rows x (bkb + 16) bytes, and its other one, (bkb / sz) x (rows + 8)
// elements (the larger only for tiles of 16 rows).
__host__ __device__ constexpr int tc_slot(int rows, int bkb, int sz) {
    return rows * (bkb + 16) > (bkb / sz) * (rows + 8) * sz ? rows * (bkb + 16) : (bkb / sz) * (rows + 8) * sz;
}

__device__ __forceinline__ unsigned to_tf32(unsigned bits) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
    return r;
}

__device__ __forceinline__ void ldsm_x4(unsigned r[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned r[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// A fragment register from a shared row of T: one f32 as tf32, or two 16-bit elements (the
// lower column in the low half) read one at a time, so that `c` may be odd.
template <typename T> __device__ __forceinline__ unsigned frag32(const T* row, int c) {
    if constexpr (Tc<T>::B16) {
        const unsigned short* q = reinterpret_cast<const unsigned short*>(row);
        return (unsigned)q[c] | ((unsigned)q[c + 1] << 16);
    } else {
        return to_tf32(__float_as_uint(row[c]));
    }
}

// SH: the k-contiguous operands' rows may start anywhere (aligned only to their element; any
// leading dimension and batch stride): they are loaded by load_tile_shifted and their fragments
// read element by element at the row's shift. An operand that is not k-contiguous keeps the
// 16-byte contract.
template <typename T, int BM, int BN, int WM, int WN, int STAGES, int BKB, bool XK, bool YK, bool SH = false>
__device__ __forceinline__ void gemm_tc(const GemmParams& p) {
    constexpr int NT = WM * WN * 32;
    constexpr int SZ = sizeof(T);
    constexpr int BK = BKB / SZ;       // k per stage: BKB bytes of each row
    constexpr int KSTEP = Tc<T>::KSTEP;
    constexpr bool B16 = Tc<T>::B16;
    constexpr int LDK = BK + 16 / SZ;  // k-contiguous tiles: [rows][BK + 16 bytes]
    constexpr int LDXM = BM + 8;       // m-contiguous X tile: [BK][BM + 8]
    constexpr int LDYN = BN + 8;       // n-contiguous Y tile: [BK][BN + 8]
    // A stage's slot of each operand holds either layout (see the launch contract).
    constexpr int XS_BYTES = tc_slot(BM, BKB, SZ), YS_BYTES = tc_slot(BN, BKB, SZ);
    constexpr int STAGE_BYTES = XS_BYTES + YS_BYTES;
    constexpr int WTM = BM / WM, WTN = BN / WN;
    constexpr int MI = WTM / 16, NI = WTN / 8;
    static_assert(NI % 2 == 0, "B fragments are loaded two n-blocks at a time");
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const long long bz = blockIdx.y;
    const T* X = reinterpret_cast<const T*>(p.x) + bz * p.sx;
    const T* Y = reinterpret_cast<const T*>(p.y) + bz * p.sy;
    T* D = reinterpret_cast<T*>(p.d) + bz * p.sd;

    // Grouped rasterisation: 8 row-tiles share their column tiles in L2.
    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    const int tile = blockIdx.x;
    const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
    const int tm = rc.m, tn = rc.n;
    const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;

    const unsigned sbase = smem_addr(smem);
    auto load_stage = [&](int stage, int kt) {
        const unsigned xs = sbase + stage * STAGE_BYTES, ys = xs + XS_BYTES;
        const long long k0 = (long long)kt * BK;
        if (SH && XK)
            load_tile_shifted<T, BM, BK, LDK, NT>(xs, X, p.ldx, m0, p.m, k0, p.k, tid);
        else if (XK)
            load_tile<T, BM, BK, LDK, NT>(xs, X, p.ldx, m0, p.m, k0, p.k, tid);
        else
            load_tile<T, BK, BM, LDXM, NT>(xs, X, p.ldx, k0, p.k, m0, p.m, tid);
        if (SH && YK)
            load_tile_shifted<T, BN, BK, LDK, NT>(ys, Y, p.ldy, n0, p.n, k0, p.k, tid);
        else if (YK)
            load_tile<T, BN, BK, LDK, NT>(ys, Y, p.ldy, n0, p.n, k0, p.k, tid);
        else
            load_tile<T, BK, BN, LDYN, NT>(ys, Y, p.ldy, k0, p.k, n0, p.n, tid);
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

    const int KT = (int)((p.k + BK - 1) / BK);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();
    }

    const int g = lane >> 2, t = lane & 3, lr = lane & 7, lj = lane >> 3;
    // SH: each fragment row's shift (its rows are the same in every k-tile).
    int shx[MI][2], shy[NI];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            shx[mi][h] = SH && XK ? row_shift(X + (m0 + wm * WTM + mi * 16 + g + h * 8) * p.ldx) : 0;
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) shy[ni] = SH && YK ? row_shift(Y + (n0 + wn * WTN + ni * 8 + g) * p.ldy) : 0;
    // A fragment's first k column for this lane, and its second half's.
    const int fc0 = B16 ? 2 * t : t, fc1 = fc0 + KSTEP / 2;
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            const int nk = kt + STAGES - 1;
            if (nk < KT) load_stage(nk % STAGES, nk);
            cp_async_commit();
        }
        const unsigned xs = sbase + (kt % STAGES) * STAGE_BYTES, ys = xs + XS_BYTES;
        const float* xsf = reinterpret_cast<const float*>(smem + (kt % STAGES) * STAGE_BYTES);
        const float* ysf = reinterpret_cast<const float*>(smem + (kt % STAGES) * STAGE_BYTES + XS_BYTES);
        const T* xst = reinterpret_cast<const T*>(smem + (kt % STAGES) * STAGE_BYTES);
        const T* yst = reinterpret_cast<const T*>(smem + (kt % STAGES) * STAGE_BYTES + XS_BYTES);
#pragma unroll
        for (int kk = 0; kk < BK / KSTEP; ++kk) {
            const int kb = kk * KSTEP;
            unsigned af[MI][4], bfr[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int mr = wm * WTM + mi * 16;
                if (SH && XK) {
                    const T* r0 = xst + (mr + g) * LDK + shx[mi][0] + kb;
                    const T* r1 = xst + (mr + g + 8) * LDK + shx[mi][1] + kb;
                    af[mi][0] = frag32(r0, fc0);
                    af[mi][1] = frag32(r1, fc0);
                    af[mi][2] = frag32(r0, fc1);
                    af[mi][3] = frag32(r1, fc1);
                } else if (XK) {
                    const int r = mr + lr + (lj & 1) * 8, c = kb + (lj >> 1) * (KSTEP / 2);
                    ldsm_x4(af[mi], xs + (r * LDK + c) * SZ);
                    if (!B16)
#pragma unroll
                        for (int e = 0; e < 4; ++e) af[mi][e] = to_tf32(af[mi][e]);
                } else if (B16) {
                    const int kr = kb + lr + (lj >> 1) * 8, mc = mr + (lj & 1) * 8;
                    ldsm_x4_t(af[mi], xs + (kr * LDXM + mc) * SZ);
                } else {
                    af[mi][0] = to_tf32(__float_as_uint(xsf[(kb + t) * LDXM + mr + g]));
                    af[mi][1] = to_tf32(__float_as_uint(xsf[(kb + t) * LDXM + mr + g + 8]));
                    af[mi][2] = to_tf32(__float_as_uint(xsf[(kb + t + 4) * LDXM + mr + g]));
                    af[mi][3] = to_tf32(__float_as_uint(xsf[(kb + t + 4) * LDXM + mr + g + 8]));
                }
            }
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                const int nc = wn * WTN + ni * 8;
                if (SH && YK) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const T* r = yst + (nc + h * 8 + g) * LDK + shy[ni + h] + kb;
                        bfr[ni + h][0] = frag32(r, fc0);
                        bfr[ni + h][1] = frag32(r, fc1);
                    }
                } else if (YK || B16) {
                    unsigned r4[4];
                    if (YK) {
                        const int r = nc + lr + (lj >> 1) * 8, c = kb + (lj & 1) * (KSTEP / 2);
                        ldsm_x4(r4, ys + (r * LDK + c) * SZ);
                    } else {
                        const int kr = kb + lr + (lj & 1) * 8, c = nc + (lj >> 1) * 8;
                        ldsm_x4_t(r4, ys + (kr * LDYN + c) * SZ);
                    }
                    bfr[ni][0] = r4[0];
                    bfr[ni][1] = r4[1];
                    bfr[ni + 1][0] = r4[2];
                    bfr[ni + 1][1] = r4[3];
                    if (!B16) {
                        bfr[ni][0] = to_tf32(bfr[ni][0]);
                        bfr[ni][1] = to_tf32(bfr[ni][1]);
                        bfr[ni + 1][0] = to_tf32(bfr[ni + 1][0]);
                        bfr[ni + 1][1] = to_tf32(bfr[ni + 1][1]);
                    }
                } else {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        bfr[ni + h][0] = to_tf32(__float_as_uint(ysf[(kb + t) * LDYN + nc + h * 8 + g]));
                        bfr[ni + h][1] = to_tf32(__float_as_uint(ysf[(kb + t + 4) * LDYN + nc + h * 8 + g]));
                    }
                }
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) Tc<T>::mma(acc[mi][ni], af[mi], bfr[ni]);
        }
    }
    cp_async_wait<0>();

    // Epilogue. Plain C = alpha * A * B (beta 0, no bias, no activation) on a full tile of a D
    // with 16-byte aligned rows stores straight from the accumulators: each thread's 2
    // consecutive outputs per fragment row in one store (the code stays small with 64-128
    // accumulators per thread). Otherwise the accumulators go through shared memory (free once
    // the last stage is read), one warp-row (WTM rows of the tile) at a time; then one rolled
    // loop applies alpha, beta * D, bias and the activation with coalesced accesses to D.
    const float alpha = (float)p.alpha, beta = (float)p.beta;
    // A part of a k split through partial products (f16 / bf16) leaves the same way: its f32
    // sums, unrounded, into the scratch (ldd a multiple of 4, so each pair is one 8-byte store;
    // the pair's second column at c + 1 = n lands in the row's padding, inside the scratch).
    const bool partial = B16 && p.act == ACT_PARTIAL_F32;
    const T* bias = reinterpret_cast<const T*>(p.bias);
    if (partial || (beta == 0.f && !bias && direct_epilogue(p, (int)sizeof(T), m0 + BM <= p.m && n0 + BN <= p.n))) {
        float* Df = reinterpret_cast<float*>(p.d) + bz * p.sd;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const long long r = m0 + wm * WTM + mi * 16 + g + h * 8, c = n0 + wn * WTN + ni * 8 + 2 * t;
                    const float v0 = alpha * acc[mi][ni][2 * h], v1 = alpha * acc[mi][ni][2 * h + 1];
                    if (!partial)
                        Tc<T>::store2(D + r * p.ldd + c, v0, v1);
                    else if (r < p.m && c < p.n)
                        *reinterpret_cast<float2*>(Df + r * p.ldd + c) = make_float2(v0, v1);
                }
        return;
    }
    constexpr int LDC = BN + 4;
    static_assert(WTM * LDC * 4 <= STAGES * STAGE_BYTES, "a warp-row of the C tile must fit in the stages");
    __syncthreads();
    float* cs = reinterpret_cast<float*>(smem);
    const int cols = (int)min((long long)BN, p.n - n0);
#pragma unroll 1
    for (int pass = 0; pass < WM; ++pass) {
        if (wm == pass) {
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int r = mi * 16 + g + h * 8, c = wn * WTN + ni * 8 + 2 * t;
                        *reinterpret_cast<float2*>(cs + r * LDC + c) =
                            make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
                    }
        }
        __syncthreads();
        const long long rbase = m0 + pass * WTM;
        const int rows = (int)max(0LL, min((long long)WTM, p.m - rbase));
#pragma unroll 1
        for (int i = tid; i < WTM * BN; i += NT) {
            const int r = i / BN, c = i % BN;
            if (r >= rows || c >= cols) continue;
            float v = alpha * cs[r * LDC + c];
            T* dp = D + (rbase + r) * p.ldd + (n0 + c);
            if (beta != 0.f) v += beta * Tc<T>::to_f(*dp);
            if (bias) v += Tc<T>::to_f(bias[n0 + c]);
            if (p.act) v = activate(v, p.act);
            *dp = Tc<T>::from_f(v);
        }
        __syncthreads();
    }
}

#define GEMM_TC(NAME, T, BM, BN, WM, WN, ST, BKB, XK, YK, SH)                                         \
    extern "C" __global__ void __launch_bounds__(WM * WN * 32) NAME(GemmParams p) {                     \
        gemm_tc<T, BM, BN, WM, WN, ST, BKB, XK, YK, SH>(p);                                            \
    }
// <opA><opB>: xk = (opB == n), yk = (opA == t)
#define GEMM_TC_OPS(TN, T, TILE, BM, BN, WM, WN, ST, BKB, SH)                                          \
    GEMM_TC(gemm_tc_##TN##_##TILE##_nn, T, BM, BN, WM, WN, ST, BKB, true, false, SH)                   \
    GEMM_TC(gemm_tc_##TN##_##TILE##_nt, T, BM, BN, WM, WN, ST, BKB, false, false, SH)                  \
    GEMM_TC(gemm_tc_##TN##_##TILE##_tn, T, BM, BN, WM, WN, ST, BKB, true, true, SH)                    \
    GEMM_TC(gemm_tc_##TN##_##TILE##_tt, T, BM, BN, WM, WN, ST, BKB, false, true, SH)
// tu and hu: t and h whose k-contiguous operands may start anywhere (SH above); nt has none.
#define GEMM_TC_OPS_SH(TN, T, TILE, BM, BN, WM, WN, ST, BKB)                                           \
    GEMM_TC(gemm_tc_##TN##_##TILE##_nn, T, BM, BN, WM, WN, ST, BKB, true, false, true)                 \
    GEMM_TC(gemm_tc_##TN##_##TILE##_tn, T, BM, BN, WM, WN, ST, BKB, true, true, true)                  \
    GEMM_TC(gemm_tc_##TN##_##TILE##_tt, T, BM, BN, WM, WN, ST, BKB, false, true, true)
#define GEMM_TC_TILES(TN, T)                                                                           \
    GEMM_TC_OPS(TN, T, l, 128, 128, 2, 2, 4, 64, false)                                                \
    GEMM_TC_OPS(TN, T, s, 64, 64, 2, 2, 4, 64, false)                                                  \
    GEMM_TC_OPS(TN, T, t, 16, 64, 1, 4, 4, 256, false)                                                 \
    GEMM_TC_OPS(TN, T, h, 64, 16, 4, 1, 4, 256, false)                                                 \
    GEMM_TC_OPS_SH(TN, T, tu, 16, 64, 1, 4, 4, 256)                                                    \
    GEMM_TC_OPS_SH(TN, T, hu, 64, 16, 4, 1, 4, 256)

GEMM_TC_TILES(f16, __half)
GEMM_TC_TILES(bf16, __nv_bfloat16)
GEMM_TC_TILES(tf32, float)

// ---------------------------------------------------------------------------------------------
// f64 on the DMMA tensor cores: mma.sync m8n8k4 (sm_80+), f64 accumulation.
//   gemm_dmma_f64_s_<opA><opB>: 64 x 64 block tile, 4 warps (2 x 2) of 32 x 32, BK = 16, 3 stages.
//   block = (128, 1, 1); dynamic shared memory = 3 * 20480 = 61440 bytes (needs the opt-in).
//   x, y 16-byte aligned; ldx, ldy (and sx, sy) even. Fragments (PTX ISA, m8n8k4 .f64):
//   a0 = X[g][t], b0 = Y[t][g], c0, c1 = D[g][2t], D[g][2t+1] with g = lane / 4, t = lane % 4.
//   Shared tiles are padded by 4 doubles per row: the 64-bit fragment reads of each half-warp
//   then hit 16 distinct bank pairs.
__device__ __forceinline__ void dmma(double c[2], double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c[0]), "+d"(c[1])
                 : "d"(a), "d"(b));
}

template <int BM, int BN, int WM, int WN, int STAGES, bool XK, bool YK>
__device__ __forceinline__ void gemm_dmma(const GemmParams& p) {
    constexpr int NT = WM * WN * 32;
    constexpr int BK = 16, LDK = BK + 4, LDXM = BM + 4, LDYN = BN + 4;
    constexpr int XS_ELEMS = BM * LDK > BK * LDXM ? BM * LDK : BK * LDXM;
    constexpr int YS_ELEMS = BN * LDK > BK * LDYN ? BN * LDK : BK * LDYN;
    constexpr int STAGE_BYTES = (XS_ELEMS + YS_ELEMS) * 8;
    constexpr int WTM = BM / WM, WTN = BN / WN;
    constexpr int MI = WTM / 8, NI = WTN / 8;
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const long long bz = blockIdx.y;
    const double* X = reinterpret_cast<const double*>(p.x) + bz * p.sx;
    const double* Y = reinterpret_cast<const double*>(p.y) + bz * p.sy;
    double* D = reinterpret_cast<double*>(p.d) + bz * p.sd;

    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    const int tile = blockIdx.x;
    const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
    const int tm = rc.m, tn = rc.n;
    const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;

    const unsigned sbase = smem_addr(smem);
    auto load_stage = [&](int stage, int kt) {
        const unsigned xs = sbase + stage * STAGE_BYTES, ys = xs + XS_ELEMS * 8;
        const long long k0 = (long long)kt * BK;
        if (XK)
            load_tile<double, BM, BK, LDK, NT>(xs, X, p.ldx, m0, p.m, k0, p.k, tid);
        else
            load_tile<double, BK, BM, LDXM, NT>(xs, X, p.ldx, k0, p.k, m0, p.m, tid);
        if (YK)
            load_tile<double, BN, BK, LDK, NT>(ys, Y, p.ldy, n0, p.n, k0, p.k, tid);
        else
            load_tile<double, BK, BN, LDYN, NT>(ys, Y, p.ldy, k0, p.k, n0, p.n, tid);
    };

    double acc[MI][NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;

    const int KT = (int)((p.k + BK - 1) / BK);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();
    }
    const int g = lane >> 2, t = lane & 3;
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            const int nk = kt + STAGES - 1;
            if (nk < KT) load_stage(nk % STAGES, nk);
            cp_async_commit();
        }
        const double* xs = reinterpret_cast<const double*>(smem + (kt % STAGES) * STAGE_BYTES);
        const double* ys = xs + XS_ELEMS;
#pragma unroll
        for (int kk = 0; kk < BK / 4; ++kk) {
            const int kb = kk * 4;
            double af[MI], bf[NI];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int mr = wm * WTM + mi * 8;
                af[mi] = XK ? xs[(mr + g) * LDK + kb + t] : xs[(kb + t) * LDXM + mr + g];
            }
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const int nc = wn * WTN + ni * 8;
                bf[ni] = YK ? ys[(nc + g) * LDK + kb + t] : ys[(kb + t) * LDYN + nc + g];
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) dmma(acc[mi][ni], af[mi], bf[ni]);
        }
    }
    cp_async_wait<0>();

    if (direct_epilogue(p, 8, m0 + BM <= p.m && n0 + BN <= p.n)) {
        // A full tile of a 16-byte aligned D with no activation: straight from the accumulators.
        store_acc_f64<MI, NI, 8, 1>(acc, D, p, m0 + wm * WTM, n0 + wn * WTN, g, t);
        return;
    }
    constexpr int LDC = BN + 2;
    static_assert(BM * LDC * 8 <= STAGES * STAGE_BYTES, "the C tile must fit in the stages");
    __syncthreads();
    double* cs = reinterpret_cast<double*>(smem);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            const int r = wm * WTM + mi * 8 + g, c = wn * WTN + ni * 8 + 2 * t;
            *reinterpret_cast<double2*>(cs + r * LDC + c) = make_double2(acc[mi][ni][0], acc[mi][ni][1]);
        }
    __syncthreads();
    store_tile_f64<BM, BN, NT>(cs, LDC, D, p, m0, n0, tid);
}

#define GEMM_DMMA(NAME, XK, YK)                                                                        \
    extern "C" __global__ void __launch_bounds__(128) NAME(GemmParams p) { gemm_dmma<64, 64, 2, 2, 3, XK, YK>(p); }
GEMM_DMMA(gemm_dmma_f64_s_nn, true, false)
GEMM_DMMA(gemm_dmma_f64_s_nt, false, false)
GEMM_DMMA(gemm_dmma_f64_s_tn, true, true)
GEMM_DMMA(gemm_dmma_f64_s_tt, false, true)
