#pragma once
// ptx/cluster.cuh: thread block clusters (sm_90 and later), for the modules compiled for
// compute_90: a block's rank in its cluster, a barrier over the whole cluster, and 64-bit
// stores and 32/64-bit loads in another block's shared memory (distributed shared memory).

// The block's rank in its cluster, a barrier over every thread of the cluster (release /
// acquire: shared-memory writes before it, to any block of the cluster, are visible after it),
// and accesses to the shared memory of another block of the cluster (`addr` a shared-memory
// offset in this block's window, mapped to block `rank`'s).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
// `addr` in block `rank`'s shared-memory window.
__device__ __forceinline__ unsigned cluster_map(unsigned addr, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
    return remote;
}
__device__ __forceinline__ void cluster_store_f64x2(unsigned addr, unsigned rank, double a, double b) {
    asm volatile("st.shared::cluster.v2.f64 [%0], {%1, %2};\n" ::"r"(cluster_map(addr, rank)), "d"(a), "d"(b)
                 : "memory");
}
__device__ __forceinline__ float cluster_load(unsigned addr, unsigned rank, float) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(cluster_map(addr, rank)) : "memory");
    return v;
}
__device__ __forceinline__ double cluster_load(unsigned addr, unsigned rank, double) {
    double v;
    asm volatile("ld.shared::cluster.f64 %0, [%1];\n" : "=d"(v) : "r"(cluster_map(addr, rank)) : "memory");
    return v;
}
