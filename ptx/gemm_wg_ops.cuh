#pragma once
// ptx/gemm_wg_ops.cuh: the Hopper instructions the wgmma GEMM kernels (ptx/gemm_wg.cuh) are
// built from: the tensor map and split parameters, wgmma (both operands from shared memory, or
// A from registers for tf32) with its fences and matrix descriptors, mbarriers, TMA loads and
// stores with their bulk groups, and the per-type pieces (`Wg<T>`).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm_common.cuh"

// CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

// The k split of the 128 x 64 and 128 x 128 kernels (`split_rule` below): `parts` blocks share
// each output tile, part s summing k-tiles [s * kper, min((s + 1) * kper, ktiles)). parts == 1:
// no split (ws and counters unused).
struct WgSplit {
    unsigned long long ws;        // parts f32 partial tiles per output tile (128 x BN floats each)
    unsigned long long counters;  // two u32 arrival counters per output tile, zero at launch
    int parts, kper;
};

#define WG_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_D16(i) WG_D4(i), WG_D4(i + 4), WG_D4(i + 8), WG_D4(i + 12)
#define WG_D32(i) WG_D16(i), WG_D16(i + 16)
#define WG_D64(i) WG_D32(i), WG_D32(i + 32)
#define WG_D128(i) WG_D64(i), WG_D64(i + 64)
#define WG_D96(i) WG_D64(i), WG_D32(i + 64)
#define WG_D48(i) WG_D32(i), WG_D16(i + 32)

// The accumulator register lists of the wgmma instructions (64 x N f32 over 128 threads: N / 2
// registers per thread).
#define WG_REGS32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_REGS64 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "\
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_REGS128 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "\
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "\
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "\
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "\
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "\
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

#define WG_REGS96 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"

#define WG_REGS48 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}"

// wgmma with both operands in shared memory (descriptors da, db): D += A * B when `scale` is
// nonzero, D = A * B otherwise. For the 16-bit types TA / TB select the m- / n-contiguous
// (transposed) reading of an operand; tf32 reads both k-contiguous.
#define WG_MMA_16BIT(NAME, TY, N, NACC, REGS, DOPS, TAIL, SCALE)                                        \
    template <int TA, int TB>                                                                           \
    __device__ __forceinline__ void NAME(float(&d)[NACC], unsigned long long da, unsigned long long db, \
                                         int scale) {                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " REGS ", " TAIL ";\n}\n" \
                     : DOPS                                                                             \
                     : "l"(da), "l"(db), "r"(scale), "n"(TA), "n"(TB));                                 \
    }
#define WG_MMA_TF32(NAME, N, NACC, REGS, DOPS, TAIL, SCALE)                                              \
    __device__ __forceinline__ void NAME(float(&d)[NACC], unsigned long long da, unsigned long long db, \
                                         int scale) {                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " REGS ", " TAIL ";\n}\n"     \
                     : DOPS                                                                             \
                     : "l"(da), "l"(db), "r"(scale));                                                   \
    }

WG_MMA_16BIT(wgmma_f16_n256, "f16", 256, 128, WG_REGS128, WG_D128(0), "%128, %129, p, 1, 1, %131, %132", "%130")
WG_MMA_16BIT(wgmma_bf16_n256, "bf16", 256, 128, WG_REGS128, WG_D128(0), "%128, %129, p, 1, 1, %131, %132", "%130")
WG_MMA_16BIT(wgmma_f16_n192, "f16", 192, 96, WG_REGS96, WG_D96(0), "%96, %97, p, 1, 1, %99, %100", "%98")
WG_MMA_16BIT(wgmma_bf16_n192, "bf16", 192, 96, WG_REGS96, WG_D96(0), "%96, %97, p, 1, 1, %99, %100", "%98")
WG_MMA_16BIT(wgmma_f16_n128, "f16", 128, 64, WG_REGS64, WG_D64(0), "%64, %65, p, 1, 1, %67, %68", "%66")
WG_MMA_16BIT(wgmma_bf16_n128, "bf16", 128, 64, WG_REGS64, WG_D64(0), "%64, %65, p, 1, 1, %67, %68", "%66")
WG_MMA_16BIT(wgmma_f16_n96, "f16", 96, 48, WG_REGS48, WG_D48(0), "%48, %49, p, 1, 1, %51, %52", "%50")
WG_MMA_16BIT(wgmma_bf16_n96, "bf16", 96, 48, WG_REGS48, WG_D48(0), "%48, %49, p, 1, 1, %51, %52", "%50")
WG_MMA_16BIT(wgmma_f16_n64, "f16", 64, 32, WG_REGS32, WG_D32(0), "%32, %33, p, 1, 1, %35, %36", "%34")
WG_MMA_16BIT(wgmma_bf16_n64, "bf16", 64, 32, WG_REGS32, WG_D32(0), "%32, %33, p, 1, 1, %35, %36", "%34")
WG_MMA_TF32(wgmma_tf32_n256, 256, 128, WG_REGS128, WG_D128(0), "%128, %129, p, 1, 1", "%130")
WG_MMA_TF32(wgmma_tf32_n192, 192, 96, WG_REGS96, WG_D96(0), "%96, %97, p, 1, 1", "%98")
WG_MMA_TF32(wgmma_tf32_n128, 128, 64, WG_REGS64, WG_D64(0), "%64, %65, p, 1, 1", "%66")
WG_MMA_TF32(wgmma_tf32_n96, 96, 48, WG_REGS48, WG_D48(0), "%48, %49, p, 1, 1", "%50")
WG_MMA_TF32(wgmma_tf32_n64, 64, 32, WG_REGS32, WG_D32(0), "%32, %33, p, 1, 1", "%34")

// tf32 wgmma with the A operand (64 x 8) in registers: four tf32 values per thread, a0 (row
// lane / 4, k lane % 4), a1 (row + 8, k), a2 (row, k + 4), a3 (row + 8, k + 4) within the warp's
// 16 rows; B from shared memory (k-contiguous).
#define WG_MMA_TF32_RS(NAME, N, NACC, REGS, DOPS, TAIL, SCALE)                                           \
    __device__ __forceinline__ void NAME(float(&d)[NACC], unsigned a0, unsigned a1, unsigned a2, unsigned a3, \
                                         unsigned long long db, int scale) {                              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                 \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " REGS ", " TAIL ";\n}\n"      \
                     : DOPS                                                                              \
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale));                         \
    }
WG_MMA_TF32_RS(wgmma_tf32_rs_n256, 256, 128, WG_REGS128, WG_D128(0), "{%128, %129, %130, %131}, %132, p, 1, 1", "%133")
WG_MMA_TF32_RS(wgmma_tf32_rs_n192, 192, 96, WG_REGS96, WG_D96(0), "{%96, %97, %98, %99}, %100, p, 1, 1", "%101")
WG_MMA_TF32_RS(wgmma_tf32_rs_n128, 128, 64, WG_REGS64, WG_D64(0), "{%64, %65, %66, %67}, %68, p, 1, 1", "%69")
WG_MMA_TF32_RS(wgmma_tf32_rs_n96, 96, 48, WG_REGS48, WG_D48(0), "{%48, %49, %50, %51}, %52, p, 1, 1", "%53")
WG_MMA_TF32_RS(wgmma_tf32_rs_n64, 64, 32, WG_REGS32, WG_D32(0), "{%32, %33, %34, %35}, %36, p, 1, 1", "%37")

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 4-byte shared-memory loads (volatile: they stay after the mbarrier wait that guards them): an
// f32, and the raw bits of one (the register-A tf32 operand: wgmma reads a .tf32 register as
// the descriptor-fed operands, from its top 19 bits, so the kernels fed both ways truncate alike).
__device__ __forceinline__ float lds_f32(unsigned addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ unsigned lds_b32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from reading the accumulators before the last wgmma.wait_group (inside the
// pipeline such a fence would count as a write and serialise the wgmma instructions).
template <int N> __device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Matrix descriptor: start address, leading / stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// One TMA box of a 3-D map into shared memory at dst, completing on mbarrier bar.
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
                 "[%5];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

// One TMA box of a 3-D map into shared memory at dst of every block of the cluster in `mask`
// (bit r: the block of rank r), each completing on its own mbarrier at offset bar: the same
// shared-memory offsets in every destination block (the wgmma pairs, ptx/gemm_wg.cuh).
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1,
                                                   int c2, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
                 : "memory");
}
// An arrival on the mbarrier at offset `bar` of the cluster's block `rank`, with the arrive's
// default semantics (release at CTA scope). What it orders is the arriving warp's wgmma reads of
// a stage (completed by its wgmma.wait_group) before the other block's TMA writes into it: the
// same hand-off as a local arrival. Release at cluster scope (`.release.cluster`, with the
// producer's wait at acquire.cluster) measured 2.1x slower on the H200 (f16 4096^3 on 128 x 128
// pairs: 464 against 219 us alone), every k-tile waiting on the fence.
__device__ __forceinline__ void mbar_arrive_in(unsigned bar, unsigned rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_map(bar, rank)) : "memory");
}
// One TMA box from shared memory at src into a 3-D map at coordinates (c0, c1, c2), as a bulk
// async-group store (the TMA clips the box at the map's bounds).
__device__ __forceinline__ void tma_store(const TensorMap* map, unsigned src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N bulk groups are still reading their shared-memory source.
template <int N> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until every bulk group has completed.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// A 4-byte cp.async (zero-filled when `ok` is false, reading nothing), and the arrive-on of the
// mbarrier at `bar` that fires once this thread's earlier cp.asyncs have landed (.noinc: it is
// one of the arrivals the barrier was initialised with).
__device__ __forceinline__ void cp_async4_zfill(unsigned dst, const float* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Makes this thread's shared-memory writes visible to the TMA (the async proxy).
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void named_bar(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

// Per-type pieces: the k step of one wgmma, conversions, and the wgmma for a tile width N
// (the accumulator array holds N / 2 floats).
template <typename T> struct Wg;
template <> struct Wg<__half> {
    enum { KSTEP = 16 };
    static __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
    template <int TA, int TB, int NACC>
    static __device__ __forceinline__ void mma(float (&d)[NACC], unsigned long long a, unsigned long long b, int scale) {
        if constexpr (NACC == 128) wgmma_f16_n256<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 96) wgmma_f16_n192<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 64) wgmma_f16_n128<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 48) wgmma_f16_n96<TA, TB>(d, a, b, scale);
        else wgmma_f16_n64<TA, TB>(d, a, b, scale);
    }
};
template <> struct Wg<__nv_bfloat16> {
    enum { KSTEP = 16 };
    static __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
    template <int TA, int TB, int NACC>
    static __device__ __forceinline__ void mma(float (&d)[NACC], unsigned long long a, unsigned long long b, int scale) {
        if constexpr (NACC == 128) wgmma_bf16_n256<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 96) wgmma_bf16_n192<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 64) wgmma_bf16_n128<TA, TB>(d, a, b, scale);
        else if constexpr (NACC == 48) wgmma_bf16_n96<TA, TB>(d, a, b, scale);
        else wgmma_bf16_n64<TA, TB>(d, a, b, scale);
    }
};
template <> struct Wg<float> {
    enum { KSTEP = 8 };
    static __device__ __forceinline__ float to_f(float v) { return v; }
    static __device__ __forceinline__ float from_f(float v) { return v; }
    template <int TA, int TB, int NACC>
    static __device__ __forceinline__ void mma(float (&d)[NACC], unsigned long long a, unsigned long long b, int scale) {
        if constexpr (NACC == 128) wgmma_tf32_n256(d, a, b, scale);
        else if constexpr (NACC == 96) wgmma_tf32_n192(d, a, b, scale);
        else if constexpr (NACC == 64) wgmma_tf32_n128(d, a, b, scale);
        else if constexpr (NACC == 48) wgmma_tf32_n96(d, a, b, scale);
        else wgmma_tf32_n64(d, a, b, scale);
    }
    template <int NACC>
    static __device__ __forceinline__ void mma_rs(float (&d)[NACC], const unsigned* a, unsigned long long b, int scale) {
        if constexpr (NACC == 128) wgmma_tf32_rs_n256(d, a[0], a[1], a[2], a[3], b, scale);
        else if constexpr (NACC == 96) wgmma_tf32_rs_n192(d, a[0], a[1], a[2], a[3], b, scale);
        else if constexpr (NACC == 64) wgmma_tf32_rs_n128(d, a[0], a[1], a[2], a[3], b, scale);
        else if constexpr (NACC == 48) wgmma_tf32_rs_n96(d, a[0], a[1], a[2], a[3], b, scale);
        else wgmma_tf32_rs_n64(d, a[0], a[1], a[2], a[3], b, scale);
    }
};

// The tile a block works on: batch entry bz, first row m0 and column n0 of D. Tiles are numbered
// batch-major; within a batch entry they are rasterised in groups of 8 row-tiles that share
// their column tiles in L2.
struct TileCoord {
    int bz, m0, n0;
};
template <int BM, int BN>
__device__ __forceinline__ TileCoord tile_coord(int t, int tiles_m, int tiles_n) {
    const int per_batch = tiles_m * tiles_n;
    const int bz = t / per_batch, tile = t % per_batch;
    const TileRC rc = raster_tile(tile, tiles_m, tiles_n);
    const int tm = rc.m, tn = rc.n;
    return TileCoord{bz, tm * BM, tn * BN};
}

// A position in a ring of STAGES shared-memory stages: the stage and the parity of its
// barriers' current phase, carried from k-tile to k-tile by the producer and by each consumer
// (both walk the same k-tiles, so their positions agree). Derived from a running k-tile count
// instead (`it % STAGES`, `it / STAGES` with STAGES = 6), the division sat in the consumer's
// issue chain between wgmma groups (docs/kernels/gemm-wgmma.md, the SASS of 2026-12-02).
template <int STAGES>
struct RingPos {
    int s = 0;
    unsigned ph = 0;
    __device__ __forceinline__ void next() {
        if (++s == STAGES) {
            s = 0;
            ph ^= 1u;
        }
    }
    // The stage n <= STAGES k-tiles back.
    __device__ __forceinline__ int back(int n) const { return s >= n ? s - n : s + STAGES - n; }
};
