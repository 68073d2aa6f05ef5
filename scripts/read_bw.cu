// Device read bandwidth: the fastest rate at which a kernel that reads a buffer once (and writes
// one float per block) gets through it, over launch shapes and load widths, timed like
// `cudrv bench gemv` (back-to-back batches of calls between events, median of the batches).
// It bounds what any GEMV that reads A once can reach at the same size.
//
//   nvcc -O3 -arch=sm_90 -o read_bw scripts/read_bw.cu && ./read_bw 64 144 256 1024
//
// Arguments: buffer sizes in MiB. Prints, per size, the best configuration's GB/s and time, and
// a device-to-device copy of the same size (read + write counted) for reference.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#include "readers.cuh"
#include "timing.cuh"

// Each block reads one contiguous chunk (n4 / gridDim.x float4s), UNROLL loads in flight.
template <int UNROLL>
__global__ void read_chunked(const float4* __restrict__ a, long long n4, float* out) {
    const long long per = (n4 + gridDim.x - 1) / gridDim.x;
    const long long lo = (long long)blockIdx.x * per;
    const long long hi = lo + per < n4 ? lo + per : n4;
    float s = 0.f;
    long long i = lo + threadIdx.x;
    for (; i + (UNROLL - 1) * (long long)blockDim.x < hi; i += UNROLL * (long long)blockDim.x) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(a + i + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    for (; i < hi; i += blockDim.x) {
        const float4 v = __ldcg(a + i);
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) out[blockIdx.x] = s;
}

typedef void (*ReadFn)(const float4*, long long, float*);

int main(int argc, char** argv) {
    const int sms = print_device();
    const std::vector<long long> mibs = numbers_or(argc, argv, {64, 144, 256, 1024});
    const long long max_bytes = *std::max_element(mibs.begin(), mibs.end()) << 20;
    float4 *a, *b;
    float* out;
    CHECK(cudaMalloc(&a, max_bytes));
    CHECK(cudaMalloc(&b, max_bytes));
    CHECK(cudaMalloc(&out, 1 << 20));
    CHECK(cudaMemset(a, 0x3c, max_bytes));  // floats of about 0.0115
    struct Kernel {
        const char* name;
        ReadFn fn;
    };
    const Kernel kernels[] = {{"stride x4", read_stride<4, false>},   {"stride x8", read_stride<8, false>},
                              {"stride x16", read_stride<16, false>}, {"chunk x4", read_chunked<4>},
                              {"chunk x8", read_chunked<8>},        {"chunk x16", read_chunked<16>}};
    const int threads[] = {256, 512, 1024};
    const int per_sm[] = {1, 2, 4, 8};
    printf("%8s %-11s %7s %7s %10s %9s | %10s %9s\n", "MiB", "best", "threads", "grid", "read GB/s", "us",
           "copy GB/s", "us");
    for (long long mib : mibs) {
        const long long bytes = mib << 20, n4 = bytes / 16;
        const int calls = std::max(3, (int)(2e-3 / (bytes / 3e12)));  // batches of about 2 ms
        double best = 1e30;
        const char* best_name = "";
        int best_t = 0, best_g = 0;
        for (const Kernel& k : kernels)
            for (int t : threads)
                for (int ps : per_sm) {
                    if (t * ps > 2048) continue;
                    const int grid = sms * ps;
                    const double s = time_calls([&] { k.fn<<<grid, t>>>(a, n4, out); }, calls, 9);
                    if (s < best) best = s, best_name = k.name, best_t = t, best_g = grid;
                }
        const double copy = time_calls([&] { CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); },
                                       std::max(5, calls / 2), 9);
        printf("%8lld %-11s %7d %7d %10.0f %9.1f | %10.0f %9.1f\n", mib, best_name, best_t, best_g, bytes / best / 1e9,
               best * 1e6, 2.0 * bytes / copy / 1e9, copy * 1e6);
    }
    return 0;
}
