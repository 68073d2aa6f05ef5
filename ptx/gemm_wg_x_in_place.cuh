#pragma once
// ptx/gemm_wg_x_in_place.cuh: the producer of the tf32 wgmma kernels (ptx/gemm_wg.cuh) that
// copies an m-contiguous X whose rows need not be 16 bytes apart into the stages itself
// (flags bit 1), in place of the TMA.

#include "gemm_wg_ops.cuh"

// x_in_place (flags bit 1, tf32 RS kernels of gemm_wg_tf32): the producer warpgroup's 128
// threads copy X (m-contiguous, any leading dimension, 4-byte aligned) into each stage in the
// layout the TMA would give it (32-row boxes of 4 KiB, k row kk at kk * 128 bytes, the 16-byte
// chunk of rows 4c .. 4c + 3 at (c ^ kk % 8) * 16), which the consumers read with ld.shared
// (generic proxy, like these copies: no proxy fence). Warp w takes k rows w, w + 4, ...; lane l
// rows l, l + 32, ...: each copy instruction reads 32 consecutive floats and writes 32 distinct
// banks. Rows past m and k past the end read as zero (src-size 0), as the TMA's bounds would
// give them. Y still comes through the TMA.
// x_in_place_rule (the hand-off): a stage's "full" barrier expects 1 + 128 arrivals: thread 0's
// arrive.expect_tx for Y's bytes (the TMA completes those) and one cp.async.mbarrier.arrive.noinc
// per producer thread, which fires once that thread's copies into the stage have landed; a
// consumer that sees the phase complete sees X and Y in place. The "empty" barrier orders the
// consumers' reads of a stage (ld.shared of X, wgmma of Y) before the next copies into it, as
// for the TMA. The units, k-tiles and ring slots run exactly as the TMA producer's.
template <int BM, int BN, int STAGES>
__device__ __forceinline__ void produce_x_in_place(const GemmParams& p, const TensorMap* ty, unsigned base,
                                                unsigned full, unsigned empty, int tiles_m, int tiles_n,
                                                int ktiles, int parts, int kper, int total) {
    constexpr int BK = 32;  // k per stage: one 128-byte swizzle row of f32
    constexpr int X_BYTES = BM * 128, Y_BYTES = BN * 128, STAGE_BYTES = X_BYTES + Y_BYTES;
    const int tid = threadIdx.x;
    const int lane = tid & 31, pw = tid >> 5;
    const float* X = reinterpret_cast<const float*>(p.x);
    // This thread's destination within a stage for its k rows pw + 4 j: j even and j odd
    // differ in the swizzle phase (kk % 8 is pw or pw + 4), then j / 2 steps 1024 bytes.
    const unsigned chunk = (unsigned)(lane & 3) * 4;
    const unsigned d_even = pw * 128 + ((((unsigned)(lane >> 2) ^ pw) & 7) << 4) + chunk;
    const unsigned d_odd = (pw + 4) * 128 + ((((unsigned)(lane >> 2) ^ (pw + 4)) & 7) << 4) + chunk;
    const long long step = 4 * p.ldx;  // k rows between a thread's copies
    RingPos<STAGES> r;
    for (int u = blockIdx.x; u < total; u += gridDim.x) {
        const int t = u / parts, kt0 = (u % parts) * kper, kt1 = min(kt0 + kper, ktiles);
        const TileCoord tc = tile_coord<BM, BN>(t, tiles_m, tiles_n);
        const int zx = p.sx != 0 ? tc.bz : 0, zy = p.sy != 0 ? tc.bz : 0;
        const float* xr = X + (long long)zx * p.sx + tc.m0 + lane;
        const bool rows_full = tc.m0 + BM <= p.m;
        // A tile over the edge of X copies without per-copy tests too: the b-th copy of a row
        // past m reads nothing (src-size 0, zero-filled; its address clamped to row m - 1, a
        // valid one). Reading row m - 1 itself there instead (those rows only reach D's rows
        // past m, which no store writes) ran such tiles at half speed: many lanes reading one
        // address. k past the end takes the tested loop.
        const int last = (int)min((long long)(BM - 1), p.m - 1 - tc.m0) - lane;  // from xr, in elements
        for (int kt = kt0; kt < kt1; ++kt, r.next()) {
            const int s = r.s;
            mbar_wait(empty + 8 * s, r.ph ^ 1u);
            const unsigned bar = full + 8 * s;
            const unsigned xs = base + s * STAGE_BYTES, ys = xs + X_BYTES;
            const int k0 = kt * BK;
            if (tid == 0) {
                mbar_expect_tx(bar, Y_BYTES);
                tma_load(ys, ty, bar, k0, tc.n0, zy);
            }
            // Where this thread's copies of k row pw + 4 j land in the stage.
            auto dst_of = [&](int j) { return xs + (j & 1 ? d_odd : d_even) + (j / 2) * 1024; };
            const float* src = xr + (long long)(k0 + pw) * p.ldx;
            // The copies' issue rate, not their bytes, bounds this producer: a tile inside X
            // takes one instruction per copy (with a bounds test on every copy the wgmma
            // kernels ran 20-40% slower than with the TMA).
            if (k0 + BK <= p.k && rows_full) {
#pragma unroll
                for (int j = 0; j < BK / 4; ++j, src += step) {
                    const unsigned dst = dst_of(j);
#pragma unroll
                    for (int b = 0; b < BM / 32; ++b) cp_async4_zfill(dst + b * 4096, src + 32 * b, true);
                }
            } else if (k0 + BK <= p.k) {
#pragma unroll
                for (int j = 0; j < BK / 4; ++j, src += step) {
                    const unsigned dst = dst_of(j);
#pragma unroll
                    for (int b = 0; b < BM / 32; ++b)
                        cp_async4_zfill(dst + b * 4096, src + min(32 * b, last), 32 * b <= last);
                }
            } else {
#pragma unroll 1
                for (int j = 0; j < BK / 4; ++j, src += step) {
                    const bool ok = k0 + pw + 4 * j < p.k;
                    const unsigned dst = dst_of(j);
#pragma unroll
                    for (int b = 0; b < BM / 32; ++b)
                        cp_async4_zfill(dst + b * 4096, ok ? src + min(32 * b, last) : X, ok && 32 * b <= last);
                }
            }
            cp_async_mbar_arrive(bar);
        }
    }
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");  // pdl_rule (ptx/gemm_wg.cuh)
}
