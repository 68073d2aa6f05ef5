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
pub trait HostSlice<T> {
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice to read, and a guard to keep until the read is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a CudaStream) -> (&'a [T], SyncOnDrop<'a>);

    /// The slice to write, and a guard to keep until the write is queued on `stream`.
    ///
    /// # Safety
    /// Use the slice with `stream` only.
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
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.event.ctx
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: ValidAsZeroBits> PinnedHostSlice<T> {
    /// A pointer to the data, after the copies queued with it have completed.
    pub fn as_ptr(&self) -> Result<*const T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// A mutable pointer to the data, after the copies queued with it have completed.
    pub fn as_mut_ptr(&mut self) -> Result<*mut T, DriverError> {
        self.event.synchronize()?;
        Ok(self.ptr)
    }

    /// The data, after the copies queued with it have completed.
    pub fn as_slice(&self) -> Result<&[T], DriverError> {
        self.event.synchronize()?;
        // SAFETY: the allocation holds len elements and no queued copy touches it any more.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The data, writable, after the copies queued with it have completed.
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
