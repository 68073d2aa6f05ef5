#pragma once
// ptx/gemm_common.cuh: what every GEMM module shares with the Rust side (src/blas/gemm.rs): the
// parameter block, passed by value, and the epilogue's activation codes; and what the kernels
// share with each other: the order of the output tiles, the f64 kernels' rolled epilogue and the
// direct epilogue of full tiles.

#include "cluster.cuh"

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
// Not an activation: `act` of a part of a k split through partial products of f16 / bf16
// (src/blas/gemm/partials.rs). The mma.sync kernels then write alpha * sum as f32 into D (the
// split's scratch, ldd and sd in f32 elements); beta, the bias and activations do not apply.
enum : int { ACT_PARTIAL_F32 = 16 };

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

// Grouped rasterisation: output tile `tile` (numbered in launch order) is tile row m, tile
// column n, taken in groups of 8 tile rows, so that the blocks running at once share their tiles
// of the n-side operand in L2 (and a group's 8 row tiles of the m-side operand).
struct TileRC {
    int m, n;
};

__device__ __forceinline__ TileRC raster_tile(int tile, int tiles_m, int tiles_n) {
    const int per_group = 8 * tiles_n;
    const int first_m = (tile / per_group) * 8;
    const int gsize = min(tiles_m - first_m, 8);
    return {first_m + (tile % per_group) % gsize, (tile % per_group) / gsize};
}

// The f64 kernels' epilogue, after the C tile (rows x cols of a BM x BN tile at m0, n0) was parked
// in shared memory `cs` with leading dimension `ldc`: one rolled loop over the tile by NT threads
// applies alpha, beta * D, the bias and the activation, with coalesced accesses to D. With
// PARTS > 1 the tile is the sum of PARTS partial tiles, `part_stride` doubles apart in `cs`, added
// in order (part 0 first), so the result does not depend on timing.
// TD: D's element type (double, or float for the f32 DMMA kernels: computed in f64, rounded once).
template <int BM, int BN, int NT, int PARTS = 1, typename TD>
__device__ __forceinline__ void store_tile_f64(const double* cs, int ldc, TD* D, const GemmParams& p,
                                               long long m0, long long n0, int tid, int part_stride = 0) {
    const double alpha = p.alpha, beta = p.beta;
    const TD* bias = reinterpret_cast<const TD*>(p.bias);
    const int rows = (int)min((long long)BM, p.m - m0), cols = (int)min((long long)BN, p.n - n0);
#pragma unroll 1
    for (int i = tid; i < BM * BN; i += NT) {
        const int r = i / BN, c = i % BN;
        if (r >= rows || c >= cols) continue;
        double s = cs[r * ldc + c];
#pragma unroll
        for (int q = 1; q < PARTS; ++q) s += cs[q * part_stride + r * ldc + c];
        double v = alpha * s;
        TD* dp = D + (m0 + r) * p.ldd + (n0 + c);
        if (beta != 0.0) v += beta * (double)*dp;
        if (bias) v += (double)bias[n0 + c];
        if (p.act) v = activate(v, p.act);
        *dp = (TD)v;
    }
}

// The direct epilogue of full output tiles: N consecutive outputs of one row of D, at `dp`
// (16-byte aligned; column n0 + c of the row), leave from the registers in one vector store after
// alpha, beta * D (one vector load, only when beta != 0) and bias[n0 + c ..]. A block takes this
// path only when its whole tile lies inside D, D's rows are 16-byte aligned and there is no
// activation (`direct_epilogue`), so it needs no bounds checks, no shared memory and no barrier.
// (Inlining the activations once per register would cost the large tiles their register budget.)
__device__ __forceinline__ bool direct_epilogue(const GemmParams& p, int elem_bytes, bool full_tile) {
    return full_tile && p.act == ACT_NONE &&
           ((p.d | (unsigned long long)(p.ldd | p.sd) * (unsigned long long)elem_bytes) & 15ull) == 0;
}

__device__ __forceinline__ void store_out4(float* dp, float v0, float v1, float v2, float v3, const float* bias_c,
                                           float alpha, float beta) {
    float v[4] = {alpha * v0, alpha * v1, alpha * v2, alpha * v3};
    if (beta != 0.f) {
        const float4 o = *reinterpret_cast<const float4*>(dp);
        v[0] += beta * o.x, v[1] += beta * o.y, v[2] += beta * o.z, v[3] += beta * o.w;
    }
    if (bias_c) {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] += bias_c[j];
    }
    *reinterpret_cast<float4*>(dp) = make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void store_out2(double* dp, double v0, double v1, const double* bias_c, double alpha,
                                           double beta) {
    double v[2] = {alpha * v0, alpha * v1};
    if (beta != 0.0) {
        const double2 o = *reinterpret_cast<const double2*>(dp);
        v[0] += beta * o.x, v[1] += beta * o.y;
    }
    if (bias_c) v[0] += bias_c[0], v[1] += bias_c[1];
    *reinterpret_cast<double2*>(dp) = make_double2(v[0], v[1]);
}
// The same for f32 outputs of f64 sums (the f32 DMMA kernels): computed in f64, rounded once.
__device__ __forceinline__ void store_out2(float* dp, double v0, double v1, const float* bias_c, double alpha,
                                           double beta) {
    double v[2] = {alpha * v0, alpha * v1};
    if (beta != 0.0) {
        const float2 o = *reinterpret_cast<const float2*>(dp);
        v[0] += beta * (double)o.x, v[1] += beta * (double)o.y;
    }
    if (bias_c) v[0] += (double)bias_c[0], v[1] += (double)bias_c[1];
    *reinterpret_cast<float2*>(dp) = make_float2((float)v[0], (float)v[1]);
}

// The same one output at a time, for a D whose rows are not 8-byte aligned (an odd leading
// dimension or offset of an f32 D): two 4-byte loads and stores per pair, straight from the
// registers, instead of the rolled epilogue through shared memory.
__device__ __forceinline__ void store_out1x2(float* dp, double v0, double v1, const float* bias_c, double alpha,
                                             double beta) {
    double v[2] = {alpha * v0, alpha * v1};
    if (beta != 0.0) v[0] += beta * (double)dp[0], v[1] += beta * (double)dp[1];
    if (bias_c) v[0] += (double)bias_c[0], v[1] += (double)bias_c[1];
    dp[0] = (float)v[0], dp[1] = (float)v[1];
}

// The direct epilogue of a warp's f64 DMMA accumulators (full tiles, see above). Fragment
// (mi, ni) holds H pairs of consecutive outputs: pair h at row r0 + mi * FR + g + 8 h, columns
// c0 + ni * 8 + 2 t and the next (m8n8k4: FR = 8, H = 1; m16n8kK: FR = 16, H = 2).
// PAIRS false (f32 D only): each pair as two 4-byte stores (store_out1x2), for rows that are not
// 8-byte aligned.
template <int MI, int NI, int FR, int H, bool PAIRS = true, typename TD>
__device__ __forceinline__ void store_acc_f64(const double (&acc)[MI][NI][2 * H], TD* D, const GemmParams& p,
                                              long long r0, long long c0, int g, int t) {
    const TD* bias = reinterpret_cast<const TD*>(p.bias);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            const long long r = r0 + mi * FR + g, c = c0 + ni * 8 + 2 * t;
            const TD* bc = bias ? bias + c : nullptr;
#pragma unroll
            for (int h = 0; h < H; ++h) {
                if constexpr (PAIRS)
                    store_out2(D + (r + 8 * h) * p.ldd + c, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1], bc, p.alpha,
                               p.beta);
                else
                    store_out1x2(D + (r + 8 * h) * p.ldd + c, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1], bc,
                                 p.alpha, p.beta);
            }
        }
}
