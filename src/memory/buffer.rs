//! Typed device buffers and borrowed views of them.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::capture::KeptAllocation;
use crate::driver::check;
use crate::error::{bail_invalid, Error, Result};
use crate::memory::pool::{Block, PoolError, StreamId};
use crate::memory::repr::{DeviceRepr, ValidAsZeroBits};
use crate::memory::slice::{DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;
use crate::sys::{self, CUdeviceptr};

/// An owned array of `T` in device memory, allocated and freed in order on its stream.
///
/// Memory comes from the context's caching pool (see [`Context::set_caching`]): freeing returns
/// it to the cache of the buffer's stream, where the next allocation on that stream finds it
/// without a driver call. Memory used on another stream must be marked with
/// [`DeviceSlice::record_stream`] (cudrv's own operations do this).
///
/// [`Context::set_caching`]: crate::Context::set_caching
///
/// ```no_run
/// use cudrv::{DeviceSlice, DeviceSliceMut};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut buf = cudrv::DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// buf.copy_from_slice(&[1.0, 2.0, 3.0, 4.0])?;
/// let tail = buf.slice(2..)?;
/// assert_eq!(tail.to_vec()?, vec![3.0, 4.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: Arc<Stream>,
    alloc: Allocation,
    _marker: PhantomData<T>,
}

/// Where a buffer's memory came from, and so how it goes back.
#[derive(Debug)]
pub(crate) enum Allocation {
    /// No memory (an empty buffer, or one whose ownership was given up).
    None,
    /// A block of the context's caching pool.
    Pooled(Block),
    /// `cuMemAllocAsync` on the buffer's stream (caching switched off).
    Driver,
}

impl Allocation {
    fn new(stream: &Stream, bytes: usize) -> Result<(CUdeviceptr, Allocation)> {
        if bytes == 0 {
            return Ok((0, Allocation::None));
        }
        let ctx = stream.context();
        // A faulted context fails here too, naming its fault (the pool binds the raw handle).
        crate::fault::check_context(ctx.raw())?;
        if ctx.caching() && !stream.is_per_thread() {
            return match ctx.memory_pool().allocate_in(stream.pool_shard(), bytes) {
                Ok(block) => Ok((block.addr(), Allocation::Pooled(block))),
                Err(PoolError::OutOfMemory {
                    requested,
                    reserved,
                    allocated,
                    cached,
                    ..
                }) => Err(Error::OutOfMemory {
                    requested,
                    reserved,
                    allocated,
                    cached,
                    device_free: ctx.memory_info().map(|m| m.0).unwrap_or(0),
                }),
                Err(PoolError::Backing(message)) => match crate::fault::fault_of(ctx.raw()) {
                    Some(fault) => Err(Error::ContextFaulted { fault: Box::new(fault) }),
                    None => Err(Error::AllocationFailed {
                        requested: bytes,
                        message,
                    }),
                },
            };
        }
        ctx.bind_to_thread()?;
        let alloc = sys::resolve::cuMemAllocAsync()?;
        let mut ptr = 0;
        // SAFETY: writes one device pointer through a valid pointer; the context is current.
        match unsafe { alloc(&mut ptr, bytes, stream.raw()) } {
            sys::CUresult::CUDA_SUCCESS => Ok((ptr, Allocation::Driver)),
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(Error::OutOfMemory {
                requested: bytes,
                reserved: 0,
                allocated: 0,
                cached: 0,
                device_free: ctx.memory_info().map(|m| m.0).unwrap_or(0),
            }),
            code => Err(check(code, "cuMemAllocAsync").unwrap_err()),
        }
    }

    fn record_stream(&self, owner: &Stream, stream: &Stream) {
        if let Allocation::Pooled(block) = self {
            owner.context().memory_pool().record_stream(block, stream_id(stream));
        }
    }
}

/// The pool's name for a stream: its handle.
pub(crate) fn stream_id(stream: &Stream) -> StreamId {
    StreamId(stream.raw() as u64)
}

// SAFETY: the buffer owns its device memory exclusively; moving it between threads moves that
// ownership, and the stream handle may be used from any thread.
unsafe impl<T: Send> Send for DeviceBuffer<T> {}
// SAFETY: `&DeviceBuffer` allows only reads and stream-ordered copies out.
unsafe impl<T: Sync> Sync for DeviceBuffer<T> {}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates `len` elements without initialising them.
    ///
    /// # Safety
    /// The contents are whatever the memory held before: read them only after writing them.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// // SAFETY: every element is written (the copy below) before anything reads it.
    /// let mut buf = unsafe { DeviceBuffer::<f32>::uninit(&stream, 3)? };
    /// buf.copy_from_slice(&[1.0, 2.0, 3.0])?;
    /// assert_eq!(buf.to_vec()?, vec![1.0, 2.0, 3.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub unsafe fn uninit(stream: &Arc<Stream>, len: usize) -> Result<Self> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            bail_invalid!("a buffer of {len} elements of {} bytes overflows usize", size_of::<T>());
        };
        let (ptr, alloc) = Allocation::new(stream, bytes)?;
        Ok(DeviceBuffer {
            ptr,
            len,
            stream: stream.clone(),
            alloc,
            _marker: PhantomData,
        })
    }

    /// Allocates `len` zeroed elements.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// let x = DeviceBuffer::<f32>::zeroed(&stream, 1024)?;
    /// assert_eq!(x.to_vec()?, vec![0.0; 1024]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn zeroed(stream: &Arc<Stream>, len: usize) -> Result<Self>
    where
        T: ValidAsZeroBits,
    {
        // SAFETY: every byte is zeroed before anyone can read it, and zero bytes are a valid T.
        let mut buf = unsafe { Self::uninit(stream, len)? };
        buf.memset_zero()?;
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `src`.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// let x = DeviceBuffer::from_slice(&stream, &[1u32, 2, 3])?;
    /// assert_eq!(x.to_vec()?, vec![1, 2, 3]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_slice(stream: &Arc<Stream>, src: &[T]) -> Result<Self> {
        // SAFETY: the copy below writes every element before anyone can read them.
        let mut buf = unsafe { Self::uninit(stream, src.len())? };
        buf.copy_from_slice(src)?;
        Ok(buf)
    }

    /// A copy of this buffer on the same stream.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0])?;
    /// let y = x.try_clone()?;
    /// assert_eq!(y.to_vec()?, x.to_vec()?);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self> {
        // SAFETY: the device copy below writes every element before anyone can read them.
        let mut copy = unsafe { Self::uninit(&self.stream, self.len)? };
        copy.copy_from_device(self)?;
        Ok(copy)
    }
}

impl<T> DeviceBuffer<T> {
    /// A read-only view of `range`; a range past the end is an invalid argument.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
    /// assert_eq!(x.slice(1..3)?.to_vec()?, vec![2.0, 3.0]);
    /// assert!(x.slice(2..9).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: &self.stream,
            alloc: &self.alloc,
            _marker: PhantomData,
        })
    }

    /// A writable view of `range`; a range past the end is an invalid argument.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.default_stream();
    /// use cudrv::DeviceSliceMut;
    /// let mut x = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    /// x.slice_mut(2..)?.copy_from_slice(&[5.0, 6.0])?;
    /// assert_eq!(x.to_vec()?, vec![0.0, 0.0, 5.0, 6.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: &self.stream,
            alloc: &self.alloc,
            _marker: PhantomData,
        })
    }

    /// Gives up ownership and returns the device pointer; the memory is never freed.
    ///
    /// ```no_run
    /// use cudrv::DeviceBuffer;
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let buf = DeviceBuffer::<u8>::zeroed(&stream, 1 << 20)?;
    /// let ptr = buf.leak(); // handed to code that frees it with cuMemFree... or never
    /// assert_ne!(ptr, 0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn leak(mut self) -> CUdeviceptr {
        // A pooled block that is never freed stays allocated in the pool's books for good.
        self.alloc = Allocation::None;
        self.ptr
    }

    pub(crate) fn ptr_field(&self) -> *const CUdeviceptr {
        &self.ptr
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        let alloc = std::mem::replace(&mut self.alloc, Allocation::None);
        if matches!(alloc, Allocation::None) {
            return;
        }
        if self.stream.is_capturing() {
            // Work recorded in the capture still uses this memory: its graph keeps it.
            let kept = KeptAllocation {
                stream: self.stream.clone(),
                ptr: self.ptr,
                alloc,
            };
            if let Some(kept) = self.stream.keep_for_capture(kept) {
                drop(kept); // the capture ended meanwhile: freed as usual
            }
            return;
        }
        release(&self.stream, self.ptr, alloc);
    }
}

/// Gives a buffer's memory back: to the cache of its stream (later work on the stream is ordered
/// after the work already queued, and other streams wait for a fence: the pool's rules), or to
/// the driver in stream order.
pub(crate) fn release(stream: &Arc<Stream>, ptr: CUdeviceptr, alloc: Allocation) {
    match alloc {
        Allocation::None => {}
        Allocation::Pooled(block) => stream.context().memory_pool().free_in(stream.pool_shard(), block),
        Allocation::Driver => {
            let _ = stream.context().bind_to_thread();
            // SAFETY: the allocation is owned by the caller and freed once, in order after all
            // work queued on its stream; views borrow the buffer, so none outlives it.
            let _ = unsafe { sys::cuMemFreeAsync(ptr, stream.raw()) };
        }
    }
}

impl<T> DeviceSlice<T> for DeviceBuffer<T> {
    fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }
    fn record_stream(&self, stream: &Stream) {
        self.alloc.record_stream(&self.stream, stream);
    }
}
impl<T> DeviceSliceMut<T> for DeviceBuffer<T> {}

/// A borrowed, read-only range of a [`DeviceBuffer`].
///
/// ```no_run
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let buf = DeviceBuffer::from_slice(&stream, &[0.0f32, 1.0, 2.0, 3.0])?;
/// let tail = buf.slice(2..)?;
/// assert_eq!(tail.to_vec()?, vec![2.0, 3.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DeviceView<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Arc<Stream>,
    alloc: &'a Allocation,
    _marker: PhantomData<&'a T>,
}

/// A borrowed, writable range of a [`DeviceBuffer`].
///
/// ```no_run
/// use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut buf = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
/// buf.slice_mut(1..3)?.copy_from_slice(&[5.0, 6.0])?;
/// assert_eq!(buf.to_vec()?, vec![0.0, 5.0, 6.0, 0.0]);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceViewMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Arc<Stream>,
    alloc: &'a Allocation,
    _marker: PhantomData<&'a mut T>,
}

impl<'a, T> DeviceView<'a, T> {
    /// A narrower view of `range` (relative to this view).
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let buf = DeviceBuffer::from_slice(&stream, &[0u32, 1, 2, 3, 4, 5])?;
    /// let mid = buf.slice(1..5)?; // 1, 2, 3, 4
    /// assert_eq!(mid.slice(1..3)?.to_vec()?, vec![2, 3]);
    /// assert!(mid.slice(2..9).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: self.stream,
            alloc: self.alloc,
            _marker: PhantomData,
        })
    }
    pub(crate) fn ptr_field(&self) -> *const CUdeviceptr {
        &self.ptr
    }
}

impl<T> DeviceViewMut<'_, T> {
    /// A narrower writable view of `range` (relative to this view).
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut buf = DeviceBuffer::<u32>::zeroed(&stream, 6)?;
    /// let mut view = buf.slice_mut(2..)?;
    /// view.slice_mut(..2)?.memset_bytes(0xff)?;
    /// assert_eq!(buf.to_vec()?, vec![0, 0, u32::MAX, u32::MAX, 0, 0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: self.stream,
            alloc: self.alloc,
            _marker: PhantomData,
        })
    }
    /// Splits into two writable views at `mid`.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut buf = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    /// let (mut left, mut right) = buf.slice_mut(..)?.split_at_mut(1)?;
    /// left.copy_from_slice(&[1.0])?;
    /// right.copy_from_slice(&[2.0, 3.0, 4.0])?;
    /// assert_eq!(buf.to_vec()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn split_at_mut(self, mid: usize) -> Result<(Self, Self)> {
        if mid > self.len {
            bail_invalid!("split at {mid} of a view of {} elements", self.len);
        }
        let right = DeviceViewMut {
            ptr: self.ptr + (mid * size_of::<T>()) as u64,
            len: self.len - mid,
            stream: self.stream,
            alloc: self.alloc,
            _marker: PhantomData,
        };
        let left = DeviceViewMut { len: mid, ..self };
        Ok((left, right))
    }
    pub(crate) fn ptr_field(&self) -> *const CUdeviceptr {
        &self.ptr
    }
}

macro_rules! view_slice_impls {
    ($($view:ident),*) => {$(
        impl<T> DeviceSlice<T> for $view<'_, T> {
            fn device_ptr(&self) -> CUdeviceptr {
                self.ptr
            }
            fn len(&self) -> usize {
                self.len
            }
            fn stream(&self) -> &Arc<Stream> {
                self.stream
            }
            fn record_stream(&self, stream: &Stream) {
                self.alloc.record_stream(self.stream, stream);
            }
        }
    )*};
}
view_slice_impls!(DeviceView, DeviceViewMut);
impl<T> DeviceSliceMut<T> for DeviceViewMut<'_, T> {}

/// Turns a range into (start, len) within `len` elements, or an invalid-argument error.
pub(crate) fn resolve_range(range: &impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        bail_invalid!("range {start}..{end} is outside a buffer of {len} elements");
    }
    Ok((start, end - start))
}

#[cfg(test)]
mod tests {
    use super::resolve_range;

    #[test]
    fn ranges_resolve_within_bounds() {
        assert_eq!(resolve_range(&(..), 10).unwrap(), (0, 10));
        assert_eq!(resolve_range(&(2..5), 10).unwrap(), (2, 3));
        assert_eq!(resolve_range(&(2..=5), 10).unwrap(), (2, 4));
        assert_eq!(resolve_range(&(10..), 10).unwrap(), (10, 0));
    }

    #[test]
    fn ranges_outside_are_errors_naming_the_numbers() {
        let e = resolve_range(&(5..11), 10).unwrap_err().to_string();
        assert!(e.contains("5..11") && e.contains("10 elements"), "{e}");
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 6..5;
        assert!(resolve_range(&reversed, 10).is_err());
    }
}
