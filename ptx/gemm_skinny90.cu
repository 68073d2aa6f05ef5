// cudrv module `gemm_skinny90`: f16, bf16 and tf32 GEMMs with one short side (at most 16: a
// decode step's tokens) whose operands are both contiguous along k, on sm_90. Such a product is
// memory-bound (16 FLOP per byte of the long operand), and what limits it is how fast the long
// operand arrives: the thin mma.sync tiles (gemm_tc `t`, 16-byte cp.async) reached about 3 TB/s
// on the H200, whose memory gives 4.8. Here the operands arrive in a ring of shared-memory stages
// through the TMA (`cp.async.bulk.tensor`, 128-byte swizzled boxes) and the tensor cores
// (mma.sync m16n8k16; m16n8k8 for tf32) read them there. (One plain bulk copy per row and stage, 256-1024 bytes
// each, ran at a rate proportional to the copy's size: 0.3-0.6x the boxes; docs/kernels/gemm-skinny.md.)
//
// The problem, in the terms of src/blas/gemm/skinny90.rs (the kernels' row-major D = X Y with X
// and Y both k-contiguous, seen from its long side):
//   D(l, s) = act(alpha * sum_p G[l][p] * H[s][p] + beta * D(l, s) + bias)
//   G[l][p] (l < L) and H[s][p] (s < S <= 16) through the tensor maps tg and th (3-D: {k, L or
//   S, batch}; box {EPB, 64} and {EPB, 16}: 128 bytes of k per row (EPB = 64 elements of 16
//   bits, 32 of f32), 128-byte swizzle; the TMA's
//   rules: 16-byte aligned starts, leading dimensions and batch strides; see Views), D(l, s) at
//   d[l * dl + s * ds]; bias[l] when bias_on_l, else bias[s]; batch z adds z * sd to d and reads
//   map coordinate z (or 0 when gz / hz is 0: a shared operand). Any k >= 1 and any D layout
//   (element stores); out-of-range rows and k read as zero (TMA bounds). beta == 0: D is not
//   read.
//
// Views (`lead` > 0): operands whose views both start `lead` bytes past a 16-byte boundary are
// mapped from that boundary, with k extended by lead / sizeof(T) elements. Every box still starts
// at a multiple of 128 bytes of k (the TMA faults on a box whose start is not 16-byte aligned),
// and map coordinate p of a row holds the view's element p - lead / sizeof(T) in G and in H
// alike, so the sum over p pairs the right elements, once the first `lead` bytes of each row's
// first k-tile (memory before the row: another row's elements, padding, anything, NaN
// included) are zeroed in both operands' fragments (sk90_cut: only chunk 0 of box 0, which lanes
// q = 0 read in their first step).
//
// Kernels: gemm_skinny90_<t>_k<KB>, block = 160 threads (4 consumer warps, 1 producer warp),
// grid = (blocks, 1, 1) for any 1 <= blocks <= units (whole: blocks <= tiles * batch), dynamic
// shared memory skinny90_smem(KB, STAGES) bytes (below). ws: blocks * (1024 floats + one u64),
// any contents (whole: unused); seq: a number the flags in ws do not hold (a fresh one per
// launch, or flags zeroed before it and seq != 0: a replayed graph).
//
// Work: the row tiles of 64 rows (t = z * tiles + row tile, T = tiles * batch of them) are cut
// along k into units of KB elements; unit u = t * nk + c (nk = ceil((k + lead / sizeof(T)) /
// KB)), and block b takes the units [first(b), first(b + 1)) in order. With `whole`, first(b) = (b * T / blocks) * nk:
// whole tiles, each finished by the block that holds it (the host's choice where that keeps
// most SMs busy). Otherwise first(b) = b * units / blocks (stream-k: every block the same share,
// whatever the tile count). A tile whose units one block holds is finished by it; otherwise its
// units run on consecutive blocks, and the first of them (the fixer, which reaches the tile at
// the end of its share, the others at the start of theirs) adds the others' partial sums to its
// own and writes D. Each other block writes the partial sums of its first tile to its slot of
// `ws` (64 x 16 f32, in fragment order) and then its flag to `seq`; the fixer waits for the flags
// of the blocks after it that share the tile (written at the start of their run), then adds the
// slots in block order, so the result does not depend on timing. No counter needs zeroing: no
// memset, no second launch (but in a graph, whose replays share seq and ws: the host zeroes the
// flags in the graph first). A block only waits for blocks with a higher index, each of which
// writes its flag before it waits for anything; with every block resident (one wave) none waits
// long, and with fewer SMs free the blocks that run finish and make room for the rest.
//
// Ring (`skinny90_rule`, the ordering of the async proxy's writes): the producer thread waits for
// stage s's "empty" mbarrier (one arrival per consumer warp, after the warp's last shared-memory
// read of the stage: __syncwarp, then lane 0), arms its "full" mbarrier with the stage's bytes
// (whole boxes: the TMA counts zero-filled bytes too), then issues the stage's boxes completing
// on "full". Consumers read a stage only after its "full" phase completed.
//
// Consumers: warp w owns rows 16 w .. 16 w + 15 of the tile. For each 64 bytes of k (32
// elements of 16 bits, 16 of f32), lane (g, q) = (lane / 4, lane % 4) reads one 16-byte chunk of
// G's rows g and g + 8 and of H's rows g and g + 8, the same k in all four, and two m16n8k16
// (m16n8k8 for tf32) per 8 columns take words (0, 1) and (2, 3) of them: that is the A and B
// fragment layout with k permuted the same way in both operands (a sum over k may visit k in any
// order; each word is 2 elements of k in m16n8k16, 1 in m16n8k8, and words 0 and 1 fill the
// k-slots q and q + 4 of both shapes), so there are no shuffles and no ldmatrix. Of a 128-byte
// box row (chunks 0-7), lane q reads chunk 2 q in the first step and 2 q + 1 in the second; the
// swizzle stores chunk c of row r at c ^ (r % 8), so the rows g, g + 1 of a quarter warp land on
// even and odd chunks: distinct banks.

#include "gemm_wg_ops.cuh"
#include "mma_sync.cuh"

struct Skinny90Params {
    unsigned long long d, bias, ws, seq;
    long long L, S, k;
    long long dl, ds, sd;
    double alpha, beta;
    int act, bias_on_l;
    int tiles, batch, nk;
    int gz, hz;  // G's / H's tensor maps have a batch coordinate (else every matrix reads 0)
    int whole;   // blocks take whole tiles (see Work above)
    int lead;    // bytes (< 16) of each row's first k-tile before the operands' views (Views below)
    int pad;
};

constexpr int SK90_ROWS = 64, SK90_S = 16, SK90_CONSUMERS = 4;
// A box: 64 elements of k (one 128-byte swizzle row) of 64 rows of G or 16 rows of H.
constexpr int SK90_GBOX = SK90_ROWS * 128, SK90_HBOX = SK90_S * 128;

__host__ __device__ constexpr int skinny90_stage(int boxes) { return boxes * (SK90_GBOX + SK90_HBOX); }
// Dynamic shared memory: the ring (1024-byte aligned: the swizzle's period), its 2 * STAGES
// barriers.
__host__ __device__ constexpr int skinny90_smem(int boxes, int stages) { return stages * skinny90_stage(boxes) + 16 * stages + 1024; }

// The first unit of block b (whole tiles: of its first tile), and, in stream-k, the block that
// holds unit u (the largest b whose first unit is at most u).
__device__ __forceinline__ long long sk90_first(long long b, long long units, long long blocks, long long nk, bool whole) {
    return whole ? b * (units / nk) / blocks * nk : b * units / blocks;
}
__device__ __forceinline__ long long sk90_block(long long u, long long units, long long blocks) {
    return ((u + 1) * blocks - 1) / units;
}

// v with its low `bytes` bytes (0 to 15) zeroed: the elements of k before a view (see Views).
__device__ __forceinline__ uint4 sk90_cut(uint4 v, int bytes) {
    auto keep = [](unsigned w, int lo) { return lo <= 0 ? w : lo >= 4 ? 0u : w & (0xffffffffu << (8 * lo)); };
    return make_uint4(keep(v.x, bytes), keep(v.y, bytes - 4), keep(v.z, bytes - 8), keep(v.w, bytes - 12));
}

__device__ __forceinline__ uint4 lds128(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

// 64 bytes of k: two m16n8k16 (m16n8k8 for tf32) per 8 columns of H (see the module comment).
template <typename T> __device__ __forceinline__ void sk90_step(float (&acc)[2][4], uint4 a0, uint4 a1, uint4 h0, uint4 h1) {
    const unsigned A0[4] = {a0.x, a1.x, a0.y, a1.y}, A1[4] = {a0.z, a1.z, a0.w, a1.w};
    const unsigned B00[2] = {h0.x, h0.y}, B01[2] = {h0.z, h0.w}, B10[2] = {h1.x, h1.y}, B11[2] = {h1.z, h1.w};
    Tc<T>::mma(acc[0], A0, B00);
    Tc<T>::mma(acc[1], A0, B10);
    Tc<T>::mma(acc[0], A1, B01);
    Tc<T>::mma(acc[1], A1, B11);
}

template <typename T, int KB, int STAGES>
__device__ __forceinline__ void gemm_skinny90(const TensorMap* tg, const TensorMap* th, const Skinny90Params& p) {
    // EPB elements of k per 128-byte box row: 64 of f16 / bf16, 32 of f32 (tf32).
    constexpr int EPB = 128 / (int)sizeof(T), BOXES = KB / EPB, STAGE = skinny90_stage(BOXES), G_BYTES = BOXES * SK90_GBOX;
    static_assert(KB % EPB == 0, "whole boxes");
    extern __shared__ unsigned char sk90_raw[];
    const unsigned raw = smem_addr(sk90_raw);
    const unsigned ring = (raw + 1023u) & ~1023u;
    const unsigned full = ring + STAGES * STAGE, empty = full + 8 * STAGES;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
    const long long nk = p.nk, units = (long long)p.tiles * p.batch * nk, blocks = gridDim.x;
    const long long b = blockIdx.x, u0 = sk90_first(b, units, blocks, nk, p.whole), u1 = sk90_first(b + 1, units, blocks, nk, p.whole);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, SK90_CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (tid == 32 * SK90_CONSUMERS) {
        // The tensor maps are kernel parameters, not the previous kernel's output.
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(tg) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(th) : "memory");
    }
    __syncthreads();
    // Launched to overlap the stream's previous kernel (src/launch.rs, overlap_previous): no
    // thread touches global memory before that kernel has finished and its writes are visible.
    // Without the launch attribute this returns at once.
    asm volatile("griddepcontrol.wait;\n" ::: "memory");

    if (warp == SK90_CONSUMERS) {
        // The producer (skinny90_rule in the module comment).
        if (lane == 0) {
            RingPos<STAGES> pos;
            for (long long u = u0; u < u1; ++u, pos.next()) {
                const long long t = u / nk;
                const int z = (int)(t / p.tiles), r0 = (int)(t % p.tiles) * SK90_ROWS, kc = (int)(u % nk) * KB;
                const int s = pos.s;
                mbar_wait(empty + 8 * s, pos.ph ^ 1);
                const unsigned bar = full + 8 * s, stage = ring + s * STAGE;
                mbar_expect_tx(bar, STAGE);
#pragma unroll
                for (int j = 0; j < BOXES; ++j) {
                    tma_load(stage + j * SK90_GBOX, tg, bar, kc + EPB * j, r0, p.gz ? z : 0);
                    tma_load(stage + G_BYTES + j * SK90_HBOX, th, bar, kc + EPB * j, 0, p.hz ? z : 0);
                }
            }
            // Every load issued: the stream's next kernel may be launched (its blocks start as
            // SMs free up and wait in their griddepcontrol.wait for this grid to finish).
            asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
        }
        return;
    }

    const int g = lane >> 2, q = lane & 3;
    const float alpha = (float)p.alpha, beta = (float)p.beta;
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    float* ws = reinterpret_cast<float*>(p.ws);
    unsigned long long* flags = reinterpret_cast<unsigned long long*>(ws + blocks * (SK90_CONSUMERS * 32 * 8));
    // Lane (g, q) reads 16-byte chunk 2 q + h (h = 0, 1) of its rows' 128-byte box rows, where
    // the swizzle put it at chunk (2 q + h) ^ (row % 8): rows g and g + 1 of a quarter warp land
    // on even and odd chunks, distinct banks.
    const unsigned grow = (warp * 16 + g) * 128, hrow = g * 128, sw = g & 7;
    RingPos<STAGES> pos;
    for (long long u = u0; u < u1; ++u, pos.next()) {
        const long long t = u / nk, c = u % nk;
        const int s = pos.s;
        mbar_wait(full + 8 * s, pos.ph);
        const unsigned stage = ring + s * STAGE;
        // Bytes of this lane's first chunk that lie before the views (Views above).
        const int cut = (c == 0 && q == 0) ? p.lead : 0;
#pragma unroll
        for (int j = 0; j < BOXES; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const unsigned chunk = (((2 * q + h) ^ sw) << 4);
                const unsigned ga = stage + j * SK90_GBOX + grow + chunk, ha = stage + G_BYTES + j * SK90_HBOX + hrow + chunk;
                uint4 g0 = lds128(ga), g1 = lds128(ga + 8 * 128), h0 = lds128(ha), h1 = lds128(ha + 8 * 128);
                if (j == 0 && h == 0 && cut) {
                    g0 = sk90_cut(g0, cut), g1 = sk90_cut(g1, cut), h0 = sk90_cut(h0, cut), h1 = sk90_cut(h1, cut);
                }
                sk90_step<T>(acc, g0, g1, h0, h1);
            }
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * s);
        if (c != nk - 1 && u != u1 - 1) continue;

        // The tile's units in this block end here.
        const long long first = t * nk;
        float* mine = ws + (b * SK90_CONSUMERS + warp) * 256 + lane * 8;
        if (first < u0) {
            // Not the fixer: park the partial sums, then the flag.
            __stcg(reinterpret_cast<float4*>(mine), make_float4(acc[0][0], acc[0][1], acc[0][2], acc[0][3]));
            __stcg(reinterpret_cast<float4*>(mine) + 1, make_float4(acc[1][0], acc[1][1], acc[1][2], acc[1][3]));
            __threadfence();
            named_bar(1);  // the 128 consumer threads
            if (tid == 0) asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(flags + b), "l"(p.seq) : "memory");
        } else {
            if (u1 < first + nk) {
                // The fixer of a shared tile: the later blocks' partial sums, in block order.
                const long long last = sk90_block(first + nk - 1, units, blocks);
                if (tid == 0) {
                    for (long long bb = b + 1; bb <= last; ++bb) {
                        unsigned long long v;
                        do {
                            asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(flags + bb) : "memory");
                        } while (v != p.seq);
                    }
                    __threadfence();
                }
                named_bar(1);  // the 128 consumer threads
                for (long long bb = b + 1; bb <= last; ++bb) {
                    const float* other = ws + (bb * SK90_CONSUMERS + warp) * 256 + lane * 8;
                    const float4 x = __ldcg(reinterpret_cast<const float4*>(other));
                    const float4 y = __ldcg(reinterpret_cast<const float4*>(other) + 1);
                    acc[0][0] += x.x, acc[0][1] += x.y, acc[0][2] += x.z, acc[0][3] += x.w;
                    acc[1][0] += y.x, acc[1][1] += y.y, acc[1][2] += y.z, acc[1][3] += y.w;
                }
            }
            // The epilogue: lane (g, q) holds rows g, g + 8 and columns 8 j + 2 q, + 1; one rolled
            // loop, so the activations' code appears once.
            const long long z = t / p.tiles, l0 = (t % p.tiles) * SK90_ROWS + warp * 16 + g;
            T* D = reinterpret_cast<T*>(p.d) + z * p.sd;
            const T* bias = reinterpret_cast<const T*>(p.bias);
            const float vals[8] = {acc[0][0], acc[0][1], acc[0][2], acc[0][3], acc[1][0], acc[1][1], acc[1][2], acc[1][3]};
#pragma unroll 1
            for (int e = 0; e < 8; ++e) {
                const int j = e >> 2, i = e & 3;
                const long long l = l0 + 8 * (i >> 1), sc = 8 * j + 2 * q + (i & 1);
                if (l >= p.L || sc >= p.S) continue;
                T* dp = D + l * p.dl + sc * p.ds;
                float v = alpha * vals[e];
                if (beta != 0.f) v += beta * Tc<T>::to_f(*dp);
                if (bias) v += Tc<T>::to_f(bias[p.bias_on_l ? l : sc]);
                if (p.act) v = activate(v, p.act);
                *dp = Tc<T>::from_f(v);
            }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[j][i] = 0.f;
    }
}

#define SKINNY90(T, N, KB, STAGES)                                                                              \
    extern "C" __global__ void __launch_bounds__(160, 1)                                                        \
        gemm_skinny90_##N##_k##KB(const __grid_constant__ TensorMap tg, const __grid_constant__ TensorMap th,  \
                                  const Skinny90Params p) {                                                     \
        gemm_skinny90<T, KB, STAGES>(&tg, &th, p);                                                              \
    }
SKINNY90(__half, f16, 256, 3)
SKINNY90(__nv_bfloat16, bf16, 256, 3)
SKINNY90(float, tf32, 128, 3)
