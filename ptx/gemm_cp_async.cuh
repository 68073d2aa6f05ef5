#pragma once
// ptx/gemm_cp_async.cuh: the cp.async helpers the mma.sync GEMM modules share (gemm_tc,
// gemm_dmma90): 16-byte global -> shared copies with zero fill, commit / wait, and a tile loader.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
// cp.async of BYTES (16, or 4 / 8 through .ca for operands aligned only to their element: the
// f64 thin tiles' unaligned variants in gemm_dmma90).
template <int BYTES> __device__ __forceinline__ void cp_async(unsigned dst, const void* src, int bytes) {
    if constexpr (BYTES == 16) {
        cp_async16(dst, src, bytes);
    } else {
        static_assert(BYTES == 4 || BYTES == 8, "cp.async copies 4, 8 or 16 bytes");
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(BYTES), "r"(bytes));
    }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Copies a tile of `outer` rows x `inner` contiguous elements into shared memory (row stride
// `SLD` elements) with 16-byte cp.async; rows >= outer_lim or elements >= inner_lim read as zero.
template <typename T, int OUTER, int INNER, int SLD, int NT>
__device__ __forceinline__ void load_tile(unsigned sdst, const T* g, long long ld, long long outer0,
                                          long long outer_lim, long long inner0, long long inner_lim, int tid) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CPR = INNER / VEC;
    constexpr int CH = OUTER * CPR;
    static_assert(CH % NT == 0, "tile chunks must divide among the threads");
#pragma unroll
    for (int it = 0; it < CH / NT; ++it) {
        const int i = tid + it * NT;
        const int o = i / CPR, c = (i % CPR) * VEC;
        const long long go = outer0 + o, gi = inner0 + c;
        int bytes = 0;
        const T* src = g;
        if (go < outer_lim && gi < inner_lim) {
            const long long rem = inner_lim - gi;
            bytes = (rem >= VEC ? VEC : (int)rem) * (int)sizeof(T);
            src = g + go * ld + gi;
        }
        cp_async16(sdst + (unsigned)((o * SLD + c) * (int)sizeof(T)), src, bytes);
    }
}

// The misalignment of an operand row's start, in elements, within its 16-byte chunk.
template <typename T> __device__ __forceinline__ int row_shift(const T* row) {
    return (int)((reinterpret_cast<unsigned long long>(row) & 15) / sizeof(T));
}

// As load_tile, for rows that may start anywhere (aligned only to their element): each row's
// 16-byte chunks are read from its start rounded down to 16 bytes, one chunk more than
// INNER / VEC, so the row's element inner0 + j lands at column j + row_shift(row) (SLD must hold
// INNER + VEC). The first chunk's elements before inner0 (before the row's start when inner0 is
// 0: inside the same allocation, which is 16-byte aligned) are read but never used: the fragments
// read columns shift .. shift + INNER - 1. Elements at or past inner_lim read as zero.
template <typename T, int OUTER, int INNER, int SLD, int NT>
__device__ __forceinline__ void load_tile_shifted(unsigned sdst, const T* g, long long ld, long long outer0,
                                                  long long outer_lim, long long inner0, long long inner_lim,
                                                  int tid) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CPR = INNER / VEC + 1;
    constexpr int CH = OUTER * CPR;
    static_assert(SLD >= INNER + VEC, "a shifted row needs one chunk more");
#pragma unroll
    for (int it = 0; it < (CH + NT - 1) / NT; ++it) {
        const int i = tid + it * NT;
        if (CH % NT != 0 && i >= CH) break;
        const int o = i / CPR, c = i % CPR;
        const long long go = outer0 + o;
        int bytes = 0;
        const T* src = g;
        if (go < outer_lim) {
            const T* row = g + go * ld;
            const int sh = row_shift(row);
            // The chunk holds the row's elements first .. first + VEC - 1.
            const long long first = inner0 + (long long)c * VEC - sh;
            const long long rem = inner_lim - first;
            if (rem > 0) {
                bytes = (rem >= VEC ? VEC : (int)rem) * (int)sizeof(T);
                src = row - sh + inner0 + (long long)c * VEC;
            }
        }
        cp_async16(sdst + (unsigned)((o * SLD + c * VEC) * (int)sizeof(T)), src, bytes);
    }
}
