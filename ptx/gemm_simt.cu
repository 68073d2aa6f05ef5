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
//   <tile> (BM x BN, threads, outputs per thread):
//     f32 (gemm_f32_pipe below): w = 128x256, 256, 8x16, 16-byte copies of the operands that
//       are not k-contiguous (x, y 16-byte aligned; ldx, ldy, sx, sy multiples of 4);
//       l = 128x128, 256, 8x8; s = 64x64, 128 (2 k-slices of 64), 8x8; u = 32x64, 128
//       (2 k-slices of 64), 8x4, with k split over blocks as w; v = 128x64, 128, 8x8, with k
//       split over blocks as w;
//       x = 128x128, 128, 8x16, 16-byte copies as w, two blocks per SM (one block's first
//       loads and last stores overlap the other's FMAs: short k, and tiles w would half fill).
//     f64, f16, bf16 (gemm_simt below): s = 64x64, 256, 4x4.
//
// Launch contract: block = (threads, 1, 1); grid = (ceil(m/BM) * ceil(n/BN), batch, 1) with
// batch <= 65535, except that f32 w, u and v take grid z = the number of blocks that split k (1: no
// split) and a second parameter, SplitK; dynamic shared memory: f32 w takes 150528 bytes
// (3 * 32 * (132 + 260) floats), f32 x 50688 (3 * 16 * (132 + 132)), every other kernel none. beta == 0: D is not read. bias == 0: no bias.
// act: 0 none, 1 relu, 2 gelu (erf form), 3 sigmoid, 4 tanh. k == 0 is allowed. m, n >= 1.
//
// Design of gemm_simt (f64, f16, bf16): a BM x BK tile of X and a BK x BN tile of Y per step,
// loaded with bounds checks (zero outside the matrix) into registers one step ahead, stored
// k-major into a double-buffered shared tile (one barrier per step); each thread accumulates a
// TM x TN register block made of four quadrants (rows ty*TM/2 + [0, TM/2) and BM/2 + ...,
// likewise for columns) so that a warp's shared-memory reads are broadcasts (X) or consecutive
// 16-byte vectors (Y). The f32 kernels are described at gemm_f32_pipe.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"

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
    const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
    const int tm = rc.m, tn = rc.n;
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

// ---------------------------------------------------------------------------------------------
// f32: the pipelined kernel. Tiles of X and Y go straight from global to shared memory with
// cp.async (sm_80), STAGES k-tiles in flight, one barrier per k-tile, and no register staging.
// Every element is its own 4-byte copy whose source size is 0 outside the matrix (the copy then
// zero-fills), so any shape, leading dimension and alignment works and a k-contiguous operand is
// transposed on the way into the k-major shared tile. VEC: the operands that are not
// k-contiguous are copied 16 bytes at a time instead (needs 16-byte aligned bases and leading
// dimensions and batch strides that are multiples of 4; the host checks).
//
// Shared tiles are k-major, xs[kk][BM + 4] and ys[kk][BN + 4]: the 4-float pad keeps the
// transposing copies of a k-contiguous operand conflict-free (a warp writes 32 / BK rows x BK
// k's) and each row 16-byte aligned for LDS.128.
//
// Warps tile the block WM x WN; a warp's 32 threads tile the warp (WM / TM) x (WN / TN); a
// thread's TM x TN outputs are TM / 4 x TN / 4 chunks of 4 x 4, chunk c of rows at
// c * (WM * 4 / TM) + ty * 4 within the warp's rows (likewise for columns), so that every
// fragment read is one LDS.128 and a warp's reads of one k cover WM + WN consecutive floats.
//
// PF (the prefetching loop): fragments are double-buffered in registers, the reads for step
// kk + 1 going out before the FMAs of step kk, across k-tiles too; the barrier sits before the
// last step of a k-tile, when the whole stage is in registers, so that stage takes the copies of
// k-tile kt + STAGES at once (STAGES k-tiles in flight). Without PF: one barrier at the top of a
// k-tile, then the copies of k-tile kt + STAGES - 1 into the stage read in the one before.
//
// KS k-slices (PF only): the block is KS groups of warps that compute the same output tile, group
// s taking steps [s * BK / KS, (s + 1) * BK / KS) of every k-tile; at the end group 0 adds the
// other groups' sums in the order 1, 2, ... through shared memory (the result does not depend on
// timing). More warps per output tile for problems with too few tiles to fill the GPU.
//
// Pipelines larger than 48 KB are dynamic shared memory (the host passes the size).
//
// The kernels (docs/kernels/gemm-simt.md has the measurements behind the choices):
//   w: 128 x 256, BK 32, 3 stages (147 KB), PF, 8 warps of 64 x 64, 8 x 16 per thread (a
//      quarter less shared-memory traffic per FMA than 8 x 8), one block per SM; VEC.
//   l: 128 x 128, BK 8, 5 stages, 8 warps of 32 x 64, 8 x 8 per thread; 2 blocks per SM (at
//      most 128 registers without spills); any operands.
//   s: 64 x 64, BK 16, 4 stages, PF, 2 k-slices of 2 warps of 32 x 64, 8 x 8 per thread; any
//      operands; for problems with fewer 128 x 256 tiles than multiprocessors.
//   u: 32 x 64, BK 16, 4 stages, PF, 2 k-slices of 2 warps of 32 x 32, 8 x 4 per thread; any
//      operands; for problems with fewer 64 x 64 tiles than multiprocessors.
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
// 4-byte async copy; ok == false copies nothing and zero-fills the destination.
__device__ __forceinline__ void cp_async4(unsigned dst, const float* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0)
                 : "memory");
}
// 16-byte async copy of `bytes` (0..16) source bytes, the rest zero-filled.
__device__ __forceinline__ void cp_async16(unsigned dst, const float* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Loads one operand's ROWS x BK tile per k-tile into a k-major shared tile s[BK][ROWS + 4].
// KC: the operand is k-contiguous (element (r, k) at base[r * ld + k]), else row-contiguous
// (at base[r + k * ld]). KM: a k-contiguous operand's copies go 8 k's of 4 rows per warp (no
// shared-memory bank conflicts), else 32 k's of one row per warp (BK 32: 4 to a bank) or 16 k's
// of 2 rows (BK 16: 2 to a bank). H100 (docs/kernels/gemm-simt.md, "f32: the paired 128 x 128
// tile"): w with KM ran TN prefill products 1-3% faster, but NN products with one k-contiguous
// operand 3-5% slower, so gemm_f32_pipe applies it to TN only; at BK 16 (v, x) KM was slower.
template <int ROWS, int BK, int NT, bool KC, bool VEC, bool KM> struct TileLoad {
    static constexpr int LD = ROWS + 4;
    static constexpr bool V = VEC && !KC;
    // Copies per thread per k-tile, and the step between a thread's copies: in rows (KC) or k's.
    static constexpr int E = V ? ROWS * BK / (4 * NT) : ROWS * BK / NT;
    static constexpr int STEP = KC ? NT / BK : (V ? NT / (ROWS / 4) : NT / ROWS);
    static_assert(E >= 1 && E * (V ? 4 : 1) * NT == ROWS * BK, "the tile divides among the threads");
    static_assert(KC ? NT % BK == 0 : (V ? NT % (ROWS / 4) == 0 : NT % ROWS == 0), "thread mapping");

    const float* ptr;  // this thread's first element of the current k-tile
    long long ld;      // the operand's leading dimension
    int rows_left;     // rows from this thread's first row to the matrix edge, at most ROWS
    int kk0;           // k of this thread's first element within the tile
    int soff;          // shared offset (floats) of the first element within a stage

    __device__ __forceinline__ TileLoad(const float* b, long long ld_, long long r0, long long nrows, int tid) {
        ld = ld_;
        int r;
        if constexpr (KC && KM) {
            // A warp's 32 copies take 8 k's of 4 rows (a 32-byte sector of each row). In the
            // k-major shared tile those land on 32 different banks: LD is an odd multiple of 4,
            // so the 8 k's are 4 banks apart and the 4 rows fill the banks between. (One row's
            // 32 k's per warp would land 4 to a bank.)
            static_assert((NT / 32) % (BK / 8) == 0 && LD % 8 == 4, "conflict-free copies");
            const int lane = tid % 32, wq = tid / 32;
            r = lane / 8 + 4 * (wq / (BK / 8)), kk0 = lane % 8 + 8 * (wq % (BK / 8));
            ptr = b + (r0 + r) * ld + kk0;
        } else if (KC) {
            r = tid / BK, kk0 = tid % BK;
            ptr = b + (r0 + r) * ld + kk0;
        } else {
            r = V ? (tid % (ROWS / 4)) * 4 : tid % ROWS;
            kk0 = V ? tid / (ROWS / 4) : tid / ROWS;
            ptr = b + (r0 + r) + kk0 * ld;
        }
        rows_left = (int)max(-1LL, min((long long)ROWS, nrows - r0 - r));
        soff = kk0 * LD + r;
    }
    // Issues the copies of one k-tile (kleft: k's left in the matrix from this tile's start, at
    // most BK) into the stage at shared address `st`, and moves on to the next k-tile. `any` is
    // a valid global address, the source of the copies that read nothing.
    __device__ __forceinline__ void load(unsigned st, int kleft, const float* any) {
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const float* src = ptr + e * STEP * ld;
            if (KC) {
                const bool ok = e * STEP < rows_left && kk0 < kleft;
                cp_async4(st + 4u * (soff + e * STEP), ok ? src : any, ok);
            } else if (V) {
                const bool ok = kk0 + e * STEP < kleft && rows_left > 0;
                cp_async16(st + 4u * (soff + e * STEP * LD), ok ? src : any, ok ? 4 * min(rows_left, 4) : 0);
            } else {
                const bool ok = kk0 + e * STEP < kleft && rows_left > 0;
                cp_async4(st + 4u * (soff + e * STEP * LD), ok ? src : any, ok);
            }
        }
        ptr += KC ? BK : BK * ld;
    }
};

// One LDS.128 from shared address `a`. Inline PTX: with plain C++ float4 loads, NVRTC 12.0
// sometimes splits one of them and adds an overlapping 8-byte load, differently from one compile
// to the next, which would make the committed PTX irreproducible.
__device__ __forceinline__ void lds4(float* d, unsigned a) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a));
}

// Split k over blocks (the `w` and `v` kernels' second parameter): with gridDim.z = S > 1, block z of
// an output tile takes k-tiles [z * per, (z + 1) * per), per = ceil(k-tiles / S), and stores
// its sums in ws[((batch * S + z) * tiles + tile) * BM * BN + row * BN + column]; the block that
// arrives last at counters[batch * tiles + tile] (zeroed by the host) adds the S sums in the
// order z = 0, 1, ... (the result does not depend on which block is last) and runs the epilogue.
struct SplitK {
    float* ws;
    unsigned* counters;
};

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, bool XK, bool YK, bool VEC, bool PF,
          int KS, bool SK, bool KM>
__device__ __forceinline__ void gemm_f32_pipe(const GemmParams& p, const SplitK& q) {
    constexpr int NW = (BM / WM) * (BN / WN);  // warps per k-slice
    constexpr int NT = NW * 32 * KS;
    constexpr int BKS = BK / KS;  // k-steps of one k-slice per k-tile
    static_assert(KS == 1 || PF, "k-slices need the prefetching loop");
    static_assert(BK % KS == 0, "k-slices divide the k-tile");
    constexpr int HM = TM / 4, HN = TN / 4;  // 4 x 4 chunks per thread
    constexpr int CM = WM / HM, CN = WN / HN;  // rows (columns) between a thread's chunks
    constexpr int XLD = BM + 4, YLD = BN + 4;
    constexpr int XST = BK * XLD, YST = BK * YLD;  // floats per stage
    constexpr int SMEM = STAGES * (XST + YST);  // the epilogue reuses it
    static_assert((WM / TM) * (WN / TN) == 32, "a warp is 32 threads");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && STAGES >= 2, "4 x 4 chunks");
    float* smem;
    if constexpr (SMEM * 4 <= 48 * 1024) {
        __shared__ __align__(16) float smem_static[SMEM];
        smem = smem_static;
    } else {
        extern __shared__ __align__(16) float smem_dynamic[];  // SMEM floats (launch contract)
        smem = smem_dynamic;
    }
    float* const xs = smem;
    float* const ys = smem + STAGES * XST;

    const int tid = threadIdx.x, warp = tid / 32 % NW, lane = tid % 32;
    const int slice = KS > 1 ? tid / (32 * NW) : 0;  // the k-slice of this thread's warp
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int ty = lane / (WN / TN), tx = lane % (WN / TN);
    const long long bz = blockIdx.y;
    const float* X = reinterpret_cast<const float*>(p.x) + bz * p.sx;
    const float* Y = reinterpret_cast<const float*>(p.y) + bz * p.sy;
    float* D = reinterpret_cast<float*>(p.d) + bz * p.sd;
    long long K = p.k;
    const int splits = SK ? (int)gridDim.z : 1, split = SK ? (int)blockIdx.z : 0;
    if (SK && splits > 1) {
        // This block's k range: whole k-tiles, the last range shorter (or empty).
        const long long per = ((K + BK - 1) / BK + splits - 1) / splits * BK;
        const long long k0 = min(K, split * per);
        K = min(K, k0 + per) - k0;
        X += XK ? k0 : k0 * p.ldx;
        Y += YK ? k0 : k0 * p.ldy;
    }

    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    const int tile = blockIdx.x;
    const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
    const int tm = rc.m, tn = rc.n;
    const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;

    // KM only where both operands are k-contiguous (TN): w's NN products ran 3-5% slower with it.
    constexpr bool KMB = KM && XK && YK;
    TileLoad<BM, BK, NT, XK, VEC, KMB> xl(X, p.ldx, m0, p.m, tid);
    TileLoad<BN, BK, NT, YK, VEC, KMB> yl(Y, p.ldy, n0, p.n, tid);
    const unsigned xs0 = smem_addr(xs), ys0 = smem_addr(ys);
    const float* any = reinterpret_cast<const float*>(p.x);  // batch 0's X: a valid address

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int KT = (int)((K + BK - 1) / BK);
    auto kleft = [&](int kt) { return (int)min((long long)BK, K - (long long)kt * BK); };
    // This thread's fragments in its slice's first k-row of a stage.
    const unsigned xw = xs0 + 4u * (wm * WM + ty * 4 + slice * BKS * XLD);
    const unsigned yw = ys0 + 4u * (wn * WN + tx * 4 + slice * BKS * YLD);
    if constexpr (PF) {
        // Fragments double-buffered in registers: the reads for step kk + 1 are issued before the
        // FMAs of step kk, across the k-tile boundary too. The barrier sits before the last step
        // of a k-tile: by then every thread has read the whole stage into registers, so the
        // stage just read takes the copies of k-tile kt + STAGES (STAGES tiles in flight).
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            if (s < KT) {
                xl.load(xs0 + 4u * s * XST, kleft(s), any);
                yl.load(ys0 + 4u * s * YST, kleft(s), any);
            }
            cp_async_commit();
        }
        cp_async_wait<STAGES - 1>();
        __syncthreads();  // k-tile 0 is in stage 0
        float a[2][TM], b[2][TN];
#pragma unroll
        for (int c = 0; c < HM; ++c) lds4(a[0] + 4 * c, xw + 4u * (c * CM));
#pragma unroll
        for (int c = 0; c < HN; ++c) lds4(b[0] + 4 * c, yw + 4u * (c * CN));
        int rs = 0;  // the stage read now
#pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            const int rn = rs + 1 == STAGES ? 0 : rs + 1;
#pragma unroll
            for (int kk = 0; kk < BKS; ++kk) {
                unsigned xr = xw + 4u * (rs * XST + (kk + 1) * XLD), yr = yw + 4u * (rs * YST + (kk + 1) * YLD);
                if (kk == BKS - 1) {
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();  // k-tile kt + 1 is complete; stage rs has been read
                    if (kt + STAGES < KT) {
                        xl.load(xs0 + 4u * rs * XST, kleft(kt + STAGES), any);
                        yl.load(ys0 + 4u * rs * YST, kleft(kt + STAGES), any);
                    }
                    cp_async_commit();
                    xr = xw + 4u * rn * XST, yr = yw + 4u * rn * YST;
                }
                float* const an = a[(kk + 1) & 1];
                float* const bn = b[(kk + 1) & 1];
#pragma unroll
                for (int c = 0; c < HM; ++c) lds4(an + 4 * c, xr + 4u * (c * CM));
#pragma unroll
                for (int c = 0; c < HN; ++c) lds4(bn + 4 * c, yr + 4u * (c * CN));
                const float* const ac = a[kk & 1];
                const float* const bc = b[kk & 1];
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ac[i], bc[j], acc[i][j]);
            }
            rs = rn;
        }
    } else {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < KT) {
                xl.load(xs0 + 4u * s * XST, kleft(s), any);
                yl.load(ys0 + 4u * s * YST, kleft(s), any);
            }
            cp_async_commit();
        }
        int rs = 0, ws = STAGES - 1;  // the stage read now, the stage written now
#pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();  // stage rs is complete for all threads; stage ws is free
            if (kt + STAGES - 1 < KT) {
                xl.load(xs0 + 4u * ws * XST, kleft(kt + STAGES - 1), any);
                yl.load(ys0 + 4u * ws * YST, kleft(kt + STAGES - 1), any);
            }
            cp_async_commit();
            const unsigned xr = xw + 4u * rs * XST;
            const unsigned yr = yw + 4u * rs * YST;
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                float a[TM], b[TN];
#pragma unroll
                for (int c = 0; c < HM; ++c) lds4(a + 4 * c, xr + 4u * (kk * XLD + c * CM));
#pragma unroll
                for (int c = 0; c < HN; ++c) lds4(b + 4 * c, yr + 4u * (kk * YLD + c * CN));
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            rs = rs + 1 == STAGES ? 0 : rs + 1;
            ws = ws + 1 == STAGES ? 0 : ws + 1;
        }
    }
    cp_async_wait<0>();
    __syncthreads();  // the pipeline's shared memory is free for the epilogue
    if constexpr (KS > 1) {
        // k-slices: slice 0 adds the others' sums, one slice at a time, through shared memory.
        constexpr int N1 = NT / KS;
        static_assert(TM * TN * N1 <= SMEM, "the reduction fits");
        const int t1 = tid % N1;
#pragma unroll 1
        for (int s = 1; s < KS; ++s) {
            if (slice == s) {
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) smem[(i * TN + j) * N1 + t1] = acc[i][j];
            }
            __syncthreads();
            if (slice == 0) {
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += smem[(i * TN + j) * N1 + t1];
            }
            __syncthreads();
        }
    }

    // Epilogue: full tiles of a D with 16-byte aligned rows and no activation store from the
    // registers (below); otherwise the threads put their outputs into shared memory, then the
    // block applies alpha, beta * D, bias and the activation with coalesced, bounds-checked stores
    // in a rolled loop (once per pass in the code: at most twice). This thread's outputs, here
    // and in the split-k exchange: acc[h * 4 + ii][c * 4 + j] is row wm * WM + h * CM + ty * 4 +
    // ii, column wn * WN + c * CN + tx * 4 + j of the tile.
    const float alpha = (float)p.alpha, beta = (float)p.beta;
    const float* bias = reinterpret_cast<const float*>(p.bias);
    const int cols = (int)min((long long)BN, p.n - n0);
    float* const cbuf = smem;
    constexpr int HLD = BN + 4;  // one row of 4 x 4 chunks per pass: BM / HM rows
    static_assert((BM / HM) * HLD <= SMEM, "the epilogue fits");
    if constexpr (SK) {
        // With k-slices (u), slice 0 holds the block's sums: it alone writes and reads the parts;
        // the other slices keep the barriers and the rolled epilogue's loops, which count every
        // thread of the block.
        if (splits > 1) {
            const long long tiles = gridDim.x;
            float* const ws = q.ws + ((bz * splits + split) * tiles + tile) * (BM * BN);
            float* const mine = q.ws + (bz * splits * tiles + tile) * (BM * BN);  // z = 0
            if (slice == 0) {
#pragma unroll
                for (int h = 0; h < HM; ++h)
#pragma unroll
                    for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                        for (int c = 0; c < HN; ++c) {
                            const int o = (wm * WM + h * CM + ty * 4 + ii) * BN + wn * WN + c * CN + tx * 4;
                            __stcg(reinterpret_cast<float4*>(ws + o),
                                   make_float4(acc[h * 4 + ii][c * 4 + 0], acc[h * 4 + ii][c * 4 + 1],
                                               acc[h * 4 + ii][c * 4 + 2], acc[h * 4 + ii][c * 4 + 3]));
                        }
            }
            __threadfence();
            __syncthreads();
            __shared__ unsigned arrived;
            if (tid == 0) arrived = atomicAdd(q.counters + bz * tiles + tile, 1u);
            __syncthreads();
            if (arrived != (unsigned)splits - 1) return;  // the same for the whole block
            if (slice == 0) {
                __threadfence();
                // Part by part in the order z = 0, 1, ..., each part's 4 * HN loads of a chunk-row
                // pass in flight together (one L2 round trip per part and pass, not one per load;
                // two parts at a time on v cost it its third block per SM: 188 registers against
                // 147, mid-sized splits 1-8% slower, H100 2026-11-27).
#pragma unroll
                for (int h = 0; h < HM; ++h) {
#pragma unroll 1
                    for (int z = 0; z < splits; ++z) {
                        const float* part = mine + z * tiles * (BM * BN);
                        float4 t[4][HN];
#pragma unroll
                        for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                            for (int c = 0; c < HN; ++c)
                                t[ii][c] = __ldcg(reinterpret_cast<const float4*>(
                                    part + (wm * WM + h * CM + ty * 4 + ii) * BN + wn * WN + c * CN + tx * 4));
#pragma unroll
                        for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                            for (int c = 0; c < HN; ++c) {
                                float* r = &acc[h * 4 + ii][c * 4];
                                if (z == 0) {
                                    r[0] = t[ii][c].x, r[1] = t[ii][c].y, r[2] = t[ii][c].z, r[3] = t[ii][c].w;
                                } else {
                                    r[0] += t[ii][c].x, r[1] += t[ii][c].y, r[2] += t[ii][c].z, r[3] += t[ii][c].w;
                                }
                            }
                    }
                }
            }
        }
    }
    // Full tiles of a D with 16-byte aligned rows and no activation: each thread's 4-column
    // chunks leave straight from the registers (slice 0 holds the sums).
    if (direct_epilogue(p, 4, m0 + BM <= p.m && n0 + BN <= p.n)) {
        if (slice != 0) return;
#pragma unroll
        for (int h = 0; h < HM; ++h)
#pragma unroll
            for (int ii = 0; ii < 4; ++ii) {
                const long long r = m0 + wm * WM + h * CM + ty * 4 + ii;
#pragma unroll
                for (int c = 0; c < HN; ++c) {
                    const long long col = n0 + wn * WN + c * CN + tx * 4;
                    const float* a = acc[h * 4 + ii] + c * 4;
                    store_out4(D + r * p.ldd + col, a[0], a[1], a[2], a[3], bias ? bias + col : nullptr, alpha, beta);
                }
            }
        return;
    }
    // HM passes (1 or 2): pass h holds chunk-row h of every thread.
#pragma unroll
    for (int h = 0; h < HM; ++h) {
#pragma unroll
        for (int ii = 0; ii < 4; ++ii)
#pragma unroll
            for (int c = 0; c < HN; ++c) {
                if (slice != 0) continue;
                float4 v;
                v.x = acc[h * 4 + ii][c * 4 + 0], v.y = acc[h * 4 + ii][c * 4 + 1];
                v.z = acc[h * 4 + ii][c * 4 + 2], v.w = acc[h * 4 + ii][c * 4 + 3];
                *reinterpret_cast<float4*>(&cbuf[(wm * CM + ty * 4 + ii) * HLD + wn * WN + c * CN + tx * 4]) = v;
            }
        __syncthreads();
#pragma unroll 1
        for (int e = tid; e < (BM / HM) * BN; e += NT) {
            const int pr = e / BN, c = e % BN;
            const long long r = m0 + (pr / CM) * WM + h * CM + pr % CM;
            if (r >= p.m || c >= cols) continue;
            float v = alpha * cbuf[pr * HLD + c];
            float* dp = D + r * p.ldd + (n0 + c);
            if (beta != 0.f) v += beta * *dp;
            if (bias) v += bias[n0 + c];
            if (p.act) v = activate(v, p.act);
            *dp = v;
        }
        __syncthreads();
    }
}

// Kernels with SK take (GemmParams, SplitK); the others (GemmParams) only.
#define GEMM_F32(NAME, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, XK, YK, VEC, PF, SK, KM)                  \
    extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32 * KS, MINB)                    \
        NAME(GemmParams p GEMM_F32_SK_PARAM_##SK) {                                                          \
        gemm_f32_pipe<BM, BN, BK, WM, WN, TM, TN, STAGES, XK, YK, VEC, PF, KS, SK, KM>(p, GEMM_F32_SK_ARG_##SK); \
    }
#define GEMM_F32_SK_PARAM_true , SplitK q
#define GEMM_F32_SK_PARAM_false
#define GEMM_F32_SK_ARG_true q
#define GEMM_F32_SK_ARG_false SplitK{nullptr, nullptr}
#define GEMM_F32_OPS(TILE, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, VEC, PF, SK, KM)                          \
    GEMM_F32(gemm_simt_f32_##TILE##_nn, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, true, false, VEC, PF, SK, KM)  \
    GEMM_F32(gemm_simt_f32_##TILE##_nt, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, false, false, VEC, PF, SK, KM) \
    GEMM_F32(gemm_simt_f32_##TILE##_tn, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, true, true, VEC, PF, SK, KM)   \
    GEMM_F32(gemm_simt_f32_##TILE##_tt, BM, BN, BK, WM, WN, TM, TN, STAGES, KS, MINB, false, true, VEC, PF, SK, KM)

#define GEMM_SIMT(NAME, T, A, BM, BN, BK, TM, TN, XK, YK)                                             \
    extern "C" __global__ void __launch_bounds__(256) NAME(GemmParams p) {                              \
        gemm_simt<T, A, BM, BN, BK, TM, TN, XK, YK>(p);                                                \
    }
#define GEMM_SIMT_OPS(TNAME, T, A, TILE, BM, BN, BK, TM, TN)                                           \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_nn, T, A, BM, BN, BK, TM, TN, true, false)                  \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_nt, T, A, BM, BN, BK, TM, TN, false, false)                 \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_tn, T, A, BM, BN, BK, TM, TN, true, true)                   \
    GEMM_SIMT(gemm_simt_##TNAME##_##TILE##_tt, T, A, BM, BN, BK, TM, TN, false, true)

GEMM_F32_OPS(w, 128, 256, 32, 64, 64, 8, 16, 3, 1, 1, true, true, true, true)
GEMM_F32_OPS(l, 128, 128, 8, 32, 64, 8, 8, 5, 1, 2, false, false, false, false)
GEMM_F32_OPS(s, 64, 64, 16, 32, 64, 8, 8, 4, 2, 3, false, true, false, false)
GEMM_F32_OPS(u, 32, 64, 16, 32, 32, 8, 4, 4, 2, 3, false, true, true, false)
GEMM_F32_OPS(v, 128, 64, 16, 64, 32, 8, 8, 3, 1, 2, false, true, true, false)
GEMM_F32_OPS(x, 128, 128, 16, 64, 64, 8, 16, 3, 1, 2, true, true, false, false)
GEMM_SIMT_OPS(f64, double, double, s, 64, 64, 8, 4, 4)
GEMM_SIMT_OPS(f16, __half, float, s, 64, 64, 8, 4, 4)
GEMM_SIMT_OPS(bf16, __nv_bfloat16, float, s, 64, 64, 8, 4, 4)
