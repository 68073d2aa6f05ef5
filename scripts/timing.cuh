#pragma once
// scripts/timing.cuh: error checks and the batch timing shared by the nvcc probes in scripts/
// (read_bw.cu, gemv_probe.cu), which time kernels the way `cudrv bench gemv` does.
#include <algorithm>
#include <string>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

// Median over `trials` batches of `calls` back-to-back launches (after 3 warm-up calls),
// seconds per call; each batch is timed with events on the default stream.
template <typename F>
static double time_calls(F launch, int calls, int trials = 9) {
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; ++w) launch();
    std::vector<double> t;
    for (int r = 0; r < trials; ++r) {
        CHECK(cudaEventRecord(e0));
        for (int c = 0; c < calls; ++c) launch();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e-3 / calls);
    }
    CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    return t[t.size() / 2];
}

// Prints the device's name, SM count and L2 size; returns the SM count.
static int print_device() {
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);
    return sms;
}

// The command line's numbers, or `fallback` when there are none.
static std::vector<long long> numbers_or(int argc, char** argv, std::vector<long long> fallback) {
    std::vector<long long> v;
    for (int i = 1; i < argc; ++i) v.push_back(atoll(argv[i]));
    return v.empty() ? fallback : v;
}

// For each `MxN` argument and each type of `--types=a,b` (default `types`), in that order,
// `run(type, m, n)`; returns 2 on an argument that is neither, else 0.
template <typename F>
static int for_each_shape(int argc, char** argv, std::string types, F run) {
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if (s.rfind("--types=", 0) == 0) {
            types = s.substr(8);
            continue;
        }
        long long m, n;
        if (sscanf(s.c_str(), "%lldx%lld", &m, &n) != 2) return 2;
        for (size_t b = 0; b < types.size();) {
            const size_t e = std::min(types.find(',', b), types.size());
            run(types.substr(b, e - b), m, n);
            b = e + 1;
        }
    }
    return 0;
}

// `f(T{})` with T the type named `t` (f16, bf16, f32 or f64); nothing for another name.
template <typename F>
static void with_type(const std::string& t, F f) {
    if (t == "f16") f(__half{});
    if (t == "bf16") f(__nv_bfloat16{});
    if (t == "f32") f(float{});
    if (t == "f64") f(double{});
}
