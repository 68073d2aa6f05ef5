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
// descriptor, and an operand with rows == 0 is skipped. Threads write 16-byte vectors of out
// (8, 4 or 2 elements): rows of at most 32 vectors that fill 7 / 8 of a power of two of lanes
// a row per group of lanes (pack_rows), other rows a vector per thread (pack_vectors). in has
// no alignment beyond its element's: a vector whose elements all lie inside the row is read as
// the one or two aligned 16-byte vectors of in that hold them (the 16-byte granules of elements
// the operand has, so never outside its allocation) and shifted into place; the row's last,
// partial vector reads its elements one by one. Consecutive lanes cover consecutive vectors of a
// row (and consecutive rows), so both sides are coalesced.
// Launch contract: block = (256, 1, 1); grid = (any, 1 or 2, 1) (grid-stride over the operand's
// rows or vectors); out 16-byte aligned, ld_out a multiple of the elements per vector, out not
// overlapping in; batch * rows * (ld_out / elements per vector) + the grid's threads at most 2^32
// (indices are 32-bit: the launch takes a longer batch in several).

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

// The 16 bytes that start `shift` bytes into the aligned granule `at` (a vector wholly inside
// its row: with a shift its last element lies in the next granule).
__device__ __forceinline__ uint4 load_vector(const uint4* __restrict__ at, unsigned shift) {
    const uint4 lo = __ldg(at);
    return shift == 0 ? lo : shifted(lo, __ldg(at + 1), shift);
}

// The row's last vector, `left` < 16 / sizeof(T) elements from p and zeros after them.
template <typename T>
__device__ __forceinline__ uint4 partial_vector(const T* __restrict__ p, long long left) {
    enum : int { V = 16 / sizeof(T) };
    Vec<T, V> v;
#pragma unroll
    for (int j = 0; j < V; ++j) {
        v.v[j] = j < left ? p[j] : T(0);
    }
    return *reinterpret_cast<const uint4*>(&v);
}

// The copy of one operand of rows of at most 32 vectors (batches of small matrices), a row
// (batch b, row r) at a time: a row takes `lanes` = the power of two at or above its vectors, so
// a warp copies 32 / lanes consecutive rows at once (consecutive rows of `out` are contiguous, so
// its stores stay coalesced). A row's batch and row index cost one division per row rather than
// two per vector (pack_vectors), and its source shift (the same for each of its vectors) is
// found once. Row indices are 32-bit (a hardware-width division; a 64-bit variant beside it made
// ptxas spill the kernels for sm_90): the launch keeps the rows and the grid's threads within
// them.
template <typename T>
__device__ __forceinline__ void pack_rows(const PackOperand& op, unsigned per_row, int lanes_log2,
                                          unsigned total_rows) {
    enum : int { V = 16 / sizeof(T) };
    // The copy never overlaps its source: __restrict__ lets the loads take the read-only path
    // (ld.global.nc) and run ahead of the previous row's stores.
    uint4* __restrict__ o = reinterpret_cast<uint4*>(op.out);
    const T* __restrict__ in = reinterpret_cast<const T*>(op.in);
    const unsigned lane = threadIdx.x & 31, lanes = 1u << lanes_log2;
    const unsigned c_first = lane & (lanes - 1);
    const unsigned group = 32u >> lanes_log2;  // rows per warp
    const unsigned step = gridDim.x * (blockDim.x / 32) * group;
    const unsigned rows = (unsigned)op.rows;
    for (unsigned R = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * group + (lane >> lanes_log2); R < total_rows;
         R += step) {
        const unsigned b = R / rows;
        const unsigned r = R - b * rows;
        const T* __restrict__ src = in + (long long)b * op.stride_in + (long long)r * op.ld_in;
        uint4* __restrict__ dst = o + (long long)R * per_row;
        const unsigned long long addr = reinterpret_cast<unsigned long long>(src);
        const unsigned shift = (unsigned)(addr & 15);
        const uint4* __restrict__ at = reinterpret_cast<const uint4*>(addr - shift);
        for (unsigned c = c_first; c < per_row; c += lanes) {
            const long long c0 = (long long)c * V;
            if (c0 + V <= op.cols) {
                dst[c] = load_vector(at + c, shift);
            } else {
                dst[c] = partial_vector<T>(src + c0, op.cols - c0);
            }
        }
    }
}

// The lanes a row of `per_row` vectors takes, as a power of two: log2 of the least power of two
// at or above per_row, at most 5 (32 lanes). src/blas/gemm/launch.rs sizes the grid the same way.
__device__ __forceinline__ int row_lanes_log2(unsigned per_row) {
    const int l = per_row <= 1 ? 0 : 32 - __clz(per_row - 1);
    return l < 5 ? l : 5;
}

// The copy of one operand whose rows hold more than 32 vectors, a vector per thread in grid-
// stride order (consecutive threads, consecutive vectors of a row): a row already gives a warp
// whole 512-byte stretches, and its vectors spread over every thread of the grid where one
// warp a row would leave most threads idle on operands of few, long rows (f64 4429 x 82 at an
// odd m: 82 rows of 554 vectors). Two 32-bit divisions per vector.
template <typename T>
__device__ __forceinline__ void pack_vectors(const PackOperand& op, unsigned per_row, unsigned total) {
    enum : int { V = 16 / sizeof(T) };
    uint4* __restrict__ o = reinterpret_cast<uint4*>(op.out);
    const T* __restrict__ in = reinterpret_cast<const T*>(op.in);
    const unsigned per_matrix = per_row * (unsigned)op.rows;
    const unsigned step = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const unsigned b = i / per_matrix;
        const unsigned rem = i - b * per_matrix;
        const unsigned r = rem / per_row;
        const long long c0 = (long long)(rem - r * per_row) * V;
        const T* __restrict__ src = in + (long long)b * op.stride_in + (long long)r * op.ld_in + c0;
        if (c0 + V <= op.cols) {
            const unsigned long long addr = reinterpret_cast<unsigned long long>(src);
            const unsigned shift = (unsigned)(addr & 15);
            o[i] = load_vector(reinterpret_cast<const uint4*>(addr - shift), shift);
        } else {
            o[i] = partial_vector<T>(src, op.cols - c0);
        }
    }
}

// Whether an operand of rows of `per_row` vectors is copied by rows (pack_rows): at most 32
// vectors that keep at least 7 of 8 of their lanes busy (29 of 32, 14 of 16: +7% against a
// vector per thread on the H200; 20 of 32 and 13 of 16 lost 3-7%). src/blas/gemm/launch.rs sizes
// the grid by the same rule.
__device__ __forceinline__ bool by_rows(unsigned per_row, int lanes_log2) {
    return per_row <= 32 && per_row * 8 >= (7u << lanes_log2);
}

template <typename T>
__device__ __forceinline__ void pack_impl(const PackOperand& op) {
    enum : int { V = 16 / sizeof(T) };
    const unsigned per_row = (unsigned)(op.ld_out / V);
    // The launch keeps batch * rows * per_row plus the grid's threads within 32 bits.
    const unsigned rows = (unsigned)(op.rows * op.batch);
    const int lanes_log2 = row_lanes_log2(per_row);
    if (by_rows(per_row, lanes_log2)) {
        pack_rows<T>(op, per_row, lanes_log2, rows);
    } else {
        pack_vectors<T>(op, per_row, rows * per_row);
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
// out[p * ld_out + r] = in[r * ld_in + p] for r < rows, p < k (ld_out >= rows; the padding
// columns are not written, and not read by those kernels, whose copies of a row's last partial
// vector read only its elements). The parameters come in the shared copy's order
// (tile_transpose.cuh: its r is this kernel's p, its p this kernel's r). A block moves a 32 x 32
// tile through shared memory. Launch contract: block = (32, 8, 1); grid = (ceil(k / 32),
// ceil(rows / 32), matrices) (rows / 32 and the matrices at most 65535); matrix b at in + b *
// stride_in and out + b * stride_out; out not overlapping in.
extern "C" __global__ void __launch_bounds__(256)
    gemm_transpose_b32(float* __restrict__ out, const float* __restrict__ in, long long k, long long rows,
                       long long ld_in, long long ld_out, long long stride_in,
                       long long stride_out) {
    copy_tile_transposed<false>(out, in, k, rows, ld_in, ld_out, stride_in, stride_out);
}

// gemm_split_tf32x3(out, in, count, k, ld_in, ld_out, stride_in, stride_out, k_inner, lo_seg):
// an f32 GEMM operand split for three tf32 products (MathMode::Tf32x3, src/blas/gemm/tf32x3.rs).
// The operand holds `count` vectors of k elements (rows of op(A), columns of op(B)): element
// (r, p) at in[r * ld_in + p] when k_inner, else at in[p * ld_in + r]. Each x is split into
// hi = x rounded to tf32 and lo = x - hi rounded to tf32 (|x - hi - lo| <= 2^-22 |x|), and row r
// of out gets three segments of k, out[r * ld_out + s * k + p] for s = 0, 1, 2:
//   lo_seg == 1 (op(A)): [hi', lo, hi]        lo_seg == 0 (op(B)): [lo, hi', hi]
// so that the GEMM over 3k sums hi_a lo_b + lo_a hi_b + hi_a hi_b, the small products first.
// hi' is hi for a finite x and 0 otherwise, lo is 0 for a non-finite x: an infinite or NaN
// element meets the other operand only in the last segment (hi, then x itself), so inf * b gives
// inf (not inf * 0 = NaN from a small part of b) and a NaN propagates. hi rounds to nearest,
// ties away from zero, on the bit pattern; a finite x that would round up to infinity (within
// 2^-12 of FLT_MAX) is truncated instead, so that hi and lo stay finite.
// Launch contract: block = (32, 8, 1); grid = (ceil(k / 32), ceil(count / 32), matrices) (count
// / 32 and the matrices at most 65535); matrix b at in + b * stride_in and out + b * stride_out;
// ld_out >= 3k; out not overlapping in. A block moves a 32 x 32 tile of (r, p) through shared
// memory padded to 33 columns, so that reads along either index and writes along p are
// coalesced and free of bank conflicts.
__device__ __forceinline__ float tf32_nearest(float x) {
    const unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, NaN
    unsigned r = (u + 0x1000u) & 0xffffe000u;
    if ((r & 0x7f800000u) == 0x7f800000u) r = u & 0xffffe000u;  // would round to inf
    return __uint_as_float(r);
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_split_tf32x3(float* __restrict__ out, const float* __restrict__ in, long long count, long long k,
                      long long ld_in, long long ld_out, long long stride_in, long long stride_out,
                      int k_inner, int lo_seg) {
    __shared__ float tile[32][33];  // tile[r - r0][p - p0]
    const long long p0 = (long long)blockIdx.x * 32, r0 = (long long)blockIdx.y * 32;
    in += blockIdx.z * stride_in;
    out += blockIdx.z * stride_out;
#pragma unroll
    for (int j = threadIdx.y; j < 32; j += 8) {
        if (k_inner) {
            const long long r = r0 + j, p = p0 + threadIdx.x;
            tile[j][threadIdx.x] = (r < count && p < k) ? in[r * ld_in + p] : 0.f;
        } else {
            const long long p = p0 + j, r = r0 + threadIdx.x;
            tile[threadIdx.x][j] = (r < count && p < k) ? in[p * ld_in + r] : 0.f;
        }
    }
    __syncthreads();
#pragma unroll
    for (int j = threadIdx.y; j < 32; j += 8) {
        const long long r = r0 + j, p = p0 + threadIdx.x;
        if (r < count && p < k) {
            const float x = tile[j][threadIdx.x];
            const bool finite = (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
            const float hi = tf32_nearest(x);
            const float lo = finite ? tf32_nearest(x - hi) : 0.f;
            float* row = out + r * ld_out + p;
            row[0] = lo_seg == 0 ? lo : (finite ? hi : 0.f);
            row[k] = lo_seg == 1 ? lo : (finite ? hi : 0.f);
            row[2 * k] = hi;
        }
    }
}
