// GEMV N (y = A x, A column-major m x n, lda = m) with the reduction split over the blocks of a
// thread block cluster: the library's N template (gemv_n in ptx/gemv_common.cuh) with its cluster
// size (4, 8, or 16 blocks, 16 being a non-portable size), warps per block and loads in flight
// varied, and the plain split that finishes in gemv_finish, against cuBLAS (cublasGemmEx with one
// column, as `cudrv bench gemv` measures it). 16-byte loads where m is a multiple of 16 bytes,
// the element-wise form otherwise. Timing as in `cudrv bench gemv`: back-to-back calls between
// events, batches of about 2 ms, median of 9.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -Iscripts -o gemv_nsplit scripts/gemv_nsplit.cu -lcublas
//   ./gemv_nsplit [--types=f16,bf16,f32,f64] 4096x4096 1023x1025
//
// Prints per type and shape each variant's microseconds and cuBLAS time / variant time; every
// variant's y is checked against cuBLAS's.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#include "gemv_common.cuh"
#include "gemv_operands.cuh"
#include "timing.cuh"

// V: 16-byte loads (VEC elements), UR row groups, UC columns per step, W warps, C blocks per cluster.
#define NS(NAME, T, VEC, UR, UC, W, C, MINB)                                                      \
    extern "C" __global__ void __launch_bounds__(32 * W, MINB) NAME(GemvParams p) {             \
        gemv_n<T, VEC, UR, UC, C, W>(p);                                                         \
    }
#define NS_TYPE(T, P, VEC, UR, UC)                                                               \
    NS(P##_v_c1, T, VEC, UR, UC, 8, 1, 4)                                                        \
    NS(P##_v_c4, T, VEC, UR, UC, 8, 4, 4)                                                        \
    NS(P##_v_c8, T, VEC, UR, UC, 8, 8, 4)                                                        \
    NS(P##_v_c8_uc2, T, VEC, UR, 2 * UC, 8, 8, 3)                                                \
    NS(P##_v_c8_w16, T, VEC, UR, UC, 16, 8, 2)                                                   \
    NS(P##_v_c16, T, VEC, UR, UC, 8, 16, 4)                                                      \
    NS(P##_e_c1, T, 1, 4, 4, 8, 1, 3)                                                            \
    NS(P##_e_c8, T, 1, 4, 4, 8, 8, 3)                                                            \
    NS(P##_e_c16, T, 1, 4, 4, 8, 16, 3)                                                          \
    NS(P##_e_c8_ur2, T, 1, 2, 4, 8, 8, 3)                                                        \
    NS(P##_e_c16_ur2, T, 1, 2, 4, 8, 16, 3)                                                      \
    NS(P##_e_c8_w16, T, 1, 4, 4, 16, 8, 2)                                                       \
    extern "C" __global__ void __launch_bounds__(256) P##_finish(T* y, const El<T>::Acc* work, long long len, \
                                                                int splits, double alpha, double beta,     \
                                                                long long incy) {                          \
        gemv_finish<T>(y, work, len, splits, alpha, beta, incy);                                   \
    }
NS_TYPE(__half, h, 8, 1, 4)
NS_TYPE(__nv_bfloat16, b, 8, 1, 4)
NS_TYPE(float, f, 4, 2, 4)
NS_TYPE(double, d, 2, 2, 2)

struct V {
    const char* name;
    bool vec;
    int rows, warps, cluster;
    const void* fn;
};
#define VARS(P, VROWS)                                                                   \
    {{"v c1 (split + finish)", true, VROWS, 8, 1, (void*)P##_v_c1},                            \
     {"v c4", true, VROWS, 8, 4, (void*)P##_v_c4},                                              \
     {"v c8 (library)", true, VROWS, 8, 8, (void*)P##_v_c8},                                    \
     {"v c8 uc x2", true, VROWS, 8, 8, (void*)P##_v_c8_uc2},                                    \
     {"v c8 16 warps", true, VROWS, 16, 8, (void*)P##_v_c8_w16},                                \
     {"v c16", true, VROWS, 8, 16, (void*)P##_v_c16},                                           \
     {"e c1 (split + finish)", false, 128, 8, 1, (void*)P##_e_c1},                              \
     {"e c8 (library)", false, 128, 8, 8, (void*)P##_e_c8},                                     \
     {"e c16", false, 128, 8, 16, (void*)P##_e_c16},                                            \
     {"e c8 64-row tiles", false, 64, 8, 8, (void*)P##_e_c8_ur2},                               \
     {"e c16 64-row tiles", false, 64, 8, 16, (void*)P##_e_c16_ur2},                            \
     {"e c8 16 warps", false, 128, 16, 8, (void*)P##_e_c8_w16}}

template <typename T> struct Ty;
#define TY(T, NAME, P, VROWS)                                                                     \
    template <> struct Ty<T> {                                                                    \
        static constexpr const char* name = NAME;                                                 \
        static std::vector<V> variants() { return VARS(P, VROWS); }                               \
        static const void* finish() { return (void*)P##_finish; }                                 \
    };
TY(__half, "f16", h, 256)
TY(__nv_bfloat16, "bf16", b, 256)
TY(float, "f32", f, 256)
TY(double, "f64", d, 128)

template <typename T>
static void run(cublasHandle_t hd, long long m, long long n, int sms) {
    const long long lda = m;
    const bool aligned = (m * (long long)sizeof(T)) % 16 == 0;
    NOperands<T> o(m, n, 11);
    T *a = o.a, *x = o.x, *y = o.y;
    void* work;
    CHECK(cudaMalloc(&work, 64 * m * 8));
    const double bytes = (double)m * n * sizeof(T);
    const int calls = std::max(20, (int)(2e-3 / (bytes / 3.0e12 + 4e-6)));
    auto cub = [&] { o.cublas(hd); };
    double tc = time_calls(cub, calls);
    o.keep_reference();
    printf("%s %lldx%lld (%s): cuBLAS %.2f us\n", Ty<T>::name, m, n, aligned ? "16-byte" : "element-wise", tc * 1e6);
    for (auto& v : Ty<T>::variants()) {
        if (v.vec != aligned) continue;
        GemvParams p{};
        p.a = (unsigned long long)a, p.x = (unsigned long long)x, p.y = (unsigned long long)y;
        p.work = (unsigned long long)work;
        p.m = m, p.n = n, p.lda = lda, p.incx = 1, p.incy = 1, p.alpha = 1.0, p.beta = 0.0;
        const unsigned tiles = (unsigned)((m + v.rows - 1) / v.rows);
        int splits = v.cluster;
        if (v.cluster == 1) {
            // The library's plan(): as many splits of at least 256 columns as fill the free slots.
            int per_sm = 0;
            CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, 32 * v.warps, 0));
            const long long slots = (long long)per_sm * sms;
            splits = (int)std::min<long long>(std::max<long long>(slots / tiles, 1), (n + 255) / 256);
            splits = std::min(splits, 64);
        }
        p.chunk = (n + splits - 1) / splits;
        p.splits = splits;
        const dim3 grid(tiles, splits), block(32, v.warps);
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = grid, cfg.blockDim = block;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = 1, attr.val.clusterDim.y = v.cluster, attr.val.clusterDim.z = 1;
        cfg.attrs = &attr, cfg.numAttrs = v.cluster > 1 ? 1 : 0;
        if (v.cluster > 8) CHECK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        int fit = 0;
        if (v.cluster > 1) CHECK(cudaOccupancyMaxActiveClusters(&fit, v.fn, &cfg));
        void* args[] = {&p};
        T* yp = y;
        const void* fin = Ty<T>::finish();
        long long len = m;
        int sp = splits;
        double al = 1.0, be = 0.0;
        long long inc = 1;
        void* fargs[] = {&yp, &work, &len, &sp, &al, &be, &inc};
        auto go = [&] {
            CHECK(cudaLaunchKernelExC(&cfg, v.fn, args));
            if (v.cluster == 1 && splits > 1)
                CHECK(cudaLaunchKernel(fin, dim3((unsigned)((m + 255) / 256)), dim3(256), fargs, 0, 0));
        };
        if (v.cluster == 1 && splits == 1) p.work = 0;
        CHECK(cudaMemset(y, 0xff, m * sizeof(T)));
        go();
        CHECK(cudaDeviceSynchronize());
        const long long bad = o.mismatches();
        const double t = time_calls(go, calls);
        printf("  %-24s %4u x %2d blocks (%3d clusters fit)  %8.2f us  %.3fx cuBLAS%s\n", v.name, tiles, splits, fit,
               t * 1e6, tc / t, bad ? "  MISMATCH" : "");
    }
    // cuBLAS again: its time moves from call batch to call batch at these sizes.
    tc = time_calls(cub, calls);
    printf("  cuBLAS again %.2f us\n", tc * 1e6);
    cudaFree(work);
}

GEMV_PROBE_MAIN(run)
