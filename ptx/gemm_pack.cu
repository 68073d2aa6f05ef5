// cudrv module `gemm_pack`: copies a GEMM operand into an aligned buffer for the tensor-core
// kernels, which load 16-byte vectors (cp.async, TMA) and so need 16-byte aligned operands with
// leading dimensions and batch strides that are multiples of 16 bytes. An operand that is not
// (an odd leading dimension such as a vocabulary of 32001, a view at an odd offset) is copied
// once, in its own orientation, and the GEMM then runs on the copy.
//
//   in   : batch matrices of rows x cols elements, element (b, r, c) at in[b * stride_in +
//          r * ld_in + c] (rows are the operand's outer dimension, cols its contiguous one)
//   out  : batch matrices of rows x ld_out, element (b, r, c) at out[(b * rows + r) * ld_out + c];
//          ld_out is cols rounded up to 16 bytes and the padding (cols <= c < ld_out) is zeroed,
//          so a kernel reading whole vectors past cols reads zeros
//
// Kernels by element size: gemm_pack_b16 (f16, bf16), gemm_pack_b32 (f32), gemm_pack_b64 (f64);
// and gemm_transpose_b32 (at the end) for the CUDA-core f32 kernels.
// One launch copies up to two operands (X and Y of a GEMM): blockIdx.y picks the operand's
// descriptor, and an operand with rows == 0 is skipped. Each thread writes one 16-byte vector of
// out (8, 4 or 2 elements). in has no alignment beyond its element's: a vector whose elements
// all lie inside the row is read as the one or two aligned 16-byte vectors of in that hold them
// (the 16-byte granules of elements the operand has, so never outside its allocation) and
// shifted into place; the row's last, partial vector reads its elements one by one. Consecutive
// threads cover consecutive vectors of a row, so both sides are coalesced. Launch contract:
// block = (256, 1, 1); grid = (any, 1 or 2, 1) (grid-stride over the operand's vectors:
// batch * rows * (ld_out / elements per vector)); out 16-byte aligned, ld_out a multiple of the
// elements per vector, out not overlapping in. Indices are 32-bit where the operand's vectors
// and the grid fit in them, 64-bit otherwise.

#include "tile_transpose.cuh"

// One operand to copy (`struct PackOperand` in src/blas/gemm/launch.rs).
struct PackOperand {
    unsigned long long out, in;
    long long rows, cols, ld_in, stride_in, ld_out, batch;
};

template <typename T, int V>
struct alignas(16) Vec {
    T v[V];
};

// The 16 bytes that start `shift` bytes (a multiple of 2) into the 32 bytes lo:hi.
__device__ __forceinline__ uint4 shifted(uint4 lo, uint4 hi, unsigned shift) {
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const unsigned words = shift >> 2, bits = (shift & 3) * 8;
    unsigned a[5];
#pragma unroll
    for (int j = 0; j < 5; ++j) {
        a[j] = words == 0 ? w[j] : words == 1 ? w[j + 1] : words == 2 ? w[j + 2] : w[j + 3];
    }
    return make_uint4(__funnelshift_r(a[0], a[1], bits), __funnelshift_r(a[1], a[2], bits),
                      __funnelshift_r(a[2], a[3], bits), __funnelshift_r(a[3], a[4], bits));
}

// The copy of one operand with its vector index in I: 32-bit where the operand's vectors fit (the
// index's two divisions are then hardware-width ones, not the 64-bit division's software
// sequence), 64-bit otherwise. Addresses are formed in 64 bits either way.
template <typename T, typename I>
__device__ __forceinline__ void pack_loop(const PackOperand& op, I per_row, I per_matrix, I total) {
    enum : int { V = 16 / sizeof(T) };
    // The copy never overlaps its source: __restrict__ lets the loads take the read-only path
    // (ld.global.nc) and run ahead of the previous iteration's store.
    uint4* __restrict__ o = reinterpret_cast<uint4*>(op.out);
    const T* __restrict__ in = reinterpret_cast<const T*>(op.in);
    const I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const I b = i / per_matrix;
        const I rem = i - b * per_matrix;
        const I r = rem / per_row;
        const long long c0 = (long long)(rem - r * per_row) * V;
        const T* __restrict__ src = in + (long long)b * op.stride_in + (long long)r * op.ld_in + c0;
        if (c0 + V <= op.cols) {
            const unsigned long long addr = reinterpret_cast<unsigned long long>(src);
            const unsigned shift = (unsigned)(addr & 15);
            const uint4* __restrict__ at = reinterpret_cast<const uint4*>(addr - shift);
            const uint4 lo = __ldg(at);
            // With a shift the vector's last element lies in the next granule.
            o[i] = shift == 0 ? lo : shifted(lo, __ldg(at + 1), shift);
        } else {
            Vec<T, V> v;
#pragma unroll
            for (int j = 0; j < V; ++j) {
                v.v[j] = (c0 + j < op.cols) ? src[j] : T(0);
            }
            o[i] = *reinterpret_cast<const uint4*>(&v);
        }
    }
}

template <typename T>
__device__ __forceinline__ void pack_impl(const PackOperand& op) {
    enum : int { V = 16 / sizeof(T) };
    const long long per_row = op.ld_out / V;
    const long long per_matrix = per_row * op.rows;
    const long long total = per_matrix * op.batch;
    // The loop's last step may pass total by up to the grid's thread count before it stops.
    const long long reach = total + (long long)gridDim.x * blockDim.x;
    if (reach <= 0xffffffffll) {
        pack_loop<T, unsigned>(op, (unsigned)per_row, (unsigned)per_matrix, (unsigned)total);
    } else {
        pack_loop<T, long long>(op, per_row, per_matrix, total);
    }
}

#define GEMM_PACK(NAME, T)                                                                        \
    extern "C" __global__ void __launch_bounds__(256) NAME(PackOperand x, PackOperand y) {     \
        if (blockIdx.y == 0) {                                                                    \
            pack_impl<T>(x);                                                                      \
        } else {                                                                                  \
            pack_impl<T>(y);                                                                      \
        }                                                                                         \
    }

GEMM_PACK(gemm_pack_b16, unsigned short)
GEMM_PACK(gemm_pack_b32, unsigned)
GEMM_PACK(gemm_pack_b64, unsigned long long)

// gemm_transpose_b32(out, in, k, rows, ld_in, ld_out, stride_in, stride_out): a k-contiguous
// f32 operand (rows x k, element (r, p) at in[r * ld_in + p]) copied transposed, so that the
// CUDA-core f32 kernels read it with 16-byte copies as an operand that is not k-contiguous:
// out[p * ld_out + r] =
// in[r * ld_in + p] for r < rows, p < k (ld_out >= rows; the padding columns are not written,
// and not read by those kernels, whose copies of a row's last partial vector read only its
// elements). The parameters come in the shared copy's order (tile_transpose.cuh: its r is this
// kernel's p, its p this kernel's r). A block moves a 32 x 32 tile through shared memory. Launch
// contract: block = (32, 8, 1); grid = (ceil(k / 32), ceil(rows / 32), matrices) (rows / 32 and
// the matrices at most 65535); matrix b at in + b * stride_in and out + b * stride_out; out not
// overlapping in.
extern "C" __global__ void __launch_bounds__(256)
    gemm_transpose_b32(float* __restrict__ out, const float* __restrict__ in, long long k, long long rows,
                       long long ld_in, long long ld_out, long long stride_in,
                       long long stride_out) {
    copy_tile_transposed<false>(out, in, k, rows, ld_in, ld_out, stride_in, stride_out);
}
