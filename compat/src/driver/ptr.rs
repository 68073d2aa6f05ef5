//! The slice traits: [`DeviceSlice`], [`DevicePtr`], [`DevicePtrMut`] and the [`SyncOnDrop`] guard
//! that orders a use on another stream.

use std::mem::size_of;
use std::sync::Arc;

use cudrv::DeviceSlice as _;

use super::event::CudaEvent;
use super::slice::CudaSlice;
use super::stream::CudaStream;
use super::sys;
use super::view::{CudaView, CudaViewMut};

// ---------------------------------------------------------------------------------------------
// Slice traits
// ---------------------------------------------------------------------------------------------

/// Length and stream of a device slice or view (cudarc's `DeviceSlice`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// fn bytes<T>(x: &impl DeviceSlice<T>) -> usize {
///     x.num_bytes()
/// }
/// assert_eq!(bytes(&stream.alloc_zeros::<f32>(4)?), 16);
/// # Ok::<(), DriverError>(())
/// ```
pub trait DeviceSlice<T> {
    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(DeviceSlice::len(&stream.alloc_zeros::<u8>(5)?), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn len(&self) -> usize;
    /// The size in bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert_eq!(DeviceSlice::num_bytes(&stream.alloc_zeros::<u32>(5)?), 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn num_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(DeviceSlice::is_empty(&stream.alloc_zeros::<u32>(0)?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stream the memory belongs to.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(1)?;
    /// assert_eq!(DeviceSlice::stream(&x).cu_stream(), stream.cu_stream());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn stream(&self) -> &Arc<CudaStream>;
}

macro_rules! device_slice {
    ($($ty:ty),*) => {$(
        impl<T> DeviceSlice<T> for $ty {
            fn len(&self) -> usize {
                self.len
            }
            fn stream(&self) -> &Arc<CudaStream> {
                &self.stream
            }
        }
    )*};
}
device_slice!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

/// What to do once the device pointer or host slice handed out has been used (cudarc's
/// `SyncOnDrop`). Keep it alive until the work that uses the pointer has been queued.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let x = stream.alloc_zeros::<f32>(4)?;
/// let (ptr, guard): (sys::CUdeviceptr, SyncOnDrop) = x.device_ptr(&stream);
/// // ... raw driver calls on `ptr` queued on `stream` ...
/// drop(guard); // the slice now knows of that use
/// # let _ = ptr;
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
#[must_use]
pub enum SyncOnDrop<'a> {
    /// Records the event on the stream when dropped.
    Record(Option<(&'a CudaEvent, &'a CudaStream)>),
    /// Synchronizes the stream when dropped.
    Sync(Option<&'a CudaStream>),
    /// compat's cross-stream ordering: the first stream (the memory's own) waits for the work
    /// queued on the second when dropped.
    #[doc(hidden)]
    Join(Option<(&'a CudaStream, &'a CudaStream)>),
}

impl<'a> SyncOnDrop<'a> {
    /// A guard that records `event` (if any) on `stream`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let event = Some(ctx.new_event(None)?);
    /// let guard = SyncOnDrop::record_event(&event, &stream); // records on drop
    /// drop(guard);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn record_event(event: &'a Option<CudaEvent>, stream: &'a CudaStream) -> Self {
        SyncOnDrop::Record(event.as_ref().map(|e| (e, stream)))
    }

    /// A guard that synchronizes `stream`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let guard = SyncOnDrop::sync_stream(&stream); // synchronizes on drop
    /// drop(guard);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn sync_stream(stream: &'a CudaStream) -> Self {
        SyncOnDrop::Sync(Some(stream))
    }
}

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        match self {
            SyncOnDrop::Record(target) => {
                if let Some((event, stream)) = target.take() {
                    stream.ctx.record_err(event.record(stream));
                }
            }
            SyncOnDrop::Sync(target) => {
                if let Some(stream) = target.take() {
                    stream.ctx.record_err(stream.synchronize());
                }
            }
            SyncOnDrop::Join(target) => {
                if let Some((owner, user)) = target.take() {
                    owner.ctx.record_err(owner.join(user));
                }
            }
        }
    }
}

/// Orders a use of memory owned by `owner` on `user`: nothing when they are the same stream;
/// otherwise `user` waits for `owner`'s queued work now, the pool learns of the use, and the
/// returned guard makes `owner` wait for `user`'s work when dropped.
#[inline]
pub(crate) fn cross_stream<'a>(
    owner: &'a CudaStream,
    buf: Option<&cudrv::DeviceBuffer<u8>>,
    user: &'a CudaStream,
) -> SyncOnDrop<'a> {
    if owner.cu_stream == user.cu_stream {
        return SyncOnDrop::Sync(None);
    }
    order_before(owner, buf, user);
    SyncOnDrop::Join(Some((owner, user)))
}

/// `user` waits for `owner`'s queued work, and the pool learns that `user` uses the memory.
pub(crate) fn order_before(owner: &CudaStream, buf: Option<&cudrv::DeviceBuffer<u8>>, user: &CudaStream) {
    owner.ctx.record_err(user.join(owner));
    if let Some(buf) = buf {
        buf.record_stream(&user.inner);
    }
}

/// Read access to a device slice's pointer on a stream (cudarc's `DevicePtr`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let x = stream.memcpy_stod(&[1.0f32; 4])?;
/// let (ptr, _guard) = x.device_ptr(&stream);
/// assert_ne!(ptr, 0);
/// # Ok::<(), DriverError>(())
/// ```
pub trait DevicePtr<T>: DeviceSlice<T> {
    /// The device pointer for reading on `stream`; keep the guard until the read is queued.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(16)?;
    /// let (ptr, guard) = x.device_ptr(&stream); // ordered for reading on `stream`
    /// // ... raw reads through `ptr` on `stream` ...
    /// drop(guard);
    /// # let _ = ptr;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

/// Write access to a device slice's pointer on a stream (cudarc's `DevicePtrMut`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let mut x = stream.alloc_zeros::<f32>(4)?;
/// let (ptr, _guard) = x.device_ptr_mut(&stream);
/// assert_ne!(ptr, 0);
/// # Ok::<(), DriverError>(())
/// ```
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    /// The device pointer for writing on `stream`; keep the guard until the write is queued.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(16)?;
    /// let (ptr, guard) = x.device_ptr_mut(&stream);
    /// // SAFETY: 16 bytes at `ptr`, ordered on `stream`.
    /// unsafe { result::memset_d8_async(ptr, 1, 16, stream.cu_stream()) }?;
    /// drop(guard);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(&self.stream, self.storage.buffer(), stream))
    }
}
impl<T> DevicePtrMut<T> for CudaSlice<T> {
    #[inline]
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(&self.stream, self.storage.buffer(), stream))
    }
}
impl<T> DevicePtr<T> for CudaView<'_, T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}
impl<T> DevicePtr<T> for CudaViewMut<'_, T> {
    #[inline]
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}
impl<T> DevicePtrMut<T> for CudaViewMut<'_, T> {
    #[inline]
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}

impl<'a, T> CudaView<'a, T> {
    /// The device pointer for reading on `stream`, consuming the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<f32>(8)?;
    /// let (ptr, _guard) = x.slice(4..).view_ptr(&stream);
    /// assert_eq!(ptr, *x.device_ptr_ref() + 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}

impl<'a, T> CudaViewMut<'a, T> {
    /// The device pointer for reading on `stream`, consuming the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(8)?;
    /// let (ptr, _guard) = x.slice_mut(4..).view_ptr(&stream);
    /// assert_ne!(ptr, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn view_ptr(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }

    /// The device pointer for writing on `stream`, consuming the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(8)?;
    /// let (ptr, guard) = x.slice_mut(..4).view_ptr_mut(&stream);
    /// // ... a raw kernel launch writing through `ptr` on `stream` ...
    /// drop(guard);
    /// # let _ = ptr;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn view_ptr_mut(self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, cross_stream(self.stream, self.buf, stream))
    }
}
