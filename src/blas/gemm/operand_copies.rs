//! Where the operands of a GEMM lie and where their aligned copies go: whether the tensor-core
//! kernels can read X and Y as they are, the storage shape of each, and the leading dimensions
//! and parameters after a copy into an aligned buffer (`gemm_pack_b*`).

use super::builder::Plan;
use super::params::GemmParams;

/// Whether the tensor-core kernels can load X and Y as they are (16-byte cp.async and TMA):
/// 16-byte aligned, leading dimension and (batch > 1) batch stride multiples of `vec` elements.
pub(crate) fn operands_aligned(params: &GemmParams, vec: i64, batch: usize) -> [bool; 2] {
    let ok =
        |address: u64, ld: i64, stride: i64| address % 16 == 0 && ld % vec == 0 && (batch <= 1 || stride % vec == 0);
    [ok(params.x, params.ldx, params.sx), ok(params.y, params.ldy, params.sy)]
}

/// The storage of X and Y as `(rows, cols)` with `cols` contiguous: X is m x k (k-contiguous or
/// m-contiguous), Y is n x k.
pub(crate) fn operand_storage(plan: &Plan, params: &GemmParams) -> [(i64, i64); 2] {
    let (xk, yk) = (plan.ops.ends_with('n'), plan.ops.starts_with('t'));
    let (m, n, k) = (params.m, params.n, params.k);
    [if xk { (m, k) } else { (k, m) }, if yk { (n, k) } else { (k, n) }]
}

/// The parameters after the operands marked in `align` are copied into aligned buffers
/// (address 0 stands for the buffer: only its alignment matters to dispatch).
pub(crate) fn aligned_params(plan: &Plan, params: &GemmParams, align: [bool; 2], vec: i64) -> GemmParams {
    let mut p = *params;
    let [(xr, xc), (yr, yc)] = operand_storage(plan, params);
    let round = |c: i64| packed_ld(c, 16 / vec);
    if align[0] {
        let ld = round(xc);
        (p.x, p.ldx, p.sx) = (0, ld, if params.sx == 0 { 0 } else { xr * ld });
    }
    if align[1] {
        let ld = round(yc);
        (p.y, p.ldy, p.sy) = (0, ld, if params.sy == 0 { 0 } else { yr * ld });
    }
    p
}

/// The leading dimension of an operand's aligned copy whose rows hold `cols` elements of
/// `size` bytes: a multiple of 16 bytes, and of 128 bytes (a whole cache line, the TMA's box
/// width) for rows of 1 KiB or more, where the padding costs at most an eighth.
pub(crate) fn packed_ld(cols: i64, size: i64) -> i64 {
    let unit = if cols * size >= 1024 { 128 / size } else { 16 / size };
    (cols.max(1) + unit - 1) / unit * unit
}
