//! Device handles and properties.

use super::*;

/// The device handle of an ordinal.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let first = result::device::get(0)?;
/// assert!(result::device::get(10_000).is_err());
/// # let _ = first;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get(ordinal: c_int) -> Result<sys::CUdevice, DriverError> {
    let mut dev = 0;
    // SAFETY: writes one handle through a valid pointer.
    unsafe { cu!(cuDeviceGet(&mut dev, ordinal))? };
    Ok(dev)
}

/// How many devices the driver sees.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// println!("{} devices", result::device::get_count()?);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_count() -> Result<c_int, DriverError> {
    let mut count = 0;
    // SAFETY: writes one int through a valid pointer.
    unsafe { cu!(cuDeviceGetCount(&mut count))? };
    Ok(count)
}

/// The device's memory in bytes.
///
/// # Safety
/// `dev` must be a handle from [`get`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: `dev` came from device::get.
/// println!("{} GiB", unsafe { result::device::total_mem(dev) }? >> 30);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn total_mem(dev: sys::CUdevice) -> Result<usize, DriverError> {
    let mut bytes = 0;
    // SAFETY: writes one size through a valid pointer; the caller vouches for `dev`.
    unsafe { cu!(cuDeviceTotalMem_v2(&mut bytes, dev))? };
    Ok(bytes)
}

/// One device attribute.
///
/// # Safety
/// `dev` must be a handle from [`get`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: `dev` came from device::get.
/// let sms = unsafe { result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) }?;
/// assert!(sms > 0);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_attribute(dev: sys::CUdevice, attrib: sys::CUdevice_attribute) -> Result<i32, DriverError> {
    let mut value = 0;
    // SAFETY: writes one int through a valid pointer; the caller vouches for `dev`.
    unsafe { cu!(cuDeviceGetAttribute(&mut value, attrib, dev))? };
    Ok(value)
}

/// The device's name.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// println!("{}", result::device::get_name(dev)?);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_name(dev: sys::CUdevice) -> Result<String, DriverError> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL included.
    unsafe { cu!(cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev))? };
    // SAFETY: the buffer was zeroed, so it is NUL-terminated whatever the driver wrote.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// The device's UUID.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// println!("{:?}", result::device::get_uuid(dev)?.bytes);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn get_uuid(dev: sys::CUdevice) -> Result<sys::CUuuid, DriverError> {
    let mut uuid = sys::CUuuid::default();
    // SAFETY: writes one CUuuid through a valid pointer.
    unsafe { cu!(cuDeviceGetUuid_v2(&mut uuid, dev))? };
    Ok(uuid)
}

/// The device's default memory pool.
///
/// # Safety
/// `dev` must be a handle from [`get`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: `dev` came from device::get.
/// let pool = unsafe { result::device::get_default_mem_pool(dev) }?;
/// assert!(!pool.is_null());
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_default_mem_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
    let mut pool = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer; the caller vouches for `dev`.
    unsafe { cu!(cuDeviceGetDefaultMemPool(&mut pool, dev))? };
    Ok(pool)
}

/// The device's current memory pool.
///
/// # Safety
/// `dev` must be a handle from [`get`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: `dev` came from device::get.
/// let pool = unsafe { result::device::get_mem_pool(dev) }?;
/// # let _ = pool;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_mem_pool(dev: sys::CUdevice) -> Result<sys::CUmemoryPool, DriverError> {
    let mut pool = std::ptr::null_mut();
    // SAFETY: writes one handle through a valid pointer; the caller vouches for `dev`.
    unsafe { cu!(cuDeviceGetMemPool(&mut pool, dev))? };
    Ok(pool)
}

/// Sets the device's current memory pool.
///
/// # Safety
/// `dev` must be a handle from [`get`] and `pool` a live pool of that device.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: the default pool of the same device.
/// unsafe { result::device::set_mem_pool(dev, result::device::get_default_mem_pool(dev)?) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn set_mem_pool(dev: sys::CUdevice, pool: sys::CUmemoryPool) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for both handles.
    unsafe { cu!(cuDeviceSetMemPool(dev, pool)) }
}
