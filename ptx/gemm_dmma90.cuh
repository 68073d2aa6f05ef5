#pragma once
// ptx/gemm_dmma90.cuh: the sm_90 DMMA GEMM template (mma.sync m16n8k4 / m16n8k8 / m16n8k16 .f64,
// f64 accumulation) that the modules gemm_dmma90 (f64 operands) and gemm_dmma90_f32 (f32
// operands, converted to f64 as their fragments are read) instantiate. The problem, tiles,
// fragments, bank layout, split and launch contract are described in gemm_dmma90.cu.

#include "gemm_common.cuh"
#include "gemm_cp_async.cuh"

// One m16n8k<KS> DMMA: a holds KS / 2 doubles, b KS / 4 (the layouts above, j < KS / 4).
template <int KS> __device__ __forceinline__ void dmma(double c[4], const double* a, const double* b);
template <> __device__ __forceinline__ void dmma<16>(double c[4], const double* a, const double* b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
        "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
          "d"(b[1]), "d"(b[2]), "d"(b[3]));
}
template <> __device__ __forceinline__ void dmma<4>(double c[4], const double* a, const double* b) {
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(a[0]), "d"(a[1]), "d"(b[0]));
}
template <> __device__ __forceinline__ void dmma<8>(double c[4], const double* a, const double* b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}

// One thread's share of copying an operand tile (OUTER rows x INNER contiguous elements of TS,
// shared row stride SLD) with cp.async of CE elements (16 bytes, or one element for operands
// aligned only to their element). The chunk column c is the same for all of a thread's
// chunks (NT is a multiple of the chunks per row), its rows are r0, r0 + RSTEP, ...; so the copy
// keeps one pointer and one column test, and per k-tile only the offset changes.
template <typename TS, int OUTER, int INNER, int SLD, int NT, int CE> struct TileCopy {
    static constexpr int S = sizeof(TS);
    static constexpr int CPR = INNER / CE;
    static constexpr int N = OUTER * CPR / NT;
    static constexpr int RSTEP = NT / CPR;
    static_assert(NT % CPR == 0 && N * NT == OUTER * CPR, "a tile's chunks must divide among the threads");
    const TS* base;  // the operand (a valid address for the zero-byte copies)
    const TS* src;   // element (r0, c) of the tile at offset (0, 0)
    long long ld, outer, inner;  // remaining rows / columns from (r0, c) at offset (0, 0)
    unsigned dst;
    __device__ __forceinline__ TileCopy(const TS* g, long long ld_, long long outer0, long long outer_lim,
                                        long long inner0, long long inner_lim, int tid) {
        const int r0 = tid / CPR, c = (tid % CPR) * CE;
        ld = ld_;
        base = g;
        src = g + (outer0 + r0) * ld_ + inner0 + c;
        outer = outer_lim - outer0 - r0;
        inner = inner_lim - inner0 - c;
        dst = (unsigned)((r0 * SLD + c) * S);
    }
    // Copies the tile displaced by (d_outer, d_inner) into the shared tile at `sdst`; rows or
    // columns past the operand's edge read as zero.
    __device__ __forceinline__ void copy(unsigned sdst, long long d_outer, long long d_inner) const {
        const long long left = inner - d_inner;
        // A partial chunk at the row's end copies the elements left (zero-filling the rest).
        int bytes;
        if constexpr (CE > 2)
            bytes = left >= CE ? S * CE : (left > 0 ? S * (int)left : 0);
        else
            bytes = left >= CE ? S * CE : (left == 1 ? S : 0);
        const TS* p = src + d_outer * ld + d_inner;
#pragma unroll
        for (int it = 0; it < N; ++it) {
            const bool ok = bytes != 0 && d_outer + it * RSTEP < outer;
            cp_async<S * CE>(sdst + dst + (unsigned)(it * RSTEP * SLD * S), ok ? p + it * RSTEP * ld : base,
                             ok ? bytes : 0);
        }
    }
};

// The stream-k kernels' second parameter (SPLIT == 0): two slots of BM x BN doubles per block
// (its first and last segment's sums, in accumulator order: element i of thread tid at
// i * threads + tid) and one arrival counter per output tile, zeroed by the host.
struct DmmaStreamK {
    double* ws;
    unsigned* counters;
};

// TS: the operands' and D's element type, double or float (f32 data on the f64 tensor cores:
// each element converted to f64 as its fragment is read, f64 sums, D rounded to f32 once).
template <typename TS, int BM, int BN, int WM, int WN, int BK, int STAGES, int KS, int SPLIT, bool XK, bool YK,
          int CE, bool ROT = false>
__device__ __forceinline__ void gemm_dmma90(const GemmParams& p, const DmmaStreamK& sk) {
    constexpr int NT = WM * WN * 32;
    constexpr int SZ = sizeof(TS);
    // Row pads (elements): 4 for k-contiguous tiles, 32 bytes for the others (dmma90_pads).
    constexpr int LDK = BK + 4, LDXM = BM + 32 / SZ, LDYN = BN + 32 / SZ;
    // An even number of k-steps per k-tile: each k-tile then starts on fragment buffer 0.
    constexpr int KSTEPS = BK / KS;
    static_assert(BK % 16 == 0 && BK % KS == 0 && KSTEPS % 2 == 0 && STAGES >= 2, "k tiling");
    // A stage's slot of each operand holds either layout of its tile: rows x (BK + 4) elements
    // k-contiguous, BK x (rows + 32 / SZ) otherwise (the larger only for BK > 16 over 16 rows).
    constexpr int XS_ELEMS = (BM * LDK > BK * LDXM) ? BM * LDK : BK * LDXM;
    constexpr int YS_ELEMS = (BN * LDK > BK * LDYN) ? BN * LDK : BK * LDYN;
    constexpr int STAGE_BYTES = (XS_ELEMS + YS_ELEMS) * SZ;
    constexpr int WTM = BM / WM, WTN = BN / WN;
    constexpr int MI = WTM / 16, NI = WTN / 8;
    static_assert(MI >= 1 && NI >= 1 && WTM % 16 == 0 && WTN % 8 == 0, "warp tile of whole m16n8 blocks");
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const long long bz = blockIdx.y;
    const TS* X = reinterpret_cast<const TS*>(p.x) + bz * p.sx;
    const TS* Y = reinterpret_cast<const TS*>(p.y) + bz * p.sy;
    TS* D = reinterpret_cast<TS*>(p.d) + bz * p.sd;

    // Grouped rasterisation: 8 row-tiles share their column tiles in L2.
    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    // SPLIT > 1: the SPLIT blocks of a cluster share one output tile, each summing a contiguous
    // share of its k-tiles; the partial tiles meet in shared memory after the main loop.
    // SPLIT == 0: stream-k (below), the blocks share the tiles' k-tiles in one sequence.
    static_assert(SPLIT >= 0 && BM % (SPLIT > 0 ? SPLIT : 1) == 0, "a split tile divides its rows among the parts");
    const int KT_ALL = (int)((p.k + BK - 1) / BK);
    const unsigned sbase = smem_addr(smem);

    double acc[MI][NI][4];
    auto zero_acc = [&]() {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0;
    };

    // Fragments of one k-step (KS) of the warp tile, double-buffered in registers: the next
    // k-step's fragments are read from shared memory while the current one's DMMAs run, across the
    // stage boundary too, so the barrier never leaves the tensor pipe without work.
    const int g = lane >> 2, t = lane & 3;
    // ROT: one buffer of A's fragments, each row block's reloaded for the next k-step right after
    // its DMMAs (p: m16n8k8 on 64 x 32 warp tiles in 2 blocks per multiprocessor; q: 32 x 32 in
    // 3, at most 168 registers; fully double-buffered fragments spill in both).
    double af[ROT ? 1 : 2][MI][KS / 2], bf[2][NI][KS / 4];
    // A's fragment elements 2j and 2j + 1 of row block mi, at k column kc of the stage at xs.
    // (TS float: each element read as f32 and converted, exactly, to f64.)
    auto a_frag = [&](int buf, int mi, int j, const TS* xs, int kc) {
        const int mr = wm * WTM + mi * 16 + g;
        af[buf][mi][2 * j] = (double)(XK ? xs[mr * LDK + kc] : xs[kc * LDXM + mr]);
        af[buf][mi][2 * j + 1] = (double)(XK ? xs[(mr + 8) * LDK + kc] : xs[kc * LDXM + mr + 8]);
    };
    auto load_a = [&](int buf, int mi, int stage, int kb) {
        const TS* xs = reinterpret_cast<const TS*>(smem + stage * STAGE_BYTES);
#pragma unroll
        for (int j = 0; j < KS / 4; ++j) a_frag(buf, mi, j, xs, kb + 4 * j + t);
    };
    // A's and B's fragments of one k-step, or B's alone (with_a false: ROT reloads A by row
    // block, load_a).
    auto load_frags = [&](int buf, int stage, int kb, bool with_a = true) {
        const TS* xs = reinterpret_cast<const TS*>(smem + stage * STAGE_BYTES);
        const TS* ys = xs + XS_ELEMS;
#pragma unroll
        for (int j = 0; j < KS / 4; ++j) {
            const int kc = kb + 4 * j + t;
#pragma unroll
            for (int mi = 0; mi < MI && with_a; ++mi) a_frag(ROT ? 0 : buf, mi, j, xs, kc);
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const int nc = wn * WTN + ni * 8 + g;
                bf[buf][ni][j] = (double)(YK ? ys[nc * LDK + kc] : ys[kc * LDYN + nc]);
            }
        }
    };

    // The main loop: acc = the sums over k-tiles [kt0, kt0 + KT) of the tile at (m0, n0).
    auto main_loop = [&](long long m0, long long n0, int kt0, int KT) {
        // X: rows m0.. (k-contiguous) or k-rows (m-contiguous); Y likewise with n.
        const TileCopy<TS, XK ? BM : BK, XK ? BK : BM, XK ? LDK : LDXM, NT, CE> xc(
            X, p.ldx, XK ? m0 : 0, XK ? p.m : p.k, XK ? 0 : m0, XK ? p.k : p.m, tid);
        const TileCopy<TS, YK ? BN : BK, YK ? BK : BN, YK ? LDK : LDYN, NT, CE> yc(
            Y, p.ldy, YK ? n0 : 0, YK ? p.n : p.k, YK ? 0 : n0, YK ? p.k : p.n, tid);
        auto load_stage = [&](int stage, int kt) {
            const unsigned xs = sbase + stage * STAGE_BYTES, ys = xs + XS_ELEMS * SZ;
            const long long k0 = (long long)(kt0 + kt) * BK;
            xc.copy(xs, XK ? 0 : k0, XK ? k0 : 0);
            yc.copy(ys, YK ? 0 : k0, YK ? k0 : 0);
        };
        zero_acc();

        // Pipeline: every stage holds one k-tile; tile kt + STAGES is copied into tile kt's stage
        // right after the barrier of iteration kt, which every warp passes only once it has read
        // tile kt's fragments (the reads of the last k-step happen before the barrier).
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            if (s < KT) load_stage(s, s);
            cp_async_commit();
        }
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        load_frags(0, 0, 0);
#pragma unroll 1
        for (int kt = 0; kt < KT; ++kt) {
            const int stage = kt % STAGES;
#pragma unroll
            for (int ks = 0; ks < KSTEPS; ++ks) {
                const int cur = ks & 1, nxt = cur ^ 1;
                int nstage = stage, nkb = (ks + 1) * KS;  // where the next k-step's fragments are (ROT)
                if (ks == KSTEPS - 1) {
                    // Tile kt + 1 resident (at most STAGES - 2 younger groups in flight) and tile
                    // kt read by every warp; then its stage takes tile kt + STAGES.
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();
                    if (kt + STAGES < KT) load_stage(stage, kt + STAGES);
                    cp_async_commit();
                    if constexpr (ROT) {
                        nstage = (kt + 1) % STAGES, nkb = 0;
                    } else {
                        load_frags(nxt, (kt + 1) % STAGES, 0);
                    }
                } else if constexpr (!ROT) {
                    load_frags(nxt, stage, (ks + 1) * KS);
                }
                if constexpr (ROT) {
                    // B's next fragments into the other buffer, then each row block's DMMAs
                    // followed by the reload of its A fragments for the next k-step.
                    load_frags(nxt, nstage, nkb, false);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
                        for (int ni = 0; ni < NI; ++ni) dmma<KS>(acc[mi][ni], af[0][mi], bf[cur][ni]);
                        load_a(0, mi, nstage, nkb);
                    }
                } else {
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                        for (int ni = 0; ni < NI; ++ni) dmma<KS>(acc[mi][ni], af[cur][mi], bf[cur][ni]);
                }
            }
        }
        cp_async_wait<0>();
    };

    // Epilogue: full tiles of a D with 16-byte aligned rows and no activation store from the
    // registers. Otherwise the C tile goes through shared memory (free once the last stage is
    // read; rows padded by 8 doubles, so the 16-byte stores of each quarter-warp hit distinct
    // banks), then one rolled loop applies alpha, beta * D, bias and the activation with
    // coalesced, bounds-checked accesses to D. Both compute in f64 and round to TS once.
    // The C tile is f64 whatever TS is: with f32 operands the stages are half as large, and the
    // launch's dynamic shared memory is the larger of the two (dmma90_smem on the host).
    constexpr int LDC = BN + 8;
    static_assert(SZ == 4 || BM * LDC * 8 <= STAGES * STAGE_BYTES, "the f64 C tile must fit in the stages");
    double* cs = reinterpret_cast<double*>(smem);
    // The epilogue of a whole tile's sums in acc (SPLIT 0 and 1).
    auto store = [&](long long m0, long long n0) {
        if (direct_epilogue(p, SZ, m0 + BM <= p.m && n0 + BN <= p.n)) {
            // A full tile of a D with 16-byte aligned rows, no activation: straight from the
            // accumulators, two consecutive outputs per store.
            store_acc_f64<MI, NI, 16, 2>(acc, D, p, m0 + wm * WTM, n0 + wn * WTN, g, t);
            return;
        }
        if constexpr (SZ == 4) {
            // An f32 D whose rows are not 16-byte aligned (odd leading dimension or offset): full
            // tiles without an activation still store from the registers, one output at a time,
            // rather than through the rolled loop, which short k leaves most of the time.
            if (p.act == ACT_NONE && m0 + BM <= p.m && n0 + BN <= p.n) {
                store_acc_f64<MI, NI, 16, 2, false>(acc, D, p, m0 + wm * WTM, n0 + wn * WTN, g, t);
                return;
            }
        }
        __syncthreads();
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const int r = wm * WTM + mi * 16 + g, c = wn * WTN + ni * 8 + 2 * t;
                *reinterpret_cast<double2*>(cs + r * LDC + c) = make_double2(acc[mi][ni][0], acc[mi][ni][1]);
                *reinterpret_cast<double2*>(cs + (r + 8) * LDC + c) = make_double2(acc[mi][ni][2], acc[mi][ni][3]);
            }
        __syncthreads();
        store_tile_f64<BM, BN, NT>(cs, LDC, D, p, m0, n0, tid);
    };

    if constexpr (SPLIT == 1) {
        const TileRC rc = raster_tile(blockIdx.x, tiles_m, tiles_n);
        const long long m0 = (long long)rc.m * BM, n0 = (long long)rc.n * BN;
        main_loop(m0, n0, 0, KT_ALL);
        store(m0, n0);
    } else if constexpr (SPLIT > 1) {
        const int rank = (int)cluster_rank();
        const TileRC rc = raster_tile(blockIdx.x / SPLIT, tiles_m, tiles_n);
        const long long m0 = (long long)rc.m * BM, n0 = (long long)rc.n * BN;
        const int kt0 = (int)((long long)KT_ALL * rank / SPLIT);
        main_loop(m0, n0, kt0, (int)((long long)KT_ALL * (rank + 1) / SPLIT) - kt0);
        // Block `rank` finishes rows [rank * RB, rank * RB + RB) of the tile. Once every block of
        // the cluster is past its main loop (its stages are free), each sends each row of its
        // partial tile to the block that finishes it, into slot `rank` of that block's RB-row
        // slots; after the second barrier every block adds its SPLIT slots in order.
        constexpr int RB = BM / SPLIT;
        cluster_sync();
        auto put = [&](int r, int c, double a, double b) {
            const int owner = r / RB, lr = r % RB;
            cluster_store_f64x2(sbase + (unsigned)(((rank * RB + lr) * LDC + c) * 8), (unsigned)owner, a, b);
        };
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const int r = wm * WTM + mi * 16 + g, c = wn * WTN + ni * 8 + 2 * t;
                put(r, c, acc[mi][ni][0], acc[mi][ni][1]);
                put(r + 8, c, acc[mi][ni][2], acc[mi][ni][3]);
            }
        cluster_sync();
        store_tile_f64<RB, BN, NT, SPLIT>(cs, LDC, D, p, m0 + (long long)rank * RB, n0, tid, RB * LDC);
    } else {
        // Stream-k: the tiles' k-tiles form one sequence, tile after tile (KTS each); block b of
        // G takes iterations [total * b / G, total * (b + 1) / G), so every block does the same
        // work to within one k-tile whatever the tile count. Each run of a block's iterations
        // within one tile is a segment: a whole tile is stored as above; a part of one parks its
        // sums in the block's slot of sk.ws (slot 0 for its first segment, 1 for its last), then
        // counts itself in at sk.counters[tile], and the block that counts the tile's last part
        // adds every part from the slots in block order (its own too, so the sum's order is
        // fixed by the launch shape, not by timing) and runs the epilogue.
        // Hand-off: each thread's slot stores (st.global.cg), __threadfence, the barrier, then one
        // atomicAdd; the finishing block's thread 0 sees the count, the barrier passes that on,
        // __threadfence, then the slots are read through L2 (ld.global.cg), never through a
        // possibly stale L1 line.
        const int KTS = KT_ALL > 0 ? KT_ALL : 1;  // k == 0: one k-tile of zeros, so the epilogue runs
        const long long total = (long long)tiles_m * tiles_n * KTS, G = gridDim.x;
        const long long it0 = total * blockIdx.x / G, it1 = total * (blockIdx.x + 1) / G;
        // The block whose iterations hold iteration x: the last b with total * b / G <= x.
        auto holder = [&](long long x) { return ((x + 1) * G + total - 1) / total - 1; };
        constexpr int ACC = MI * NI * 4;
        __shared__ int finish;
#pragma unroll 1
        for (long long it = it0; it < it1;) {
            const int tile = (int)(it / KTS);
            const long long t0 = (long long)tile * KTS;
            const int kb = (int)(it - t0), ke = (int)min((long long)KTS, it1 - t0);
            const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
            const long long m0 = (long long)rc.m * BM, n0 = (long long)rc.n * BN;
            main_loop(m0, n0, kb, ke - kb);
            if (kb == 0 && ke == KTS) {
                store(m0, n0);
            } else {
                double* mine = sk.ws + ((long long)blockIdx.x * 2 + (it == it0 ? 0 : 1)) * (ACC * NT) + tid;
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                        for (int e = 0; e < 4; ++e) __stcg(mine + ((mi * NI + ni) * 4 + e) * NT, acc[mi][ni][e]);
                __threadfence();
                __syncthreads();
                const long long b0 = holder(t0), b1 = holder(t0 + KTS - 1);
                if (tid == 0) finish = atomicAdd(sk.counters + tile, 1u) == (unsigned)(b1 - b0);
                __syncthreads();
                if (finish) {
                    __threadfence();
                    zero_acc();
#pragma unroll 1
                    for (long long b = b0; b <= b1; ++b) {
                        // Slot 0 where the tile is block b's first, else its last (slot 1).
                        const bool first = total * b / G / KTS == tile;
                        const double* part = sk.ws + (b * 2 + (first ? 0 : 1)) * (ACC * NT) + tid;
#pragma unroll
                        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                                for (int e = 0; e < 4; ++e)
                                    acc[mi][ni][e] += __ldcg(part + ((mi * NI + ni) * 4 + e) * NT);
                    }
                    store(m0, n0);
                }
            }
            it = t0 + ke;
            // The next segment's loads reuse the stages that this one's C tile occupied.
            __syncthreads();
        }
    }
}

// The kernels: GEMM_DMMA90_OPS_T defines the four op pairs of one tile, gemm_dmma90_<t>_<tile>_<ops>
// (PREFIX gemm_dmma90_<t>_) on element type TS; xk = (opB == n), yk = (opA == t). CE: elements
// per cp.async (16 bytes, or 1: the element variants, operands aligned only to their element).
// SPLIT > 1 kernels carry their cluster shape (SPLIT x 1 x 1), so a plain launch forms the clusters.
// SPLIT 0 (stream-k) kernels take a second parameter, DmmaStreamK.
#define DMMA90_CLUSTER_0
#define DMMA90_CLUSTER_1
#define DMMA90_CLUSTER_2 __cluster_dims__(2, 1, 1)
#define DMMA90_PARAMS_0 GemmParams p, DmmaStreamK sk
#define DMMA90_PARAMS_1 GemmParams p
#define DMMA90_PARAMS_2 GemmParams p
#define DMMA90_SK_0 sk
#define DMMA90_SK_1 DmmaStreamK{nullptr, nullptr}
#define DMMA90_SK_2 DmmaStreamK{nullptr, nullptr}
#define GEMM_DMMA90_T(NAME, TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, XK, YK, CE, ROT)                 \
    extern "C" __global__ void DMMA90_CLUSTER_##SPLIT __launch_bounds__(WM * WN * 32, MINB)             \
        NAME(DMMA90_PARAMS_##SPLIT) {                                                                    \
        gemm_dmma90<TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, XK, YK, CE, ROT>(p, DMMA90_SK_##SPLIT);      \
    }
#define GEMM_DMMA90_OPS_T(PREFIX, TS, TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, CE, ROT)                \
    GEMM_DMMA90_T(PREFIX##TILE##_nn, TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, true, false, CE, ROT)      \
    GEMM_DMMA90_T(PREFIX##TILE##_nt, TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, false, false, CE, ROT)     \
    GEMM_DMMA90_T(PREFIX##TILE##_tn, TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, true, true, CE, ROT)       \
    GEMM_DMMA90_T(PREFIX##TILE##_tt, TS, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, false, true, CE, ROT)
