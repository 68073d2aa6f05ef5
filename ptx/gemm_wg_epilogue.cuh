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

// Two outputs converted to a 16-bit type and packed into one 32-bit word (x in the low half).
__device__ __forceinline__ unsigned pack2(float x, float y, const __half*) {
    const __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack2(float x, float y, const __nv_bfloat16*) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
}
// E consecutive outputs alpha * s[0 .. E) in one store of E elements (p aligned to E elements,
// s to E floats): E = 1, 2 or, for the 16-bit types, 4.
template <int E, typename T>
__device__ __forceinline__ void store_n(T* p, const float* s, float alpha) {
    if constexpr (E == 1) {
        *p = Wg<T>::from_f(alpha * s[0]);
    } else if constexpr (sizeof(T) == 4) {
        static_assert(E == 2, "f32: one or two outputs");
        const float2 v = *reinterpret_cast<const float2*>(s);
        *reinterpret_cast<float2*>(p) = make_float2(alpha * v.x, alpha * v.y);
    } else if constexpr (E == 2) {
        const float2 v = *reinterpret_cast<const float2*>(s);
        *reinterpret_cast<unsigned*>(p) = pack2(alpha * v.x, alpha * v.y, p);
    } else {
        static_assert(E == 4, "16-bit: one, two or four outputs");
        const float4 v = *reinterpret_cast<const float4*>(s);
        *reinterpret_cast<uint2*>(p) = make_uint2(pack2(alpha * v.x, alpha * v.y, p), pack2(alpha * v.z, alpha * v.w, p));
    }
}

// Plain C from a parked chunk (row r's COLS columns at chunk + r * LD) to D rows that are not
// 16 bytes aligned, or to a last, partial chunk, in stores of E elements (ldd, the batch stride
// and D's start multiples of E elements): warp w writes the chunk's rows 16 w .. 16 w + 15,
// each lane E consecutive columns in one store, so a warp store covers 32 / (COLS / E) whole
// rows of COLS consecutive outputs. A lane whose E columns run past D's last column writes the
// ones inside one by one. D points at the chunk's first row and column (chunk q of the tile:
// columns q * COLS on); rows and cols count what lies inside D from the tile's corner. Each lane writes
// COLS * E / 32 outputs per warp store where one-element stores wrote one: the 64-row tiles,
// whose one consumer warpgroup issues the whole epilogue, were bound by these instructions
// (f16 100x64x64 x 500 at ldc 100: 4.3 M instructions against 1.6 M through the TMA). Out of
// line: one copy per type and width in a module (inlined into every unrolled chunk of every
// kernel, the three widths grew the compressed PTX by 0.65 MB).
template <int E, int COLS, int LD, typename T>
__device__ __noinline__ void store_rows(T* D, long long ldd, const float* chunk, int q, int warp, int lane,
                                        int rows, int cols, float alpha) {
    constexpr int L = COLS / E;  // lanes per row
    constexpr int R = 32 / L;    // rows per warp store
    const int cl = (lane % L) * E, left = cols - (q * COLS + cl);
    const int r0 = 16 * warp + lane / L;
    T* o = D + (long long)r0 * ldd + cl;
    const float* s = chunk + r0 * LD + cl;
#pragma unroll
    for (int i = 0; i < 16 / R; ++i) {
        if (r0 + i * R < rows && left > 0) {
            if (E == 1 || left >= E) {
                store_n<E>(o, s, alpha);
            } else {
#pragma unroll
                for (int e = 0; e < E - 1; ++e)
                    if (e < left) o[e] = Wg<T>::from_f(alpha * s[e]);
            }
        }
        o += R * ldd;
        s += R * LD;
    }
}

// The same for the transposed store (DT: D[r][c] at D[c * ldd + r], the chunk parked transposed,
// column c's 64 rows at chunk + c * LDT): warp w writes the chunk's columns COLS / 4 w .. COLS /
// 4 (w + 1) - 1, each lane E consecutive rows of a column in one store (ldd, the batch stride and
// D's start multiples of E elements), so a warp store covers 32 E consecutive rows of a column.
template <int E, int COLS, int LDT, typename T>
__device__ __noinline__ void store_cols_t(T* D, long long ldd, const float* chunk, int q, int warp, int lane,
                                          int rows, int cols, float alpha) {
#pragma unroll
    for (int i = 0; i < COLS / 4; ++i) {
        const int cl = warp * (COLS / 4) + i;
        if (q * COLS + cl >= cols) break;
        T* out = D + (long long)cl * ldd;
#pragma unroll
        for (int h = 0; h < 64 / (32 * E); ++h) {
            const int r = E * lane + 32 * E * h, left = rows - r;
            const float* s = chunk + cl * LDT + r;
            if (E == 1 || left >= E) {
                if (left > 0) store_n<E>(out + r, s, alpha);
            } else {
#pragma unroll
                for (int e = 0; e < E - 1; ++e)
                    if (e < left) out[r + e] = Wg<T>::from_f(alpha * s[e]);
            }
        }
    }
}

// store_rows / store_cols_t at the width evec (4, for the 16-bit types only, 2 or 1) for chunk q
// of a tile whose first row and column D points at.
template <int COLS, int LD, typename T>
__device__ __forceinline__ void store_rows_at(int evec, T* D, long long ldd, const float* chunk, int q, int warp,
                                              int lane, int rows, int cols, float alpha) {
    if (evec == 1) return store_rows<1, COLS, LD>(D + q * COLS, ldd, chunk, q, warp, lane, rows, cols, alpha);
    if constexpr (sizeof(T) == 2) {  // f32's evec is at most 2
        if (evec == 4) return store_rows<4, COLS, LD>(D + q * COLS, ldd, chunk, q, warp, lane, rows, cols, alpha);
    }
    store_rows<2, COLS, LD>(D + q * COLS, ldd, chunk, q, warp, lane, rows, cols, alpha);
}
template <int COLS, int LDT, typename T>
__device__ __forceinline__ void store_cols_t_at(int evec, T* D, long long ldd, const float* chunk, int q, int warp,
                                                int lane, int rows, int cols, float alpha) {
    D += (long long)q * COLS * ldd;
    if (evec >= 2) return store_cols_t<2, COLS, LDT>(D, ldd, chunk, q, warp, lane, rows, cols, alpha);
    store_cols_t<1, COLS, LDT>(D, ldd, chunk, q, warp, lane, rows, cols, alpha);
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
