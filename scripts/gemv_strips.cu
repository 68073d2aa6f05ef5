// GEMV N (y = A x, A column-major m x n, lda = m) in row strips: the library's strip kernel
// (gemv_nr in ptx/gemv_common.cuh) at each lane width, plain and with each strip's columns
// split over the C = 2 or 4 blocks of a thread block cluster, against cuBLAS (cublasGemmEx with
// one column, as `cudrv bench gemv` measures the 16-bit types and f64) and against a plain read
// of the same bytes. Timing as in `cudrv bench gemv`: back-to-back calls between events,
// batches of about 2 ms, median of 9.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -Iscripts -o gemv_strips scripts/gemv_strips.cu -lcublas
//   ./gemv_strips [--types=f16,bf16,f32,f64] 8192x8192 6144x6144 4096x11008
//
// Prints per type and shape the microseconds, GB/s and cuBLAS time / variant time of each
// variant, and how many of its clusters the driver can keep resident at once
// (cudaOccupancyMaxActiveClusters); every variant's y is checked against cuBLAS's.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include "gemv_common.cuh"
#include "gemv_operands.cuh"
#include "timing.cuh"

// The library's strips (gemv_nr in ptx/gemv_common.cuh) with C blocks per cluster.
#define NRS(NAME, T, LB, W, C, MINB)                                                                     \
    extern "C" __global__ void __cluster_dims__(1, C, 1) __launch_bounds__(32 * W, MINB) NAME(GemvParams p) { \
        gemv_nr<T, LB, W, C>(p);                                                                         \
    }
#define NRS_ALL(T, N)                        \
    NRS(N##_l4_w16_c1, T, 4, 16, 1, 1)       \
    NRS(N##_l4_w16_c2, T, 4, 16, 2, 1)       \
    NRS(N##_l4_w16_c4, T, 4, 16, 4, 1)       \
    NRS(N##_l8_w16_c1, T, 8, 16, 1, 1)       \
    NRS(N##_l8_w16_c2, T, 8, 16, 2, 1)       \
    NRS(N##_l8_w16_c4, T, 8, 16, 4, 1)       \
    NRS(N##_l16_w16_c1, T, 16, 16, 1, 1)     \
    NRS(N##_l16_w16_c2, T, 16, 16, 2, 1)     \
    NRS(N##_l16_w16_c4, T, 16, 16, 4, 1)
NRS_ALL(__half, h)
NRS_ALL(__nv_bfloat16, b)
NRS_ALL(float, f)
NRS(d_l8_w16_c1, double, 8, 16, 1, 1)
NRS(d_l8_w16_c2, double, 8, 16, 2, 1)
NRS(d_l8_w16_c4, double, 8, 16, 4, 1)
NRS(d_l16_w16_c1, double, 16, 16, 1, 1)
NRS(d_l16_w16_c2, double, 16, 16, 2, 1)
NRS(d_l16_w16_c4, double, 16, 16, 4, 1)

__global__ void __launch_bounds__(256) read_cs(const uint4* __restrict__ a, long long n4, float* out) {
    float s = 0.f;
    for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n4; i += (long long)gridDim.x * 256) {
        const uint4 v = __ldcs(a + i);
        s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
    }
    if (s == 12345.678f) out[blockIdx.x] = s;
}

struct V {
    int lb, c;
    const void* fn;
};
template <typename T> struct Ty;
#define TY(T, NAME, P)                                                                             \
    template <> struct Ty<T> {                                                                     \
        static constexpr const char* name = NAME;                                                  \
        static std::vector<V> variants() {                                                         \
            return {{4, 1, (void*)P##_l4_w16_c1},  {4, 2, (void*)P##_l4_w16_c2},                   \
                    {4, 4, (void*)P##_l4_w16_c4},  {8, 1, (void*)P##_l8_w16_c1},                   \
                    {8, 2, (void*)P##_l8_w16_c2},  {8, 4, (void*)P##_l8_w16_c4},                   \
                    {16, 1, (void*)P##_l16_w16_c1}, {16, 2, (void*)P##_l16_w16_c2},                \
                    {16, 4, (void*)P##_l16_w16_c4}};                                               \
        }                                                                                          \
    };
TY(__half, "f16", h)
TY(__nv_bfloat16, "bf16", b)
TY(float, "f32", f)
template <> struct Ty<double> {
    static constexpr const char* name = "f64";
    static std::vector<V> variants() {
        return {{8, 1, (void*)d_l8_w16_c1},  {8, 2, (void*)d_l8_w16_c2},  {8, 4, (void*)d_l8_w16_c4},
                {16, 1, (void*)d_l16_w16_c1}, {16, 2, (void*)d_l16_w16_c2}, {16, 4, (void*)d_l16_w16_c4}};
    }
};

template <typename T>
static void run(cublasHandle_t hd, long long m, long long n, int sms) {
    const long long lda = m;
    NOperands<T> o(m, n, 7);
    T *a = o.a, *x = o.x, *y = o.y;
    float* out;
    CHECK(cudaMalloc(&out, 1 << 20));
    const double bytes = (double)m * n * sizeof(T);
    const int calls = std::max(1, (int)(2e-3 / (bytes / 3.5e12)));
    const double tc = time_calls([&] { o.cublas(hd); }, calls);
    o.keep_reference();
    const double tr =
        time_calls([&] { read_cs<<<4 * sms, 256>>>((const uint4*)a, (long long)(bytes / 16), out); }, calls);
    printf("%s %lldx%lld: cuBLAS %.2f us (%.0f GB/s), read %.2f us (%.0f GB/s)\n", Ty<T>::name, m, n, tc * 1e6,
           bytes / tc * 1e-9, tr * 1e6, bytes / tr * 1e-9);
    for (auto& v : Ty<T>::variants()) {
        if (v.lb < (int)sizeof(T)) continue;
        GemvParams p{};
        p.a = (unsigned long long)a, p.x = (unsigned long long)x, p.y = (unsigned long long)y;
        p.m = m, p.n = n, p.lda = lda, p.incx = 1, p.incy = 1, p.alpha = 1.0, p.beta = 0.0, p.splits = 1;
        const long long rows = 32LL * v.lb / (long long)sizeof(T);
        const dim3 grid((unsigned)((m + rows - 1) / rows), v.c), block(32, 16);
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = grid, cfg.blockDim = block;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = 1, attr.val.clusterDim.y = v.c, attr.val.clusterDim.z = 1;
        cfg.attrs = &attr, cfg.numAttrs = 1;
        int fit = 0;
        CHECK(cudaOccupancyMaxActiveClusters(&fit, v.fn, &cfg));
        void* args[] = {&p};
        auto go = [&] { CHECK(cudaLaunchKernel(v.fn, grid, block, args, 0, 0)); };
        CHECK(cudaMemset(y, 0xff, m * sizeof(T)));
        go();
        CHECK(cudaDeviceSynchronize());
        const long long bad = o.mismatches();
        const double t = time_calls(go, calls);
        printf("  l%-2d c%d  %4u clusters (%3d fit)  %8.2f us  %5.0f GB/s  %.3fx cuBLAS%s\n", v.lb, v.c, grid.x, fit,
               t * 1e6, bytes / t * 1e-9, tc / t, bad ? "  MISMATCH" : "");
        if (bad) printf("    %lld rows differ\n", bad);
    }
    cudaFree(out);
}

GEMV_PROBE_MAIN(run)
