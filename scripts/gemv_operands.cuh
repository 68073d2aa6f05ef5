#pragma once
// scripts/gemv_operands.cuh: the operands of the N GEMV probes (gemv_strips.cu, gemv_nsplit.cu):
// A (m x n, lda = m) and x drawn at random, y, cuBLAS's y (cublasGemmEx with one column, as
// `cudrv bench gemv` measures the 16-bit types and f64) and the check of a variant's y against it.
#include <cmath>
#include <vector>
#include <cublas_v2.h>

#include "timing.cuh"

template <typename T> struct CublasType;
template <> struct CublasType<__half> { static constexpr cudaDataType cuda = CUDA_R_16F; };
template <> struct CublasType<__nv_bfloat16> { static constexpr cudaDataType cuda = CUDA_R_16BF; };
template <> struct CublasType<float> { static constexpr cudaDataType cuda = CUDA_R_32F; };
template <> struct CublasType<double> { static constexpr cudaDataType cuda = CUDA_R_64F; };

template <typename T>
struct NOperands {
    long long m, n;
    T *a, *x, *y, *yr;
    std::vector<T> ref;

    NOperands(long long m_, long long n_, unsigned seed) : m(m_), n(n_), ref(m_) {
        std::vector<T> ha(m * n), hx(n);
        srand(seed);
        for (auto& v : ha) v = T((rand() % 2001 - 1000) / 1000.f);
        for (auto& v : hx) v = T((rand() % 2001 - 1000) / 1000.f);
        CHECK(cudaMalloc(&a, m * n * sizeof(T)));
        CHECK(cudaMalloc(&x, n * sizeof(T)));
        CHECK(cudaMalloc(&y, m * sizeof(T)));
        CHECK(cudaMalloc(&yr, m * sizeof(T)));
        CHECK(cudaMemcpy(a, ha.data(), m * n * sizeof(T), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    }
    ~NOperands() { cudaFree(a), cudaFree(x), cudaFree(y), cudaFree(yr); }

    // yr = A x by cuBLAS.
    void cublas(cublasHandle_t h) const {
        const double one = 1.0, zero = 0.0;
        const float onef = 1.f, zerof = 0.f;
        const bool f64 = sizeof(T) == 8;
        const cudaDataType t = CublasType<T>::cuda;
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, 1, (int)n, f64 ? (const void*)&one : (const void*)&onef, a, t,
                     (int)m, x, t, (int)n, f64 ? (const void*)&zero : (const void*)&zerof, yr, t, (int)m,
                     f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    // Keeps cuBLAS's y as the reference, and poisons y.
    void keep_reference() {
        CHECK(cudaMemcpy(ref.data(), yr, m * sizeof(T), cudaMemcpyDeviceToHost));
        CHECK(cudaMemset(y, 0xff, m * sizeof(T)));
    }
    // Rows of y that differ from the reference beyond the 16-bit bound.
    long long mismatches() const {
        std::vector<T> got(m);
        CHECK(cudaMemcpy(got.data(), y, m * sizeof(T), cudaMemcpyDeviceToHost));
        long long bad = 0;
        for (long long i = 0; i < m; ++i) {
            const float want = (float)ref[i], d = fabsf((float)got[i] - want);
            if (!(d <= 2e-2f * (1.f + fabsf(want)) * sqrtf((float)n) / 8.f)) ++bad;
        }
        return bad;
    }
};

// The probes' main: `RUN<T>(cublas handle, m, n, SMs)` for each shape and type of the command line
// (`for_each_shape`).
#define GEMV_PROBE_MAIN(RUN)                                                                            \
    int main(int argc, char** argv) {                                                                  \
        const int sms = print_device();                                                                \
        cublasHandle_t h;                                                                              \
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;                                       \
        return for_each_shape(argc, argv, "f16,bf16,f32,f64", [&](const std::string& t, long long m,   \
                                                                  long long n) {                       \
            with_type(t, [&](auto v) { RUN<decltype(v)>(h, m, n, sms); });                             \
        });                                                                                            \
    }
