//! Memory pools.

use super::*;

/// Creates a memory pool.
///
/// # Safety
/// `pool_props` must point to valid properties.
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
pub unsafe fn destroy(pool: sys::CUmemoryPool) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuMemPoolDestroy(pool)) }
}

/// Releases memory the pool holds beyond `min_bytes_to_keep`.
///
/// # Safety
/// `pool` must be live.
pub unsafe fn trim_to(pool: sys::CUmemoryPool, min_bytes_to_keep: usize) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuMemPoolTrimTo(pool, min_bytes_to_keep)) }
}

/// Reads a pool attribute into `value` (whose type the attribute decides).
///
/// # Safety
/// `pool` must be live and `value` point to the attribute's type.
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
