//! Occupancy queries.

use super::*;

/// Dynamic shared memory available per block for `num_blocks` blocks of `block_size` per SM.
///
/// # Safety
/// `f` must be a live function handle.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: a live function.
/// let smem = unsafe { result::occupancy::available_dynamic_shared_mem_per_block(f, 2, 256) }?;
/// println!("{smem} B");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn available_dynamic_shared_mem_per_block(
    f: sys::CUfunction,
    num_blocks: c_int,
    block_size: c_int,
) -> Result<usize, DriverError> {
    let mut bytes = 0;
    // SAFETY: writes one size; the caller vouches for `f`.
    unsafe {
        cu!(cuOccupancyAvailableDynamicSMemPerBlock(
            &mut bytes, f, num_blocks, block_size
        ))?
    };
    Ok(bytes)
}

/// Resident blocks per SM.
///
/// # Safety
/// `f` must be a live function handle.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: a live function.
/// let blocks = unsafe { result::occupancy::max_active_block_per_multiprocessor(f, 256, 0) }?;
/// println!("{blocks} blocks per SM");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn max_active_block_per_multiprocessor(
    f: sys::CUfunction,
    block_size: c_int,
    dynamic_smem_size: usize,
) -> Result<i32, DriverError> {
    let mut blocks = 0;
    // SAFETY: writes one int; the caller vouches for `f`.
    unsafe {
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut blocks,
            f,
            block_size,
            dynamic_smem_size
        ))?
    };
    Ok(blocks)
}

/// Resident blocks per SM, with `CUoccupancy_flags`.
///
/// # Safety
/// `f` must be a live function handle.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: a live function.
/// let blocks = unsafe { result::occupancy::max_active_block_per_multiprocessor_with_flags(f, 256, 0, 0) }?;
/// # let _ = blocks;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn max_active_block_per_multiprocessor_with_flags(
    f: sys::CUfunction,
    block_size: c_int,
    dynamic_smem_size: usize,
    flags: c_uint,
) -> Result<i32, DriverError> {
    let mut blocks = 0;
    // SAFETY: writes one int; the caller vouches for `f`.
    unsafe {
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
            &mut blocks,
            f,
            block_size,
            dynamic_smem_size,
            flags
        ))?
    };
    Ok(blocks)
}

/// (minimum grid size, block size) for the best occupancy.
///
/// # Safety
/// `f` must be a live function handle; the callback, if any, must be safe to call.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: a live function; no per-block-size shared memory callback.
/// let (grid, block) = unsafe { result::occupancy::max_potential_block_size(f, None, 0, 0) }?;
/// println!("{block} threads, {grid} blocks");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn max_potential_block_size(
    f: sys::CUfunction,
    block_size_to_dynamic_smem_size: sys::CUoccupancyB2DSize,
    dynamic_smem_size: usize,
    block_size_limit: c_int,
) -> Result<(i32, i32), DriverError> {
    // SAFETY: forwarded to the caller.
    unsafe {
        max_potential_block_size_with_flags(
            f,
            block_size_to_dynamic_smem_size,
            dynamic_smem_size,
            block_size_limit,
            0,
        )
    }
}

/// (minimum grid size, block size) for the best occupancy, with `CUoccupancy_flags`.
///
/// # Safety
/// `f` must be a live function handle; the callback, if any, must be safe to call.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// // SAFETY: a live function; no per-block-size shared memory callback.
/// let (grid, block) = unsafe { result::occupancy::max_potential_block_size_with_flags(f, None, 0, 0, 0) }?;
/// # let _ = (grid, block);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn max_potential_block_size_with_flags(
    f: sys::CUfunction,
    block_size_to_dynamic_smem_size: sys::CUoccupancyB2DSize,
    dynamic_smem_size: usize,
    block_size_limit: c_int,
    flags: c_uint,
) -> Result<(i32, i32), DriverError> {
    let (mut grid, mut block) = (0, 0);
    // SAFETY: writes two ints; the caller vouches for `f` and the callback.
    unsafe {
        cu!(cuOccupancyMaxPotentialBlockSizeWithFlags(
            &mut grid,
            &mut block,
            f,
            block_size_to_dynamic_smem_size,
            dynamic_smem_size,
            block_size_limit,
            flags
        ))?
    };
    Ok((grid, block))
}
