#pragma once
// scripts/readers.cuh: the grid-stride read-only kernel shared by the nvcc probes in scripts/
// (read_bw.cu, gemv_probe.cu): the floor any kernel that reads a buffer once is measured against.

// A 16-byte ld.global.cg with the L2::256B prefetch-size hint.
__device__ __forceinline__ float4 ld_cg_256(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}
// Grid-stride over float4s, UNROLL independent 16-byte loads (ld.global.cg; HINT: with
// L2::256B) in flight per thread; writes nothing (the sum is compared with a value it never takes).
template <int UNROLL, bool HINT>
__global__ void read_stride(const float4* __restrict__ a, long long n4, float* out) {
    float s = 0.f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = HINT ? ld_cg_256(a + i + u * stride) : __ldcg(a + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    for (; i < n4; i += stride) {
        const float4 v = __ldcg(a + i);
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) out[blockIdx.x] = s;
}
