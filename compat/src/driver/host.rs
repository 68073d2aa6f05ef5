//! Host memory for copies: [`HostSlice`] and page-locked [`PinnedHostSlice`].

use std::mem::size_of;
use std::sync::Arc;

use super::context::CudaContext;
use super::cu;
use super::error::DriverError;
use super::event::CudaEvent;
use super::ptr::SyncOnDrop;
use super::repr::ValidAsZeroBits;
use super::stream::CudaStream;

/// Host memory a copy can read or write: `[T]`, `[T; N]`, `Vec<T>`, [`PinnedHostSlice<T>`]
/// (cudarc's `HostSlice`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// // Vecs, arrays, slices and pinned buffers all go to the device the same way.
/// let from_vec = stream.memcpy_stod(&vec![1.0f32; 4])?;
/// let from_array = stream.memcpy_stod(&[1.0f32; 4])?;
/// # drop((from_vec, from_array));
/// # Ok::<(), DriverError>(())
/// ```
pub trait HostSlice<T> {
    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// fn count<T>(h: &impl HostSlice<T>) -> usize {
    ///     h.len()
    /// }
    /// assert_eq!(count(&vec![1u8; 3]), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn len(&self) -> usize;
    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// assert!(HostSlice::<u8>::is_empty(&Vec::<u8>::new()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice to read, and a guard to keep until the read is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let host = vec![1.0f32; 4];
    /// // SAFETY: the slice is read by work queued on `stream` while the guard lives.
    /// let (slice, _guard) = unsafe { host.stream_synced_slice(&stream) };
    /// assert_eq!(slice.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>);

    /// The slice to write, and a guard to keep until the write is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut host = vec![0.0f32; 4];
    /// // SAFETY: the slice is written by work queued on `stream` while the guard lives.
    /// let (slice, _guard) = unsafe { host.stream_synced_mut_slice(&stream) };
    /// assert_eq!(slice.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    unsafe fn stream_synced_mut_slice<'a>(&'a mut self, stream: &'a CudaStream) -> (&'a mut [T], SyncOnDrop<'a>);
}

macro_rules! pageable_host {
    ($(impl[$($g:tt)*] $ty:ty),*) => {$(
        impl<$($g)*> HostSlice<T> for $ty {
            fn len(&self) -> usize {
                <[T]>::len(self)
            }
            unsafe fn stream_synced_slice<'a>(&'a self, _stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
                (&self[..], SyncOnDrop::Sync(None))
            }
            unsafe fn stream_synced_mut_slice<'a>(
                &'a mut self,
                stream: &'a CudaStream,
            ) -> (&'a mut [T], SyncOnDrop<'a>) {
                (&mut self[..], SyncOnDrop::Sync(Some(stream)))
            }
        }
    )*};
}
pageable_host!(impl[T] [T], impl[T, const N: usize] [T; N], impl[T] Vec<T>);

/// Page-locked host memory (cudarc's `PinnedHostSlice`); host access waits for the copies
/// queued with it.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// // SAFETY: written before it is read.
/// let mut host = unsafe { ctx.alloc_pinned::<f32>(256) }?;
/// host.as_mut_slice()?.fill(2.0);
/// let dev = stream.memcpy_stod(&host)?; // an asynchronous copy from pinned memory
/// # drop(dev);
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct PinnedHostSlice<T> {
    pub(super) ptr: *mut T,
    pub(super) len: usize,
    pub(super) event: CudaEvent,
}

// SAFETY: the slice owns its host allocation exclusively.
unsafe impl<T> Send for PinnedHostSlice<T> {}
// SAFETY: `&PinnedHostSlice` gives only synchronized shared access.
unsafe impl<T> Sync for PinnedHostSlice<T> {}

impl<T> Drop for PinnedHostSlice<T> {
    fn drop(&mut self) {
        let ctx = self.event.ctx.clone();
        ctx.record_err(self.event.synchronize());
        // SAFETY: allocated by cuMemHostAlloc in alloc_pinned and freed once, after the copies
        // that use it have completed.
        ctx.record_err(unsafe { cu!(cuMemFreeHost(self.ptr.cast())) });
    }
}

impl<T> PinnedHostSlice<T> {
    /// The context the memory is registered with.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: never read.
    /// let host = unsafe { ctx.alloc_pinned::<u8>(8) }?;
    /// assert!(Arc::ptr_eq(host.context(), &ctx));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.event.ctx
    }

    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: never read.
    /// assert_eq!(unsafe { ctx.alloc_pinned::<u8>(8) }?.len(), 8);
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
    /// // SAFETY: never read.
    /// assert_eq!(unsafe { ctx.alloc_pinned::<f64>(8) }?.num_bytes(), 64);
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
    /// // SAFETY: never read.
    /// assert!(unsafe { ctx.alloc_pinned::<u8>(0) }?.is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: ValidAsZeroBits> PinnedHostSlice<T> {
    /// A pointer to the data, after the copies queued with it have completed.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: never read.
    /// let host = unsafe { ctx.alloc_pinned::<u8>(8) }?;
    /// assert!(!host.as_ptr()?.is_null()); // waits for copies queued against it first
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_ptr(&self) -> Result<*const T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// A mutable pointer to the data, after the copies queued with it have completed.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: written through the pointer before it is read.
    /// let mut host = unsafe { ctx.alloc_pinned::<u8>(8) }?;
    /// let p = host.as_mut_ptr()?;
    /// // SAFETY: 8 bytes of pinned memory.
    /// unsafe { p.write_bytes(0, 8) };
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_mut_ptr(&mut self) -> Result<*mut T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// The data, after the copies queued with it have completed.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: written (the copy below) before it is read.
    /// let mut host = unsafe { ctx.alloc_pinned::<u32>(2) }?;
    /// stream.memcpy_dtoh(&stream.memcpy_stod(&[1u32, 2])?, &mut host)?;
    /// assert_eq!(host.as_slice()?, &[1, 2]); // waits for the copy
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_slice(&self) -> Result<&[T], DriverError> {
        self.event.synchronize()?;
        // SAFETY: the allocation holds len elements and no queued copy touches it any more.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The data, writable, after the copies queued with it have completed.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// // SAFETY: written before it is read.
    /// let mut host = unsafe { ctx.alloc_pinned::<i32>(4) }?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DriverError> {
        self.event.synchronize()?;
        // SAFETY: as above, and &mut self is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

impl<T> HostSlice<T> for PinnedHostSlice<T> {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>) {
        stream.ctx.record_err(stream.wait(&self.event));
        // SAFETY: the allocation holds len elements; the stream waits for earlier writes to it
        // and the guard records when this use is done.
        let slice = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        (slice, SyncOnDrop::Record(Some((&self.event, stream))))
    }

    unsafe fn stream_synced_mut_slice<'a>(&'a mut self, stream: &'a CudaStream) -> (&'a mut [T], SyncOnDrop<'a>) {
        stream.ctx.record_err(stream.wait(&self.event));
        // SAFETY: as above, with &mut self exclusive.
        let slice = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        (slice, SyncOnDrop::Record(Some((&self.event, stream))))
    }
}
