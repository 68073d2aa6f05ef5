// Kernels whose speed depends on the block size: the autotuner's fixtures (tests/gpu_tune.rs,
// `cudrv bench tune`). tests/data/tune_fixtures.ptx is this file compiled by NVRTC 12.0 for
// compute_80 (scripts/tune-fixtures.sh).

// Sum of x into *out: each block reduces its blockDim.x elements (warp shuffles, then one warp
// over the warps' sums) and adds one atomic. Small blocks: many atomics on one address.
extern "C" __global__ void tune_block_sum(const float* x, float* out, unsigned long long n) {
    __shared__ float warp_sums[32];
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) atomicAdd(out, v);
    }
}

// y[i] = sum over |j| <= 32 of x[i + j] / 65 (zero outside), through a shared tile of
// blockDim.x + 64 floats (dynamic shared memory, 4 * (blockDim.x + 64) bytes). Small blocks
// read more halo per output.
extern "C" __global__ void tune_stencil(const float* x, float* y, unsigned long long n) {
    extern __shared__ float tile[];
    const long long R = 32;
    long long base = (long long)blockIdx.x * blockDim.x;
    for (long long t = threadIdx.x; t < (long long)blockDim.x + 2 * R; t += blockDim.x) {
        long long g = base + t - R;
        tile[t] = (g >= 0 && g < (long long)n) ? x[g] : 0.0f;
    }
    __syncthreads();
    long long i = base + threadIdx.x;
    if (i < (long long)n) {
        float acc = 0.0f;
        for (int j = 0; j <= 2 * R; ++j) acc += tile[threadIdx.x + j];
        y[i] = acc * (1.0f / 65.0f);
    }
}

// y[i] = a register-heavy polynomial chain of x[i], grid-stride (launched to fill the device):
// the registers per thread bound the blocks per SM, so occupancy and the tail move with the
// block size.
extern "C" __global__ void tune_poly(const float* x, float* y, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        float acc[64];
#pragma unroll
        for (int k = 0; k < 64; ++k) acc[k] = v * (float)(k + 1) * 0.01f;
#pragma unroll 4
        for (int r = 0; r < 16; ++r) {
#pragma unroll
            for (int k = 0; k < 64; ++k) acc[k] = fmaf(acc[k], acc[(k + 29) % 64], 0.5f) * 0.5f;
        }
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 64; ++k) s += acc[k];
        y[i] = s;
    }
}
