//! The tiled kernel a GEMM runs ([`Choice`]): its family, name, block tile, launch shape and the
//! copies of the operands that come first; what dispatch (`dispatch.rs`) chooses and launch
//! (`launch.rs`) queues.

use std::mem::size_of;

use super::GemmType;

/// The kernel families.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Simt,
    MmaSync,
    Dmma,
    Wgmma,
    /// `gemm_small_<t>`: one block per matrix, m, n and k at most
    /// [`SMALL_MAX`](super::dispatch::SMALL_MAX).
    Small,
}

/// The chosen kernel: name, block tile, dynamic shared memory, threads per block.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Choice {
    pub name: String,
    pub family: Family,
    /// wgmma tf32 only: X / Y are packed k-contiguous first (`gemm_wg_pack_tf32`).
    pub pack: [bool; 2],
    /// X / Y are copied first into an aligned buffer in their own orientation (`gemm_pack_b*`):
    /// the tensor-core kernels need 16-byte aligned operands whose leading dimension and batch
    /// stride are multiples of 16 bytes. Set by [`choose`](super::dispatch::choose), never by
    /// `choose_kernel`.
    pub align: [bool; 2],
    /// wgmma tf32 `nn` only: the kernel takes X and Y swapped (m and n too) and stores D
    /// transposed, so that the m-contiguous operand becomes wgmma's register-fed A operand.
    pub swap: bool,
    /// wgmma tf32 `tt` / `nn` (not the 128 x 128 tile) only: the kernel's X (the caller's
    /// m-contiguous operand; Y after `swap`) is read where it lies, by the producer's 4-byte
    /// copies instead of the TMA, so its rows need not be 16 bytes apart and it is not copied
    /// aligned first (ptx/gemm_wg_x_in_place.cuh). Set by [`choose`](super::dispatch::choose)
    /// only.
    pub x_in_place: bool,
    /// f32 on the CUDA cores only: the k-contiguous Y is copied transposed first
    /// (`gemm_transpose_b32`), and `name` is the kernel for an n-contiguous Y, which it reads
    /// with 16-byte copies.
    pub transpose_y: bool,
    /// Block tile (rows, columns) of the kernels' row-major D.
    pub tile: (usize, usize),
    pub smem: u32,
    pub threads: u32,
    /// f32 `w` only (its kernels take a second parameter, `SplitK`): the number of blocks that
    /// split k for each output tile (grid z); `None` for kernels without the parameter.
    pub split_k: Option<u32>,
    /// The blocks of a thread block cluster that share one output tile, each summing a share of
    /// k (f64 `gemm_dmma90_*<tile><parts>`); grid x is the tile count times this. 1: no split.
    pub cluster_k: u32,
    /// f64 / f32 `gemm_dmma90_*_k*` only (stream-k, whose kernels take a second parameter,
    /// `DmmaStreamK`): the blocks of the grid, which share the tiles' k-tiles evenly; the launch
    /// gives them two partial-tile slots each and an arrival counter per tile.
    pub stream_k: Option<u32>,
    /// wgmma only (the tiles `p` and `q`): the kernel runs in clusters of 2 blocks that compute
    /// two tiles side by side and share the loads of their X rows (`pair_rule` in
    /// ptx/gemm_wg.cuh); grid x is even, one cluster per pair of tiles at most.
    pub pair: bool,
    /// What runs instead when a copy that only speeds the GEMM up (`align`, `pack`,
    /// `transpose_y`) finds no memory: the choice for the operands as they are (for the tensor-core
    /// types, on the CUDA cores). `None` where nothing is copied, or the kernel was forced.
    pub fallback: Option<Box<Choice>>,
}

impl Choice {
    /// The choice as [`Gemm::kernel_name`](super::Gemm::kernel_name) reports it for element type
    /// `T`: the kernel, after a `gemm_wg_pack_tf32+` prefix when an operand is packed first and a
    /// `gemm_pack_b<bits>+` prefix when one is copied into an aligned buffer, and with a
    /// `/split<parts>` suffix when blocks split k.
    pub(crate) fn reported_name<T: GemmType>(&self) -> String {
        let mut name = self.name.clone();
        if self.pack.iter().any(|&p| p) {
            name = format!("gemm_wg_pack_tf32+{name}");
        }
        if self.align.iter().any(|&a| a) {
            name = format!("gemm_pack_b{}+{name}", 8 * size_of::<T>());
        }
        if self.transpose_y {
            name = format!("gemm_transpose_b32+{name}");
        }
        if let Some(parts) = self.split_k.filter(|&p| p > 1) {
            name = format!("{name}/split{parts}");
        }
        if self.x_in_place {
            name = format!("{name}/x-in-place");
        }
        name
    }
}
