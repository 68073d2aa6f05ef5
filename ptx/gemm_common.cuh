#pragma once
// ptx/gemm_common.cuh: what every GEMM module shares with the Rust side (src/blas/gemm.rs): the
// parameter block, passed by value, and the epilogue's activation codes.

struct GemmParams {
    unsigned long long x, y, d, bias;
    long long m, n, k;
    long long ldx, ldy, ldd;
    long long sx, sy, sd;
    double alpha, beta;
    int act;
    int batch;
};

enum : int { ACT_NONE = 0, ACT_RELU = 1, ACT_GELU = 2, ACT_SIGMOID = 3, ACT_TANH = 4 };

__device__ __forceinline__ float activate(float v, int act) {
    switch (act) {
    case ACT_RELU: return v < 0.f ? 0.f : v;
    case ACT_GELU: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    case ACT_SIGMOID: return 1.f / (1.f + expf(-v));
    case ACT_TANH: return tanhf(v);
    default: return v;
    }
}

__device__ __forceinline__ double activate(double v, int act) {
    switch (act) {
    case ACT_RELU: return v < 0.0 ? 0.0 : v;
    case ACT_GELU: return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case ACT_TANH: return tanh(v);
    default: return v;
    }
}
