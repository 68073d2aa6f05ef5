//! Memory pools.

use super::*;

/// Creates a memory pool.
///
/// # Safety
/// `pool_props` must point to valid properties.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
/// props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
/// props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
/// props.location.id = dev;
/// // SAFETY: `props` describes a device pool; the caller destroys it.
/// let pool = unsafe { result::mem_pool::create(&props) }?;
/// // SAFETY: no allocation of it is live.
/// unsafe { result::mem_pool::destroy(pool) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn create(pool_props: *const sys::CUmemPoolProps) -> Result<sys::CUmemoryPool, DriverError> {
    let mut pool = std::ptr::null_mut();
    // SAFETY: the caller vouches for the properties; writes one handle.
    unsafe { cu!(cuMemPoolCreate(&mut pool, pool_props))? };
    Ok(pool)
}

/// Destroys a memory pool.
///
/// # Safety
/// `pool` must be live and not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
/// # props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
/// # props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
/// # let pool = unsafe { result::mem_pool::create(&props) }?;
/// // SAFETY: created above, no allocation of it is live.
/// unsafe { result::mem_pool::destroy(pool) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn destroy(pool: sys::CUmemoryPool) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuMemPoolDestroy(pool)) }
}

/// Releases memory the pool holds beyond `min_bytes_to_keep`.
///
/// # Safety
/// `pool` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: the device's default pool.
/// unsafe { result::mem_pool::trim_to(result::device::get_default_mem_pool(dev)?, 0) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn trim_to(pool: sys::CUmemoryPool, min_bytes_to_keep: usize) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuMemPoolTrimTo(pool, min_bytes_to_keep)) }
}

/// Reads a pool attribute into `value` (whose type the attribute decides).
///
/// # Safety
/// `pool` must be live and `value` point to the attribute's type.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let mut used: u64 = 0;
/// // SAFETY: the attribute is a u64, written through `used`.
/// unsafe {
///     let pool = result::device::get_default_mem_pool(dev)?;
///     result::mem_pool::get_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT, (&mut used as *mut u64).cast())?;
/// }
/// println!("{used} B in use");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_attribute(
    pool: sys::CUmemoryPool,
    attr: sys::CUmemPool_attribute,
    value: *mut c_void,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle and the value's type.
    unsafe { cu!(cuMemPoolGetAttribute(pool, attr, value)) }
}

/// Sets a pool attribute from `value` (whose type the attribute decides).
///
/// # Safety
/// `pool` must be live and `value` point to the attribute's type.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let mut keep: u64 = 1 << 30;
/// // SAFETY: the attribute is a u64, read through `keep`.
/// unsafe {
///     let pool = result::device::get_default_mem_pool(dev)?;
///     result::mem_pool::set_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, (&mut keep as *mut u64).cast())?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn set_attribute(
    pool: sys::CUmemoryPool,
    attr: sys::CUmemPool_attribute,
    value: *mut c_void,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle and the value's type.
    unsafe { cu!(cuMemPoolSetAttribute(pool, attr, value)) }
}

/// Allocates `num_bytes` from `pool` on `stream`.
///
/// # Safety
/// Both handles must be live; the memory is the caller's to free.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: the allocation is freed on the same stream before the pool goes.
/// unsafe {
///     let pool = result::device::get_default_mem_pool(dev)?;
///     let ptr = result::mem_pool::alloc_async(pool, 1 << 20, stream)?;
///     result::free_async(ptr, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn alloc_async(
    pool: sys::CUmemoryPool,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<sys::CUdeviceptr, DriverError> {
    let mut dptr = 0;
    // SAFETY: writes one pointer; the caller vouches for both handles.
    unsafe { cu!(cuMemAllocFromPoolAsync(&mut dptr, num_bytes, pool, stream))? };
    Ok(dptr)
}
