//! Queueing a chosen GEMM kernel: batches split over launches, split-k scratch, tf32 packing,
//! tensor maps for the wgmma kernels.

use std::mem::size_of;
use std::sync::Arc;

use super::builder::Plan;
use super::choice::{Choice, Family};
use super::dispatch::{tma_element, tma_operands};
use super::dmma90::stream_k_grid;
use super::operand_copies::{operand_storage, packed_ld};
use super::params::{batch_launches, tiles2, GemmParams, ACT_PARTIAL_F32};
use super::wg_in_place::IN_PLACE_PREFIX;
use super::wg_tiles::{has_act_twin, splits_k, wg_parts};
use super::GemmType;
use crate::blas::tma::{TensorMap, TmaMatrix};
use crate::blas::Activation;
use crate::context::Context;
use crate::error::{bail_invalid, Result};
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceRepr, DeviceSlice};
use crate::module::Function;
use crate::registry::ON_USE_MODULES;
use crate::stream::Stream;

/// The GEMM kernel `name` for a launch on `ctx`: from the context's registry, or, the first time
/// one of its kernels is asked for, from the module linked on use that holds it
/// (`ptx/MANIFEST`: the Hopper GEMM modules, sm_90 DMMA and wgmma), which then joins the
/// registry. A program that launches no GEMM does not link those modules' PTX.
pub(crate) fn gemm_kernel(ctx: &Arc<Context>, name: &str) -> Result<Function> {
    let found = ctx.kernel(name);
    if let Err(crate::Error::UnknownKernel { .. }) = found {
        if let Some(module) = ON_USE_MODULES.iter().find(|m| m.kernels.contains(&name)) {
            return ctx.kernel_on_use(name, module);
        }
    }
    found
}

/// The second parameter of the f32 `w` kernels (`struct SplitK` in ptx/gemm_simt.cu).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct SplitKParams {
    ws: u64,
    counters: u64,
}
// SAFETY: repr(C) plain data matching `struct SplitK` (two pointers, no padding); every bit
// pattern is valid.
unsafe impl DeviceRepr for SplitKParams {}

/// The last parameter of the wgmma kernels (`struct WgSplit` in ptx/gemm_wg.cuh).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct WgSplitParams {
    ws: u64,
    counters: u64,
    parts: i32,
    kper: i32,
}
// SAFETY: repr(C) plain data matching `struct WgSplit` (two pointers, two i32s, no padding);
// every bit pattern is valid.
unsafe impl DeviceRepr for WgSplitParams {}

/// The most k-tiles (128 bytes of k) per unit of work at which a wgmma launch overlaps the
/// stream's previous kernel (programmatic dependent launch). H200, 2026-12-02 22:03 UTC, the
/// f16 / bf16 / tf32 suite against the build before in one job, every launch overlapping: units
/// of at most 48 k-tiles gained (f16 1000^3 NN +22%, 768x1024x3072 TN +15-16% (48), 3072x1024x768
/// TN +14%, 64x64x64 x 512 +17-22%, 2048^3 +1-5% (32), parts of 16-32 k-tiles +4-17%), longer
/// ones lost where the grid is one round of tall, thin products (4096x128x4096 TN -12/-13% (64),
/// 12288x128x4096 TN -5/-8%, tf32 64x8192x8192 NN -13% (256), tf32 768x1024x3072 TN -5% (96))
/// and moved within +-3% elsewhere. Why the long units lose was not measured.
const OVERLAP_MAX_KTILES: usize = 48;

/// The scratch of a k split, freed in stream order once the launch that uses it is queued: `ws`
/// floats of partial tiles (written by each part before any part reads them) and `counters`
/// zeroed arrival counters.
fn split_scratch(stream: &Arc<Stream>, ws: usize, counters: usize) -> Result<(DeviceBuffer<f32>, DeviceBuffer<u32>)> {
    // SAFETY: the split kernels read an element of `ws` only after the block that writes it has
    // written it and counted its arrival (ptx/gemm_simt.cu; `split_rule` in ptx/gemm_wg.cuh).
    let ws = unsafe { DeviceBuffer::<f32>::uninit(stream, ws) }?;
    let counters = DeviceBuffer::<u32>::zeroed(stream, counters)?;
    Ok((ws, counters))
}

/// The scratch of a split ([`split_scratch`]) and the kernels' parameter that points at it;
/// `None` where the device has no memory for it (the caller then runs without the split).
#[allow(clippy::type_complexity)]
fn split_params(
    stream: &Arc<Stream>,
    ws: usize,
    counters: usize,
) -> Result<Option<(SplitKParams, (DeviceBuffer<f32>, DeviceBuffer<u32>))>> {
    match split_scratch(stream, ws, counters) {
        Ok((ws, counters)) => {
            let params = SplitKParams {
                ws: ws.device_ptr(),
                counters: counters.device_ptr(),
            };
            Ok(Some((params, (ws, counters))))
        }
        Err(e) if is_out_of_memory(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Queues a tiled choice for `plan`: the aligned copies of the operands it asks for, then its
/// kernel family's launch. The copies are freed in stream order after the GEMM.
pub(crate) fn run_choice<T: GemmType>(
    stream: &Arc<Stream>,
    choice: &Choice,
    plan: &Plan,
    mut params: GemmParams,
    batch: usize,
    activation: Activation,
) -> Result<()> {
    // Most choices copy nothing: straight to the kernel (the copies' bookkeeping below cost a
    // repeated GEMM about 250 instructions on the null driver, 2026-11-28).
    let copies_nothing = !choice.align.iter().any(|&a| a) && !choice.transpose_y && !choice.pack.iter().any(|&p| p);
    if copies_nothing {
        return run_family::<T>(stream, choice, plan, params, batch, activation);
    }
    // A copy that only speeds the GEMM up and finds no memory gives way to the choice's
    // fallback (set by dispatch: the kernel for the operands as given).
    let given = params;
    let copies = align_operands::<T>(stream, plan, choice, &mut params, batch).and_then(|aligned| {
        let transposed = if choice.transpose_y {
            let (buf, ld) = transpose_y(stream, params.y, params.n, params.k, params.ldy)?;
            (params.y, params.ldy, params.sy) = (buf.device_ptr(), ld, 0);
            Some(buf)
        } else {
            None
        };
        // tf32 operands the wgmma kernels read k-contiguous, each matrix of a batch (one, shared,
        // where the operand's batch stride is 0).
        let mut packed = Vec::new();
        if choice.pack[0] {
            let (buf, ld, stride) = pack_tf32(stream, params.x, (params.m, params.k), params.ldx, params.sx, batch)?;
            (params.x, params.ldx, params.sx) = (buf.device_ptr(), ld, stride);
            packed.push(buf);
        }
        if choice.pack[1] {
            let (buf, ld, stride) = pack_tf32(stream, params.y, (params.n, params.k), params.ldy, params.sy, batch)?;
            (params.y, params.ldy, params.sy) = (buf.device_ptr(), ld, stride);
            packed.push(buf);
        }
        Ok((aligned, transposed, packed))
    });
    // The copies live until the GEMM is queued; their frees are ordered on the same stream
    // after it.
    let (aligned, transposed, packed) = match copies {
        Err(e) if is_out_of_memory(&e) => match choice.fallback.as_deref() {
            Some(fallback) => return run_choice::<T>(stream, fallback, plan, given, batch, activation),
            None => return Err(e),
        },
        copies => copies?,
    };
    let run = run_family::<T>(stream, choice, plan, params, batch, activation);
    drop(aligned);
    drop(transposed);
    drop(packed);
    run
}

/// Queues the choice's kernel family on operands already where it reads them.
#[inline(always)]
fn run_family<T: GemmType>(
    stream: &Arc<Stream>,
    choice: &Choice,
    plan: &Plan,
    params: GemmParams,
    batch: usize,
    activation: Activation,
) -> Result<()> {
    match choice.family {
        Family::Wgmma => run_wgmma::<T>(stream, choice, params, batch, activation),
        Family::Small => run_small(stream, choice, plan, params, batch),
        _ => run_kernel::<T>(stream, choice, params, batch),
    }
}

/// Whether `e` is a device allocation that failed for want of memory.
fn is_out_of_memory(e: &crate::Error) -> bool {
    matches!(e, crate::Error::OutOfMemory { .. })
}

/// Copies the k-contiguous f32 operand Y (`rows` x `k`, row `r` at `input + r * ld_in`)
/// transposed into a new buffer on `stream` (`gemm_transpose_b32`): element (p, r) at
/// `out[p * ld + r]`, `ld = rows` rounded up to 4 (16 bytes). Returns the buffer and `ld`.
fn transpose_y(stream: &Arc<Stream>, input: u64, rows: i64, k: i64, ld_in: i64) -> Result<(DeviceBuffer<f32>, i64)> {
    let ld = (rows + 3) / 4 * 4;
    Ok((
        copy_transposed(stream, "gemm_transpose_b32", input, (k, rows), (ld_in, ld), (1, 0))?,
        ld,
    ))
}

pub(crate) fn run_kernel<T: GemmType>(
    stream: &Arc<Stream>,
    choice: &Choice,
    params: GemmParams,
    batch: usize,
) -> Result<()> {
    // The sm_90 DMMA modules are linked on use (ptx/MANIFEST): a program without GEMMs does
    // not carry their PTX.
    let f = gemm_kernel(stream.context(), &choice.name)?;
    if choice.smem > f.max_dynamic_shared_memory() {
        f.set_max_dynamic_shared_memory(choice.smem)?;
    }
    let (m, n) = (params.m as usize, params.n as usize);
    let tiles = tiles2(m, n, choice.tile);
    let grid_x = match choice.stream_k {
        Some(blocks) => stream_k_grid(blocks as usize, m, n, params.k as usize) as usize,
        None => tiles.saturating_mul(choice.cluster_k as usize),
    };
    let Ok(grid_x) = u32::try_from(grid_x) else {
        bail_invalid!("gemm: {m} x {n} needs {grid_x} tiles, more than one launch holds");
    };
    if grid_x > i32::MAX as u32 {
        bail_invalid!("gemm: {m} x {n} needs {grid_x} tiles, more than one launch holds");
    }
    let threads = choice.threads;
    let sz = size_of::<T>() as u64;
    for (done, count) in batch_launches(batch) {
        let mut p = params;
        p.x += done as u64 * params.sx as u64 * sz;
        p.y += done as u64 * params.sy as u64 * sz;
        p.d += done as u64 * params.sd as u64 * sz;
        p.batch = count as i32;
        // Split k: each block's sums (one tile) in `ws`, and a zeroed arrival counter per tile;
        // both are freed in stream order after the launch.
        // Without the memory for the scratch, the blocks of each tile run the whole k instead.
        let mut splits = choice.split_k.unwrap_or(1);
        let mut split = SplitKParams::default();
        let mut scratch = None;
        let mut grid_x = grid_x;
        if choice.stream_k.is_some() && grid_x as usize != tiles {
            // Stream-k: two partial tiles of f64 (4 floats an element) per block and an arrival
            // counter per tile; without the memory, one block per tile, which never parks a part.
            let (bm, bn) = choice.tile;
            let Some(len) = (grid_x as usize * 4).checked_mul(bm * bn) else {
                bail_invalid!("gemm: the stream-k buffer for {m} x {n} overflows");
            };
            match split_params(stream, len, tiles)? {
                Some((params, buffers)) => (split, scratch) = (params, Some(buffers)),
                None => grid_x = tiles as u32,
            }
        }
        if splits > 1 {
            let (bm, bn) = choice.tile;
            let tiles = grid_x as usize * count;
            let Some(len) = (tiles * splits as usize).checked_mul(bm * bn) else {
                bail_invalid!("gemm: the split-k buffer for {m} x {n} overflows");
            };
            match split_params(stream, len, tiles)? {
                Some((params, buffers)) => (split, scratch) = (params, Some(buffers)),
                None => splits = 1,
            }
        }
        let mut l = stream.launch_builder(&f);
        l.arg(&p);
        if choice.split_k.is_some() || choice.stream_k.is_some() {
            l.arg(&split);
        }
        // SAFETY: the kernel takes one GemmParams by value (and the f32 `w` kernels a SplitK
        // after it); `plan` checked that every element the kernel touches (rows < m, cols < n,
        // depth < k of each of `count` batch entries, at the leading dimensions and strides
        // given) lies inside A, B, C and the bias; with splits > 1, `ws` holds splits blocks of
        // bm * bn floats per tile and `counters` one per tile, as the kernel indexes them; with
        // cluster_k > 1 grid x is the tile count times the cluster size the kernel is compiled
        // with (its name's digit), so each cluster covers one tile; a stream-k kernel (batch 1,
        // dispatch's rule) takes the same two pointers as the split's, `ws` holding two bm * bn
        // f64 tiles per block of grid x and `counters` one per tile, or grid x is the tile
        // count, whose blocks each sum one whole tile and touch neither.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x, count as u32, splits),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: choice.smem,
            })
        }?;
        drop(scratch);
    }
    Ok(())
}

/// Runs `gemm_small_<t>` (ptx/gemm_small.cu): one block per batch entry, a thread per 4
/// outputs (at least a warp, at most 256), shared memory sized to the matrices, so that as many
/// blocks as possible are resident; blocks stride over the batch beyond that.
pub(crate) fn run_small(
    stream: &Arc<Stream>,
    choice: &Choice,
    plan: &Plan,
    params: GemmParams,
    batch: usize,
) -> Result<()> {
    let f = stream.context().kernel(&choice.name)?;
    let limits = stream.context().limits();
    let sms = limits.multiprocessor_count.max(1) as usize;
    let xk = i32::from(plan.ops.ends_with('n'));
    let yk = i32::from(plan.ops.starts_with('t'));
    let Ok(count) = i32::try_from(batch) else {
        bail_invalid!("gemm: a batch of {batch} small matrices is more than one launch holds");
    };
    // The dispatch sized the block and its shared memory for these m, n, k (`small_launch`).
    let (threads, smem) = (choice.threads as usize, choice.smem as usize);
    // Blocks resident per multiprocessor: at most 32, 2048 threads, and the shared memory.
    let per_sm = (2048 / threads)
        .min(32)
        .min((200usize << 10).checked_div(smem).unwrap_or(32))
        .max(1);
    let grid = batch.min(sms * per_sm) as u32;
    let mut p = params;
    p.batch = count;
    let mut l = stream.launch_builder(&f);
    l.arg(&p).arg(&xk).arg(&yk);
    // SAFETY: gemm_small_<t>(GemmParams, i32 xk, i32 yk) reads X, Y (and D when beta != 0, the
    // bias when set) and writes D at rows < m, columns < n, depth < k of each of `batch`
    // entries, at the leading dimensions and strides `plan` checked against the buffers; m, n
    // and k are at most 32, as the dispatch that chose it checked, and the shared memory holds
    // the m (k + 1) + k (n + 1) accumulator-type elements the kernel indexes.
    unsafe {
        l.launch(LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (threads as u32, 1, 1),
            shared_mem_bytes: smem as u32,
        })
    }
}

/// Packs an m- or n-contiguous f32 operand k-contiguous (rounded to tf32) into a new buffer on
/// `stream`: `out[r * ld + p] = in[p * ld_in + r]` for `r < count`, `p < k`, `ld = k` rounded up
/// to 4 (16 bytes), for each of `batch` matrices `stride_in` elements apart, packed `count * ld`
/// apart; an operand shared by the batch (`stride_in` 0) is packed once. Returns the buffer,
/// `ld` and the packed operand's batch stride (0 where shared).
fn pack_tf32(
    stream: &Arc<Stream>,
    input: u64,
    (count, k): (i64, i64),
    ld_in: i64,
    stride_in: i64,
    batch: usize,
) -> Result<(DeviceBuffer<f32>, i64, i64)> {
    let ld = (k + 3) / 4 * 4;
    let (batch, stride) = if stride_in == 0 || batch <= 1 {
        (1, 0)
    } else {
        (batch as i64, count * ld)
    };
    let buf = copy_transposed(
        stream,
        "gemm_wg_pack_tf32",
        input,
        (count, k),
        (ld_in, ld),
        (batch, stride_in),
    )?;
    Ok((buf, ld, stride))
}

/// Queues `kernel` (`gemm_wg_pack_tf32` or `gemm_transpose_b32`, ptx/tile_transpose.cuh): a new
/// buffer on `stream` with `out[r * ld + p] = in[p * ld_in + r]` for `r < count`, `p < k`
/// (rounded to tf32 by the former), for each of `batch` matrices, matrix `b` read from
/// `input + b * stride_in` elements and written `b * count * ld` elements into the buffer. Rows
/// of `ld >= k` elements; the padding columns are not written, and the GEMMs that read these
/// copies never read them.
fn copy_transposed(
    stream: &Arc<Stream>,
    kernel: &str,
    input: u64,
    (count, k): (i64, i64),
    (ld_in, ld): (i64, i64),
    (batch, stride_in): (i64, i64),
) -> Result<DeviceBuffer<f32>> {
    let stride_out = count * ld;
    let len = usize::try_from(stride_out.checked_mul(batch).unwrap_or(-1))
        .map_err(|_| crate::error::invalid(format_args!("gemm: the copy of an operand for {kernel} overflows")))?;
    // SAFETY: the GEMM reads elements (r, p) with r < count, p < k of each matrix, each written
    // by the copy below before the GEMM is queued on the same stream; the padding columns
    // (k <= p < ld) are never read (outside the tensor map; the f32 kernels' copies of a row's
    // last partial vector read only its elements).
    let out = unsafe { DeviceBuffer::<f32>::uninit(stream, len) }?;
    let f = gemm_kernel(stream.context(), kernel)?;
    let (grid_x, grid_y) = ((count as u64).div_ceil(32), (k as u64).div_ceil(32));
    if grid_x > i32::MAX as u64 || grid_y > 65535 {
        bail_invalid!("gemm: an operand of {count} x {k} is too large for {kernel}");
    }
    let o = out.device_ptr();
    // Up to 65535 matrices (grid z) per launch.
    for (first, matrices) in batch_launches(batch as usize) {
        let (i, o) = (
            input + (first as i64 * stride_in * 4) as u64,
            o + (first as i64 * stride_out * 4) as u64,
        );
        let mut l = stream.launch_builder(&f);
        l.arg(&o).arg(&i).arg(&count).arg(&k).arg(&ld_in).arg(&ld);
        l.arg(&stride_in).arg(&stride_out);
        // SAFETY: both kernels take (float* out, const float* in, i64, i64, i64 ld_in, i64
        // ld_out, i64 stride_in, i64 stride_out) and read in[b * stride_in + p * ld_in + r] for
        // b < matrices, r < count, p < k (inside the operand and its batch, which `plan`
        // checked; gemm_transpose_b32 calls its count and k the operand's k and rows) and write
        // out[b * stride_out + r * ld + p], inside `out` (batch * count * ld elements).
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x as u32, grid_y as u32, matrices as u32),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            })
        }?;
    }
    Ok(out)
}

/// Runs a wgmma choice (its tf32 operands already packed by [`run_choice`]): builds the two
/// tensor maps per launch and launches `(tx, ty, params)`.
pub(crate) fn run_wgmma<T: GemmType>(
    stream: &Arc<Stream>,
    choice: &Choice,
    mut params: GemmParams,
    batch: usize,
    activation: Activation,
) -> Result<()> {
    let Some(element) = tma_element::<T>() else {
        bail_invalid!("gemm: {} has no wgmma kernel", T::NAME);
    };
    // The wgmma modules are linked on use (ptx/MANIFEST).
    let kernel = |name: &str| -> Result<Function> {
        let f = gemm_kernel(stream.context(), name)?;
        if choice.smem > f.max_dynamic_shared_memory() {
            f.set_max_dynamic_shared_memory(choice.smem)?;
        }
        Ok(f)
    };
    // X and Y read where they lie by the producer (`gemm_wgu_*`, ptx/gemm_wg_in_place.cuh): no
    // maps for them.
    let in_place = choice.name.starts_with(IN_PLACE_PREFIX);
    // With an activation, a D for the TMA runs the twin kernel of that activation's module
    // (gemm_wg_<act>_<type>); the kernels of gemm_wg_<type> apply it only in their rolled
    // epilogue. The 128 x 192 and 64-row tiles have no twin (only the plain modules hold them),
    // nor have the promoted tf32 kernels of MathMode::Tf32x3.
    let act_name = activation
        .op()
        .filter(|_| {
            has_act_twin(choice.tile)
                && !choice.pair
                && !choice.name.starts_with(super::tf32x3::PROMOTED_PREFIX)
                && !in_place
        })
        .map(|f| choice.name.replacen("gemm_wg_", &format!("gemm_wg_{}_", f.name()), 1));
    let xk = choice.name.ends_with('n');
    let yk = choice.name.ends_with("tn") || choice.name.ends_with("tt");
    // tf32 nn: the kernel computes D^T = Y^T X^T (the m-contiguous operand as X, stored
    // transposed), so X and Y trade places, and with them m and n and the k-contiguity.
    let (xk, yk) = if choice.swap {
        std::mem::swap(&mut params.x, &mut params.y);
        std::mem::swap(&mut params.m, &mut params.n);
        std::mem::swap(&mut params.ldx, &mut params.ldy);
        std::mem::swap(&mut params.sx, &mut params.sy);
        (yk, xk)
    } else {
        (xk, yk)
    };
    let (bm, bn) = choice.tile;
    let tiles = tiles2(params.m as usize, params.n as usize, choice.tile);
    let sms = stream.context().limits().multiprocessor_count.max(1) as usize;
    // 128 bytes of k per box row, or of m/n for an operand that is not k-contiguous.
    let bk = (128 / size_of::<T>()) as u32;
    let sz = size_of::<T>() as u64;
    // A part of a split through partial products (f16, bf16) writes f32 into a scratch, which the
    // kernel stores without the TMA (partials.rs).
    let partial = params.act == ACT_PARTIAL_F32;
    let dsz = if partial { 4 } else { sz };
    for (done, count) in batch_launches(batch) {
        // The kernel numbers its tiles with 32-bit integers.
        if tiles.saturating_mul(count) > i32::MAX as usize {
            bail_invalid!(
                "gemm: {} x {} in {count} batch entries is {} tiles, more than one launch holds",
                params.m,
                params.n,
                tiles.saturating_mul(count)
            );
        }
        // The k split (the 128 x 64 and 128 x 128 tiles): part s of a tile sums k-tiles
        // [s * kper, (s + 1) * kper); `ws` holds a 128 x bn f32 partial tile per part and
        // `counters` two zeroed arrival counters per tile (which the kernel leaves zeroed), both
        // freed in stream order after the launch.
        let ktiles = (params.k as usize).div_ceil(bk as usize);
        let parts = match choice.split_k {
            Some(parts) if splits_k(choice.tile) => wg_parts(ktiles, parts as usize),
            _ => 1,
        };
        let kper = ktiles.div_ceil(parts).max(1);
        // Pairs: a unit is two tiles side by side (the last of an odd column count alone).
        let units = if choice.pair {
            tiles2(params.m as usize, params.n as usize, (bm, 2 * bn)).saturating_mul(count)
        } else {
            tiles.saturating_mul(count).saturating_mul(parts)
        };
        if units > i32::MAX as usize {
            bail_invalid!(
                "gemm: the k split of {} x {} makes {units} blocks' work, more than one launch holds",
                params.m,
                params.n
            );
        }
        let mut split = WgSplitParams {
            parts: 1,
            kper: kper as i32,
            ..Default::default()
        };
        let mut scratch = None;
        if parts > 1 {
            let Some(len) = tiles.saturating_mul(count).checked_mul(parts * bm * bn) else {
                bail_invalid!("gemm: the split-k buffer for {} x {} overflows", params.m, params.n);
            };
            let (ws, counters) = split_scratch(stream, len, 2 * tiles * count)?;
            split = WgSplitParams {
                ws: ws.device_ptr(),
                counters: counters.device_ptr(),
                parts: parts as i32,
                kper: kper as i32,
            };
            scratch = Some((ws, counters));
        }
        let mut p = params;
        p.x += done as u64 * params.sx as u64 * sz;
        p.y += done as u64 * params.sy as u64 * sz;
        p.d += done as u64 * params.sd as u64 * dsz;
        p.batch = count as i32;
        let [x, y] = tma_operands(&p, element, xk, yk, count);
        // X read in place (`choice.x_in_place`) goes through no map.
        let tx = if choice.x_in_place || in_place {
            TensorMap::unused()
        } else if xk {
            // Pairs: each block of a cluster loads (and multicasts) one 64-row half of X's tile.
            x.encode(bk, if choice.pair { 64 } else { bm as u32 })?
        } else {
            x.encode(bk, bk)?
        };
        let ty = if in_place {
            TensorMap::unused()
        } else if yk {
            y.encode(bk, bn as u32)?
        } else {
            y.encode(bk, bk)?
        };
        // D through the TMA (C read through it when beta != 0): D's n
        // x m (x count) extents at ldd and sd, boxes of 128 bytes x 64 rows; the swapped kernels store
        // D transposed, so there the rows (the swapped m) are the contiguous side, in boxes of 32 rows
        // x 32 columns. Not for a batch that writes one D (sd = 0), which the map would address as one
        // matrix, nor for lines whose length is not a multiple of 16 bytes: on the H100 a box over f16
        // rows of 7 elements (14 bytes) also wrote each row's 8th element, so the TMA's clipping is
        // relied on only at 16-byte bounds (rows of 200 and 1000 elements, ending inside a box, kept
        // their padding in tests/gpu_blas_hopper.rs).
        let (inner, outer, box_outer) = if choice.swap { (p.m, p.n, 32) } else { (p.n, p.m, 64) };
        let d = TmaMatrix {
            address: p.d,
            element,
            inner: inner as u64,
            outer: outer as u64,
            ld: p.ldd as u64,
            batch: count as u64,
            stride: p.sd as u64,
        };
        let dstore = !partial && d.fits() && (count == 1 || p.sd != 0) && (d.inner * sz) % 16 == 0;
        let td = if dstore {
            d.encode(bk, box_outer)?
        } else {
            TensorMap::unused()
        };
        let f = match &act_name {
            Some(name) if dstore => kernel(name)?,
            _ => kernel(&choice.name)?,
        };
        // Persistent blocks: one per multiprocessor at most, or (pairs) one cluster of 2 per
        // pair of tiles, at most as many clusters as fit at once (the driver places a cluster
        // within one GPU processing cluster; half the multiprocessors if it cannot say).
        let grid_x = if choice.pair {
            let fit = f
                .max_active_clusters_cached((2, 1, 1), (choice.threads, 1, 1), choice.smem)
                .ok()
                .filter(|&c| c > 0)
                .map_or(sms / 2, |c| c as usize);
            2 * units.min(fit.max(1)) as u32
        } else {
            units.min(sms) as u32
        };
        // Bit 0: td is valid; bit 1: X is read in place (ptx/gemm_wg.cuh, the launch contract).
        let flags = i32::from(dstore) | (i32::from(choice.x_in_place) << 1);
        let mut l = stream.launch_builder(&f);
        l.arg(&tx).arg(&ty).arg(&td).arg(&p).arg(&flags).arg(&split);
        // Every thread of the kernels runs griddepcontrol.wait before touching global memory
        // (`pdl_rule` in ptx/gemm_wg.cuh), so the launch may overlap the stream's previous
        // kernel: where its units are short ([`OVERLAP_MAX_KTILES`]); not behind the split's
        // memset of its counters, which is no kernel.
        if scratch.is_none() && kper <= OVERLAP_MAX_KTILES {
            l.overlap_previous();
        }
        // SAFETY: the kernel (and its activation twin) takes (TensorMap, TensorMap, TensorMap,
        // GemmParams, i32, WgSplit) by value and waits for the previous kernel before any
        // access to global memory (the launch may overlap it); with parts > 1 `ws` holds parts
        // partial tiles of bm x bn floats for each of the launch's tiles and `counters` two per
        // tile, as the kernel indexes them. The maps of X and Y cover exactly the operands' m x k and
        // k x n extents (TMA bounds zero-fill the rest of each box); X read in place (flags bit
        // 1, only for the kernels that take it: `x_in_place_applies`) is read by the kernel at
        // rows < m and k < k of each batch entry at ldx / sx, which `plan` checked lie inside
        // the operand, from a 4-byte aligned address (`choose`); the map of D, when dstore
        // is 1, covers exactly D's rows < m and cols < n of each of `count` matrices at ldd / sd
        // (transposed for the swapped kernels; TMA stores are clipped there); with dstore 0 the
        // kernel never reads td; `plan` checked that every element of D (rows < m, cols < n of
        // each of `count` matrices at ldd / sd) and of the bias lies inside C and the bias. A swapped (tf32 nn)
        // kernel writes D[r][c] of the swapped m x n at d[c * ldd + r], which is element (c, r)
        // of the unswapped D, and reads the bias at r < swapped m = unswapped n: the same ranges.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (grid_x, 1, 1),
                block_dim: (choice.threads, 1, 1),
                shared_mem_bytes: choice.smem,
            })
        }?;
        drop(scratch);
    }
    Ok(())
}

/// One operand for `gemm_pack_b*` (`struct PackOperand` in ptx/gemm_pack.cu); `rows == 0`
/// skips it.
#[derive(Copy, Clone, Debug, Default)]
#[repr(C)]
struct PackOperand {
    out: u64,
    input: u64,
    rows: i64,
    cols: i64,
    ld_in: i64,
    stride_in: i64,
    ld_out: i64,
    batch: i64,
}
// SAFETY: repr(C) plain data matching the CUDA struct field for field (eight 8-byte fields, no
// padding); every bit pattern is valid.
unsafe impl DeviceRepr for PackOperand {}

/// Copies the operands marked in `choice.align` into one aligned buffer (`gemm_pack_b16/32/64`,
/// ptx/gemm_pack.cu, one launch for both) on `stream` and points `params` at the copies: each
/// keeps its orientation, its contiguous side padded with zeros to a multiple of 16 bytes, its
/// batch entries back to back (one matrix when its batch stride is 0). The buffer is returned to
/// be kept until the GEMM is queued; its free is ordered after it on the same stream.
pub(crate) fn align_operands<T: GemmType>(
    stream: &Arc<Stream>,
    plan: &Plan,
    choice: &Choice,
    params: &mut GemmParams,
    batch: usize,
) -> Result<Option<DeviceBuffer<T>>> {
    if !choice.align.iter().any(|&a| a) {
        return Ok(None);
    }
    let sz = size_of::<T>() as i64;
    let vec = 16 / sz;
    let storage = operand_storage(plan, params);
    let overflow = || crate::error::invalid(format_args!("gemm: the aligned copy of an operand overflows"));
    // Each operand's descriptor with its offset (in elements) into the shared buffer, rounded
    // up to 512 bytes like the buffer itself: the second copy starting mid-line cost the
    // wgmma kernel's TMA loads a quarter of their speed (f16 12345 x 321 x 4567 on the H100).
    let mut ops = [PackOperand::default(); 2];
    let mut offsets = [0i64; 2];
    let mut len = 0i64;
    for (i, &(rows, cols)) in storage.iter().enumerate() {
        if !choice.align[i] {
            continue;
        }
        let (input, ld_in, stride_in) = if i == 0 {
            (params.x, params.ldx, params.sx)
        } else {
            (params.y, params.ldy, params.sy)
        };
        let copies = if stride_in == 0 { 1 } else { batch as i64 };
        let ld_out = packed_ld(cols, sz);
        ops[i] = PackOperand {
            out: 0,
            input,
            rows,
            cols,
            ld_in,
            stride_in,
            ld_out,
            batch: copies,
        };
        offsets[i] = (len + 512 / sz - 1) / (512 / sz) * (512 / sz);
        len = rows
            .checked_mul(ld_out)
            .and_then(|l| l.checked_mul(copies))
            .and_then(|l| l.checked_add(offsets[i]))
            .ok_or_else(overflow)?;
    }
    let len = usize::try_from(len).map_err(|_| overflow())?;
    // SAFETY: the pack kernel below writes every element of the buffer (padding included)
    // before the GEMM that reads it is queued on the same stream.
    let buf = unsafe { DeviceBuffer::<T>::uninit(stream, len) }?;
    let base = buf.device_ptr();
    for i in 0..2 {
        if choice.align[i] {
            let op = &mut ops[i];
            op.out = base + (offsets[i] * sz) as u64;
            let new_stride = if op.stride_in == 0 { 0 } else { op.rows * op.ld_out };
            if i == 0 {
                (params.x, params.ldx, params.sx) = (op.out, op.ld_out, new_stride);
            } else {
                (params.y, params.ldy, params.sy) = (op.out, op.ld_out, new_stride);
            }
        }
    }
    // grid.y 2 copies both (an unmarked descriptor has rows 0 and is skipped); with only Y,
    // its descriptor goes first.
    let (first, second, grid_y) = match choice.align {
        [true, true] => (ops[0], ops[1], 2),
        [true, false] => (ops[0], ops[1], 1),
        _ => (ops[1], ops[0], 1),
    };
    let f = stream.context().kernel(&format!("gemm_pack_b{}", sz * 8))?;
    let sms = stream.context().limits().multiprocessor_count.max(1) as i64;
    let max_blocks = sms * 16;
    // The kernel's indices are 32-bit: a launch copies at most `limit` vectors of a descriptor
    // (batch * rows * vectors per row), so a longer batch takes several launches of `chunk`
    // matrices.
    let limit = u32::MAX as i64 - max_blocks * 256;
    let matrix = |op: PackOperand| op.rows * (op.ld_out / vec);
    let largest = matrix(first).max(matrix(second));
    if largest > limit {
        bail_invalid!("gemm: an operand of {largest} vectors is too large for its aligned copy");
    }
    let chunk = (limit / largest.max(1)).max(1);
    let batches = first.batch.max(second.batch);
    let mut b0 = 0i64;
    while b0 < batches {
        // The matrices [b0, b0 + n) of each descriptor; one shared by the batch (batch 1) is
        // copied by the first launch only.
        let part = |op: PackOperand| -> PackOperand {
            let n = (op.batch - b0).clamp(0, chunk);
            PackOperand {
                out: op.out + (b0.min(op.batch) * op.rows * op.ld_out * sz) as u64,
                input: op.input + (b0.min(op.batch) * op.stride_in * sz) as u64,
                rows: if n > 0 { op.rows } else { 0 },
                batch: n.max(1),
                ..op
            }
        };
        let (x, y) = (part(first), part(second));
        // Rows of v <= 32 16-byte vectors that fill 7 / 8 of the least power of two lanes at or
        // above v take those lanes (by_rows and row_lanes_log2 in the kernel), other rows a
        // thread per vector: the threads that cover the copy at once.
        let threads = |op: PackOperand| {
            let v = (op.ld_out / vec).max(1) as u64;
            let lanes = v.next_power_of_two();
            (op.rows * op.batch) as u64 * if v <= 32 && v * 8 >= lanes * 7 { lanes } else { v }
        };
        let blocks = threads(x).max(threads(y)).div_ceil(256).clamp(1, max_blocks as u64) as u32;
        let mut l = stream.launch_builder(&f);
        l.arg(&x).arg(&y);
        // SAFETY: gemm_pack_b<bits>(PackOperand x, PackOperand y) with grid.y = 1 reads x only. For
        // each descriptor it reads in[b * stride_in + r * ld_in + c] for b < batch, r < rows,
        // c < cols: the operand's elements (matrices b0 .. b0 + batch of it), inside its buffer
        // as `plan` checked; it writes batch * rows * ld_out elements from `out`, which lie
        // inside `buf` at the descriptor's offset (the lengths were summed above), in 16-byte
        // vectors (`buf` is 512-byte aligned, offsets and ld_out are multiples of 16 bytes).
        // batch * rows * vectors per row <= limit keeps the kernel's 32-bit indices from
        // wrapping.
        unsafe {
            l.launch(LaunchConfig {
                grid_dim: (blocks, grid_y, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        b0 += chunk;
    }
    Ok(Some(buf))
}
