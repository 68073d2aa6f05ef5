#pragma once
// ptx/gemm_wg_in_place.cuh: the producer of the wgmma kernels of gemm_wgu_<type> (IP in
// ptx/gemm_wg.cuh), which reads X and Y where they lie, aligned only to their element (any
// address, leading dimension and batch stride), instead of through the TMA, which needs
// 16-byte rows. Without it such operands are first copied aligned (`gemm_pack_b16`), a pass
// that reads and writes both operands whole: on batches of small matrices that copy cost as
// much as the product (docs/kernels/gemm-wgmma.md, "wgmma reading unaligned 16-bit operands in
// place"); dispatch runs these kernels for batches at short k only (`in_place_pays`).

#include "gemm_wg_ops.cuh"

// The producer's view of a stage: a sequence of segments of 128 bytes, segment i at i * 128
// bytes of the stage, its 16-byte chunk c at (c ^ i % 8) * 16 (the TMA's 128-byte swizzle, so
// the consumers' descriptors read it as they read the TMA's boxes; stages are 1024-byte
// aligned). X's BM segments come first, then Y's:
//   k-contiguous operand: segment j is row r0 + j (of m or n), elements k0 .. k0 + EPS - 1;
//   m/n-contiguous operand (16-bit types): boxes of 64 rows / columns, each 64 k rows of 128
//   bytes: segment j is k row k0 + j % 64, elements r0 + (j / 64) * 64 .. + 63.
// Elements past the operand's bounds read as zero, as the TMA's bounds give them.
//
// in_place_rule (the hand-offs):
//   - each producer thread owns whole segments (i = thread, thread + 128, ...): it copies the
//     16-byte granules that hold a segment's elements (the segment's start rounded down to 16
//     bytes, up to 9 granules; only granules that hold one of its elements, so nothing outside
//     the operand's allocation is read) with cp.async into a staging slot of its own, waits for
//     them (cp.async.wait_group, its own copies only: no barrier between threads), and writes the
//     segment shifted into place into the stage with st.shared;
//   - the staging ring has SLOTS slots: the granules of steps j + 1 .. j + SLOTS - 1 are in
//     flight while step j is shifted; a slot is rewritten only after the same thread has read it
//     (program order);
//   - a stage's "full" barrier expects 128 arrivals, one per producer thread, each after that
//     thread's `fence.proxy.async.shared::cta` that makes its st.shared writes visible to the
//     async proxy, which wgmma's descriptor reads go through; a consumer that sees the phase
//     complete sees the whole stage;
//   - before writing a stage, each thread waits on its "empty" barrier (the consumers' wgmma
//     that read it completed) and fences the proxies again, so its generic writes come after the
//     async-proxy reads they replace.
// compute-sanitizer does not see the async proxy: the rule is checked by reasoning and by the
// randomized tests (gemm_fuzz_b16_in_place in tests/gpu_blas_fuzz.rs, the selftest).
template <typename T, int BM, int BN, bool XK, bool YK, int SLOTS_ = 2>
struct InPlace {
    static constexpr int SZ = (int)sizeof(T);
    static constexpr int EPS = 128 / SZ;  // elements per segment
    static constexpr int X_SEG = BM;
    static constexpr int Y_SEG = YK ? BN : (BN + 63) / 64 * 64;
    static constexpr int NSEG = X_SEG + Y_SEG;
    static constexpr int PER = (NSEG + 127) / 128;  // segments per producer thread
    static constexpr int SEG_BYTES = 144;           // 9 granules
    static constexpr int SLOT = NSEG * SEG_BYTES;
    static constexpr int SLOTS = SLOTS_;
    static constexpr int BYTES = SLOTS * SLOT;
};

// The shared memory of IP staging slots (0 without: no InPlace is instantiated then, so the
// other modules' PTX holds none of its members). `stage_bytes`: the kernel's stage, which
// must be the producer's segments.
template <typename T, int BM, int BN, bool XK, bool YK, int IP>
__device__ constexpr int in_place_bytes(int stage_bytes) {
    if constexpr (IP > 0) {
        return InPlace<T, BM, BN, XK, YK, IP>::NSEG * 128 == stage_bytes ? InPlace<T, BM, BN, XK, YK, IP>::BYTES : -1;
    } else {
        return 0;
    }
}

// One step of the producer's walk: unit u (a tile, or a part of one) and its k-tile kt.
struct InPlaceStep {
    int u, kt, kt1;
};

// Segment i of a step: the address of its first element and how many of its elements lie
// inside the operand (0: none, the segment is zero).
template <typename T, int BM, int BN, bool XK, bool YK>
__device__ __forceinline__ void in_place_segment(const GemmParams& p, int i, const TileCoord& tc, long long k0,
                                                 unsigned long long& addr, int& valid) {
    using G = InPlace<T, BM, BN, XK, YK>;
    const bool isx = i < G::X_SEG;
    const int j = isx ? i : i - G::X_SEG;
    const bool kc = isx ? XK : YK;
    const long long rows = isx ? p.m : p.n, r0 = isx ? tc.m0 : tc.n0;
    const long long outer = kc ? r0 + j : k0 + (j & 63);
    const long long outer_lim = kc ? rows : p.k;
    const long long inner0 = kc ? k0 : r0 + (j & ~63);
    const long long inner_lim = kc ? p.k : rows;
    const long long left = inner_lim - inner0;
    valid = outer < outer_lim && left > 0 ? (int)min(left, (long long)G::EPS) : 0;
    const long long stride = isx ? p.sx : p.sy;
    const unsigned long long base = isx ? p.x : p.y;
    const long long ld = isx ? p.ldx : p.ldy;
    addr = base + (unsigned long long)(((stride != 0 ? (long long)tc.bz * stride : 0) + outer * ld + inner0) * G::SZ);
}

template <typename T, int BM, int BN, int STAGES, bool XK, bool YK, int SLOTS>
__device__ __forceinline__ void produce_in_place(const GemmParams& p, unsigned base, unsigned staging,
                                                 unsigned full, unsigned empty, int tiles_m, int tiles_n,
                                                 int ktiles, int parts, int kper, int total) {
    using G = InPlace<T, BM, BN, XK, YK, SLOTS>;
    static_assert(G::SZ == 2 || (XK && YK), "m/n-contiguous operands in place: 16-bit types");
    constexpr int STAGE_BYTES = G::NSEG * 128;
    constexpr int BK = G::EPS;
    const int tid = threadIdx.x;
    // A unit's k-tiles [kt0, kt1).
    auto first = [&](int u) {
        const int kt0 = (u % parts) * kper;
        return InPlaceStep{u, kt0, min(kt0 + kper, ktiles)};
    };
    auto advance = [&](InPlaceStep& st) {
        if (++st.kt >= st.kt1) {
            const int u = st.u + (int)gridDim.x;
            st = u < total ? first(u) : InPlaceStep{total, 0, 0};
        }
    };
    // Copies the granules of step `st`'s segments into staging slot `q`.
    auto copy = [&](const InPlaceStep& st, int q) {
        if (st.u >= total) return;
        const TileCoord tc = tile_coord<BM, BN>(st.u / parts, tiles_m, tiles_n);
        const long long k0 = (long long)st.kt * BK;
#pragma unroll 1
        for (int e = 0; e < G::PER; ++e) {
            const int i = tid + 128 * e;
            if (G::NSEG % 128 != 0 && i >= G::NSEG) break;
            unsigned long long a;
            int valid;
            in_place_segment<T, BM, BN, XK, YK>(p, i, tc, k0, a, valid);
            if (valid == 0) continue;
            const unsigned long long g0 = a & ~15ull;
            const int granules = (int)(((a + (unsigned long long)(valid * G::SZ) - 1) >> 4) - (a >> 4)) + 1;
            const unsigned dst = staging + q * G::SLOT + i * G::SEG_BYTES;
#pragma unroll
            for (int g = 0; g < 9; ++g) {
                if (g < granules) {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + 16 * g),
                                 "l"(g0 + 16ull * g)
                                 : "memory");
                }
            }
        }
    };
    // Writes step `st`'s segments from staging slot `q` into stage `s`, shifted into place.
    auto place = [&](const InPlaceStep& st, int q, int s) {
        const TileCoord tc = tile_coord<BM, BN>(st.u / parts, tiles_m, tiles_n);
        const long long k0 = (long long)st.kt * BK;
        const unsigned stage = base + s * STAGE_BYTES;
#pragma unroll 1
        for (int e = 0; e < G::PER; ++e) {
            const int i = tid + 128 * e;
            if (G::NSEG % 128 != 0 && i >= G::NSEG) break;
            unsigned long long a;
            int valid;
            in_place_segment<T, BM, BN, XK, YK>(p, i, tc, k0, a, valid);
            const unsigned row = stage + i * 128, sw = (unsigned)(i & 7);
            if (valid == 0) {
#pragma unroll
                for (int c = 0; c < 8; ++c)
                    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(row + ((c ^ sw) << 4)), "r"(0u)
                                 : "memory");
                continue;
            }
            const unsigned sh = (unsigned)(a & 15ull);
            const unsigned raw = staging + q * G::SLOT + i * G::SEG_BYTES + (sh & ~3u);
            const unsigned bits = (sh & 3u) * 8u;
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                unsigned w[5];
#pragma unroll
                for (int j = 0; j < 5; ++j)
                    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w[j]) : "r"(raw + 16 * c + 4 * j) : "memory");
                unsigned o[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) o[j] = __funnelshift_r(w[j], w[j + 1], bits);
                if (valid < G::EPS) {
                    // Elements past the operand's bounds read as zero (word j holds elements
                    // 2 (4c + j) and 2 (4c + j) + 1 of a 16-bit type, element 4c + j of tf32).
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if constexpr (G::SZ == 2) {
                            const int e0 = 8 * c + 2 * j;
                            o[j] = e0 >= valid ? 0u : e0 + 1 >= valid ? (o[j] & 0xffffu) : o[j];
                        } else {
                            o[j] = 4 * c + j >= valid ? 0u : o[j];
                        }
                    }
                }
                asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(row + ((c ^ sw) << 4)), "r"(o[0]),
                             "r"(o[1]), "r"(o[2]), "r"(o[3])
                             : "memory");
            }
        }
    };
    if ((int)blockIdx.x >= total) return;
    // The granules of the first SLOTS - 1 steps, then each step's: SLOTS - 1 steps in flight.
    InPlaceStep now = first((int)blockIdx.x), ahead = now;
#pragma unroll
    for (int q = 0; q < SLOTS - 1; ++q) {
        copy(ahead, q);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        advance(ahead);
    }
    RingPos<STAGES> r;
    int q = 0;  // the slot of step `now`
    while (now.u < total) {
        // Step now + SLOTS - 1 into the slot this thread read last (step now - 1), then wait
        // for step now's granules.
        copy(ahead, q == 0 ? SLOTS - 1 : q - 1);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        advance(ahead);
        asm volatile("cp.async.wait_group %0;\n" ::"n"(SLOTS - 1) : "memory");
        mbar_wait(empty + 8 * r.s, r.ph ^ 1u);
        fence_async_smem();  // in_place_rule: after the consumers' async-proxy reads
        place(now, q, r.s);
        fence_async_smem();  // in_place_rule: the writes, visible to wgmma
        mbar_arrive(full + 8 * r.s);
        advance(now);
        r.next();
        q = q == SLOTS - 1 ? 0 : q + 1;
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");  // pdl_rule (ptx/gemm_wg.cuh)
}
