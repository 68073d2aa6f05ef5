//! Typed device buffers and borrowed views of them.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::driver::cu;
use crate::error::{bail_invalid, Result};
use crate::memory::repr::{DeviceRepr, ValidAsZeroBits};
use crate::memory::slice::{DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;
use crate::sys::{self, CUdeviceptr};

/// An owned array of `T` in device memory, allocated and freed in order on its stream.
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
    _marker: PhantomData<T>,
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
    pub unsafe fn uninit(stream: &Arc<Stream>, len: usize) -> Result<Self> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            bail_invalid!("a buffer of {len} elements of {} bytes overflows usize", size_of::<T>());
        };
        let mut ptr = 0;
        if bytes > 0 {
            stream.context().bind_to_thread()?;
            // SAFETY: writes one device pointer through a valid pointer; the context is current.
            unsafe { cu!(cuMemAllocAsync(&mut ptr, bytes, stream.raw()))? };
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            stream: stream.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` zeroed elements.
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
    pub fn from_slice(stream: &Arc<Stream>, src: &[T]) -> Result<Self> {
        // SAFETY: the copy below writes every element before anyone can read them.
        let mut buf = unsafe { Self::uninit(stream, src.len())? };
        buf.copy_from_slice(src)?;
        Ok(buf)
    }

    /// A copy of this buffer on the same stream.
    pub fn try_clone(&self) -> Result<Self> {
        // SAFETY: the device copy below writes every element before anyone can read them.
        let mut copy = unsafe { Self::uninit(&self.stream, self.len)? };
        copy.copy_from_device(self)?;
        Ok(copy)
    }
}

impl<T> DeviceBuffer<T> {
    /// A read-only view of `range`; a range past the end is an invalid argument.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: &self.stream,
            _marker: PhantomData,
        })
    }

    /// A writable view of `range`; a range past the end is an invalid argument.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: &self.stream,
            _marker: PhantomData,
        })
    }

    /// Gives up ownership and returns the device pointer; the memory is never freed.
    pub fn leak(self) -> CUdeviceptr {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }

    pub(crate) fn ptr_field(&self) -> *const CUdeviceptr {
        &self.ptr
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let _ = self.stream.context().bind_to_thread();
        // SAFETY: the allocation is owned by this buffer and freed once, in order after all
        // work queued on its stream; views borrow the buffer, so none outlives it.
        let _ = unsafe { sys::cuMemFreeAsync(self.ptr, self.stream.raw()) };
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
}
impl<T> DeviceSliceMut<T> for DeviceBuffer<T> {}

/// A borrowed, read-only range of a [`DeviceBuffer`].
#[derive(Debug, Clone, Copy)]
pub struct DeviceView<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Arc<Stream>,
    _marker: PhantomData<&'a T>,
}

/// A borrowed, writable range of a [`DeviceBuffer`].
#[derive(Debug)]
pub struct DeviceViewMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Arc<Stream>,
    _marker: PhantomData<&'a mut T>,
}

impl<'a, T> DeviceView<'a, T> {
    /// A narrower view of `range` (relative to this view).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: self.stream,
            _marker: PhantomData,
        })
    }
    pub(crate) fn ptr_field(&self) -> *const CUdeviceptr {
        &self.ptr
    }
}

impl<T> DeviceViewMut<'_, T> {
    /// A narrower writable view of `range` (relative to this view).
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, len) = resolve_range(&range, self.len)?;
        Ok(DeviceViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len,
            stream: self.stream,
            _marker: PhantomData,
        })
    }
    /// Splits into two writable views at `mid`.
    pub fn split_at_mut(self, mid: usize) -> Result<(Self, Self)> {
        if mid > self.len {
            bail_invalid!("split at {mid} of a view of {} elements", self.len);
        }
        let right = DeviceViewMut {
            ptr: self.ptr + (mid * size_of::<T>()) as u64,
            len: self.len - mid,
            stream: self.stream,
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
