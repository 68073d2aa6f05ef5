#pragma once
// ptx/gemm_wg_epilogue.cuh: the epilogue pieces of the wgmma GEMM kernels (ptx/gemm_wg.cuh):
// which TMA-epilogue copy runs for a call, parking accumulators in shared memory (row-major or
// transposed), 16-byte stores, staging into the TMA's swizzled boxes, and the activation of the
// TMA epilogue. The ordering rules (staging_rule, split_rule) are in ptx/gemm_wg.cuh.

#include "gemm_wg_ops.cuh"

// The TMA epilogue to run for a tile, called as `epilogue(LIN, FN)` (LIN: apply beta and the
// bias; FN: the activation inlined). A kernel of an activation module (ACT != ACT_NONE) holds
// one copy of the epilogue, with its activation inlined; the others one for plain C and one for
// beta / bias. Returns false when this kernel has no copy for the call's activation (the
// caller then takes the rolled epilogue).
template <int ACT, typename Epilogue>
__device__ __forceinline__ bool run_tma_epilogue(Epilogue& epilogue, int act, bool plain) {
    if constexpr (ACT != ACT_NONE) {
        if (act == ACT) {
            epilogue(true, ACT);
            return true;
        }
    } else if (act == ACT_NONE) {
        if (plain) {
            epilogue(false, ACT_NONE);
        } else {
            epilogue(true, ACT_NONE);
        }
        return true;
    }
    return false;
}

// Parks accumulator columns [q * COLS, (q + 1) * COLS) of a consumer's 64 rows in its chunk
// (row stride LD floats). Fragment layout: for each 8-column block j, a thread holds rows
// 16 * warp + lane / 4 (+ 8) and columns 8 j + 2 (lane % 4) (+ 1).
template <int COLS, int LD, int N>
__device__ __forceinline__ void park_chunk(float* chunk, const float (&d)[N], int q, int warp, int lane) {
    float* w0 = chunk + (16 * warp + lane / 4) * LD + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < COLS / 8; ++j) {
        const int a = 4 * (q * COLS / 8 + j);
        *reinterpret_cast<float2*>(w0 + 8 * j) = make_float2(d[a], d[a + 1]);
        *reinterpret_cast<float2*>(w0 + 8 * LD + 8 * j) = make_float2(d[a + 2], d[a + 3]);
    }
}

// The same columns parked transposed: column c of the chunk (64 rows) at chunk + c * LDT. With
// LDT = 68 the 32 lanes of each store hit 32 distinct banks ((8 (lane % 4) + lane / 4) mod 32).
template <int COLS, int LDT, int N>
__device__ __forceinline__ void park_chunk_t(float* chunk, const float (&d)[N], int q, int warp, int lane) {
    float* w0 = chunk + 2 * (lane & 3) * LDT + 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < COLS / 8; ++j) {
        const int a = 4 * (q * COLS / 8 + j);
        w0[8 * j * LDT] = d[a];
        w0[(8 * j + 1) * LDT] = d[a + 1];
        w0[8 * j * LDT + 8] = d[a + 2];
        w0[(8 * j + 1) * LDT + 8] = d[a + 3];
    }
}

// Eight consecutive outputs in 16-byte stores (the address is 16-byte aligned).
__device__ __forceinline__ void store8(__half* p, const float (&v)[8]) {
    __half2 h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
}
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float (&v)[8]) {
    __nv_bfloat162 h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
}
__device__ __forceinline__ void store8(float* p, const float (&v)[8]) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Two consecutive outputs into a shared-memory staging box (4 bytes for 16-bit types, 8 for f32).
__device__ __forceinline__ void stage2(unsigned a, float x, float y, const __half*) {
    const __half2 h = __floats2half2_rn(x, y);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(*reinterpret_cast<const unsigned*>(&h)) : "memory");
}
__device__ __forceinline__ void stage2(unsigned a, float x, float y, const __nv_bfloat16*) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(*reinterpret_cast<const unsigned*>(&h)) : "memory");
}
__device__ __forceinline__ void stage2(unsigned a, float x, float y, const float*) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(a), "f"(x), "f"(y) : "memory");
}
// The two values stage2 would write at a, read back as floats (C loaded by the TMA).
__device__ __forceinline__ float2 unstage2(unsigned a, const __half*) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
    return __half22float2(*reinterpret_cast<const __half2*>(&v));
}
__device__ __forceinline__ float2 unstage2(unsigned a, const __nv_bfloat16*) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}
__device__ __forceinline__ float2 unstage2(unsigned a, const float*) {
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
    return v;
}

// The activation of the TMA epilogue: relu and gelu as in every kernel (`activate`); sigmoid
// and tanh in branch-free forms on the fast exponential (ex2.approx) and division (div.approx).
// The precise expf / division / tanhf branch per element, and inside a staging loop unrolled
// over 128 accumulators those forms cost several times their arithmetic (at k = 64 sigmoid took
// 2.7x the time of the product itself, and half that with the form below). Relative error (f32
// emulation with the approximations' documented bounds, against f64):
//   sigmoid: about 1e-6 for |x| <= 20, growing with |x| to 5e-6 at 80 (the rounding of
//     x log2(e) in the exponent), wherever the result is a normal f32.
//   tanh: about 3e-6 (1 - t loses digits near |x| = 1/16, below which an odd polynomial to x^5
//     takes over, 1e-7).
// The results are stored as f16 / bf16 (half an ulp: 2.4e-4 / 2e-3) or come from tf32
// products, so neither error shows. (A branch-free gelu, x Phi(x) with erfc from a degree-9
// Chebyshev fit on the same fast functions, measured 5-20% slower than erff and was dropped.)
__device__ __forceinline__ float activate_wg(float v, int act) {
    switch (act) {
    case ACT_SIGMOID: return __fdividef(1.f, 1.f + __expf(-v));
    case ACT_TANH: {
        const float a = fabsf(v), t = __expf(-2.f * a);
        const float far = copysignf(__fdividef(1.f - t, 1.f + t), v);
        const float v2 = v * v;
        const float near = v * fmaf(v2, fmaf(v2, 2.f / 15.f, -1.f / 3.f), 1.f);
        return a < 0.0625f ? near : far;
    }
    default: return activate(v, act);
    }
}
