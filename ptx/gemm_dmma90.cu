// cudrv module `gemm_dmma90`: f64 GEMM on the DMMA shapes that Hopper adds (sm_90 and later):
// mma.sync m16n8k4 / m16n8k8 .f64, f64 accumulation, fused epilogue. The sm_80 kernels (m8n8k4,
// gemm_dmma_f64_s_* in gemm_tc.cu) reach only about half of Hopper's f64 tensor rate.
// The template is in gemm_dmma90.cuh; gemm_dmma90_f32.cu instantiates the same tiles on f32
// operands (exact f32 on the f64 tensor cores).
//
// The problem, the operand layouts (xk, yk), GemmParams and the epilogue are those of gemm_tc.cu:
//   D[r][c] = act(alpha * sum_p X[r][p] * Y[p][c] + beta * D[r][c] + bias[c]),   r < m, c < n, p < k
//   X[r][p] at x[r * ldx + p] when xk, else x[r + p * ldx]; Y[p][c] at y[c * ldy + p] when yk, else
//   y[p * ldy + c]; D[r][c] at d[r * ldd + c].
//
// Kernel names: gemm_dmma90_f64_<tile>_<opA><opB> (xk = opB == 'n', yk = opA == 't'), tiles:
//   l = 128 x 128, 8 warps (2 x 4) of 64 x 32, m16n8k4, 4 stages  (256 threads, 163840 bytes)
//   m = 128 x 64,  8 warps (4 x 2) of 32 x 32, m16n8k8, 4 stages  (256 threads, 122880 bytes)
//   p = 128 x 64,  4 warps (2 x 2) of 64 x 32, m16n8k8, 3 stages  (128 threads,  92160 bytes),
//       two blocks per multiprocessor, one buffer of A's fragments (ROT in the main loop)
//   s = 64 x 64,   4 warps (2 x 2) of 32 x 32, m16n8k8, 3 stages  (128 threads,  61440 bytes)
//   q = s in three blocks per multiprocessor (at most 168 registers: ROT, as p), for short k
//   u = 32 x 32,   4 warps (2 x 2) of 16 x 16, m16n8k8, 4 stages  (128 threads,  40960 bytes)
//   s2, u2, q2 = s, u, q with k split between the 2 blocks of a cluster (below).
//   k = m's tile in stream-k (SPLIT = 0, below): a grid of at most one block per multiprocessor
//       shares the tiles' k-tiles evenly, so 96 tiles keep 132 multiprocessors busy.
//   t = 16 x 64,   4 warps (1 x 4) of 16 x 16, m16n8k8, 4 stages, BK = 32 (128 threads, 94208 bytes)
//   h = 64 x 16,   4 warps (4 x 1) of 16 x 16, m16n8k8, 4 stages, BK = 32 (128 threads, 94208 bytes)
//   tu, hu = t, h reading X and Y 8 bytes at a time: operands aligned only to their element,
//       any leading dimension (a view at an odd offset), with no aligned copy first.
//       The thin tiles: a product with a side
//       of at most 16 (a decode step's tokens) is memory-bound, so these stream the long operand
//       once, 256 bytes of k per row and stage, where the square tiles compute 2-8x the rows
//       that exist (docs/kernels/gemm-dmma.md, "Thin tiles").
// BK = 16 except for t and h. Dynamic shared memory = STAGES * 8 * (slot(BM) + slot(BN)) bytes,
// slot(rows) = max(rows * (BK + 4), BK * (rows + 4)) (either layout of the tile; the opt-in above
// 48 KiB is needed for l, m, p, q, s, t and h; every tile has an 8-byte variant `<tile>u`, at the
// end of the file). The template also takes BK = 32, m16n8k16 shapes and splits
// in 4 (with a DMMA90_CLUSTER_4 definition beside the two below); see docs/kernels/gemm-dmma.md for
// the configurations measured and dropped.
//
// Split k (SPLIT = 2): the kernel is compiled with a cluster shape of 2 x 1 x 1; the two blocks
// of a cluster compute the same output tile, block r over k-tiles [r * KT / 2, (r + 1) * KT / 2).
// After the main loop each block sends the rows of its partial tile that the other block
// finishes into that block's shared memory (st.shared::cluster), and each block adds the two
// partial tiles of its half of the rows in a fixed order (part 0 first) in its epilogue.
//
// Stream-k (SPLIT = 0, the `k` tiles): the kernels take a second parameter, DmmaStreamK (ws:
// 2 * BM * BN doubles per block; counters: one u32 per output tile, zeroed), and any grid x of
// at least one block (batch 1, grid y = 1); block b of G sums k-tiles [total * b / G, total *
// (b + 1) / G) of the sequence that runs through the tiles one after another (raster order,
// each tile's k-tiles in order). A tile a block covers whole is stored as by the other tiles;
// a part of one goes to the block's slot, and the last of the tile's blocks to count in adds the
// parts in block order and stores the tile (gemm_dmma90.cuh: the hand-off).
//
// Launch contract: block = (32 * WM * WN, 1, 1); grid = (ceil(m/BM) * ceil(n/BN) * SPLIT, batch, 1);
// x, y 16-byte aligned; ldx, ldy (and sx, sy for batches) even: cp.async moves 16 bytes (two
// doubles) at a time, partial chunks at the edges are zero-filled through cp.async's src-size.
// beta == 0: D is not read. bias == 0: no bias. k == 0 is allowed. m, n >= 1.
//
// Fragments (PTX ISA, mma.m16n8k{4,8,16} .f64), g = lane / 4, t = lane % 4, j < k / 4:
//   a[2j] = A[g][4j + t], a[2j + 1] = A[g + 8][4j + t];  b[j] = B[4j + t][g];
//   c0, c1 = C[g][2t], C[g][2t + 1];  c2, c3 = C[g + 8][2t], C[g + 8][2t + 1].
// Shared tiles keep the global layout: k-contiguous tiles are [rows][BK + 4], m- or n-contiguous
// ones [BK][cols + 4]. Either way the row stride is 4 (mod 16) doubles, so the 64-bit fragment
// reads of each half-warp (g = 0..3 or 4..7, t = 0..3) fall on 16 distinct bank pairs:
// g * (BK + 4) + t, or t * (cols + 4) + g, are distinct mod 16.

#include "gemm_dmma90.cuh"

// CE: doubles per cp.async (1: the unaligned variants, whose operands need only 8-byte
// alignment and any leading dimension)
#define GEMM_DMMA90_OPS_R(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, CE, ROT)                          \
    GEMM_DMMA90_OPS_T(gemm_dmma90_f64_, double, TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, CE, ROT)
#define GEMM_DMMA90_OPS_CE(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, CE)                           \
    GEMM_DMMA90_OPS_R(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, CE, false)
#define GEMM_DMMA90_OPS(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB)                                  \
    GEMM_DMMA90_OPS_CE(TILE, BM, BN, WM, WN, BK, ST, KS, SPLIT, MINB, 2)

//              tile  BM   BN  WM WN  BK ST KS SPLIT MINB
GEMM_DMMA90_OPS(l, 128, 128, 2, 4, 16, 4, 4, 1, 1)
GEMM_DMMA90_OPS(m, 128, 64, 4, 2, 16, 4, 8, 1, 1)
GEMM_DMMA90_OPS(s, 64, 64, 2, 2, 16, 3, 8, 1, 2)
GEMM_DMMA90_OPS(u, 32, 32, 2, 2, 16, 4, 8, 1, 1)
GEMM_DMMA90_OPS(s2, 64, 64, 2, 2, 16, 3, 8, 2, 2)
GEMM_DMMA90_OPS(u2, 32, 32, 2, 2, 16, 4, 8, 2, 1)
GEMM_DMMA90_OPS(k, 128, 64, 4, 2, 16, 4, 8, 0, 1)
GEMM_DMMA90_OPS(t, 16, 64, 1, 4, 32, 4, 8, 1, 2)
GEMM_DMMA90_OPS(h, 64, 16, 4, 1, 32, 4, 8, 1, 2)
//                tile  BM  BN  WM WN  BK ST KS SPLIT MINB CE ROT
GEMM_DMMA90_OPS_R(p, 128, 64, 2, 2, 16, 3, 8, 1, 2, 2, true)
GEMM_DMMA90_OPS_R(q, 64, 64, 2, 2, 16, 3, 8, 1, 3, 2, true)
GEMM_DMMA90_OPS_R(q2, 64, 64, 2, 2, 16, 3, 8, 2, 3, 2, true)
// The same tiles reading 8 bytes per cp.async, for operands aligned only to their element (odd
// leading dimensions, views at odd offsets): no aligned copy first.
GEMM_DMMA90_OPS_CE(lu, 128, 128, 2, 4, 16, 4, 4, 1, 1, 1)
GEMM_DMMA90_OPS_CE(mu, 128, 64, 4, 2, 16, 4, 8, 1, 1, 1)
GEMM_DMMA90_OPS_CE(su, 64, 64, 2, 2, 16, 3, 8, 1, 2, 1)
GEMM_DMMA90_OPS_CE(uu, 32, 32, 2, 2, 16, 4, 8, 1, 1, 1)
GEMM_DMMA90_OPS_CE(s2u, 64, 64, 2, 2, 16, 3, 8, 2, 2, 1)
GEMM_DMMA90_OPS_CE(u2u, 32, 32, 2, 2, 16, 4, 8, 2, 1, 1)
GEMM_DMMA90_OPS_CE(ku, 128, 64, 4, 2, 16, 4, 8, 0, 1, 1)
GEMM_DMMA90_OPS_CE(tu, 16, 64, 1, 4, 32, 4, 8, 1, 2, 1)
GEMM_DMMA90_OPS_CE(hu, 64, 16, 4, 1, 32, 4, 8, 1, 2, 1)
GEMM_DMMA90_OPS_R(pu, 128, 64, 2, 2, 16, 3, 8, 1, 2, 1, true)
GEMM_DMMA90_OPS_R(qu, 64, 64, 2, 2, 16, 3, 8, 1, 3, 1, true)
GEMM_DMMA90_OPS_R(q2u, 64, 64, 2, 2, 16, 3, 8, 2, 3, 1, true)
