// cudrv module `transpose`: out = in^T for a row-major matrix, f32 and f64.
//
//   in  is rows x cols, row-major: in[r * cols + c]
//   out is cols x rows, row-major: out[c * rows + r] = in[r * cols + c]
//
// Launch contract:
//   block = (32, 8, 1)   -- each block moves one 32x32 tile; each thread copies 32/8 = 4
//                           elements in each direction. (blockDim.x must be 32; any
//                           blockDim.y in 1..8 is also correct.)
//   grid  = (ceil(cols / 32), ceil(rows / 32), 1) -- one block per tile; tile (bx, by) covers
//           in rows [32*by, 32*by + 32) and columns [32*bx, 32*bx + 32).
// Edge tiles are bounds-checked; rows or cols may be 0 (then the grid is empty anyway).
// Indices are 64-bit (rows * cols may exceed 2^32). grid.y is limited to 65535 by the
// hardware, so rows <= 65535 * 32 = 2,097,120.
//
// The tile is staged in shared memory with one column of padding (32 x 33) so that both the
// row-wise store and the column-wise load of the tile are free of bank conflicts (f32: stride
// 33 words; f64: stride 66 words, each half-warp phase of 64-bit accesses hits distinct bank
// pairs). Global reads and writes are coalesced along a tile row (threadIdx.x). Not in place: out must not overlap in (hence __restrict__).

// (Enumerators rather than namespace-scope constexpr variables: NVRTC emits the latter as
// .global variables in the PTX.)
enum : unsigned { TILE = 32 };

template <typename T>
__device__ __forceinline__ void transpose_impl(T* __restrict__ out, const T* __restrict__ in,
                                               unsigned rows, unsigned cols) {
    __shared__ T tile[TILE][TILE + 1];

    const unsigned col0 = blockIdx.x * TILE;  // first column of in covered by this tile
    const unsigned row0 = blockIdx.y * TILE;  // first row of in covered by this tile

    // Load: thread (tx, ty) reads in[row0 + j, col0 + tx] for j = ty, ty + blockDim.y, ...
    {
        const unsigned c = col0 + threadIdx.x;
        for (unsigned j = threadIdx.y; j < TILE; j += blockDim.y) {
            const unsigned r = row0 + j;
            if (r < rows && c < cols) {
                tile[j][threadIdx.x] = in[(size_t)r * cols + c];
            }
        }
    }
    __syncthreads();

    // Store: out row (col0 + j), out column (row0 + tx) gets in[row0 + tx, col0 + j].
    {
        const unsigned r = row0 + threadIdx.x;  // column index in out
        for (unsigned j = threadIdx.y; j < TILE; j += blockDim.y) {
            const unsigned c = col0 + j;  // row index in out
            if (c < cols && r < rows) {
                out[(size_t)c * rows + r] = tile[threadIdx.x][j];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
transpose_f32(float* __restrict__ out, const float* __restrict__ in, unsigned int rows, unsigned int cols) {
    transpose_impl<float>(out, in, rows, cols);
}

extern "C" __global__ void __launch_bounds__(256)
transpose_f64(double* __restrict__ out, const double* __restrict__ in, unsigned int rows, unsigned int cols) {
    transpose_impl<double>(out, in, rows, cols);
}
