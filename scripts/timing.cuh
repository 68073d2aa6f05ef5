#pragma once
// scripts/timing.cuh: error checks and the batch timing shared by the nvcc probes in scripts/
// (read_bw.cu, gemv_probe.cu), which time kernels the way `cudrv bench gemv` does.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
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
