//! [`CudaStream`]: a cudrv stream, with cudarc's allocation and copy methods.

use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

use cudrv::DeviceSlice as _;

use super::context::CudaContext;
use super::error::{DriverError, IntoDriver};
use super::event::CudaEvent;
use super::host::HostSlice;
use super::ptr::{DevicePtr, DevicePtrMut};
use super::repr::{DeviceRepr, ValidAsZeroBits};
use super::slice::{leaked, CudaSlice, Storage};
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

/// A stream of work on a context (cudarc's `CudaStream`), backed by [`cudrv::Stream`].
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let s = ctx.new_stream()?;
/// let x = s.memcpy_stod(&[1.0f32, 2.0, 3.0])?;
/// assert_eq!(s.memcpy_dtov(&x)?, vec![1.0, 2.0, 3.0]);
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaStream {
    pub(crate) cu_stream: sys::CUstream,
    /// cudrv's stream (owns the handle unless the stream was borrowed).
    pub(crate) inner: Arc<cudrv::Stream>,
    pub(crate) ctx: Arc<CudaContext>,
}

// SAFETY: a stream handle may be used from any thread; the driver orders work on it.
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl PartialEq for CudaStream {
    fn eq(&self, other: &Self) -> bool {
        self.cu_stream == other.cu_stream && self.ctx == other.ctx
    }
}
impl Eq for CudaStream {}

impl CudaStream {
    /// A new non-blocking stream whose work starts after the work queued so far on this one.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let side = stream.fork()?; // starts after the work queued on `stream` so far
    /// stream.join(&side)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn fork(&self) -> Result<Arc<Self>, DriverError> {
        let stream = self.ctx.new_stream()?;
        stream.join(self)?;
        Ok(stream)
    }

    /// The driver's handle (NULL for the default stream).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let raw: sys::CUstream = ctx.new_stream()?.cu_stream();
    /// assert!(!raw.is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_stream(&self) -> sys::CUstream {
        self.cu_stream
    }

    /// The stream's context.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(Arc::ptr_eq(stream.context(), &ctx));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The cudrv stream underneath.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // cudrv's BLAS and ops on a compat stream.
    /// let s: &Arc<cudrv::Stream> = stream.cudrv();
    /// s.synchronize().unwrap();
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cudrv(&self) -> &Arc<cudrv::Stream> {
        &self.inner
    }

    /// Waits for the work queued on this stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<f64>(1 << 20)?;
    /// stream.synchronize()?;
    /// # drop(x);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live stream of the current context.
        unsafe { cu!(cuStreamSynchronize(self.cu_stream)) }
    }

    /// Records an event after the work queued so far (`None` flags: timing disabled).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let done = stream.record_event(None)?;
    /// done.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn record_event(&self, flags: Option<sys::CUevent_flags>) -> Result<CudaEvent, DriverError> {
        let event = self.ctx.new_event(flags)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes later work on this stream wait for `event`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let other = ctx.new_stream()?;
    /// other.wait(&stream.record_event(None)?)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn wait(&self, event: &CudaEvent) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live.
        unsafe { cu!(cuStreamWaitEvent(self.cu_stream, event.cu_event, 0)) }
    }

    /// Makes later work on this stream wait for the work queued so far on `other`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let other = ctx.new_stream()?;
    /// stream.join(&other)?; // `stream`'s later work waits for `other`'s so far
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn join(&self, other: &CudaStream) -> Result<(), DriverError> {
        let event = other.record_event(None)?;
        self.wait(&event)
    }

    /// A zero-length slice on this stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let empty = stream.null::<f32>()?;
    /// assert!(empty.is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn null<T>(self: &Arc<Self>) -> Result<CudaSlice<T>, DriverError> {
        Ok(CudaSlice {
            ptr: 0,
            len: 0,
            storage: Storage::Empty,
            stream: self.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` uninitialised elements, stream-ordered, from cudrv's caching pool.
    ///
    /// # Safety
    /// The contents are uninitialised; write them before reading them.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: written (the copy below) before it is read.
    /// let mut x = unsafe { stream.alloc::<f32>(3) }?;
    /// stream.memcpy_htod(&[1.0f32, 2.0, 3.0], &mut x)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            return Err(DriverError::with_detail(
                sys::CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("an allocation of {len} elements of {} bytes overflows", size_of::<T>()),
            ));
        };
        // SAFETY: uninitialised memory is the caller's contract.
        let buf = unsafe { cudrv::DeviceBuffer::<u8>::uninit(&self.inner, bytes).drv()? };
        let (ptr, storage) = (buf.device_ptr(), Storage::Pool(buf));
        Ok(CudaSlice {
            ptr,
            len,
            storage,
            stream: self.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` zeroed elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u32>(4)?;
    /// assert_eq!(stream.memcpy_dtov(&x)?, vec![0; 4]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: zeroed below before anyone can read it; zero bits are a valid T.
        let mut dst = unsafe { self.alloc(len) }?;
        self.memset_zeros(&mut dst)?;
        Ok(dst)
    }

    /// Sets every byte of `dst` to zero (queued on this stream).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.memcpy_stod(&[5i32; 4])?;
    /// stream.memset_zeros(&mut x)?;
    /// assert_eq!(stream.memcpy_dtov(&x)?, vec![0; 4]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        let bytes = dst.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (ptr, _guard) = dst.device_ptr_mut(self);
        // SAFETY: the range is live and `bytes` long; written through &mut.
        unsafe { cu!(cuMemsetD8Async(ptr, 0, bytes, self.cu_stream)) }
    }

    /// Copies host data into a new device slice (deprecated in cudarc in favour of `clone_htod`).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[1u8, 2, 3])?;
    /// assert_eq!(x.len(), 3);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memcpy_stod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        self.clone_htod(src)
    }

    /// Copies host data into a new device slice.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.clone_htod(&vec![0.5f64; 10])?;
    /// assert_eq!(x.len(), 10);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn clone_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before it can be read.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_htod(src, &mut dst)?;
        Ok(dst)
    }

    /// Copies `src` into the start of `dst` (queued; a pageable source may be reused at once).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(4)?;
    /// stream.memcpy_htod(&[1.0f32; 2], &mut x.slice_mut(1..3))?;
    /// assert_eq!(stream.memcpy_dtov(&x)?, vec![0.0, 1.0, 1.0, 0.0]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memcpy_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_htod", dst.len(), src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: the host slice is used with this stream only.
        let (host, _host_guard) = unsafe { src.stream_synced_slice(self) };
        let (dptr, _dst_guard) = dst.device_ptr_mut(self);
        // SAFETY: `host` holds len elements, the device range has room for them; for pageable
        // memory the driver has staged the source when the call returns, and pinned sources
        // record an event through their guard.
        unsafe {
            cu!(cuMemcpyHtoDAsync_v2(
                dptr,
                host.as_ptr().cast(),
                std::mem::size_of_val(host),
                self.cu_stream
            ))
        }
    }

    /// Copies a device slice into a new `Vec` (deprecated in cudarc in favour of `clone_dtoh`).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[7u16; 3])?;
    /// assert_eq!(stream.memcpy_dtov(&x)?, vec![7; 3]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memcpy_dtov<T: DeviceRepr, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src) -> Result<Vec<T>, DriverError> {
        self.clone_dtoh(src)
    }

    /// Copies a device slice into a new `Vec`; returns when the data is there.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[1.0f32, 2.0])?;
    /// assert_eq!(stream.clone_dtoh(&x.slice(1..))?, vec![2.0]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn clone_dtoh<T: DeviceRepr, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src) -> Result<Vec<T>, DriverError> {
        let len = src.len();
        let mut out = Vec::<T>::with_capacity(len);
        if len > 0 {
            self.ctx.bind_to_thread()?;
            {
                let (dptr, _guard) = src.device_ptr(self);
                // SAFETY: `out` has capacity for len elements; the device range holds them.
                unsafe {
                    cu!(cuMemcpyDtoHAsync_v2(
                        out.as_mut_ptr().cast(),
                        dptr,
                        len * size_of::<T>(),
                        self.cu_stream
                    ))?
                };
            }
            self.synchronize()?;
            // SAFETY: the copy has completed and wrote all len elements (DeviceRepr: any bytes
            // the device holds are a valid T).
            unsafe { out.set_len(len) };
        }
        Ok(out)
    }

    /// Copies `src` into the start of `dst`; returns when the data is there (pageable
    /// destinations) or records an event that host access waits for (pinned destinations).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[3i64, 4])?;
    /// let mut host = [0i64; 2];
    /// stream.memcpy_dtoh(&x, &mut host)?;
    /// assert_eq!(host, [3, 4]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memcpy_dtoh<T: DeviceRepr, Src: DevicePtr<T>, Dst: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_dtoh", dst.len(), src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (dptr, _src_guard) = src.device_ptr(self);
        // SAFETY: the host slice is used with this stream only.
        let (host, _host_guard) = unsafe { dst.stream_synced_mut_slice(self) };
        // SAFETY: `host` has room for src.len() elements; its guard synchronizes the stream (or
        // records the pinned buffer's event) before the host can touch it again.
        unsafe {
            cu!(cuMemcpyDtoHAsync_v2(
                host.as_mut_ptr().cast(),
                dptr,
                src.num_bytes(),
                self.cu_stream
            ))
        }
    }

    /// Copies `src` into the start of `dst` on this stream (peer copy across contexts).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let a = stream.memcpy_stod(&[1.0f32, 2.0])?;
    /// let mut b = stream.alloc_zeros::<f32>(2)?;
    /// stream.memcpy_dtod(&a, &mut b)?;
    /// assert_eq!(stream.memcpy_dtov(&b)?, vec![1.0, 2.0]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn memcpy_dtod<T, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        check_room("memcpy_dtod", dst.len(), src.len())?;
        let bytes = src.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let src_ctx = src.stream().ctx.clone();
        let dst_ctx = dst.stream().ctx.clone();
        let (sptr, _src_guard) = src.device_ptr(self);
        let (dptr, _dst_guard) = dst.device_ptr_mut(self);
        if src_ctx == dst_ctx {
            // SAFETY: both ranges are live and at least `bytes` long.
            unsafe { cu!(cuMemcpyDtoDAsync_v2(dptr, sptr, bytes, self.cu_stream)) }
        } else {
            // SAFETY: as above, across two live contexts.
            unsafe {
                cu!(cuMemcpyPeerAsync(
                    dptr,
                    dst_ctx.cu_ctx(),
                    sptr,
                    src_ctx.cu_ctx(),
                    bytes,
                    self.cu_stream
                ))
            }
        }
    }

    /// Copies a device slice into a new one on this stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let a = stream.memcpy_stod(&[9u8; 8])?;
    /// let b = stream.clone_dtod(&a)?;
    /// assert_eq!(stream.memcpy_dtov(&b)?, vec![9; 8]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn clone_dtod<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy below before it can be read.
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_dtod(src, &mut dst)?;
        Ok(dst)
    }

    /// Takes ownership of device memory (for example from [`CudaSlice::leak`]).
    ///
    /// # Safety
    /// `cu_device_ptr` must be a live allocation of at least `len * size_of::<T>()` bytes, from
    /// `CudaSlice::leak` or `cuMemAlloc`/`cuMemAllocAsync`, owned by nobody else.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let raw = stream.alloc_zeros::<f32>(16)?.leak();
    /// // SAFETY: `raw` holds 16 f32 of this context and nothing else owns it now.
    /// let x: CudaSlice<f32> = unsafe { stream.upgrade_device_ptr(raw, 16) };
    /// assert_eq!(x.len(), 16);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn upgrade_device_ptr<T>(self: &Arc<Self>, cu_device_ptr: sys::CUdeviceptr, len: usize) -> CudaSlice<T> {
        let storage = match leaked()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&cu_device_ptr)
        {
            Some(buf) => Storage::Pool(buf),
            None if cu_device_ptr == 0 => Storage::Empty,
            None => Storage::Raw,
        };
        CudaSlice {
            ptr: cu_device_ptr,
            len,
            storage,
            stream: self.clone(),
            _marker: PhantomData,
        }
    }
}

fn check_room(what: &str, dst: usize, src: usize) -> Result<(), DriverError> {
    if dst < src {
        return Err(DriverError::with_detail(
            sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what}: the destination has {dst} elements, the source {src}"),
        ));
    }
    Ok(())
}
