//! cudarc's `driver::result`: one thin function per driver call, returning `Result`.
//!
//! Each function calls the entry point through [`sys`](super::sys) (cudrv's lazily loaded table)
//! and turns its `CUresult` into `Result<_, DriverError>`; a driver that lacks the entry point
//! gives `DriverError(CUDA_ERROR_NOT_FOUND)` with the symbol's name as the
//! [`detail`](DriverError::detail). Nothing here keeps state: handles created here are the
//! caller's to destroy, as with the C API. The names and signatures are cudarc 0.19's.
//!
//! ```no_run
//! use cudrv_compat::imp::driver::{result, DriverError};
//! result::init()?;
//! let dev = result::device::get(0)?;
//! println!("{} devices, the first is {}", result::device::get_count()?, result::device::get_name(dev)?);
//! # Ok::<(), DriverError>(())
//! ```

use std::ffi::{c_int, c_uchar, c_uint, c_void, CString};
use std::mem::{size_of_val, MaybeUninit};

use super::cu;
pub use super::error::DriverError;
use super::sys;

impl sys::CUresult {
    /// `Ok(())` for `CUDA_SUCCESS`, the code as a [`DriverError`] otherwise.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::{result, sys};
    /// # use std::ffi::CString;
    /// # result::init()?;
    /// # let dev = result::device::get(0)?;
    /// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
    /// # unsafe { result::ctx::set_current(ctx) }?;
    /// assert!(sys::CUresult::CUDA_SUCCESS.result().is_ok());
    /// assert!(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY.result().is_err());
    /// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
    /// ```
    pub fn result(self) -> Result<(), DriverError> {
        super::error::check(self)
    }
}

/// Initialises the driver (`cuInit(0)`); harmless to repeat.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// result::init()?; // every process calls it once before anything else
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn init() -> Result<(), DriverError> {
    // SAFETY: a flags word, no pointers.
    unsafe { cu!(cuInit(0)) }
}

pub mod device;

pub mod function;

pub mod occupancy;

pub mod primary_ctx;

pub mod ctx;

pub mod stream;

/// Allocates `num_bytes` on `stream` (stream-ordered).
///
/// # Safety
/// `stream` must be live; the memory is the caller's to free.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: freed in stream order below.
/// unsafe {
///     let p = result::malloc_async(stream, 4096)?;
///     result::free_async(p, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn malloc_async(stream: sys::CUstream, num_bytes: usize) -> Result<sys::CUdeviceptr, DriverError> {
    let mut dptr = 0;
    // SAFETY: writes one pointer; the caller vouches for `stream`.
    unsafe { cu!(cuMemAllocAsync(&mut dptr, num_bytes, stream))? };
    Ok(dptr)
}

/// Allocates `num_bytes` of device memory.
///
/// # Safety
/// A context must be current; the memory is the caller's to free.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: freed below, not used after.
/// unsafe {
///     let p = result::malloc_sync(4096)?;
///     result::free_sync(p)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn malloc_sync(num_bytes: usize) -> Result<sys::CUdeviceptr, DriverError> {
    let mut dptr = 0;
    // SAFETY: writes one pointer through a valid pointer.
    unsafe { cu!(cuMemAlloc_v2(&mut dptr, num_bytes))? };
    Ok(dptr)
}

/// Allocates `num_bytes` of managed memory.
///
/// # Safety
/// A context must be current; the memory is the caller's to free.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: freed below, not used after.
/// unsafe {
///     let p = result::malloc_managed(4096, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)?;
///     result::free_sync(p)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn malloc_managed(num_bytes: usize, flags: sys::CUmemAttach_flags) -> Result<sys::CUdeviceptr, DriverError> {
    let mut dptr = 0;
    // SAFETY: writes one pointer through a valid pointer.
    unsafe { cu!(cuMemAllocManaged(&mut dptr, num_bytes, flags as c_uint))? };
    Ok(dptr)
}

/// Allocates `num_bytes` of page-locked host memory.
///
/// # Safety
/// A context must be current; free with [`free_host`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: freed below, not used after.
/// unsafe {
///     let p = result::malloc_host(4096, 0)?;
///     result::free_host(p)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn malloc_host(num_bytes: usize, flags: c_uint) -> Result<*mut c_void, DriverError> {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: writes one pointer through a valid pointer.
    unsafe { cu!(cuMemHostAlloc(&mut ptr, num_bytes, flags))? };
    Ok(ptr)
}

/// Frees memory from [`malloc_host`].
///
/// # Safety
/// `host_ptr` must come from [`malloc_host`] and not be used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: from malloc_host, freed once.
/// unsafe { result::free_host(result::malloc_host(64, 0)?) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn free_host(host_ptr: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the pointer.
    unsafe { cu!(cuMemFreeHost(host_ptr)) }
}

/// Advises the driver about how a managed range will be used.
///
/// # Safety
/// The range must be managed memory.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// # let mut loc: sys::CUmemLocation = unsafe { std::mem::zeroed() };
/// loc.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
/// loc.id = dev;
/// // SAFETY: a managed allocation of 1 MiB.
/// unsafe {
///     let p = result::malloc_managed(1 << 20, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)?;
///     result::mem_advise(p, 1 << 20, sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn mem_advise(
    dptr: sys::CUdeviceptr,
    num_bytes: usize,
    advice: sys::CUmem_advise,
    location: sys::CUmemLocation,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range.
    unsafe { cu!(cuMemAdvise_v2(dptr, num_bytes, advice, location)) }
}

/// Prefetches a managed range to `location` on `stream`.
///
/// # Safety
/// The range must be managed memory and `stream` live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// # let mut loc: sys::CUmemLocation = unsafe { std::mem::zeroed() };
/// loc.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
/// loc.id = dev;
/// // SAFETY: a managed allocation of 1 MiB, prefetched to the device before kernels use it.
/// unsafe {
///     let p = result::malloc_managed(1 << 20, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)?;
///     result::mem_prefetch_async(p, 1 << 20, loc, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn mem_prefetch_async(
    dptr: sys::CUdeviceptr,
    num_bytes: usize,
    location: sys::CUmemLocation,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range and the stream.
    unsafe { cu!(cuMemPrefetchAsync_v2(dptr, num_bytes, location, 0, stream)) }
}

/// Frees stream-ordered memory on `stream`.
///
/// # Safety
/// `dptr` must be a live allocation not used by later work.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: allocated on the same stream, not used after.
/// unsafe { result::free_async(result::malloc_async(stream, 256)?, stream) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn free_async(dptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the allocation and the stream.
    unsafe { cu!(cuMemFreeAsync(dptr, stream)) }
}

/// Frees device memory.
///
/// # Safety
/// `dptr` must be a live allocation not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: from malloc_sync, freed once.
/// unsafe { result::free_sync(result::malloc_sync(256)?) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn free_sync(dptr: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the allocation.
    unsafe { cu!(cuMemFree_v2(dptr)) }
}

/// The same as [`free_sync`] (cudarc keeps both names).
///
/// # Safety
/// As [`free_sync`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: from malloc_sync, freed once.
/// unsafe { result::memory_free(result::malloc_sync(256)?) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memory_free(device_ptr: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller.
    unsafe { free_sync(device_ptr) }
}

/// Sets `num_bytes` bytes to `uc` on `stream`.
///
/// # Safety
/// The range must be device memory and `stream` live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: 256 bytes of a live allocation.
/// unsafe {
///     let p = result::malloc_async(stream, 256)?;
///     result::memset_d8_async(p, 0xff, 256, stream)?;
///     result::free_async(p, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memset_d8_async(
    dptr: sys::CUdeviceptr,
    uc: c_uchar,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range and the stream.
    unsafe { cu!(cuMemsetD8Async(dptr, uc, num_bytes, stream)) }
}

/// Sets `num_bytes` bytes to `uc`.
///
/// # Safety
/// The range must be device memory.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: 256 bytes of a live allocation.
/// unsafe {
///     let p = result::malloc_sync(256)?;
///     result::memset_d8_sync(p, 0, 256)?;
///     result::free_sync(p)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memset_d8_sync(dptr: sys::CUdeviceptr, uc: c_uchar, num_bytes: usize) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the range.
    unsafe { cu!(cuMemsetD8_v2(dptr, uc, num_bytes)) }
}

/// Copies `src` to device memory at `dst` on `stream`.
///
/// # Safety
/// `dst` must hold `size_of_val(src)` bytes; `src` must stay alive and unmodified until the copy
/// is done (pinned memory makes it truly asynchronous).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// let host = [1.0f32; 64];
/// // SAFETY: the destination holds 256 bytes; `host` outlives the copy (synchronized below).
/// unsafe {
///     let p = result::malloc_async(stream, 256)?;
///     result::memcpy_htod_async(p, &host, stream)?;
///     result::stream::synchronize(stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_htod_async<T>(dst: sys::CUdeviceptr, src: &[T], stream: sys::CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the destination, the stream and the source's lifetime.
    unsafe { cu!(cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), size_of_val(src), stream)) }
}

/// Copies `src` to device memory at `dst`.
///
/// # Safety
/// `dst` must hold `size_of_val(src)` bytes.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: the destination holds 16 bytes.
/// unsafe { result::memcpy_htod_sync(result::malloc_sync(16)?, &[1u32, 2, 3, 4]) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_htod_sync<T>(dst: sys::CUdeviceptr, src: &[T]) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the destination.
    unsafe { cu!(cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), size_of_val(src))) }
}

/// Copies device memory at `src` into `dst` on `stream`.
///
/// # Safety
/// `src` must hold `size_of_val(dst)` bytes of valid `T`s; `dst` must stay alive and untouched
/// until the copy is done.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// let mut host = [0u8; 16];
/// // SAFETY: 16 bytes each way; `host` is not touched until the stream is synchronized.
/// unsafe {
///     let p = result::malloc_async(stream, 16)?;
///     result::memset_d8_async(p, 7, 16, stream)?;
///     result::memcpy_dtoh_async(&mut host, p, stream)?;
///     result::stream::synchronize(stream)?;
/// }
/// assert_eq!(host, [7; 16]);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_dtoh_async<T>(
    dst: &mut [T],
    src: sys::CUdeviceptr,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the source, the stream and the destination's lifetime.
    unsafe {
        cu!(cuMemcpyDtoHAsync_v2(
            dst.as_mut_ptr().cast(),
            src,
            size_of_val(dst),
            stream
        ))
    }
}

/// Copies device memory at `src` into `dst`.
///
/// # Safety
/// `src` must hold `size_of_val(dst)` bytes of valid `T`s.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let mut host = [0u8; 16];
/// // SAFETY: 16 bytes each way.
/// unsafe {
///     let p = result::malloc_sync(16)?;
///     result::memset_d8_sync(p, 3, 16)?;
///     result::memcpy_dtoh_sync(&mut host, p)?;
/// }
/// assert_eq!(host, [3; 16]);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_dtoh_sync<T>(dst: &mut [T], src: sys::CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the source.
    unsafe { cu!(cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, size_of_val(dst))) }
}

/// Copies `num_bytes` between device ranges on `stream`.
///
/// # Safety
/// Both ranges must be device memory of `num_bytes` and `stream` live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: both allocations hold 64 bytes.
/// unsafe {
///     let (a, b) = (result::malloc_async(stream, 64)?, result::malloc_async(stream, 64)?);
///     result::memcpy_dtod_async(b, a, 64, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_dtod_async(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the ranges and the stream.
    unsafe { cu!(cuMemcpyDtoDAsync_v2(dst, src, num_bytes, stream)) }
}

/// Copies `num_bytes` between device ranges.
///
/// # Safety
/// Both ranges must be device memory of `num_bytes`.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// // SAFETY: both allocations hold 64 bytes.
/// unsafe {
///     let (a, b) = (result::malloc_sync(64)?, result::malloc_sync(64)?);
///     result::memcpy_dtod_sync(b, a, 64)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_dtod_sync(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    num_bytes: usize,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the ranges.
    unsafe { cu!(cuMemcpyDtoD_v2(dst, src, num_bytes)) }
}

/// Copies `num_bytes` between two contexts' memory on `stream`.
///
/// # Safety
/// Both ranges must be device memory of `num_bytes` in their contexts, and `stream` live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// // SAFETY: both allocations hold 64 bytes in `ctx` (a peer copy within one context).
/// unsafe {
///     let (a, b) = (result::malloc_sync(64)?, result::malloc_sync(64)?);
///     result::memcpy_peer_async(ctx, b, ctx, a, 64, stream)?;
/// }
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn memcpy_peer_async(
    dst_ctx: sys::CUcontext,
    dst: sys::CUdeviceptr,
    src_ctx: sys::CUcontext,
    src: sys::CUdeviceptr,
    num_bytes: usize,
    stream: sys::CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the contexts, ranges and stream.
    unsafe { cu!(cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, num_bytes, stream)) }
}

/// (free, total) bytes of the current context's device.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let (free, total) = result::mem_get_info()?;
/// assert!(free <= total);
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn mem_get_info() -> Result<(usize, usize), DriverError> {
    let (mut free, mut total) = (0, 0);
    // SAFETY: writes two sizes through valid pointers.
    unsafe { cu!(cuMemGetInfo_v2(&mut free, &mut total))? };
    Ok((free, total))
}

pub mod module;

pub mod event;

/// Launches `f` with one pointer per kernel parameter.
///
/// # Safety
/// `kernel_params` must point to values matching the kernel's parameters, and every device
/// pointer among them must be valid for what the kernel does.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("scale").unwrap()) }?;
/// let (mut ptr, mut n) = (unsafe { result::malloc_sync(4096) }?, 1024u32);
/// let mut params = [(&mut ptr as *mut sys::CUdeviceptr).cast(), (&mut n as *mut u32).cast()];
/// // SAFETY: scale(float* x, unsigned n) takes these two parameters; x holds n floats.
/// unsafe { result::launch_kernel(f, (1, 1, 1), (1024, 1, 1), 0, stream, &mut params) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn launch_kernel(
    f: sys::CUfunction,
    grid_dim: (c_uint, c_uint, c_uint),
    block_dim: (c_uint, c_uint, c_uint),
    shared_mem_bytes: c_uint,
    stream: sys::CUstream,
    kernel_params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the function, the stream and the parameters.
    unsafe {
        cu!(cuLaunchKernel(
            f,
            grid_dim.0,
            grid_dim.1,
            grid_dim.2,
            block_dim.0,
            block_dim.1,
            block_dim.2,
            shared_mem_bytes,
            stream,
            kernel_params.as_mut_ptr(),
            std::ptr::null_mut()
        ))
    }
}

/// Launches `f` cooperatively (all blocks resident at once, grid-wide sync allowed).
///
/// # Safety
/// As [`launch_kernel`]; the grid must fit on the device at once.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let stream = result::stream::create(result::stream::StreamKind::NonBlocking)?;
/// # let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// # let f = unsafe { result::module::get_function(module, CString::new("grid_sync").unwrap()) }?;
/// // SAFETY: grid_sync() takes no parameters; 132 blocks of 256 are resident at once.
/// unsafe { result::launch_cooperative_kernel(f, (132, 1, 1), (256, 1, 1), 0, stream, &mut []) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn launch_cooperative_kernel(
    f: sys::CUfunction,
    grid_dim: (c_uint, c_uint, c_uint),
    block_dim: (c_uint, c_uint, c_uint),
    shared_mem_bytes: c_uint,
    stream: sys::CUstream,
    kernel_params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the function, the stream and the parameters.
    unsafe {
        cu!(cuLaunchCooperativeKernel(
            f,
            grid_dim.0,
            grid_dim.1,
            grid_dim.2,
            block_dim.0,
            block_dim.1,
            block_dim.2,
            shared_mem_bytes,
            stream,
            kernel_params.as_mut_ptr()
        ))
    }
}

pub mod external_memory;

pub mod graph;

pub mod mem_pool;
