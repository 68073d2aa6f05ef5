//! The tuning knobs of a GEMM: kernel family, block tile, split of k.

#[cfg(doc)]
use super::Gemm;
#[cfg(doc)]
use crate::blas::MathMode;

/// Which kernel family a [`Gemm`] runs on.
///
/// ```no_run
/// use cudrv::blas::{Gemm, Kernel, Transpose};
/// use cudrv::DeviceBuffer;
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let n = 256;
/// let a = DeviceBuffer::<half::f16>::zeroed(&stream, n * n)?;
/// let b = DeviceBuffer::<half::f16>::zeroed(&stream, n * n)?;
/// let mut c = DeviceBuffer::<half::f16>::zeroed(&stream, n * n)?;
/// // Compare the CUDA-core kernel with the automatic choice on the same inputs.
/// let g = Gemm::new(Transpose::N, Transpose::N, n, n, n);
/// g.kernel(Kernel::Simt).run(&a, &b, &mut c)?;
/// println!("auto runs {}", g.kernel_name(&a, &b, &c)?);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Kernel {
    /// Chosen by type, math mode, shape, alignment and compute capability.
    #[default]
    Auto,
    /// The general CUDA-core kernel (any shape, leading dimension and alignment).
    Simt,
    /// A tensor-core kernel (the sm_90a wgmma kernel where it applies; for f64, and for f32 in
    /// [`MathMode::Exact`], on compute capability 9.0 and later the sm_90 DMMA kernels (m16n8k4
    /// / m16n8k8 on f64); else mma.sync), on aligned copies of operands that do not meet its
    /// alignment rules (or, for the DMMA kernels, reading them element by element in place);
    /// an error when the type has no tensor-core path (exact f32 before compute capability 9.0)
    /// or the device is older than compute capability 8.0.
    TensorCore,
    /// The sm_80 mma.sync tensor-core kernels, even on Hopper (for f64: the m8n8k4 DMMA kernel).
    MmaSync,
    /// The Hopper kernel: `wgmma` fed by the tensor memory accelerator (f16, bf16, tf32 on compute
    /// capability 9.0); an error where it does not apply.
    Wgmma,
}

/// The block tile of a [`Gemm`] (a tuning knob; [`Tile::Auto`] picks by shape).
///
/// ```
/// use cudrv::blas::{Gemm, Tile, Transpose};
/// // A benchmark sweeping the tile of a 4096 x 4096 x 4096 f16 GEMM.
/// let tiles = [
///     Tile::Auto,
///     Tile::Small,
///     Tile::Half,
///     Tile::Medium,
///     Tile::Narrow,
///     Tile::Large,
///     Tile::Broad,
///     Tile::Wide,
/// ];
/// let gemms: Vec<_> = tiles
///     .iter()
///     .map(|&t| Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096).tile(t))
///     .collect();
/// assert_eq!(gemms.len(), 8);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Tile {
    /// Chosen from the problem size and the number of multiprocessors.
    #[default]
    Auto,
    /// 64 x 64 on the wgmma kernels (one consumer warpgroup of 64 x 64), for problems under a
    /// wave of 128-row tiles (4096 x 128: 128 of these against 64 of 128 x 64); it does not
    /// split k. f64 on the sm_90 DMMA kernels: 64 x 64 in three blocks per multiprocessor (short
    /// k). Elsewhere the same as `Small`.
    Half,
    /// 64 x 96 on the wgmma kernels (one consumer warpgroup of 64 x 96), for problems whose
    /// 128-row tiles fill less than a wave (1024 x 768: 128 of these against 96 of 128 x 64); it
    /// does not split k. Elsewhere the same as `Small`.
    Medium,
    /// 64 x 64 (every kernel family; f32 on the CUDA cores: two k-slices of 2 warps, 8 x 8 per
    /// thread).
    Small,
    /// 128 x 128 (wgmma: 2 consumer warpgroups of 64 x 128; mma.sync: 4 warps; sm_90 f64 DMMA:
    /// 8 warps; f32 CUDA cores: 8 x 8 per thread, or 128 x 256 with 8 x 16 when A and
    /// B allow 16-byte copies; the f64, f16 and bf16 CUDA-core kernels and the sm_80 f64 DMMA
    /// kernel have no large tile and use 64 x 64).
    Large,
    /// 128 x 256 (wgmma: 2 consumer warpgroups of 64 x 256); elsewhere the same as `Large`,
    /// except that f32 on the CUDA cores splits k over 2-4 blocks per tile when the 128 x 256
    /// tiles alone would fill less than 9/10 of the multiprocessors (batch 1).
    Wide,
    /// 128 x 192 (wgmma: 2 consumer warpgroups of 64 x 192), for mid-size problems whose
    /// 128 x 256 tiles leave many multiprocessors idle in their last round (2304 x 1024: 72 wide
    /// tiles on 132 multiprocessors, 108 of these); it does not split k. f32 on the CUDA cores:
    /// 128 x 128 with 4 warps of 8 x 16 per thread, two blocks per multiprocessor, when A and B
    /// allow 16-byte copies (short k, and problems 128 columns wide); f64 on the sm_90 DMMA
    /// kernels: 128 x 64 with 4 warps, two blocks per multiprocessor (short k). Elsewhere the
    /// same as `Large`.
    Broad,
    /// 128 x 64 (wgmma: 2 consumer warpgroups of 64 x 64, for mid-size problems that would
    /// leave multiprocessors idle with larger tiles); f32 on the CUDA cores: 32 x 64 (two
    /// k-slices of 2 warps, 8 x 4 per thread; with a forced [`SplitK::Parts`], k split over
    /// blocks); f64 on the sm_90 DMMA kernels: 128 x 64 with 8 warps; elsewhere the same as
    /// `Small`.
    Narrow,
    /// 16 rows or 16 columns, for products with a side of at most 16 (a decode step's tokens):
    /// 16 x 64 when D has the fewer rows and 64 x 16 when it has the fewer columns, on the sm_90
    /// DMMA kernels for f64 and on mma.sync for f16, bf16 and tf32 (a forced
    /// [`Kernel::Wgmma`] refuses it); the same as `Small` for f32 on the CUDA cores and for f64
    /// before compute capability 9.0.
    Thin,
    /// 128 x 128 on the wgmma kernels in pairs: the two blocks of a thread block cluster compute
    /// two tiles side by side and load the rows of A's or B's tile they share once, which the
    /// tensor memory accelerator multicasts to both (f16 and bf16 in every op combination, tf32
    /// with A transposed and B not); it does not split k. Elsewhere the same as `Large`.
    LargePair,
    /// 128 x 64 on the wgmma kernels in pairs, as [`Tile::LargePair`]. Elsewhere the same as
    /// `Narrow`.
    NarrowPair,
}

/// How a [`Gemm`] divides its k dimension between thread blocks (a tuning knob; [`SplitK::Auto`]
/// picks by shape).
///
/// A split gives a problem too small to fill the GPU more blocks: the blocks of one output tile
/// each sum a share of k, and their partial tiles are added in a fixed order, so the result does
/// not depend on timing. f64 on compute capability 9.0 and later splits inside a thread block
/// cluster, whose blocks add their partial tiles in each other's shared memory; f32 on the CUDA
/// cores splits its 128 x 256 tile (a forced [`Tile::Wide`], or the automatic tile when k is long
/// enough for every block to keep at least 1024 of it), its 128 x 64 tile (long k over few rows or
/// columns, such as 64 x 8192 x 8192, or [`SplitK::Parts`]) and its 32 x 64 tile (problems whose
/// 32 x 64 tiles fill less than the multiprocessors hold, such as 2053 x 67 x 1999, or
/// [`SplitK::Parts`] with [`Tile::Narrow`]) through a scratch buffer; f16, bf16 and tf32 on the
/// Hopper wgmma kernels split their 128 x 64 and 128 x 128 tiles in 2-64 parts through a scratch
/// buffer (automatically up to 16, when the tiles leave multiprocessors idle: decode steps, long k
/// over few tiles).
///
/// ```
/// use cudrv::blas::{Gemm, SplitK, Tile, Transpose};
/// // 1536^3 in f64: each 64 x 64 output tile summed by 2 blocks, k = 768 each.
/// let g = Gemm::<f64>::new(Transpose::N, Transpose::N, 1536, 1536, 1536)
///     .tile(Tile::Small)
///     .split_k(SplitK::Parts(2));
/// # let _ = g;
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum SplitK {
    /// Chosen from the problem size and the number of multiprocessors.
    #[default]
    Auto,
    /// Never split k.
    Off,
    /// Split k in this many parts: 2 for f64 (and exact f32) on compute capability 9.0 and later,
    /// with the 64 x 64 tile ([`Tile::Small`], or [`Tile::Half`] in three blocks per
    /// multiprocessor) or the automatic one; 2-64 for f32 on the CUDA cores, on the 128 x 64
    /// tile ([`Tile::Auto`]) or the 32 x 64 tile ([`Tile::Narrow`]), batch 1; 2-64 for f16, bf16
    /// and tf32 on the wgmma kernels (compute capability 9.0), on the 128 x 64 and 128 x 128 tiles
    /// ([`Tile::Auto`], [`Tile::Narrow`], [`Tile::Large`]; at most one part per 128 bytes of k:
    /// more are reduced to that); other kernels and tiles have no forced split, and asking for one
    /// is an `InvalidArgument`. 0 and 1 mean no split.
    Parts(u32),
    /// Split k in this many parts (2-256) that run as one strided batch of the ordinary
    /// kernels, each writing its partial product into a scratch buffer in the accumulator type,
    /// then add them in a fixed order with one more kernel (`gemm_partials_<t>`) that applies
    /// alpha, beta, the bias and the activation. Any tile and kernel family runs the parts of
    /// f32 (also with [`MathMode::Tf32`]) and f64 (the [`Tile`] and [`Kernel`] knobs apply to
    /// them); f16 and bf16 keep their partial sums in f32 and run their parts on the wgmma
    /// kernels (compute capability 9.0, operands the TMA can read) unless [`Kernel::MmaSync`]
    /// is asked for, else on the mma.sync kernels (compute capability 8.0; [`Kernel::Simt`]
    /// with this split, or [`Kernel::Wgmma`] where wgmma cannot run the parts, is an
    /// `InvalidArgument`). Batch 1 only: a batch is an `InvalidArgument`. Each part keeps a
    /// multiple of 8 of k, so fewer parts run when k is short; 0 and 1 mean no split. The
    /// automatic choice takes this path for long k over few output tiles and for decode steps
    /// over few thin tiles (docs/kernels/gemm-common.md, "Partial products", "f16 and bf16 through
    /// partial products", "... on wgmma").
    Partials(u32),
}
