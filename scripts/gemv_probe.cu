// GEMV variants against cuBLAS and against the read floor, in one process, for choosing a
// kernel shape before it goes into the library. The variants are instantiations of the
// templates in ptx/gemv_common.cuh (the library's own), plus the library's kernels themselves,
// loaded from the committed ptx/gemv*.ptx through the driver's JIT as the library loads them.
// Each is launched with the library's plan() rule (cluster variants: 8 splits) and checked
// against cuBLAS's y. Timing as in `cudrv bench gemv`: back-to-back calls between events,
// batches of about 2 ms, median of 9 batches.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -o gemv_probe scripts/gemv_probe.cu -lcublas -lcuda
//   ./gemv_probe 4096 6144 8192      (run from the repository root: it reads ptx/gemv*.ptx)
//
// Prints, per square f32 size, microseconds and the ratio cuBLAS time / variant time for each
// variant, then plain reads of the same bytes for reference: grid-stride ld.global.cg (with and
// without the L2::256B prefetch hint), T's access pattern without x, and cp.async.bulk readers.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include "gemv_common.cuh"
#include "readers.cuh"
#include "timing.cuh"

// ---- GEMV variants (f32) ----
// T: one warp per column (gemv_t), or WPC warps per column (gemv_tw; the library's gemv_tv_f32
// is WPC 4), UR 16-byte loads of A and of x per lane per step.
extern "C" __global__ void __launch_bounds__(256) t_ur4(GemvParams p) { gemv_t<float, 4, 4>(p); }
#define T_WPC(NAME, UR, WPC) \
    extern "C" __global__ void __launch_bounds__(256) NAME(GemvParams p) { gemv_tw<float, 4, UR, WPC>(p); }
T_WPC(tw_ur4_w2, 4, 2)
T_WPC(tw_ur4_w4, 4, 4)
T_WPC(tw_ur8_w4, 8, 4)
T_WPC(tw_ur4_w8, 4, 8)
// N: row tiles of 128 * UR rows, UC columns per step, 8 splits in a cluster or a split plan with
// gemv_finish (the library's gemv_nv_f32: UR 1, UC 8; gemv_nvc_f32: UR 2, UC 4).
#define N_PLAIN(NAME, UR, UC, MINB) \
    extern "C" __global__ void __launch_bounds__(256, MINB) NAME(GemvParams p) { gemv_n<float, 4, UR, UC>(p); }
#define N_CLUSTER(NAME, UR, UC, MINB)                                                            \
    extern "C" __global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(256, MINB) NAME(GemvParams p) { \
        gemv_n<float, 4, UR, UC, 8>(p);                                                          \
    }
N_PLAIN(n_ur1, 1, 8, 4)
N_PLAIN(n_ur2, 2, 4, 4)
N_CLUSTER(nc_ur1, 1, 8, 4)
N_CLUSTER(nc_ur2, 2, 4, 4)
N_CLUSTER(nc_ur2_uc8, 2, 8, 1)
N_CLUSTER(nc_ur4_uc4, 4, 4, 1)
// N by column panels (what an early profile was misread to say cuBLAS's N kernel does at 4096^2;
// n_rows below has the shape ncu shows it has): block b takes columns
// [b * chunk, (b + 1) * chunk) over every row (m == 1024 * Q, lda == m), thread t the rows
// 4 t + 1024 q; the 8 blocks of a cluster add their partial vectors in shared memory (block r
// of the cluster the rows [r m / 8, (r + 1) m / 8)), each cluster writes one partial vector to
// work, and finish_f32 adds the gridDim.x / 8 of them.
template <int Q, int UC>
__device__ __forceinline__ void n_panel(const GemvParams& p) {
    __shared__ __align__(16) float part[Q * 1024];
    const int t = threadIdx.y * 32 + threadIdx.x;
    const float* A = reinterpret_cast<const float*>(p.a);
    const float* x = reinterpret_cast<const float*>(p.x);
    const long long c0 = (long long)blockIdx.x * p.chunk, c1 = min(c0 + p.chunk, p.n);
    float s[Q][4];
#pragma unroll
    for (int q = 0; q < Q; ++q) s[q][0] = s[q][1] = s[q][2] = s[q][3] = 0.f;
    long long j = c0;
    for (; j + UC <= c1; j += UC) {
        float xv[UC];
        float4 av[UC][Q];
#pragma unroll
        for (int v = 0; v < UC; ++v) xv[v] = __ldg(x + j + v);
#pragma unroll
        for (int v = 0; v < UC; ++v)
#pragma unroll
            for (int q = 0; q < Q; ++q) av[v][q] = __ldcg(reinterpret_cast<const float4*>(A + (j + v) * p.lda + 4 * t + 1024 * q));
#pragma unroll
        for (int v = 0; v < UC; ++v)
#pragma unroll
            for (int q = 0; q < Q; ++q) {
                s[q][0] += av[v][q].x * xv[v];
                s[q][1] += av[v][q].y * xv[v];
                s[q][2] += av[v][q].z * xv[v];
                s[q][3] += av[v][q].w * xv[v];
            }
    }
    for (; j < c1; ++j) {
        const float xj = __ldg(x + j);
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const float4 a = __ldcg(reinterpret_cast<const float4*>(A + j * p.lda + 4 * t + 1024 * q));
            s[q][0] += a.x * xj, s[q][1] += a.y * xj, s[q][2] += a.z * xj, s[q][3] += a.w * xj;
        }
    }
#pragma unroll
    for (int q = 0; q < Q; ++q)
        *reinterpret_cast<float4*>(&part[1024 * q + 4 * t]) = make_float4(s[q][0], s[q][1], s[q][2], s[q][3]);
    cluster_sync();
    constexpr int MINE = Q * 1024 / 8;
    const unsigned r = cluster_rank();
    float* work = reinterpret_cast<float*>(p.work) + (long long)(blockIdx.x / 8) * p.m;
    for (int i = t; i < MINE; i += 256) {
        const int row = (int)r * MINE + i;
        const unsigned addr = (unsigned)__cvta_generic_to_shared(&part[row]);
        float sum = 0.f;
#pragma unroll
        for (int b = 0; b < 8; ++b) sum += cluster_load(addr, (unsigned)b, 0.f);
        work[row] = sum;
    }
    cluster_sync();
}
#define N_PANEL(NAME, Q, UC)                                                                      \
    extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(256, 1) NAME(GemvParams p) { \
        n_panel<Q, UC>(p);                                                                        \
    }
N_PANEL(np_q4, 4, 2)
N_PANEL(np_q4_uc4, 4, 4)
N_PANEL(np_q6, 6, 2)
N_PANEL(np_q8, 8, 2)
// N by row strips (the library's gemv_nr / gemv_nrv take this shape with 8- and 16-byte lanes;
// cuBLAS's N kernel at 4096^2 has it with 4-byte lanes, from ncu: 128 blocks of 32 x 16
// threads, 32 rows per block, 32 4-byte loads of A in flight per lane, no stores but y): block b
// owns rows [32 RPL b, 32 RPL (b + 1)), lane l its RPL rows from 32 RPL b + RPL l, warp w the
// columns [w per, (w + 1) per) with per = ceil(n / W), U columns of A per step with the
// streaming (evict-first) hint; the W warps' sums meet in shared memory. No split, no workspace.
template <int RPL> struct RowVec;
template <> struct RowVec<1> { using type = float; };
template <> struct RowVec<2> { using type = float2; };
template <> struct RowVec<4> { using type = float4; };
template <int RPL>
__device__ __forceinline__ void row_add(float (&s)[RPL], typename RowVec<RPL>::type a, float xv) {
    if constexpr (RPL == 1) {
        s[0] = fmaf(a, xv, s[0]);
    } else if constexpr (RPL == 2) {
        s[0] = fmaf(a.x, xv, s[0]), s[1] = fmaf(a.y, xv, s[1]);
    } else {
        s[0] = fmaf(a.x, xv, s[0]), s[1] = fmaf(a.y, xv, s[1]), s[2] = fmaf(a.z, xv, s[2]), s[3] = fmaf(a.w, xv, s[3]);
    }
}
template <int RPL, int W, int U>
__device__ __forceinline__ void n_rows(const GemvParams& p) {
    using V = typename RowVec<RPL>::type;
    __shared__ float red[W][32 * RPL];
    const int lane = threadIdx.x, w = threadIdx.y;
    const float* A = reinterpret_cast<const float*>(p.a);
    const float* x = reinterpret_cast<const float*>(p.x);
    const long long r0 = (long long)blockIdx.x * 32 * RPL, r = r0 + RPL * lane;
    const long long per = (p.n + W - 1) / W;
    const long long c0 = w * per, c1 = min(c0 + per, p.n);
    float s[RPL];
#pragma unroll
    for (int e = 0; e < RPL; ++e) s[e] = 0.f;
    long long j = c0;
    if (r + RPL <= p.m) {
        for (; j + U <= c1; j += U) {
            float xv[U];
            V av[U];
#pragma unroll
            for (int v = 0; v < U; ++v) xv[v] = __ldg(x + (j + v) * p.incx);
#pragma unroll
            for (int v = 0; v < U; ++v) av[v] = __ldcs(reinterpret_cast<const V*>(A + (j + v) * p.lda + r));
#pragma unroll
            for (int v = 0; v < U; ++v) row_add<RPL>(s, av[v], xv[v]);
        }
    }
    for (; j < c1; ++j) {
        const float xj = __ldg(x + j * p.incx);
#pragma unroll
        for (int e = 0; e < RPL; ++e)
            if (r + e < p.m) s[e] = fmaf(__ldcs(A + j * p.lda + r + e), xj, s[e]);
    }
#pragma unroll
    for (int e = 0; e < RPL; ++e) red[w][RPL * lane + e] = s[e];
    __syncthreads();
    for (int t = w * 32 + lane; t < 32 * RPL; t += 32 * W) {
        if (r0 + t < p.m) {
            float sum = 0.f;
#pragma unroll
            for (int q = 0; q < W; ++q) sum += red[q][t];
            store_y<float>(reinterpret_cast<float*>(p.y) + (r0 + t) * p.incy, sum, p.alpha, p.beta);
        }
    }
}
#define N_ROWS(NAME, RPL, W, U)                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * W, 1) NAME(GemvParams p) { n_rows<RPL, W, U>(p); }
N_ROWS(nr_r1_w16_u32, 1, 16, 32)
N_ROWS(nr_r1_w16_u16, 1, 16, 16)
N_ROWS(nr_r1_w32_u16, 1, 32, 16)
N_ROWS(nr_r1_w8_u32, 1, 8, 32)
N_ROWS(nr_r2_w16_u16, 2, 16, 16)
N_ROWS(nr_r4_w16_u8, 4, 16, 8)
extern "C" __global__ void __launch_bounds__(256) finish_f32(float* y, const float* work, long long len, int splits,
                                                            double alpha, double beta, long long incy) {
    gemv_finish<float>(y, work, len, splits, alpha, beta, incy);
}

// ---- read-only kernels: the floor ----
// T's access pattern with no x and no arithmetic but the sum: one warp per column, UR loads.
template <int UR>
__global__ void __launch_bounds__(256) read_t(const float* __restrict__ a, long long m, long long n, float* out) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    float s = 0.f;
    for (long long j = (long long)blockIdx.x * 8 + w; j < n; j += (long long)gridDim.x * 8) {
        const float* col = a + j * m;
        for (long long i = 4 * lane; i + 128 * (UR - 1) < m; i += 128 * UR) {
            float4 v[UR];
#pragma unroll
            for (int u = 0; u < UR; ++u) v[u] = __ldcg(reinterpret_cast<const float4*>(col + i + 128 * u));
#pragma unroll
            for (int u = 0; u < UR; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    }
    if (s == 12345.678f) out[blockIdx.x] = s;
}
// cp.async.bulk: CHUNK-byte pieces into a ring of STAGES shared-memory buffers, one mbarrier each;
// block b takes pieces b, b + grid, ...; all threads sum the piece, then thread 0 refills it.
template <int STAGES, int CHUNK>
__global__ void __launch_bounds__(256) read_bulk(const char* __restrict__ a, long long bytes, float* out) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long bar[STAGES];
    const long long pieces = bytes / CHUNK;
    const unsigned ring0 = (unsigned)__cvta_generic_to_shared(ring);
    auto bar_at = [&](int s) { return (unsigned)__cvta_generic_to_shared(&bar[s]); };
    auto issue = [&](long long k, int s) {
        const long long c = blockIdx.x + k * gridDim.x;
        if (c >= pieces) return;
        asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar_at(s)),
                     "r"(CHUNK)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         ring0 + s * CHUNK),
                     "l"(a + c * CHUNK), "r"(CHUNK), "r"(bar_at(s))
                     : "memory");
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_at(s)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES; ++s) issue(s, s);
    float acc = 0.f;
    for (long long k = 0; blockIdx.x + k * gridDim.x < pieces; ++k) {
        const int s = (int)(k % STAGES);
        const unsigned parity = (unsigned)((k / STAGES) & 1);
        unsigned done;
        do {
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                         "selp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done)
                         : "r"(bar_at(s)), "r"(parity)
                         : "memory");
        } while (!done);
        const float4* piece = reinterpret_cast<const float4*>(ring + s * CHUNK);
        for (int o = threadIdx.x; o < CHUNK / 16; o += blockDim.x) {
            const float4 v = piece[o];
            acc += v.x + v.y + v.z + v.w;
        }
        __syncthreads();
        if (threadIdx.x == 0) issue(k + STAGES, s);
    }
    if (acc == 12345.678f) out[blockIdx.x] = acc;
}

// ---- host ----

// The library's plan() (src/blas/gemv.rs): (grid_x, splits, chunk).
static void plan(long long base, long long len, long long min_chunk, long long grain, long long slots, long long& gx,
                 long long& splits, long long& chunk) {
    if (2 * base >= slots) {
        const long long per = (base + slots - 1) / slots;
        gx = (base + per - 1) / per, splits = 1, chunk = len;
        return;
    }
    long long want = std::min(slots / base, (len + min_chunk - 1) / min_chunk);
    want = std::max(1LL, std::min(want, 65535LL));
    chunk = (len + want - 1) / want;
    chunk = (chunk + grain - 1) / grain * grain;
    gx = base, splits = (len + chunk - 1) / chunk;
}

struct Variant {
    const char* name;
    const void* fn;
    bool trans;
    int unit;     // N: rows per tile; T: columns per block step
    bool cluster; // N: 8 splits in a cluster
    int cap;      // blocks per SM the plan may use (0: as many as fit)
    int splits;   // N: force this many splits (0: the plan's)
    int warps = 8;  // N: warps per block
    const char* lib = nullptr;  // the library's kernel of this name, from ptx/gemv*.ptx (driver JIT)
    CUfunction cu = nullptr;
    int panel = 0;         // N by column panels: the grid (clusters of 8), then finish_f32
    long long only_m = 0;  // run at this m only (0: every size)
    int rows = 0;          // N by row strips: rows per block (block 32 x warps, no split)
};

static std::string read_text(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    std::string t;
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) t.append(buf, got);
    fclose(f);
    return t;
}

int main(int argc, char** argv) {
    const int sms = print_device();
    const std::vector<long long> sizes = numbers_or(argc, argv, {4096, 6144, 8192});
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
    Variant variants[] = {
        {"T library PTX", nullptr, true, 2, false, 0, 0, 8, "gemv_tv_f32"},
        {"N library PTX", nullptr, false, 128, false, 0, 0, 8, "gemv_nv_f32"},
        {"N library PTX cluster", nullptr, false, 256, true, 0, 8, 8, "gemv_nvc_f32"},
        {"T ur4 w1", (const void*)t_ur4, true, 8, false, 0, 0},
        {"T ur4 w1 cap4", (const void*)t_ur4, true, 8, false, 4, 0},
        {"T ur4 w2", (const void*)tw_ur4_w2, true, 4, false, 0, 0},
        {"T ur4 w4", (const void*)tw_ur4_w4, true, 2, false, 0, 0},
        {"T ur8 w4", (const void*)tw_ur8_w4, true, 2, false, 0, 0},
        {"T ur4 w8", (const void*)tw_ur4_w8, true, 1, false, 0, 0},
        {"N ur1", (const void*)n_ur1, false, 128, false, 0, 0},
        {"N ur2", (const void*)n_ur2, false, 256, false, 0, 0},
        {"N ur2 s32", (const void*)n_ur2, false, 256, false, 0, 32},
        {"N ur1 cluster", (const void*)nc_ur1, false, 128, true, 0, 8},
        {"N ur2 cluster", (const void*)nc_ur2, false, 256, true, 0, 8},
        {"N ur2 uc8 cluster", (const void*)nc_ur2_uc8, false, 256, true, 0, 8},
        {"N ur4 uc4 cluster", (const void*)nc_ur4_uc4, false, 512, true, 0, 8},
        {"N rows 32 w16 u32", (const void*)nr_r1_w16_u32, false, 32, false, 0, 0, 16, nullptr, nullptr, 0, 0, 32},
        {"N rows 32 w16 u16", (const void*)nr_r1_w16_u16, false, 32, false, 0, 0, 16, nullptr, nullptr, 0, 0, 32},
        {"N rows 32 w32 u16", (const void*)nr_r1_w32_u16, false, 32, false, 0, 0, 32, nullptr, nullptr, 0, 0, 32},
        {"N rows 32 w8 u32", (const void*)nr_r1_w8_u32, false, 32, false, 0, 0, 8, nullptr, nullptr, 0, 0, 32},
        {"N rows 64 w16 u16", (const void*)nr_r2_w16_u16, false, 64, false, 0, 0, 16, nullptr, nullptr, 0, 0, 64},
        {"N rows 128 w16 u8", (const void*)nr_r4_w16_u8, false, 128, false, 0, 0, 16, nullptr, nullptr, 0, 0, 128},
        {"N panels 128", (const void*)np_q4, false, 128, false, 0, 0, 8, nullptr, nullptr, 128, 4096},
        {"N panels 256", (const void*)np_q4, false, 128, false, 0, 0, 8, nullptr, nullptr, 256, 4096},
        {"N panels 128 uc4", (const void*)np_q4_uc4, false, 128, false, 0, 0, 8, nullptr, nullptr, 128, 4096},
        {"N panels 128", (const void*)np_q6, false, 128, false, 0, 0, 8, nullptr, nullptr, 128, 6144},
        {"N panels 256", (const void*)np_q6, false, 128, false, 0, 0, 8, nullptr, nullptr, 256, 6144},
        {"N panels 128", (const void*)np_q8, false, 128, false, 0, 0, 8, nullptr, nullptr, 128, 8192},
        {"N panels 256", (const void*)np_q8, false, 128, false, 0, 0, 8, nullptr, nullptr, 256, 8192},
    };
    CHECK(cudaFree(0));
    CUmodule mod80, mod90;
    {
        const std::string p80 = read_text("ptx/gemv.ptx"), p90 = read_text("ptx/gemv90.ptx");
        if (cuModuleLoadData(&mod80, p80.c_str()) != CUDA_SUCCESS || cuModuleLoadData(&mod90, p90.c_str()) != CUDA_SUCCESS) {
            fprintf(stderr, "cannot load ptx/gemv*.ptx\n");
            return 1;
        }
    }
    for (Variant& v : variants) {
        if (!v.lib) continue;
        if (cuModuleGetFunction(&v.cu, mod80, v.lib) != CUDA_SUCCESS &&
            cuModuleGetFunction(&v.cu, mod90, v.lib) != CUDA_SUCCESS) {
            fprintf(stderr, "no kernel %s\n", v.lib);
            return 1;
        }
        int regs = 0, per_sm = 0;
        cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, v.cu);
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.cu, 256, 0);
        printf("kernel %-20s %3d regs (driver JIT of the committed PTX), %d blocks/SM\n", v.name, regs, per_sm);
    }
    for (const Variant& v : variants) {
        if (v.lib) continue;
        cudaFuncAttributes fa;
        CHECK(cudaFuncGetAttributes(&fa, v.fn));
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, 32 * v.warps, 0));
        printf("kernel %-20s %3d regs, %5zu B smem, %d blocks/SM, %zu B local\n", v.name, fa.numRegs,
               fa.sharedSizeBytes, per_sm, fa.localSizeBytes);
    }
    for (long long m : sizes) {
        const long long n = m, elems = m * n;
        const long long bytes = elems * 4;
        float *A, *x, *y, *yref, *work, *out;
        CHECK(cudaMalloc(&A, bytes));
        CHECK(cudaMalloc(&x, std::max(m, n) * 4));
        CHECK(cudaMalloc(&y, std::max(m, n) * 4));
        CHECK(cudaMalloc(&yref, std::max(m, n) * 4));
        CHECK(cudaMalloc(&work, 64ll * std::max(m, n) * 4));
        CHECK(cudaMalloc(&out, 1 << 20));
        {
            std::vector<float> ha(elems), hx(std::max(m, n));
            unsigned long long st = 0x9E3779B97F4A7C15ull ^ (unsigned long long)m;
            auto rnd = [&] {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                return (float)((st >> 40) * (1.0 / (1ull << 24))) * 2.f - 1.f;
            };
            for (auto& e : ha) e = rnd();
            for (auto& e : hx) e = rnd();
            CHECK(cudaMemcpy(A, ha.data(), bytes, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
        }
        const int calls = std::max(3, (int)(2e-3 / (bytes / 3e12)));
        printf("\n== %lld x %lld f32 (%lld MiB), %d calls per batch\n", m, n, bytes >> 20, calls);
        const float one = 1.f, zero = 0.f;
        double cub[2];
        for (int t = 0; t < 2; ++t) {
            const cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
            cub[t] = time_calls([&] { cublasSgemv(h, op, (int)m, (int)n, &one, A, (int)m, x, 1, &zero, yref, 1); },
                                calls);
        }
        printf("%-22s %9s %7s   %s\n", "variant", "us", "ratio", "grid / check");
        printf("%-22s %9.1f %7s\n", "cuBLAS N", cub[0] * 1e6, "1.000");
        printf("%-22s %9.1f %7s\n", "cuBLAS T", cub[1] * 1e6, "1.000");
        for (int t = 0; t < 2; ++t) {
            const cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
            cublasSgemv(h, op, (int)m, (int)n, &one, A, (int)m, x, 1, &zero, yref, 1);
            CHECK(cudaDeviceSynchronize());
            std::vector<float> ref(std::max(m, n));
            CHECK(cudaMemcpy(ref.data(), yref, ref.size() * 4, cudaMemcpyDeviceToHost));
            for (const Variant& v : variants) {
                if (v.trans != (t == 1) || (v.only_m && v.only_m != m)) continue;
                int per_sm = 0;
                if (v.cu)
                    cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.cu, 256, 0);
                else
                    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, 32 * v.warps, 0));
                if (v.cap > 0) per_sm = std::min(per_sm, v.cap);
                const long long slots = (long long)std::max(per_sm, 1) * sms;
                long long gx, splits, chunk;
                if (v.trans)
                    plan((n + v.unit - 1) / v.unit, m, 1024, 512, slots, gx, splits, chunk);
                else
                    plan((m + v.unit - 1) / v.unit, n, 256, 1, slots, gx, splits, chunk);
                if (v.splits > 0) splits = v.splits, chunk = (n + v.splits - 1) / v.splits, gx = (m + v.unit - 1) / v.unit;
                GemvParams p{};
                p.a = (unsigned long long)A, p.x = (unsigned long long)x, p.y = (unsigned long long)y;
                p.work = (unsigned long long)work;
                p.m = m, p.n = n, p.lda = m, p.incx = 1, p.incy = 1, p.chunk = chunk, p.alpha = 1.0, p.beta = 0.0;
                p.splits = (int)splits;
                const long long len_y = v.trans ? n : m;
                if (v.panel) gx = v.panel, splits = v.panel / 8, p.chunk = chunk = (n + v.panel - 1) / v.panel;
                if (v.rows) gx = (m + v.rows - 1) / v.rows, splits = 1, p.chunk = chunk = (n + v.warps - 1) / v.warps;
                auto launch = [&] {
                    void* args[] = {&p};
                    if (v.panel) {
                        CHECK(cudaLaunchKernel(v.fn, dim3((unsigned)v.panel), dim3(32, 8), args, 0, 0));
                    } else if (v.rows) {
                        CHECK(cudaLaunchKernel(v.fn, dim3((unsigned)gx), dim3(32, v.warps), args, 0, 0));
                    } else if (v.cu) {
                        if (cuLaunchKernel(v.cu, (unsigned)gx, (unsigned)splits, 1, v.trans ? 256 : 32, v.trans ? 1 : v.warps, 1,
                                           0, 0, args, nullptr) != CUDA_SUCCESS) {
                            fprintf(stderr, "launch of %s failed\n", v.lib);
                            exit(1);
                        }
                    } else {
                        CHECK(cudaLaunchKernel(v.fn, dim3((unsigned)gx, (unsigned)splits),
                                               v.trans ? dim3(256) : dim3(32, v.warps), args, 0, 0));
                    }
                    if (v.panel || (splits > 1 && !v.cluster))
                        finish_f32<<<(unsigned)((len_y + 255) / 256), 256>>>(y, work, len_y, (int)splits, 1.0, 0.0,
                                                                              1);
                };
                CHECK(cudaMemset(y, 0xff, len_y * 4));  // NaN
                launch();
                CHECK(cudaDeviceSynchronize());
                std::vector<float> got(len_y);
                CHECK(cudaMemcpy(got.data(), y, len_y * 4, cudaMemcpyDeviceToHost));
                double num = 0, den = 0;
                for (long long i = 0; i < len_y; ++i) {
                    const double d = (double)got[i] - ref[i];
                    num += d * d, den += (double)ref[i] * ref[i];
                }
                const double rel = std::sqrt(num / den);
                const double s = time_calls(launch, calls);
                printf("%-22s %9.1f %7.3f   %lld x %lld, chunk %lld; rel diff %.1e%s\n", v.name, s * 1e6, cub[t] / s, gx,
                       splits, chunk, rel, (rel < 1e-5) ? "" : "  WRONG");
            }
        }
        // The floor.
        const long long n4 = bytes / 16;
        struct R {
            std::string name;
            std::function<void()> f;
        };
        std::vector<R> reads;
        for (int ps : {2}) {
            const int g = sms * ps, t = 2048 / ps;
            reads.push_back({"stride x4 " + std::to_string(t) + "x" + std::to_string(ps),
                             [=] { read_stride<4, false><<<g, t>>>((const float4*)A, n4, out); }});
            reads.push_back({"stride x4 L2::256B " + std::to_string(t) + "x" + std::to_string(ps),
                             [=] { read_stride<4, true><<<g, t>>>((const float4*)A, n4, out); }});
            reads.push_back({"stride x8 L2::256B " + std::to_string(t) + "x" + std::to_string(ps),
                             [=] { read_stride<8, true><<<g, t>>>((const float4*)A, n4, out); }});
        }
        reads.push_back({"T pattern ur4", [=] { read_t<4><<<(unsigned)((n + 7) / 8), 256>>>(A, m, n, out); }});
        reads.push_back({"T pattern ur8", [=] { read_t<8><<<(unsigned)((n + 7) / 8), 256>>>(A, m, n, out); }});
        CHECK(cudaFuncSetAttribute(read_bulk<8, 16384>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 16384));
        CHECK(cudaFuncSetAttribute(read_bulk<16, 8192>, cudaFuncAttributeMaxDynamicSharedMemorySize, 16 * 8192));
        CHECK(cudaFuncSetAttribute(read_bulk<4, 16384>, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 * 16384));
        CHECK(cudaFuncSetAttribute(read_bulk<6, 32768>, cudaFuncAttributeMaxDynamicSharedMemorySize, 6 * 32768));
        reads.push_back({"bulk 8 x 16K, 1/SM", [=] { read_bulk<8, 16384><<<sms, 256, 8 * 16384>>>((const char*)A, bytes, out); }});
        reads.push_back({"bulk 16 x 8K, 1/SM", [=] { read_bulk<16, 8192><<<sms, 256, 16 * 8192>>>((const char*)A, bytes, out); }});
        reads.push_back({"bulk 6 x 32K, 1/SM", [=] { read_bulk<6, 32768><<<sms, 256, 6 * 32768>>>((const char*)A, bytes, out); }});
        reads.push_back({"bulk 4 x 16K, 3/SM", [=] { read_bulk<4, 16384><<<3 * sms, 256, 4 * 16384>>>((const char*)A, bytes, out); }});
        printf("%-22s %9s %7s   %s\n", "read only", "us", "GB/s", "vs cuBLAS N / T");
        for (const R& r : reads) {
            const double s = time_calls(r.f, calls);
            printf("%-22s %9.1f %7.0f   %.3f / %.3f\n", r.name.c_str(), s * 1e6, bytes / s / 1e9, cub[0] / s, cub[1] / s);
        }
        CHECK(cudaFree(A));
        CHECK(cudaFree(x));
        CHECK(cudaFree(y));
        CHECK(cudaFree(yref));
        CHECK(cudaFree(work));
        CHECK(cudaFree(out));
    }
    cublasDestroy(h);
    return 0;
}
