//! [`CudaSlice`]: owned device memory, from cudrv's caching pool or a raw allocation.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, OnceLock};

use cudrv::DeviceSlice as _;

use super::context::CudaContext;
use super::error::DriverError;
use super::repr::DeviceRepr;
use super::stream::CudaStream;
use super::view::{to_range, CudaView, CudaViewMut};
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------------------------

/// Where a slice's memory came from.
#[derive(Debug)]
pub(crate) enum Storage {
    /// Nothing to free.
    Empty,
    /// A buffer of cudrv's caching pool (returns to its stream's cache on drop).
    Pool(cudrv::DeviceBuffer<u8>),
    /// A raw allocation, freed with `cuMemFreeAsync` on the slice's stream.
    Raw,
}

impl Storage {
    pub(super) fn buffer(&self) -> Option<&cudrv::DeviceBuffer<u8>> {
        match self {
            Storage::Pool(b) => Some(b),
            _ => None,
        }
    }
}

/// An owned array of `T` in device memory (cudarc's `CudaSlice`).
///
/// Allocated and freed in order on its stream, from cudrv's caching pool.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let x: CudaSlice<f32> = stream.memcpy_stod(&[1.0, 2.0, 3.0])?;
/// let tail = x.slice(1..);
/// assert_eq!(stream.memcpy_dtov(&tail)?, vec![2.0, 3.0]);
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaSlice<T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) storage: Storage,
    pub(crate) stream: Arc<CudaStream>,
    pub(super) _marker: PhantomData<*const T>,
}

// SAFETY: the slice owns its device memory; the stream handle may be used from any thread.
unsafe impl<T> Send for CudaSlice<T> {}
// SAFETY: `&CudaSlice` allows only reads and stream-ordered copies.
unsafe impl<T> Sync for CudaSlice<T> {}

impl<T> Drop for CudaSlice<T> {
    fn drop(&mut self) {
        if let Storage::Raw = self.storage {
            let ctx = &self.stream.ctx;
            ctx.record_err(ctx.bind_to_thread());
            // SAFETY: owned by this slice and freed once, in order on its stream.
            ctx.record_err(unsafe { cu!(cuMemFreeAsync(self.ptr, self.stream.cu_stream)) });
        }
        // Pool storage returns to the cache when the DeviceBuffer drops.
    }
}

impl<T> CudaSlice<T> {
    /// The slice's device-pointer field (what a kernel parameter points at), for the other
    /// era's `DevicePtr`, which hands out a reference to it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<f32>(4)?;
    /// assert_ne!(*x.device_ptr_ref(), 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    #[doc(hidden)]
    pub fn device_ptr_ref(&self) -> &sys::CUdeviceptr {
        &self.ptr
    }

    /// The device-pointer field, mutable (the other era's `DevicePtrMut` hands it out). What the
    /// slice frees is kept apart from it.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(4)?;
    /// let p: &mut sys::CUdeviceptr = x.device_ptr_mut_ref(); // for raw calls that write through it
    /// # let _ = p;
    /// # Ok::<(), DriverError>(())
    /// ```
    #[doc(hidden)]
    pub fn device_ptr_mut_ref(&mut self) -> &mut sys::CUdeviceptr {
        &mut self.ptr
    }

    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(stream.alloc_zeros::<f32>(4)?.len(), 4);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// The size in bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(stream.alloc_zeros::<f64>(4)?.num_bytes(), 32);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(stream.alloc_zeros::<f32>(0)?.is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device ordinal.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(stream.alloc_zeros::<f32>(1)?.ordinal(), 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn ordinal(&self) -> usize {
        self.stream.ctx.ordinal
    }

    /// The context.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(Arc::ptr_eq(stream.alloc_zeros::<f32>(1)?.context(), &ctx));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.stream.ctx
    }

    /// The stream the slice was allocated on (its frees are ordered there).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<f32>(1)?;
    /// assert_eq!(x.stream().cu_stream(), stream.cu_stream());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A view of the whole slice.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[1u32, 2])?;
    /// assert_eq!(stream.memcpy_dtov(&x.as_view())?, vec![1, 2]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_view(&self) -> CudaView<'_, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        }
    }

    /// A writable view of the whole slice.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u32>(2)?;
    /// stream.memcpy_htod(&[5u32, 6], &mut x.as_view_mut())?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_view_mut(&mut self) -> CudaViewMut<'_, T> {
        CudaViewMut {
            ptr: self.ptr,
            len: self.len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        }
    }

    /// A view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the slice (as in cudarc; use [`try_slice`](Self::try_slice)).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[0u8, 1, 2, 3])?;
    /// assert_eq!(stream.memcpy_dtov(&x.slice(1..3))?, vec![1, 2]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> CudaView<'_, T> {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A view of `bounds`, or `None` if the range is outside the slice.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(4)?;
    /// assert!(x.try_slice(2..8).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.as_view().resized(start, end))
    }

    /// A writable view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the slice (as in cudarc).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// stream.memset_zeros(&mut x.slice_mut(..2))?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.try_slice_mut(bounds).expect("slice range out of bounds")
    }

    /// A writable view of `bounds`, or `None` if the range is outside the slice.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// assert!(x.try_slice_mut(..5).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'_, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.as_view_mut().resized(start, end))
    }

    /// Reinterprets the memory as `len` elements of `S`; `None` if that needs more bytes.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u32>(4)?;
    /// // SAFETY: any 16 bytes are 16 valid u8.
    /// let bytes = unsafe { x.transmute::<u8>(16) }.unwrap();
    /// assert_eq!(bytes.len(), 16);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        (len * size_of::<S>() <= self.num_bytes()).then(|| CudaView {
            ptr: self.ptr,
            len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        })
    }

    /// Reinterprets the memory as `len` writable elements of `S`.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`, and `S`'s values valid for `T`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u32>(4)?;
    /// // SAFETY: any 16 bytes are 16 valid u8.
    /// let bytes = unsafe { x.transmute_mut::<u8>(16) }.unwrap();
    /// # drop(bytes);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        (len * size_of::<S>() <= self.num_bytes()).then(|| CudaViewMut {
            ptr: self.ptr,
            len,
            stream: &self.stream,
            buf: self.storage.buffer(),
            _marker: PhantomData,
        })
    }

    /// Two views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[1i8, 2, 3])?;
    /// let (a, b) = x.split_at(1);
    /// assert_eq!((a.len(), b.len()), (1, 2));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn split_at(&self, mid: usize) -> (CudaView<'_, T>, CudaView<'_, T>) {
        self.try_split_at(mid).expect("split_at out of bounds")
    }

    /// Two views split at `mid`, or `None` if `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<i8>(3)?;
    /// assert!(x.try_split_at(4).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_split_at(&self, mid: usize) -> Option<(CudaView<'_, T>, CudaView<'_, T>)> {
        self.as_view().try_split_at(mid)
    }

    /// Two writable views split at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(4)?;
    /// let (mut a, mut b) = x.split_at_mut(2);
    /// stream.memcpy_htod(&[1.0f32; 2], &mut a)?;
    /// stream.memcpy_htod(&[2.0f32; 2], &mut b)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn split_at_mut(&mut self, mid: usize) -> (CudaViewMut<'_, T>, CudaViewMut<'_, T>) {
        self.try_split_at_mut(mid).expect("split_at_mut out of bounds")
    }

    /// Two writable views split at `mid`, or `None` if `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(4)?;
    /// assert!(x.try_split_at_mut(5).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_split_at_mut(&mut self, mid: usize) -> Option<(CudaViewMut<'_, T>, CudaViewMut<'_, T>)> {
        if mid > self.len {
            return None;
        }
        let len = self.len;
        let view = self.as_view_mut();
        let (ptr, stream, buf) = (view.ptr, view.stream, view.buf);
        let piece = |start: usize, end: usize| CudaViewMut {
            ptr: ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream,
            buf,
            _marker: PhantomData,
        };
        Some((piece(0, mid), piece(mid, len)))
    }

    /// Gives up ownership and returns the device pointer; the memory stays allocated until
    /// [`CudaStream::upgrade_device_ptr`] takes it back.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let raw = stream.alloc_zeros::<f32>(16)?.leak(); // now the caller's to free
    /// assert_ne!(raw, 0);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn leak(mut self) -> sys::CUdeviceptr {
        let ptr = self.ptr;
        if let Storage::Pool(buf) = std::mem::replace(&mut self.storage, Storage::Empty) {
            // Keyed by the allocation's own address, whatever the pointer field was set to.
            leaked()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(buf.device_ptr(), buf);
        }
        // Raw memory: forget the slice so Drop does not free it.
        self.storage = Storage::Empty;
        ptr
    }
}

impl<T> CudaSlice<T> {
    pub(crate) fn storage_buffer(&self) -> Option<&cudrv::DeviceBuffer<u8>> {
        self.storage.buffer()
    }
}

impl<T: DeviceRepr> CudaSlice<T> {
    /// A copy on the same stream.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let a = stream.memcpy_stod(&[1u8, 2])?;
    /// let b = a.try_clone()?;
    /// assert_eq!(stream.memcpy_dtov(&b)?, vec![1, 2]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self, DriverError> {
        self.stream.clone_dtod(self)
    }
}

impl<T: DeviceRepr> Clone for CudaSlice<T> {
    fn clone(&self) -> Self {
        self.try_clone()
            .expect("CudaSlice::clone failed; use try_clone to handle the error")
    }
}

impl<T: Clone + Default + DeviceRepr> TryFrom<CudaSlice<T>> for Vec<T> {
    type Error = DriverError;
    fn try_from(value: CudaSlice<T>) -> Result<Self, Self::Error> {
        value.stream.clone_dtoh(&value)
    }
}

/// Pool buffers given up by [`CudaSlice::leak`], kept until `upgrade_device_ptr` takes them back.
pub(super) fn leaked() -> &'static Mutex<HashMap<sys::CUdeviceptr, cudrv::DeviceBuffer<u8>>> {
    static LEAKED: OnceLock<Mutex<HashMap<sys::CUdeviceptr, cudrv::DeviceBuffer<u8>>>> = OnceLock::new();
    LEAKED.get_or_init(Default::default)
}
