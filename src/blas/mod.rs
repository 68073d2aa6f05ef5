//! BLAS on cudrv's own kernels: GEMM and GEMV (being built).
