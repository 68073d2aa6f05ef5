//! The kernels' parameter block and the launch-shape constants shared by dispatch and launch.

use crate::memory::DeviceRepr;

/// The kernels' parameter block (`struct GemmParams` in ptx/gemm_tc.cu and ptx/gemm_simt.cu).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
pub(crate) struct GemmParams {
    pub(crate) x: u64,
    pub(crate) y: u64,
    pub(crate) d: u64,
    pub(crate) bias: u64,
    pub(crate) m: i64,
    pub(crate) n: i64,
    pub(crate) k: i64,
    pub(crate) ldx: i64,
    pub(crate) ldy: i64,
    pub(crate) ldd: i64,
    pub(crate) sx: i64,
    pub(crate) sy: i64,
    pub(crate) sd: i64,
    pub(crate) alpha: f64,
    pub(crate) beta: f64,
    pub(crate) act: i32,
    pub(crate) batch: i32,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (8-byte fields, then two
// i32s: no padding); every bit pattern is valid.
unsafe impl DeviceRepr for GemmParams {}

/// `act` of a part of an f16 / bf16 split through partial products (ptx/gemm_common.cuh): the
/// mma.sync kernels then write `alpha * sum` as f32 into D, the split's scratch.
pub(crate) const ACT_PARTIAL_F32: i32 = 16;

/// Most grid.y a launch uses (the batch index); larger batches take several launches.
pub(crate) const MAX_BATCH_PER_LAUNCH: usize = 65535;

/// The launches of a batch of `total` matrices, each as (its first matrix, its matrices): at
/// most [`MAX_BATCH_PER_LAUNCH`] matrices each, in order.
pub(crate) fn batch_launches(total: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..total)
        .step_by(MAX_BATCH_PER_LAUNCH)
        .map(move |first| (first, (total - first).min(MAX_BATCH_PER_LAUNCH)))
}

/// Tensor-core pipeline depth (the kernels' STAGES).
pub(crate) const TC_STAGES: u32 = 4;
/// Dynamic shared memory of the wgmma kernels (every tile): stages, the epilogue's four 8 KiB
/// TMA staging boxes (which also hold the two 9 KiB chunks of the other epilogues), alignment and
/// barriers.
pub(crate) const WG_SMEM: u32 = 4 * (128 + 256) * 128 + 4 * 64 * 128 + 2048;

/// The block tiles of `bm x bn` that cover an `m x n` D (launch geometry, shared by dispatch,
/// launch and the routes).
pub(crate) fn tiles2(m: usize, n: usize, (bm, bn): (usize, usize)) -> usize {
    m.div_ceil(bm) * n.div_ceil(bn)
}

/// The busiest multiprocessor's time for `blocks` blocks of four warps spread evenly over `sms`,
/// in thousandths of a lone block's time: they run two at a time and a pair takes 1.747 times a
/// lone block (fitted with f32's deep k splits on the H100, docs/kernels/gemm-simt.md, "Deep k
/// splits"), so an odd count leaves one block running alone, below the pairs' rate.
pub(crate) fn paired_time(blocks: usize, sms: usize) -> usize {
    let busiest = blocks.div_ceil(sms.max(1));
    busiest / 2 * 1747 + busiest % 2 * 1000
}
