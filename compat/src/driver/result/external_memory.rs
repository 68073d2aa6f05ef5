//! External memory (another API's allocation imported into CUDA).

use super::*;

/// Imports an opaque file descriptor of `size` bytes (the driver takes ownership of `fd`).
///
/// # Safety
/// `fd` must be an exportable memory handle of at least `size` bytes.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let fd: std::os::fd::RawFd = 42; // exported by Vulkan (VK_KHR_external_memory_fd)
/// // SAFETY: `fd` is an exported allocation of at least 1 MiB; the driver takes ownership of it.
/// let ext = unsafe { result::external_memory::import_external_memory_opaque_fd(fd, 1 << 20) }?;
/// # let _ = ext;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
#[cfg(unix)]
pub unsafe fn import_external_memory_opaque_fd(
    fd: std::os::fd::RawFd,
    size: u64,
) -> Result<sys::CUexternalMemory, DriverError> {
    let mut desc = sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        type_: sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
        size,
        ..Default::default()
    };
    desc.handle.fd = fd;
    let mut memory = std::ptr::null_mut();
    // SAFETY: a complete descriptor; writes one handle; the caller vouches for `fd`.
    unsafe { cu!(cuImportExternalMemory(&mut memory, &desc))? };
    Ok(memory)
}

/// Destroys an imported external memory object.
///
/// # Safety
/// `external_memory` must be live; buffers mapped from it are not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let ext = unsafe { result::external_memory::import_external_memory_opaque_fd(42, 1 << 20) }?;
/// // SAFETY: imported above, its mappings no longer used.
/// unsafe { result::external_memory::destroy_external_memory(ext) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn destroy_external_memory(external_memory: sys::CUexternalMemory) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { cu!(cuDestroyExternalMemory(external_memory)) }
}

/// Maps `size` bytes at `offset` of external memory as device memory.
///
/// # Safety
/// `external_memory` must be live and the range inside it.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let ext = unsafe { result::external_memory::import_external_memory_opaque_fd(42, 1 << 20) }?;
/// // SAFETY: the range lies inside the imported allocation.
/// let ptr = unsafe { result::external_memory::get_mapped_buffer(ext, 0, 1 << 20) }?;
/// # let _ = ptr;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_mapped_buffer(
    external_memory: sys::CUexternalMemory,
    offset: u64,
    size: u64,
) -> Result<sys::CUdeviceptr, DriverError> {
    let desc = sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
        offset,
        size,
        ..Default::default()
    };
    let mut dptr = 0;
    // SAFETY: a complete descriptor; writes one pointer; the caller vouches for the handle.
    unsafe { cu!(cuExternalMemoryGetMappedBuffer(&mut dptr, external_memory, &desc))? };
    Ok(dptr)
}
