#pragma once
// ptx/gemm_wg.cuh: the GEMM kernel template of the modules gemm_wg_f16, gemm_wg_bf16 and
// gemm_wg_tf32, and of their activation twins gemm_wg_<act>_<type> (relu, gelu, sigmoid, tanh):
// one module per type and activation, so a process JIT-compiles only what it uses.
//
// GEMM on Hopper's warpgroup tensor cores (sm_90a): `wgmma.mma_async`
// fed by the Tensor Memory Accelerator (`cp.async.bulk.tensor`), f16 / bf16 / tf32 inputs with f32
// accumulation, fused epilogue. Compiled for compute_90a: the driver loads them only on cc 9.0.
//
// The problem is the row-major one of ptx/gemm_tc.cu (the Rust side maps cuBLAS's column-major
// GEMM onto it, X = op(B)^T, Y = op(A)^T):
//
//   D[r][c] = act(alpha * sum_p X[r][p] * Y[p][c] + beta * D[r][c] + bias[c]),   r < m, c < n, p < k
//
//   X[r][p] at x[r * ldx + p] when X is k-contiguous ("xk"), else at x[r + p * ldx]
//   Y[p][c] at y[c * ldy + p] when Y is k-contiguous ("yk"), else at y[p * ldy + c]
//   D[r][c] at d[r * ldd + c]
//
// Kernel names: gemm_wg_<type>_<tile>_<opA><opB>, xk = (opB == 'n'), yk = (opA == 't') as in
// gemm_tc. <type>: f16, bf16 (every op combination: wgmma reads m- or n-contiguous 16-bit tiles
// through its transpose bits) and tf32 (f32 storage; wgmma reads tf32 from shared memory only
// k-contiguous: `tn` reads both operands through descriptors; `tt` (m-contiguous X) loads X into
// registers, as raw f32 bits, as wgmma's A operand; `nn` is `tt` on the transposed problem, with
// X and Y swapped by the host and D stored transposed (DT: D[r][c] at d[c * ldd + r], bias[r]);
// `nt` has no kernel: the host packs Y k-contiguous and runs `tt`). <tile>: n = 128 x 64,
// l = 128 x 128, b = 128 x 192, w = 128 x 256, and the 64-row tiles h = 64 x 64 and
// m = 64 x 96 (rows x columns of D; b, h and m in the plain modules only).
//
// Block: 3 warpgroups (384 threads; 2 warpgroups, 256 threads, for the 64-row tiles),
// persistent: block b computes tiles b, b + gridDim.x, ...
// Warpgroup 0 is the producer: one thread issues the TMA loads of each k-tile into a ring of
// STAGES shared-memory stages and arms the stage's "full" mbarrier with the byte count; the TMA
// completes the transaction. Warpgroups 1 and 2 (1 only for the 64-row tiles; a stage's "empty"
// barrier counts one arrival per consumer warp) are consumers: each owns 64 rows of the tile and
// its accumulators (64 x BN f32 across 128 threads), waits on the stage's "full" barrier, issues
// BK/16 (BK/8 for tf32) wgmma instructions reading both operands straight from shared memory,
// and releases the stage on its "empty" barrier once the wgmma group that read it has completed
// (one group stays in flight). The ring runs on across tiles, so the producer loads the next
// tile while the consumers write the last one. The producer gives registers back with setmaxnreg
// so the consumers can hold their accumulators.
//
// Epilogue: with a D map from the host (`dstore`: D's rows 16-byte aligned, 16-byte multiples
// long) the tile leaves through the TMA: each consumer converts 64 rows x 128 bytes of its
// accumulators at a time (alpha, + beta * C, + bias, then the activation, all in f32) into one of
// its two staging boxes (with beta != 0 the TMA first loads C's box there, and each thread reads
// back the values it overwrites) and one thread issues a bulk tensor store, which drains while
// the consumer moves on (to the next box, then the next tile's wgmma) and is clipped at D's bounds
// by the TMA (the DT kernels stage two 32 x 32 boxes of the transposed tile per 32 columns). That
// code is compiled once for plain C and once per activation, so each copy carries only its own
// terms. Otherwise each consumer parks 32 accumulator columns at a time in its own shared-memory
// chunk; plain C then leaves in 16-byte stores where D's rows are 16-byte aligned, else in
// stores of E = 4, 2 or 1 elements per lane, whole D rows per warp store (store_rows in
// ptx/gemm_wg_epilogue.cuh); anything else goes through a rolled loop, one element per thread,
// so the beta / bias / activation code appears once per chunk. Every chunk loop stops at the
// tile's last column. The DT kernels (tf32 nn) park each chunk transposed and write 32 E
// consecutive rows of one column per warp store (store_cols_t).
//
// staging_rule (the ordering that keeps the TMA-store epilogue race-free): a consumer stages
// its boxes alternately in its two buffers, and every box it stages leaves in exactly one bulk
// async-group, committed by the consumer's thread 0. Before box i is written (by the threads'
// shared-memory stores, or first by the TMA load of C), thread 0 waits with
// `cp.async.bulk.wait_group.read 1`, which leaves only box i-1's group in flight: box i-2's,
// the last reader of the same buffer, has finished reading it. The named barrier then lets the
// other threads write; each thread fences (`fence.proxy.async.shared::cta`) before the barrier
// that precedes the store. So a box that lies outside D (rows <= 0 for the second consumer of a
// last row tile, or columns past n in a last column tile) is neither written nor counted: one
// counted without a group made the wait leave the last real store in flight while the next box
// overwrote its buffer (the race of 2026-11, wrong results for about one shape in ten).
//
// Pairs (CL = 2; the tiles p = 128 x 128 and q = 128 x 64, kernels compiled with a cluster shape
// of 2 x 1 x 1): the two blocks of a cluster compute two tiles side by side, the same 128 rows of
// X (rank r the tile at column n0 + r * BN of the pair), so the L2 serves X once per pair: each
// block's producer loads X's 64-row half r and the TMA multicasts it into stage s of both
// blocks, and loads its own Y. pair_rule (the ordering that keeps the shared stages race-free):
//   - both blocks walk the same units (pairs) with the same k-tiles, so their stage rings move
//     in step: the i-th k-tile either walks lies in the same stage (RingPos) in both;
//   - a block's "empty" barrier counts the consumer warps of both blocks (each releases a stage
//     once its wgmma group that read it has completed, on its own barrier and, through mapa, on
//     the other block's: mbar_arrive_in), and its producer waits on it: neither producer writes
//     stage s of either block before every consumer of both has finished reading it;
//   - each block's "full" barrier expects every byte of its stage (its own arrival with the
//     count; the other block's multicast may complete its bytes before that arrival, which
//     leaves the phase open: the arrival count is still pending);
//   - a pair's second tile past D (a last, odd column of tiles) still runs: its producer loads
//     its half of X for the other block and no Y (its barrier expects X's bytes only), its
//     consumers compute on whatever Y holds and store nothing (its columns lie past n);
//   - both blocks meet at a cluster barrier after the barriers' initialisation (before any
//     multicast or remote arrival) and before they exit (no arrival reaches a block that left).
// compute-sanitizer does not see the async proxy: this rule is checked by reasoning and by the
// randomized tests that force the pairs.
//
// Shared-memory tiles are written by the TMA with the 128-byte swizzle, which is also the layout
// wgmma's matrix descriptors name (swizzle mode 1):
//   k-contiguous operand: box {BK, rows} (BK * sizeof(T) = 128 bytes), row r at r * 128 bytes;
//     descriptor stride byte offset (8-row groups) 1024; a k step of 32 bytes moves the start.
//   m/n-contiguous operand: boxes {64, BK}, one per 64 rows/columns, each 8 KiB (k row p at
//     p * 128 bytes); leading byte offset (between 64-wide chunks) 8192, stride byte offset
//     (8-k groups) 1024; a k step of 16 moves the start by 2048 bytes. For tf32 (X only) the
//     boxes are {32, 32}, one per 32 rows, 4 KiB each, read by the consumers with ld.shared.
// Out-of-range rows, columns and k read as zero (TMA bounds), so every shape runs unpadded.
//
// Launch contract: in ptx/gemm_wg_kernels.cuh, with the entry points.

#include "gemm_wg_epilogue.cuh"
#include "gemm_wg_ops.cuh"
#include "gemm_wg_in_place.cuh"
#include "gemm_wg_x_in_place.cuh"

// PROMOTE > 0 (the tf32 products over split f32 operands, MathMode::Tf32x3): the tensor cores
// add each k step into the accumulators truncated, an error that grows with the k steps summed
// in one accumulator; every PROMOTE k-tiles the accumulators are added into a second set with
// f32 adds that round to nearest, and the next chunk starts from zero, so the truncation only
// reaches sums of PROMOTE * BK terms. Each chunk is the plain loop: its first k-tile peeled, its
// groups in flight across its iterations, drained (wgmma.wait_group 0) at its end.
//
// IP > 0 (the kernels of gemm_wgu_<type>; IP staging slots): X and Y are read where they lie, aligned only to their
// element, by the producer warpgroup's copies (ptx/gemm_wg_in_place.cuh, in_place_rule) into
// the stages, instead of the TMA; tx and ty are unused. Its staging slots follow the epilogue
// region, so these kernels have fewer stages.
template <typename T, int BM, int BN, int STAGES, bool XK, bool YK, bool DT, int ACT, int PROMOTE = 0, int CL = 1,
          int IP = 0>
__device__ __forceinline__ void gemm_wg(const TensorMap* tx, const TensorMap* ty, const TensorMap* td,
                                        const GemmParams& p, int flags, const WgSplit& sp) {
    static_assert(BM == 64 || BM == 128, "one consumer warpgroup per 64 rows, one or two");
    static_assert(PROMOTE == 0 || (XK && YK && !DT), "promotion: both operands k-contiguous, in shared memory");
    constexpr int NC = BM / 64;                // consumer warpgroups
    constexpr int BK = 128 / (int)sizeof(T);   // one 128-byte swizzle row of k
    constexpr int KSTEP = Wg<T>::KSTEP;
    constexpr int MN_BOX = 128 / (int)sizeof(T);        // rows per box of an m/n-contiguous operand
    constexpr int MN_BOX_BYTES = 128 * BK;               // 8 KiB (16-bit types), 4 KiB (tf32)
    // An n-contiguous Y loads whole boxes of MN_BOX columns (the last one past the tile when BN
    // is not a multiple: 64 x 96 reads 128 columns of Y, the wgmma only the first 96).
    constexpr int Y_BOXES = (BN + MN_BOX - 1) / MN_BOX;
    constexpr int X_BYTES = BM * 128;          // 8 or 16 KiB
    constexpr int Y_BYTES = YK ? BN * 128 : Y_BOXES * MN_BOX_BYTES;
    constexpr int STAGE_BYTES = X_BYTES + Y_BYTES;
    constexpr int NACC = BN / 2;               // accumulators per thread (64 x BN over 128 threads)
    constexpr int EPI_COLS = 32;               // columns per epilogue chunk
    constexpr int EPI_LD = EPI_COLS + 4;       // padded row of a chunk, floats
    constexpr int EPI_BYTES = 64 * EPI_LD * 4; // one consumer's chunk
    constexpr int EPI_LDT = 64 + 4;            // padded column of a transposed chunk (DT), floats
    static_assert(EPI_COLS * EPI_LDT <= 64 * EPI_LD, "the transposed chunk fits the chunk");
    // The TMA-store epilogue stages boxes of 64 rows x 128 bytes (8 KiB), two per consumer.
    constexpr int BOX_COLS = 128 / (int)sizeof(T);
    constexpr int BOX_BYTES = 64 * 128;
    constexpr int EPI_REGION = 4 * BOX_BYTES > 2 * EPI_BYTES ? 4 * BOX_BYTES : 2 * EPI_BYTES;
    static_assert(!IP || (CL == 1 && PROMOTE == 0 && !DT && (sizeof(T) == 2 || (XK && YK))),
                  "in place: 16-bit types in every op, tf32 tn; no pairs, no promotion");
    constexpr int IP_BYTES = in_place_bytes<T, BM, BN, XK, YK, IP>(STAGE_BYTES);
    static_assert(IP_BYTES >= 0, "in place: the stage's segments");
    static_assert(STAGES * STAGE_BYTES + EPI_REGION + IP_BYTES + 2048 <= 231424, "the launch contract's shared memory");
    // The TMA-store epilogue stores whole boxes of BOX_COLS columns: a tile of another width
    // (16-bit 64 x 96) takes the epilogue through the chunks.
    constexpr bool TMA_EPI = BN % BOX_COLS == 0;
    // tf32 with an m-contiguous X: wgmma's A operand comes from registers (RS below).
    constexpr bool RS = !XK && sizeof(T) == 4;
    static_assert(YK || sizeof(T) == 2, "n-contiguous Y needs a 16-bit type");
    static_assert(!DT || RS, "the transposed store is for the register-A tf32 kernels");
    static_assert(CL == 1 || (CL == 2 && BM == 128 && !RS && PROMOTE == 0),
                  "pairs (pair_rule): 128-row tiles, both operands through the TMA, no promotion");
    // flags bit 0: td is valid (the TMA-store epilogue); bit 1 (RS kernels of the plain module
    // only): X is copied into the stages by the producer warpgroup's 4-byte cp.async instead of
    // the TMA (its rows need not be 16 bytes apart: ptx/gemm_wg_x_in_place.cuh).
    // Not the 128 x 128 tile: with the copies compiled in, ptxas spilled 8-24 bytes of its
    // consumers (also with the copies in a function of their own).
    constexpr bool XIN_OK = RS && ACT == ACT_NONE && BN != 128;
    const bool dstore = (flags & 1) != 0;
    const bool xin = XIN_OK && (flags & 2) != 0;
    extern __shared__ unsigned char smem_raw[];

    // 1024-byte aligned stage ring (the swizzle pattern repeats every 1024 bytes), then the two
    // consumers' epilogue chunks, then the barriers.
    const unsigned raw = smem_addr(smem_raw);
    const unsigned base = (raw + 1023u) & ~1023u;
    const unsigned epi = base + STAGES * STAGE_BYTES;
    const unsigned staging = epi + EPI_REGION;  // IP: the producer's staging slots
    const unsigned full = staging + IP_BYTES;
    const unsigned empty = full + 8 * STAGES;
    const unsigned cbar = empty + 8 * STAGES;  // 4: C loaded into each consumer's two boxes

    const int tid = threadIdx.x;
    const int wg = tid / 128;
    const int tiles_m = (int)((p.m + BM - 1) / BM), tiles_n = (int)((p.n + BN - 1) / BN);
    const int ktiles = (int)((p.k + BK - 1) / BK);
    // Work units: every output tile once, or (split) `parts` units per tile, part s of tile t
    // being unit t * parts + s. Only the kernels of 128 rows and at most 128 columns split; the
    // pairs (CL = 2) do not: their unit is a pair of tiles side by side, one per block.
    constexpr bool SPLITS = BN <= 128 && BM == 128 && CL == 1;
    const int parts = SPLITS && sp.parts > 1 ? sp.parts : 1;
    const int kper = parts > 1 ? sp.kper : ktiles;
    const int tiles_np = CL > 1 ? (tiles_n + 1) / 2 : tiles_n;  // (pairs) columns of pairs
    const int total = tiles_m * tiles_np * p.batch * parts;
    // Pairs: this block's rank in its cluster. A block's (a cluster's) units: first_unit(), then every unit_step().
    const unsigned crank = CL > 1 ? cluster_rank() : 0u;
    // (Read where the loops start: kept live from here, they cost the tf32 nn / tt consumers spills.)
    auto first_unit = [] { return (int)blockIdx.x / CL; };
    auto unit_step = [] { return (int)gridDim.x / CL; };
    // The tile of unit u: one tile (t), or rank crank's of the pair u (t unused).
    auto unit_tile = [&](int u) {
        if constexpr (CL > 1) {
            const TileCoord pc = tile_coord<BM, CL * BN>(u, tiles_m, tiles_np);
            return TileCoord{pc.bz, pc.m0, pc.n0 + (int)crank * BN};
        } else {
            return tile_coord<BM, BN>(u / parts, tiles_m, tiles_n);
        }
    };
    // A consumer warp hands stage s back: to its own producer, and (pairs) to the other block's,
    // whose multicast also writes this block's stage.
    auto release = [&](int s) {
        mbar_arrive(empty + 8 * s);
        if constexpr (CL > 1) mbar_arrive_in(empty + 8 * s, crank ^ 1u);
    };

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            // x_in_place: + one per producer thread; IP: one per producer thread only.
            mbar_init(full + 8 * s, IP ? 128 : xin ? 1 + 128 : 1);
            mbar_init(empty + 8 * s, 4 * NC * CL);  // one arrival per consumer warp (of both blocks: pairs)
        }
        for (int b = 0; b < 4; ++b) mbar_init(cbar + 8 * b, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    // Pairs: the other block's barriers are initialised before this block's multicasts and
    // arrivals reach them.
    if constexpr (CL > 1) {
        cluster_sync();
    } else {
        __syncthreads();
    }
    // pdl_rule: launched to overlap the stream's previous kernel (src/launch.rs,
    // overlap_previous), no thread touches global memory (operands, C, D, the bias, the split's
    // scratch) before that kernel has finished and its writes are visible; without the launch
    // attribute this returns at once. The producer lets the stream's next kernel launch once it
    // has issued its last loads: that kernel's blocks take the multiprocessors this grid leaves
    // and wait in their own griddepcontrol.wait until this grid has finished.
    asm volatile("griddepcontrol.wait;\n" ::: "memory");

    // Persistent: block b takes tiles b, b + gridDim.x, ... The stage ring and its phases run on
    // across tiles, so the producer fills the next tile's stages during the consumers' epilogue.
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if constexpr (IP) {
            produce_in_place<T, BM, BN, STAGES, XK, YK, IP>(p, base, staging, full, empty, tiles_m, tiles_n, ktiles,
                                                        parts, kper, total);
            return;
        }
        if constexpr (XIN_OK) {
            if (xin) {
                // x_in_place: the copies of X, then nothing else for this warpgroup.
                produce_x_in_place<BM, BN, STAGES>(p, ty, base, full, empty, tiles_m, tiles_n, ktiles, parts, kper,
                                                   total);
                return;
            }
        }
        if (tid == 0) {
            RingPos<STAGES> r;
            for (int u = first_unit(); u < total; u += unit_step()) {
                const int kt0 = (u % parts) * kper, kt1 = min(kt0 + kper, ktiles);
                const TileCoord tc = unit_tile(u);
                const int zx = p.sx != 0 ? tc.bz : 0, zy = p.sy != 0 ? tc.bz : 0;
                // Pairs: the second tile of a last, odd column of tiles lies past D; its block
                // loads its half of X for the other (pair_rule) and no Y.
                const bool own = CL == 1 || tc.n0 < p.n;
                for (int kt = kt0; kt < kt1; ++kt, r.next()) {
                    const int s = r.s;
                    mbar_wait(empty + 8 * s, r.ph ^ 1u);
                    const unsigned bar = full + 8 * s;
                    mbar_expect_tx(bar, own ? STAGE_BYTES : X_BYTES);
                    const unsigned xs = base + s * STAGE_BYTES, ys = xs + X_BYTES;
                    const int k0 = kt * BK;
                    if constexpr (CL > 1) {
                        // X's 64-row half `crank` (8 KiB), into both blocks' stage s (XK: the map's
                        // box is 64 rows; else one box of MN_BOX = 64 rows).
                        const unsigned half = crank * 8192u;
                        if (XK) {
                            tma_load_multicast(xs + half, tx, bar, k0, tc.m0 + 64 * (int)crank, zx, 3);
                        } else {
                            tma_load_multicast(xs + half, tx, bar, tc.m0 + MN_BOX * (int)crank, k0, zx, 3);
                        }
                    } else if (XK) {
                        tma_load(xs, tx, bar, k0, tc.m0, zx);
                    } else {
#pragma unroll
                        for (int c = 0; c < BM / MN_BOX; ++c)
                            tma_load(xs + c * MN_BOX_BYTES, tx, bar, tc.m0 + MN_BOX * c, k0, zx);
                    }
                    if (!own) continue;  // the last step of the k-tile: no Y for a tile past D
                    if (YK) {
                        tma_load(ys, ty, bar, k0, tc.n0, zy);
                    } else {
#pragma unroll
                        for (int c = 0; c < Y_BOXES; ++c)
                            tma_load(ys + c * MN_BOX_BYTES, ty, bar, tc.n0 + MN_BOX * c, k0, zy);
                    }
                }
            }
            asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");  // pdl_rule
        }
        if constexpr (CL > 1) {
            __syncwarp();
            cluster_sync();  // pair_rule: neither block leaves while the other may still arrive
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    // The consumer index (rows 64 * cw .. 64 * cw + 63 of the tile), through a shuffle from lane
    // 0 so that the compiler knows it is the same in every lane of a warp: the descriptors derived
    // from it then live in uniform registers instead of being moved there (R2UR) for each wgmma.
    const int cw = __shfl_sync(0xffffffffu, wg - 1, 0);
    const int lt = tid & 127, warp = lt / 32, lane = lt & 31;
    const float alpha = (float)p.alpha, beta = (float)p.beta;
    // Plain C = alpha * A * B: no beta, bias or activation code in its epilogue.
    const bool plain = beta == 0.f && p.bias == 0 && p.act == ACT_NONE;
    // Rows of every batch entry 16-byte aligned: D, its row stride and its batch stride.
    const bool vec16 = (p.ldd * (long long)sizeof(T)) % 16 == 0 && (p.sd * (long long)sizeof(T)) % 16 == 0 &&
                       p.d % 16 == 0;
    // The widest store of the epilogue for rows that are not (store_rows, store_cols_t): E
    // elements where D's row stride, batch stride and start are multiples of E elements.
    auto fits = [&](int e) { return p.ldd % e == 0 && p.sd % e == 0 && p.d % (e * sizeof(T)) == 0; };
    const int evec = sizeof(T) == 2 && fits(4) ? 4 : fits(2) ? 2 : 1;
    float* chunk = reinterpret_cast<float*>(smem_raw + (epi - raw) + cw * EPI_BYTES);
    // This consumer's two staging boxes (TMA-store epilogue) and the count of boxes it staged.
    const unsigned boxes = epi + cw * 2 * BOX_BYTES;
    unsigned staged = 0;
    unsigned loaded = 0;  // bit b: the phase parity of box b's C-load barrier
    float d[NACC];
    float dm[PROMOTE > 0 ? NACC : 1];  // PROMOTE: the sum of the finished chunks

    // RS (tf32, m-contiguous X): each thread loads its A fragments from the stage's X tile (four
    // 32-row boxes, k row p of a box at p * 128 bytes, 16-byte chunk c of that row at (c ^ p % 8)
    // * 16: the TMA's 128-byte swizzle) as raw f32 bits: wgmma truncates them to tf32 as it does
    // the descriptor-fed operands (a cvt.rna.tf32 on each cost 3 SASS instructions, 48 of a
    // k-tile's 110). Lanes with lane / 4 < 4 load (row, k) then (row, k + 4), the others the
    // reverse, so that each load's 32 addresses fall in 32 distinct banks; a select puts the
    // values back in fragment order. A k step of 8 moves by 1024 bytes, which leaves the swizzle
    // phase unchanged.
    unsigned xo[4] = {0, 0, 0, 0};
    bool lo = true;
    if constexpr (RS) {
        const int g = lane / 4, kq = lane & 3;
        lo = g < 4;
        const int r0 = (warp & 1) * 16 + g;
        const unsigned box = cw * 8192 + (warp >> 1) * 4096;
        auto off = [&](int r, int kx) { return box + kx * 128 + ((((r >> 2) ^ kx) & 7) << 4) + (r & 3) * 4; };
        xo[0] = off(r0, lo ? kq : kq + 4);
        xo[1] = off(r0, lo ? kq + 4 : kq);
        xo[2] = off(r0 + 8, lo ? kq : kq + 4);
        xo[3] = off(r0 + 8, lo ? kq + 4 : kq);
    }
    // Two fragment sets (RS): the next k-tile's fragments are loaded while the wgmma group that
    // reads the other set is still in flight.
    unsigned fa[4 * (BK / KSTEP)], fb[4 * (BK / KSTEP)];

    // The consumer's position in the stage ring: the next k-tile's stage and phase.
    RingPos<STAGES> ring;
    // Issues the wgmma instructions of the ring's next k-tile once its data has landed and moves
    // the ring on. The stage of the group issued last is then ring.back(1), of the one before it
    // ring.back(2) (derived rather than kept: one register more spilled the tf32 activation
    // kernels of 128 x 256, `w_tt`).
    auto mma_tile = [&](unsigned (&f)[4 * (BK / KSTEP)]) {
        const int s = ring.s;
        mbar_wait(full + 8 * s, ring.ph);
        ring.next();
        if constexpr (RS) {
            const unsigned xs = base + s * STAGE_BYTES;
#pragma unroll
            for (int kk = 0; kk < BK / KSTEP; ++kk) {
                const unsigned v0 = lds_b32(xs + xo[0] + kk * 1024);
                const unsigned v1 = lds_b32(xs + xo[1] + kk * 1024);
                const unsigned v2 = lds_b32(xs + xo[2] + kk * 1024);
                const unsigned v3 = lds_b32(xs + xo[3] + kk * 1024);
                f[4 * kk + 0] = lo ? v0 : v1;
                f[4 * kk + 1] = lo ? v2 : v3;
                f[4 * kk + 2] = lo ? v1 : v0;
                f[4 * kk + 3] = lo ? v3 : v2;
            }
        }
        const unsigned xs = base + s * STAGE_BYTES + cw * 8192, ys = base + s * STAGE_BYTES + X_BYTES;
        // The descriptors of the stage's first k step, stepped by constants: make_desc(a + o) ==
        // make_desc(a) + o / 16 for 16-byte multiples whose sum stays below 256 KiB (shared
        // memory). Rebuilt for each wgmma, their masks and shifts lengthened the consumer's
        // issue chain between wgmmas (ncu SASS samples, docs/kernels/gemm-wgmma.md).
        constexpr unsigned long long KSTEP_K = KSTEP * sizeof(T) / 16, KSTEP_MN = 2048 / 16;
        const unsigned long long dx = XK ? make_desc(xs, 16, 1024) : make_desc(xs, 8192, 1024);
        const unsigned long long dy = YK ? make_desc(ys, 16, 1024) : make_desc(ys, 8192, 1024);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / KSTEP; ++kk) {
            if constexpr (RS) {
                Wg<T>::template mma_rs<NACC>(d, f + 4 * kk, dy + kk * KSTEP_K, 1);
            } else {
                const unsigned long long da = dx + kk * (XK ? KSTEP_K : KSTEP_MN);
                const unsigned long long db = dy + kk * (YK ? KSTEP_K : KSTEP_MN);
                Wg<T>::template mma<XK ? 0 : 1, YK ? 0 : 1, NACC>(d, da, db, 1);
            }
        }
        wgmma_commit();
    };

    for (int u = first_unit(); u < total; u += unit_step()) {
        const int t = u / parts, part = u % parts;
        const int kt0 = part * kper, nk = min(kt0 + kper, ktiles) - kt0;
        const TileCoord tc = unit_tile(u);
        if constexpr (PROMOTE > 0) {
            // Chunks of PROMOTE k-tiles, each summed from zero and added into dm rounded to nearest.
#pragma unroll
            for (int i = 0; i < NACC; ++i) dm[i] = 0.f;
            for (int c0 = 0; c0 < nk; c0 += PROMOTE) {
                const int cn = min(PROMOTE, nk - c0);
#pragma unroll
                for (int i = 0; i < NACC; ++i) d[i] = 0.f;
                mma_tile(fa);
                for (int kt = 1; kt < cn; ++kt) {
                    mma_tile(fa);
                    wgmma_wait<1>();
                    if (lane == 0) release(ring.back(2));
                }
                wgmma_wait<0>();
                fence_regs(d);
                if (lane == 0) release(ring.back(1));
#pragma unroll
                for (int i = 0; i < NACC; ++i) dm[i] = __fadd_rn(dm[i], d[i]);
            }
#pragma unroll
            for (int i = 0; i < NACC; ++i) d[i] = dm[i];
        } else {
#pragma unroll
            for (int i = 0; i < NACC; ++i) d[i] = 0.f;
            // The first k-tile is peeled off the loop: ptxas serialises the wgmma pipeline when the
            // accumulators' initial values reach a loop whose groups stay in flight across
            // iterations.
            mma_tile(fa);
            for (int kt = 1; kt < nk; ++kt) {
                if (RS && (kt & 1)) {
                    mma_tile(fb);
                } else {
                    mma_tile(fa);
                }
                // The group before this one has finished reading its stage: hand that stage back.
                wgmma_wait<1>();
                if (lane == 0) release(ring.back(2));
            }
        }
        const long long row0 = (long long)tc.m0 + 64 * cw;
        const long long rows = p.m - row0 < 64 ? p.m - row0 : 64;
        const long long cols = p.n - tc.n0 < BN ? p.n - tc.n0 : BN;
        // The bias of the tile's columns (not DT), loaded while the last wgmma group runs: lane l
        // keeps columns 64 i + 2 l and the next in bpair[i]; the TMA epilogue's threads take the
        // pairs they need from the lane that holds them (__shfl_sync), so the bias costs one load
        // latency per tile rather than one per staged box.
        float2 bpair[(BN + 63) / 64];
        if constexpr (!DT) {
            if (TMA_EPI && dstore && p.bias) {
                const T* bias = reinterpret_cast<const T*>(p.bias) + tc.n0;
#pragma unroll
                for (int i = 0; i < (BN + 63) / 64; ++i) {
                    const int c = 64 * i + 2 * lane;
                    bpair[i].x = c < cols ? Wg<T>::to_f(bias[c]) : 0.f;
                    bpair[i].y = c + 1 < cols ? Wg<T>::to_f(bias[c + 1]) : 0.f;
                }
            }
        }
        wgmma_wait<0>();
        fence_regs(d);
        // (PROMOTE: each chunk handed its stages back.)
        if (PROMOTE == 0 && lane == 0) release(ring.back(1));
        if constexpr (SPLITS) {
            // split_rule: every part stores its 64 x BN accumulators (per consumer) as float4s in
            // fragment order (thread lt's j-th float4 at (j * 128 + lt) * 4) at the L2 (st.cg)
            // and meets its warpgroup at the named barrier; then one thread counts the part in
            // the consumer's arrival counter of the tile with an acq_rel atomic at GPU scope.
            // Its release half is cumulative: it publishes every store the barrier ordered
            // before it, the warpgroup's as well as its own. The thread that counts the last
            // part has acquired every earlier part's stores with the same atomic; it resets the
            // counter to zero for the next launch and tells its warpgroup (shared flag, second
            // barrier, which orders the warpgroup's loads after the acquire). The warpgroup then
            // reads all parts back from the L2 (ld.cg) and adds them in part order 0, 1, ..., so
            // the sum does not depend on which block came last, and runs the epilogue as an
            // unsplit tile would. The other parts go on to their next unit. No block waits for
            // another, so the split cannot deadlock whatever the residency. (Every thread
            // fencing with __threadfence, a sequentially consistent fence, before and after the
            // count measured 2.5x slower at 4 parts: docs/kernels/gemm-wgmma.md.)
            if (parts > 1) {
                if (rows <= 0) continue;  // the second consumer of a last row tile of 64 rows
                const long long tile_floats = 64 * BN;
                float* base0 = reinterpret_cast<float*>(sp.ws) + ((long long)t * parts * 2 + cw) * tile_floats;
                float4* mine = reinterpret_cast<float4*>(base0 + (long long)part * 2 * tile_floats) + lt;
                // Only what the epilogue can store travels: float4 j of a thread holds rows
                // 16 warp + lane / 4 (+ 8) and columns 8 j + 2 (lane % 4) (+ 1), so a warp whose
                // 16 rows lie past D, or a j whose 8 columns do, is neither written nor read (its
                // registers keep this part's values, which no store reaches: the TMA clips rows
                // and columns outside D, the thread stores test them).
                const bool live = 16 * warp < rows;
#pragma unroll
                for (int j = 0; j < NACC / 4; ++j)
                    if (live && 8 * j < cols)
                        __stcg(mine + j * 128, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
                named_bar(2 + cw);
                const unsigned flag = cbar + 32 + 4 * cw;
                if (lt == 0) {
                    unsigned* counter = reinterpret_cast<unsigned*>(sp.counters) + 2 * (long long)t + cw;
                    unsigned before;
                    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n"
                                 : "=r"(before)
                                 : "l"(counter)
                                 : "memory");
                    const unsigned last = before == (unsigned)(parts - 1);
                    if (last) asm volatile("st.relaxed.gpu.global.u32 [%0], 0;\n" ::"l"(counter) : "memory");
                    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(flag), "r"(last) : "memory");
                }
                named_bar(2 + cw);
                unsigned last;
                asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(last) : "r"(flag) : "memory");
                // Every thread has read the flag before thread 0 can write it again (the next
                // split tile's first barrier above lies between).
                if (!last) continue;
                // The 128 x 64 tile reads two parts at a time, their loads issued before the
                // first add (the loop is bound by the L2's latency, not its bandwidth); the
                // 128 x 128 tile, with no registers to spare, one. Added in part order.
                if constexpr (NACC <= 32) {
#pragma unroll 1
                    for (int q0 = 0; q0 < parts; q0 += 2) {
                        float4 v[2][NACC / 4];
#pragma unroll
                        for (int qq = 0; qq < 2; ++qq) {
                            const float4* src =
                                reinterpret_cast<const float4*>(base0 + (long long)(q0 + qq) * 2 * tile_floats) + lt;
#pragma unroll
                            for (int j = 0; j < NACC / 4; ++j)
                                if (q0 + qq < parts && live && 8 * j < cols) v[qq][j] = __ldcg(src + j * 128);
                        }
#pragma unroll
                        for (int qq = 0; qq < 2; ++qq) {
#pragma unroll
                            for (int j = 0; j < NACC / 4; ++j) {
                                if (q0 + qq >= parts || !live || 8 * j >= cols) continue;
                                if (q0 + qq == 0) {
                                    d[4 * j] = v[qq][j].x, d[4 * j + 1] = v[qq][j].y;
                                    d[4 * j + 2] = v[qq][j].z, d[4 * j + 3] = v[qq][j].w;
                                } else {
                                    d[4 * j] += v[qq][j].x, d[4 * j + 1] += v[qq][j].y;
                                    d[4 * j + 2] += v[qq][j].z, d[4 * j + 3] += v[qq][j].w;
                                }
                            }
                        }
                    }
                } else if constexpr (!RS) {
                    // A part's sixteen float4s per thread loaded all before any is added, so a
                    // part costs one L2 round trip. Loads and adds interleaved one float4 at a
                    // time, as ptxas schedules them under the register limit (and must where the
                    // A fragments live in registers, RS, below: grouping them spills there),
                    // cost sixteen: the 128 x 128 tile in 4 parts ran 2-4x slower
                    // (docs/kernels/gemm-wgmma.md).
#pragma unroll 1
                    for (int q = 0; q < parts; ++q) {
                        const float4* src = reinterpret_cast<const float4*>(base0 + (long long)q * 2 * tile_floats) + lt;
                        float4 v[NACC / 4];
#pragma unroll
                        for (int j = 0; j < NACC / 4; ++j)
                            if (live && 8 * j < cols) v[j] = __ldcg(src + j * 128);
#pragma unroll
                        for (int j = 0; j < NACC / 4; ++j) {
                            if (!live || 8 * j >= cols) continue;
                            if (q == 0) {
                                d[4 * j] = v[j].x, d[4 * j + 1] = v[j].y, d[4 * j + 2] = v[j].z, d[4 * j + 3] = v[j].w;
                            } else {
                                d[4 * j] += v[j].x, d[4 * j + 1] += v[j].y;
                                d[4 * j + 2] += v[j].z, d[4 * j + 3] += v[j].w;
                            }
                        }
                    }
                } else {
#pragma unroll 1
                    for (int q = 0; q < parts; ++q) {
                        const float4* src = reinterpret_cast<const float4*>(base0 + (long long)q * 2 * tile_floats) + lt;
#pragma unroll
                        for (int j = 0; j < NACC / 4; ++j) {
                            if (!live || 8 * j >= cols) continue;
                            const float4 v = __ldcg(src + j * 128);
                            if (q == 0) {
                                d[4 * j] = v.x, d[4 * j + 1] = v.y, d[4 * j + 2] = v.z, d[4 * j + 3] = v.w;
                            } else {
                                d[4 * j] += v.x, d[4 * j + 1] += v.y, d[4 * j + 2] += v.z, d[4 * j + 3] += v.w;
                            }
                        }
                    }
                }
            }
        }

        // Partial products (src/blas/gemm/partials.rs; act ACT_PARTIAL_F32, 16-bit types): the
        // f32 accumulators themselves (the host passes alpha 1, beta 0, no bias) go from the
        // registers to D, which is then the f32 scratch (row length ldd, batch stride sd, in
        // floats, ldd even and at least n rounded up to even: a pair of columns c, c + 1 with c
        // < n is one 8-byte store). The host passes no D map (dstore 0): no bulk store is ever
        // staged, so the staging_rule below has nothing to order.
        if constexpr (ACT == ACT_NONE && sizeof(T) == 2 && !DT) {
            if (p.act == ACT_PARTIAL_F32) {
                float* W = reinterpret_cast<float*>(p.d) + (long long)tc.bz * p.sd;
                const long long r = row0 + 16 * warp + lane / 4;
#pragma unroll
                for (int j = 0; j < NACC / 4; ++j) {
                    const long long c = tc.n0 + 8 * j + 2 * (lane & 3);
                    if (c >= p.n) continue;
                    if (r < p.m) *reinterpret_cast<float2*>(W + r * p.ldd + c) = make_float2(d[4 * j], d[4 * j + 1]);
                    if (r + 8 < p.m)
                        *reinterpret_cast<float2*>(W + (r + 8) * p.ldd + c) = make_float2(d[4 * j + 2], d[4 * j + 3]);
                }
                continue;
            }
        }
        // Epilogue (see the top of the file).
        if constexpr (DT) {
            // Transposed store: D[r][c] at d[c * ldd + r]. The chunk is parked transposed (column
            // c's 64 rows at c * EPI_LDT floats), so that a warp reads 32 consecutive floats and
            // writes 32 consecutive rows of one column (128 bytes) per store. (A first version
            // read the row-major chunk and wrote 8 rows of a column per thread: NVRTC split its
            // vector stores, so every warp store touched 32 lines, and nn ran 25-30% slower than
            // tt at 4096-8192.)
            // Plain and beta / bias compiled apart, as below.
            auto tma_epilogue_t = [&](const bool LIN, const int FN) {
                // TMA stores of the transposed tile: 32 columns at a time, staged as two boxes of
                // 32 rows (128 bytes, D's contiguous direction) x 32 columns, one per pair of
                // warps; column c of a box at c * 128 bytes, row r in 16-byte chunk (r / 4) ^ (c
                // % 8) (the 128-byte swizzle; each warp store hits 32 distinct banks). With beta
                // != 0 the TMA first loads both boxes of C (one barrier), as in the other kernels;
                // the bias is indexed by row.
                const int g = lane / 4;
                const int rb = 16 * (warp & 1) + g;  // this thread's rows rb and rb + 8 of its box
                const int rt = 32 * (warp >> 1) + rb;  // the same rows within the consumer's 64
                const T* bias = p.bias ? reinterpret_cast<const T*>(p.bias) + row0 : nullptr;
                const float b0 = LIN && bias && rt < rows ? bias[rt] : 0.f;
                const float b8 = LIN && bias && rt + 8 < rows ? bias[rt + 8] : 0.f;
#pragma unroll
                for (int q = 0; q < BN / 32; ++q, ++staged) {
                    // Boxes outside D are neither staged nor counted (see staging_rule below).
                    if (rows <= 0 || q * 32 >= cols) break;  // the same in every thread
                    const unsigned b = staged & 1, buf = boxes + b * BOX_BYTES, bar = cbar + 8 * (2 * cw + b);
                    const unsigned half = buf + (warp >> 1) * (BOX_BYTES / 2);
                    if (lt == 0) {
                        bulk_wait_read<1>();
                        if (LIN && beta != 0.f) {
                            mbar_expect_tx(bar, (rows > 32 ? 2 : 1) * (BOX_BYTES / 2));
#pragma unroll
                            for (int h = 0; h < 2; ++h)
                                if (rows > 32 * h)
                                    tma_load(buf + h * (BOX_BYTES / 2), td, bar, (int)row0 + 32 * h, tc.n0 + q * 32, tc.bz);
                        }
                    }
                    named_bar(2 + cw);
                    if (LIN && beta != 0.f) {
                        mbar_wait(bar, (loaded >> b) & 1);
                        loaded ^= 1u << b;
                    }
                    auto at = [&](int r, int c) {
                        return half + c * 128 + ((((r >> 2) ^ (c & 7)) << 4) | ((r & 3) << 2));
                    };
                    auto put = [&](int r, int c, float v, float bias_r) {
                        if (LIN && beta != 0.f) v += beta * lds_f32(at(r, c));
                        v = activate_wg(v + bias_r, FN);
                        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(at(r, c)), "f"(v) : "memory");
                    };
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const int a = 4 * (q * 4 + j), c = 8 * j + 2 * (lane & 3);
                        put(rb, c, alpha * d[a], b0);
                        put(rb, c + 1, alpha * d[a + 1], b0);
                        put(rb + 8, c, alpha * d[a + 2], b8);
                        put(rb + 8, c + 1, alpha * d[a + 3], b8);
                    }
                    fence_async_smem();
                    named_bar(2 + cw);
                    if (lt == 0) {
#pragma unroll
                        for (int h = 0; h < 2; ++h)
                            if (rows > 32 * h)
                                tma_store(td, buf + h * (BOX_BYTES / 2), (int)row0 + 32 * h, tc.n0 + q * 32, tc.bz);
                        bulk_commit();
                    }
                }
            };
            if (dstore && run_tma_epilogue<ACT>(tma_epilogue_t, p.act, plain)) continue;
            T* D = reinterpret_cast<T*>(p.d) + (long long)tc.bz * p.sd + (long long)tc.n0 * p.ldd + row0;
            const T* bias = p.bias ? reinterpret_cast<const T*>(p.bias) + row0 : nullptr;
#pragma unroll
            for (int q = 0; q < BN / EPI_COLS; ++q) {
                if (rows <= 0 || q * EPI_COLS >= cols) break;  // the same in every thread of the consumer
                park_chunk_t<EPI_COLS, EPI_LDT>(chunk, d, q, warp, lane);
                asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
                if (plain) {
                    // Warp w writes columns 8 w .. 8 w + 7 of the chunk, 32 E consecutive rows of
                    // a column per store (E = 2: 256 bytes of D; E = 1: 128 bytes, two stores).
                    store_cols_t_at<EPI_COLS, EPI_LDT>(evec, D, p.ldd, chunk, q, warp, lane, rows, cols, alpha);
                } else {
#pragma unroll 1
                    for (int idx = lt; idx < 64 * EPI_COLS; idx += 128) {
                        const int r = idx & 63, cl = idx >> 6, c = q * EPI_COLS + cl;
                        if (r < rows && c < cols) {
                            float v = alpha * chunk[cl * EPI_LDT + r];
                            T* out = D + (long long)c * p.ldd + r;
                            if (beta != 0.f) v += beta * Wg<T>::to_f(*out);
                            if (bias) v += Wg<T>::to_f(bias[r]);
                            *out = Wg<T>::from_f(activate(v, p.act));
                        }
                    }
                }
                asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
            }
            continue;
        }
        // Called with constant LIN (beta / bias) and FN (the activation), so that plain C and
        // each activation get their own inlined copy: one loop with the extra terms behind
        // run-time tests measured 8-16% slower at k = 128-256 for plain C.
        auto tma_epilogue = [&](const bool LIN, const int FN) {
            // TMA stores: the consumer converts 64 rows x BOX_COLS columns at a time into a
            // staging box (128-byte swizzle, the layout the map names; with row % 8 = lane / 4
            // each warp store hits 32 distinct banks), and one thread hands the box to the TMA,
            // which clips it at D's bounds. The stores drain while the consumer goes on to the
            // next box and the next tile's wgmma; a box is rewritten only once the store that
            // read it two boxes earlier has finished reading. With beta != 0 the TMA first loads
            // C's box into the staging box (zeros outside C), and each thread reads back exactly
            // the values it then overwrites; the bias comes from bpair (loaded before the epilogue).
            const int g = lane / 4;
#pragma unroll
            for (int q = 0; q < BN / BOX_COLS; ++q, ++staged) {
                // Boxes outside D are neither staged nor counted (see staging_rule below).
                if (rows <= 0 || q * BOX_COLS >= cols) break;  // the same in every thread
                const unsigned b = staged & 1, box = boxes + b * BOX_BYTES, bar = cbar + 8 * (2 * cw + b);
                if (lt == 0) {
                    bulk_wait_read<1>();
                    if (LIN && beta != 0.f) {
                        mbar_expect_tx(bar, BOX_BYTES);
                        tma_load(box, td, bar, tc.n0 + q * BOX_COLS, (int)row0, tc.bz);
                    }
                }
                named_bar(2 + cw);
                if (LIN && beta != 0.f) {
                    mbar_wait(bar, (loaded >> b) & 1);
                    loaded ^= 1u << b;
                }
#pragma unroll
                for (int j = 0; j < BOX_COLS / 8; ++j) {
                    const int a = 4 * (q * BOX_COLS / 8 + j);
                    const int byte = (8 * j + 2 * (lane & 3)) * (int)sizeof(T);
                    const unsigned at = box + (16 * warp + g) * 128 + ((((byte >> 4) ^ g) << 4) | (byte & 15));
                    float v[4] = {alpha * d[a], alpha * d[a + 1], alpha * d[a + 2], alpha * d[a + 3]};
                    if (LIN && beta != 0.f) {
                        const float2 c0 = unstage2(at, (const T*)nullptr), c1 = unstage2(at + 8 * 128, (const T*)nullptr);
                        v[0] += beta * c0.x, v[1] += beta * c0.y, v[2] += beta * c1.x, v[3] += beta * c1.y;
                    }
                    if (LIN && p.bias) {
                        // Columns 8 J + 2 (lane % 4) and the next: bpair[J / 8] of lane 4 (J % 8) + lane % 4.
                        const int J = q * BOX_COLS / 8 + j, src = 4 * (J % 8) + (lane & 3);
                        const float b0 = __shfl_sync(0xffffffffu, bpair[J / 8].x, src);
                        const float b1 = __shfl_sync(0xffffffffu, bpair[J / 8].y, src);
                        v[0] += b0, v[1] += b1, v[2] += b0, v[3] += b1;
                    }
#pragma unroll
                    for (int e = 0; e < 4; ++e) v[e] = activate_wg(v[e], FN);
                    stage2(at, v[0], v[1], (const T*)nullptr);
                    stage2(at + 8 * 128, v[2], v[3], (const T*)nullptr);
                }
                fence_async_smem();
                named_bar(2 + cw);
                if (lt == 0) {
                    tma_store(td, box, tc.n0 + q * BOX_COLS, (int)row0, tc.bz);
                    bulk_commit();
                }
            }
        };
        if constexpr (TMA_EPI) {
            if (dstore && run_tma_epilogue<ACT>(tma_epilogue, p.act, plain)) continue;
        }
        T* D = reinterpret_cast<T*>(p.d) + (long long)tc.bz * p.sd + row0 * p.ldd + tc.n0;
        if (plain) {
            // Through the chunk as well: where D's rows are 16-byte aligned, 8 consecutive
            // columns per thread in one 16-byte store (two for f32) for a chunk inside D's
            // columns; otherwise (and for a last, partial chunk) each warp writes 16 of the
            // chunk's rows with store_rows, E consecutive columns per lane in one store (the
            // widest the rows' starts allow: evec), so a store is whole rows of 32 consecutive
            // elements of D (8 consecutive columns per thread in element stores put each store
            // in 8 rows and wrote each 32-byte sector 8 times: f16 100x60x64 x 500 at ldc 100,
            // 2.8 M L2 sectors written for 6 MB of D).
#pragma unroll
            for (int q = 0; q < BN / EPI_COLS; ++q) {
                if (rows <= 0 || q * EPI_COLS >= cols) break;  // the same in every thread of the consumer
                park_chunk<EPI_COLS, EPI_LD>(chunk, d, q, warp, lane);
                asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
                if (vec16 && (q + 1) * EPI_COLS <= cols) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int r = lt / 4 + 32 * h, cl = 8 * (lt & 3);
                        if (r < rows) {
                            const float* src = chunk + r * EPI_LD + cl;
                            const float4 lo = *reinterpret_cast<const float4*>(src);
                            const float4 hi = *reinterpret_cast<const float4*>(src + 4);
                            const float v[8] = {alpha * lo.x, alpha * lo.y, alpha * lo.z, alpha * lo.w,
                                                alpha * hi.x, alpha * hi.y, alpha * hi.z, alpha * hi.w};
                            store8(D + r * p.ldd + q * EPI_COLS + cl, v);
                        }
                    }
                } else {
                    store_rows_at<EPI_COLS, EPI_LD>(evec, D, p.ldd, chunk, q, warp, lane, rows, cols, alpha);
                }
                asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
            }
            continue;
        }
        const T* bias = p.bias ? reinterpret_cast<const T*>(p.bias) + tc.n0 : nullptr;
#pragma unroll
        for (int q = 0; q < BN / EPI_COLS; ++q) {
            if (rows <= 0 || q * EPI_COLS >= cols) break;  // the same in every thread of the consumer
            park_chunk<EPI_COLS, EPI_LD>(chunk, d, q, warp, lane);
            asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
#pragma unroll 1
            for (int idx = lt; idx < 64 * EPI_COLS; idx += 128) {
                const int r = idx / EPI_COLS, c = q * EPI_COLS + idx % EPI_COLS;
                if (r < rows && c < cols) {
                    float v = alpha * chunk[r * EPI_LD + idx % EPI_COLS];
                    T* out = D + r * p.ldd + c;
                    if (beta != 0.f) v += beta * Wg<T>::to_f(*out);
                    if (bias) v += Wg<T>::to_f(bias[c]);
                    *out = Wg<T>::from_f(activate(v, p.act));
                }
            }
            asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
        }
    }
    // The block's shared memory must outlive the TMA stores that read it.
    if (lt == 0) bulk_wait_all();
    if constexpr (CL > 1) {
        __syncwarp();
        cluster_sync();  // pair_rule: the other block's last arrivals on this block's barriers
    }
}
