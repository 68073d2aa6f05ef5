//! [`CudaView`] and [`CudaViewMut`]: borrowed ranges of device memory, and the one range rule.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::stream::CudaStream;
use super::sys;

/// `bounds` resolved against `len` as `(start, end)`, or `None` when out of bounds; the one
/// range rule of both eras' slices.
///
/// ```
/// use cudrv_compat::imp::driver::to_range;
/// assert_eq!(to_range(2.., 10), Some((2, 10)));
/// assert_eq!(to_range(..=12, 10), None);
/// ```
#[doc(hidden)]
pub fn to_range(bounds: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match bounds.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match bounds.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

/// A borrowed, read-only range of device memory (cudarc's `CudaView`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let x = stream.memcpy_stod(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let v: CudaView<f32> = x.slice(1..3);
/// assert_eq!(stream.memcpy_dtov(&v)?, vec![2.0, 3.0]);
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaView<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) buf: Option<&'a cudrv::DeviceBuffer<u8>>,
    pub(super) _marker: PhantomData<&'a T>,
}

impl<T> Clone for CudaView<'_, T> {
    fn clone(&self) -> Self {
        CudaView { ..*self }
    }
}

/// A borrowed, writable range of device memory (cudarc's `CudaViewMut`).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let mut x = stream.alloc_zeros::<f32>(4)?;
/// let mut v: CudaViewMut<f32> = x.slice_mut(2..);
/// stream.memcpy_htod(&[1.0f32, 1.0], &mut v)?;
/// # Ok::<(), DriverError>(())
/// ```
#[derive(Debug)]
pub struct CudaViewMut<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) buf: Option<&'a cudrv::DeviceBuffer<u8>>,
    pub(super) _marker: PhantomData<&'a mut T>,
}

impl<'a, T> CudaView<'a, T> {
    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(10)?;
    /// assert_eq!(x.slice(3..).len(), 7);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(10)?;
    /// assert!(x.slice(10..).is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn resized(&self, start: usize, end: usize) -> Self {
        CudaView {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A narrower view (relative to this one).
    ///
    /// # Panics
    /// If the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[0u8, 1, 2, 3, 4])?;
    /// let v = x.slice(1..).slice(1..3); // relative to the view
    /// assert_eq!(stream.memcpy_dtov(&v)?, vec![2, 3]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> Self {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A narrower view, or `None` if the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(5)?;
    /// assert!(x.slice(1..).try_slice(..5).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<Self> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.resized(start, end))
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
    /// let v = x.slice(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// let bytes = unsafe { v.transmute::<u8>(8) }.unwrap();
    /// assert_eq!(bytes.len(), 8);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'a, S>> {
        (len * size_of::<S>() <= self.len * size_of::<T>()).then_some(CudaView {
            ptr: self.ptr,
            len,
            stream: self.stream,
            buf: self.buf,
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
    /// let x = stream.alloc_zeros::<u8>(6)?;
    /// let (a, b) = x.slice(..).split_at(2);
    /// assert_eq!((a.len(), b.len()), (2, 4));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn split_at(&self, mid: usize) -> (Self, Self) {
        self.try_split_at(mid).expect("split_at out of bounds")
    }

    /// Two views split at `mid`, or `None` if `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.alloc_zeros::<u8>(6)?;
    /// assert!(x.slice(..).try_split_at(7).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_split_at(&self, mid: usize) -> Option<(Self, Self)> {
        (mid <= self.len).then(|| (self.resized(0, mid), self.resized(mid, self.len)))
    }

    /// Consecutive views of `chunk_size` elements (a shorter remainder is left out).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let x = stream.memcpy_stod(&[1u32, 2, 3, 4, 5])?;
    /// let rows: Vec<_> = x.slice(..).chunks_exact(2).collect(); // [1, 2], [3, 4]; 5 is left over
    /// assert_eq!(rows.len(), 2);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn chunks_exact(&self, chunk_size: usize) -> impl Iterator<Item = CudaView<'a, T>> + '_ {
        assert!(chunk_size > 0, "chunk_size must be non-zero");
        (0..self.len / chunk_size).map(move |i| self.resized(i * chunk_size, (i + 1) * chunk_size))
    }
}

impl<'a, T> CudaViewMut<'a, T> {
    /// The number of elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(10)?;
    /// assert_eq!(x.slice_mut(3..).len(), 7);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(10)?;
    /// assert!(x.slice_mut(10..).is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn resized(self, start: usize, end: usize) -> Self {
        CudaViewMut {
            ptr: self.ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            ..self
        }
    }

    /// A read-only view of this one.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// let v = x.slice_mut(..);
    /// assert_eq!(stream.memcpy_dtov(&v.as_view())?, vec![0; 4]);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn as_view<'b>(&'b self) -> CudaView<'b, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// Turns this into a read-only view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// let v: CudaView<u8> = x.slice_mut(1..).into_view();
    /// assert_eq!(v.len(), 3);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn into_view(self) -> CudaView<'a, T> {
        CudaView {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A read-only view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// let v = x.slice_mut(..);
    /// assert_eq!(v.slice(2..).len(), 2);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn slice<'b>(&'b self, bounds: impl RangeBounds<usize>) -> CudaView<'b, T> {
        self.try_slice(bounds).expect("slice range out of bounds")
    }

    /// A read-only view of `bounds`, or `None` if the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(4)?;
    /// assert!(x.slice_mut(..).try_slice(..5).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_slice<'b>(&'b self, bounds: impl RangeBounds<usize>) -> Option<CudaView<'b, T>> {
        self.as_view().try_slice(bounds)
    }

    /// Reinterprets the memory as `len` elements of `S`.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u32>(2)?;
    /// let v = x.slice_mut(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { v.transmute::<u8>(8) }.is_some());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn transmute<'b, S>(&'b self, len: usize) -> Option<CudaView<'b, S>> {
        // SAFETY: forwarded; the caller upholds the contract.
        unsafe { self.as_view().transmute(len) }
    }

    fn reborrow<'b>(&'b mut self) -> CudaViewMut<'b, T> {
        CudaViewMut {
            ptr: self.ptr,
            len: self.len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        }
    }

    /// A writable view of `bounds`.
    ///
    /// # Panics
    /// If the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(8)?;
    /// let mut v = x.slice_mut(2..);
    /// stream.memset_zeros(&mut v.slice_mut(..2))?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn slice_mut<'b>(&'b mut self, bounds: impl RangeBounds<usize>) -> CudaViewMut<'b, T> {
        self.try_slice_mut(bounds).expect("slice range out of bounds")
    }

    /// A writable view of `bounds`, or `None` if the range is outside the view.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<u8>(8)?;
    /// assert!(x.slice_mut(2..).try_slice_mut(..7).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_slice_mut<'b>(&'b mut self, bounds: impl RangeBounds<usize>) -> Option<CudaViewMut<'b, T>> {
        let (start, end) = to_range(bounds, self.len)?;
        Some(self.reborrow().resized(start, end))
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
    /// let mut v = x.slice_mut(..);
    /// let (mut a, mut b) = v.split_at_mut(1);
    /// stream.memcpy_htod(&[1.0f32], &mut a)?;
    /// stream.memcpy_htod(&[2.0f32; 3], &mut b)?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn split_at_mut<'b>(&'b mut self, mid: usize) -> (CudaViewMut<'b, T>, CudaViewMut<'b, T>) {
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
    /// assert!(x.slice_mut(..).try_split_at_mut(5).is_none());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn try_split_at_mut<'b>(&'b mut self, mid: usize) -> Option<(CudaViewMut<'b, T>, CudaViewMut<'b, T>)> {
        if mid > self.len {
            return None;
        }
        let len = self.len;
        let (ptr, stream, buf) = (self.ptr, self.stream, self.buf);
        let piece = |start: usize, end: usize| CudaViewMut {
            ptr: ptr + (start * size_of::<T>()) as u64,
            len: end - start,
            stream,
            buf,
            _marker: PhantomData,
        };
        Some((piece(0, mid), piece(mid, len)))
    }

    /// Consecutive writable views of `chunk_size` elements (a shorter remainder is left out).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let mut x = stream.alloc_zeros::<f32>(6)?;
    /// for (i, mut row) in x.slice_mut(..).chunks_exact_mut(3).enumerate() {
    ///     stream.memcpy_htod(&[i as f32; 3], &mut row)?;
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn chunks_exact_mut(self, chunk_size: usize) -> impl Iterator<Item = CudaViewMut<'a, T>> {
        assert!(chunk_size > 0, "chunk_size must be non-zero");
        let (ptr, stream, buf) = (self.ptr, self.stream, self.buf);
        (0..self.len / chunk_size).map(move |i| CudaViewMut {
            ptr: ptr + (i * chunk_size * size_of::<T>()) as u64,
            len: chunk_size,
            stream,
            buf,
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
    /// let mut x = stream.alloc_zeros::<u32>(2)?;
    /// let mut v = x.slice_mut(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// let bytes = unsafe { v.transmute_mut::<u8>(8) }.unwrap();
    /// # drop(bytes);
    /// # Ok::<(), DriverError>(())
    /// ```
    pub unsafe fn transmute_mut<'b, S>(&'b mut self, len: usize) -> Option<CudaViewMut<'b, S>> {
        (len * size_of::<S>() <= self.len * size_of::<T>()).then_some(CudaViewMut {
            ptr: self.ptr,
            len,
            stream: self.stream,
            buf: self.buf,
            _marker: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::to_range;

    #[test]
    fn ranges_follow_cudarc() {
        assert_eq!(to_range(.., 10), Some((0, 10)));
        assert_eq!(to_range(2..5, 10), Some((2, 5)));
        assert_eq!(to_range(2..=5, 10), Some((2, 6)));
        assert_eq!(to_range(10.., 10), Some((10, 10)));
        assert_eq!(to_range(5..11, 10), None);
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 6..5;
        assert_eq!(to_range(reversed, 10), None);
    }
}
