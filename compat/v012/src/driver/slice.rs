//! Device memory: [`CudaSlice`], its views [`CudaView`] / [`CudaViewMut`], and the traits
//! [`DeviceSlice`], [`DevicePtr`], [`DevicePtrMut`] that copies, launches and BLAS take.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::RangeBounds;
use std::sync::Arc;

use cudrv_compat::imp::driver as compat;

use super::device::CudaDevice;
use super::{sys, DriverError};

/// An owned array of `T` in device memory (cudarc 0.12's `CudaSlice`), from cudrv's caching pool,
/// allocated and freed in order on its device's stream.
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let x: CudaSlice<f32> = dev.htod_sync_copy(&[1.0, 2.0, 3.0])?;
/// assert_eq!(dev.dtoh_sync_copy(&x.slice(1..))?, vec![2.0, 3.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaSlice<T> {
    /// The bytes, owned by `cudrv-compat` (which returns them to the pool when dropped).
    pub(crate) bytes: compat::CudaSlice<u8>,
    pub(crate) len: usize,
    pub(crate) device: Arc<CudaDevice>,
    _marker: PhantomData<*const T>,
}

// SAFETY: the slice owns its device memory; the handles may be used from any thread.
unsafe impl<T: Send> Send for CudaSlice<T> {}
// SAFETY: `&CudaSlice` allows only reads and stream-ordered copies.
unsafe impl<T: Sync> Sync for CudaSlice<T> {}

impl<T> CudaSlice<T> {
    pub(crate) fn from_bytes(bytes: compat::CudaSlice<u8>, len: usize, device: Arc<CudaDevice>) -> Self {
        CudaSlice {
            bytes,
            len,
            device,
            _marker: PhantomData,
        }
    }

    /// The device the memory belongs to.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u8>(4)?;
    /// assert_eq!(x.device().ordinal(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> Arc<CudaDevice> {
        self.device.clone()
    }

    /// The device pointer, which the slice no longer frees (see
    /// [`CudaDevice::upgrade_device_ptr`]).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let raw = dev.alloc_zeros::<u8>(64)?.leak(); // the caller frees it now
    /// assert_ne!(raw, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn leak(self) -> sys::CUdeviceptr {
        self.bytes.leak()
    }

    /// A view of the elements in `range`. Panics when the range is out of bounds, as in cudarc
    /// (see [`try_slice`](Self::try_slice)).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[0u8, 1, 2, 3])?;
    /// assert_eq!(dev.dtoh_sync_copy(&x.slice(2..))?, vec![2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> CudaView<'_, T> {
        self.try_slice(range).expect("CudaSlice::slice: range out of bounds")
    }

    /// A view of the elements in `range`, or `None` when it is out of bounds.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u8>(4)?;
    /// assert!(x.try_slice(..5).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Option<CudaView<'_, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(CudaView::new(
            *self.bytes.device_ptr_ref() + offset::<T>(start),
            end - start,
        ))
    }

    /// A mutable view of the elements in `range`. Panics when out of bounds, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// dev.htod_sync_copy_into(&[9u8, 9], &mut x.slice_mut(2..))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.try_slice_mut(range)
            .expect("CudaSlice::slice_mut: range out of bounds")
    }

    /// A mutable view of the elements in `range`, or `None` when it is out of bounds.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// assert!(x.try_slice_mut(3..9).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_slice_mut(&mut self, range: impl RangeBounds<usize>) -> Option<CudaViewMut<'_, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(CudaViewMut::new(
            *self.bytes.device_ptr_ref() + offset::<T>(start),
            end - start,
        ))
    }

    /// The slice split at `mid` into two mutable views. Panics when `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// let (mut a, mut b) = x.split_at_mut(2);
    /// dev.htod_sync_copy_into(&[1u8, 1], &mut a)?;
    /// dev.htod_sync_copy_into(&[2u8, 2], &mut b)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split_at_mut(&mut self, mid: usize) -> (CudaViewMut<'_, T>, CudaViewMut<'_, T>) {
        self.try_split_at_mut(mid)
            .expect("CudaSlice::split_at_mut: mid out of bounds")
    }

    /// The slice split at `mid`, or `None` when `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// assert!(x.try_split_at_mut(5).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_split_at_mut(&mut self, mid: usize) -> Option<(CudaViewMut<'_, T>, CudaViewMut<'_, T>)> {
        (mid <= self.len).then(|| {
            let ptr = *self.bytes.device_ptr_ref();
            (
                CudaViewMut::new(ptr, mid),
                CudaViewMut::new(ptr + offset::<T>(mid), self.len - mid),
            )
        })
    }

    /// The first `len` elements reinterpreted as `S`, or `None` when they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u32>(2)?;
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { x.transmute::<u8>(8) }.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        (len.checked_mul(size_of::<S>())? <= self.len * size_of::<T>())
            .then(|| CudaView::new(*self.bytes.device_ptr_ref(), len))
    }

    /// As [`transmute`](Self::transmute), mutable.
    ///
    /// # Safety
    /// Every value written must be valid as `T`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u32>(2)?;
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { x.transmute_mut::<u8>(8) }.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        (len.checked_mul(size_of::<S>())? <= self.len * size_of::<T>())
            .then(|| CudaViewMut::new(*self.bytes.device_ptr_ref(), len))
    }
}

impl<T: super::DeviceRepr> CudaSlice<T> {
    /// A new slice on the same device with the same contents (a device-to-device copy).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let a = dev.htod_sync_copy(&[1u8, 2])?;
    /// let b = a.try_clone()?;
    /// assert_eq!(dev.dtoh_sync_copy(&b)?, vec![1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_clone(&self) -> Result<Self, DriverError> {
        // SAFETY: every element is written by the copy before anyone reads it.
        let mut dst = unsafe { self.device.alloc::<T>(self.len) }?;
        self.device.dtod_copy(self, &mut dst)?;
        Ok(dst)
    }
}

impl<T: super::DeviceRepr> Clone for CudaSlice<T> {
    /// As cudarc, panics when the copy fails; [`try_clone`](Self::try_clone) returns the error.
    fn clone(&self) -> Self {
        self.try_clone().expect("CudaSlice::clone")
    }
}

impl<T: Clone + Default + super::DeviceRepr + Unpin> TryFrom<CudaSlice<T>> for Vec<T> {
    type Error = DriverError;
    fn try_from(value: CudaSlice<T>) -> Result<Self, Self::Error> {
        value.device.clone().sync_reclaim(value)
    }
}

fn offset<T>(elements: usize) -> u64 {
    (elements * size_of::<T>()) as u64
}

use compat::to_range as bounds;

/// A borrowed range of a [`CudaSlice`] (cudarc 0.12's `CudaView`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let x = dev.htod_sync_copy(&[1u16, 2, 3])?;
/// let v: CudaView<u16> = x.slice(1..);
/// assert_eq!(dev.dtoh_sync_copy(&v)?, vec![2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaView<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    len: usize,
    _marker: PhantomData<&'a T>,
}

/// A mutably borrowed range of a [`CudaSlice`] (cudarc 0.12's `CudaViewMut`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let mut x = dev.alloc_zeros::<u16>(3)?;
/// let mut v: CudaViewMut<u16> = x.slice_mut(1..);
/// dev.htod_sync_copy_into(&[5u16, 6], &mut v)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CudaViewMut<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    len: usize,
    _marker: PhantomData<&'a mut T>,
}

impl<'a, T> CudaView<'a, T> {
    fn new(ptr: sys::CUdeviceptr, len: usize) -> Self {
        CudaView {
            ptr,
            len,
            _marker: PhantomData,
        }
    }

    /// A narrower view. Panics when out of bounds, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[0u8, 1, 2, 3])?;
    /// assert_eq!(x.slice(1..).slice(1..).len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> CudaView<'a, T> {
        self.try_slice(range).expect("CudaView::slice: range out of bounds")
    }

    /// A narrower view, or `None` when out of bounds.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u8>(4)?;
    /// assert!(x.slice(1..).try_slice(..4).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Option<CudaView<'a, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(CudaView::new(self.ptr + offset::<T>(start), end - start))
    }

    /// The first `len` elements reinterpreted as `S`, or `None` when they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u32>(2)?;
    /// let v = x.slice(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { v.transmute::<u8>(8) }.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        (len.checked_mul(size_of::<S>())? <= self.len * size_of::<T>()).then(|| CudaView::new(self.ptr, len))
    }
}

impl<'a, T> CudaViewMut<'a, T> {
    fn new(ptr: sys::CUdeviceptr, len: usize) -> Self {
        CudaViewMut {
            ptr,
            len,
            _marker: PhantomData,
        }
    }

    /// A read-only view of a range. Panics when out of bounds, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// let v = x.slice_mut(..);
    /// assert_eq!(v.slice(1..).len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice<'b: 'a>(&'b self, range: impl RangeBounds<usize>) -> CudaView<'a, T> {
        self.try_slice(range).expect("CudaViewMut::slice: range out of bounds")
    }

    /// A read-only view of a range, or `None` when out of bounds.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// let v = x.slice_mut(..);
    /// assert!(v.try_slice(..5).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_slice<'b: 'a>(&'b self, range: impl RangeBounds<usize>) -> Option<CudaView<'a, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(CudaView::new(self.ptr + offset::<T>(start), end - start))
    }

    /// A narrower mutable view. Panics when out of bounds, as in cudarc.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(8)?;
    /// let mut v = x.slice_mut(2..);
    /// dev.htod_sync_copy_into(&[1u8], &mut v.slice_mut(..1))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slice_mut<'b: 'a>(&'b mut self, range: impl RangeBounds<usize>) -> CudaViewMut<'a, T> {
        self.try_slice_mut(range)
            .expect("CudaViewMut::slice_mut: range out of bounds")
    }

    /// A narrower mutable view, or `None` when out of bounds.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(8)?;
    /// let mut v = x.slice_mut(2..);
    /// assert!(v.try_slice_mut(..7).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_slice_mut<'b: 'a>(&'b mut self, range: impl RangeBounds<usize>) -> Option<CudaViewMut<'a, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(CudaViewMut::new(self.ptr + offset::<T>(start), end - start))
    }

    /// The view split at `mid`. Panics when `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(8)?;
    /// let mut v = x.slice_mut(..);
    /// let (a, b) = v.split_at_mut(3);
    /// assert_eq!((a.len(), b.len()), (3, 5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split_at_mut<'b: 'a>(&'b mut self, mid: usize) -> (CudaViewMut<'a, T>, CudaViewMut<'a, T>) {
        self.try_split_at_mut(mid)
            .expect("CudaViewMut::split_at_mut: mid out of bounds")
    }

    /// The view split at `mid`, or `None` when `mid > len`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(8)?;
    /// let mut v = x.slice_mut(..);
    /// assert!(v.try_split_at_mut(9).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_split_at_mut<'b: 'a>(&'b mut self, mid: usize) -> Option<(CudaViewMut<'a, T>, CudaViewMut<'a, T>)> {
        (mid <= self.len).then(|| {
            (
                CudaViewMut::new(self.ptr, mid),
                CudaViewMut::new(self.ptr + offset::<T>(mid), self.len - mid),
            )
        })
    }

    /// The first `len` elements reinterpreted as `S`, or `None` when they do not fit.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u32>(2)?;
    /// let v = x.slice_mut(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { v.transmute::<u8>(8) }.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<CudaView<'_, S>> {
        (len.checked_mul(size_of::<S>())? <= self.len * size_of::<T>()).then(|| CudaView::new(self.ptr, len))
    }

    /// As [`transmute`](Self::transmute), mutable.
    ///
    /// # Safety
    /// Every value written must be valid as `T`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u32>(2)?;
    /// let mut v = x.slice_mut(..);
    /// // SAFETY: any 8 bytes are 8 valid u8.
    /// assert!(unsafe { v.transmute_mut::<u8>(8) }.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn transmute_mut<S>(&mut self, len: usize) -> Option<CudaViewMut<'_, S>> {
        (len.checked_mul(size_of::<S>())? <= self.len * size_of::<T>()).then(|| CudaViewMut::new(self.ptr, len))
    }
}

/// Something with a length in elements of `T` in device memory.
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// fn bytes<T>(x: &impl DeviceSlice<T>) -> usize {
///     x.num_bytes()
/// }
/// assert_eq!(bytes(&dev.alloc_zeros::<f64>(2)?), 16);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait DeviceSlice<T> {
    /// Elements.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// assert_eq!(DeviceSlice::len(&dev.alloc_zeros::<u8>(5)?), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn len(&self) -> usize;
    /// Bytes.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// assert_eq!(DeviceSlice::num_bytes(&dev.alloc_zeros::<u16>(5)?), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn num_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
    /// Whether it holds no element.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// assert!(DeviceSlice::is_empty(&dev.alloc_zeros::<u16>(0)?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Read access to device memory: a reference to its device pointer (cudarc 0.12's `DevicePtr`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let x = dev.alloc_zeros::<f32>(4)?;
/// let ptr: &sys::CUdeviceptr = x.device_ptr();
/// assert_ne!(*ptr, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait DevicePtr<T>: DeviceSlice<T> {
    /// The device pointer.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<u8>(4)?;
    /// assert_ne!(*x.device_ptr(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn device_ptr(&self) -> &sys::CUdeviceptr;
}

/// Write access to device memory (cudarc 0.12's `DevicePtrMut`).
///
/// ```no_run
/// # use cudrv_compat_012::driver::*;
/// # use std::sync::Arc;
/// # let dev = CudaDevice::new(0)?;
/// let mut x = dev.alloc_zeros::<f32>(4)?;
/// let ptr: &mut sys::CUdeviceptr = x.device_ptr_mut();
/// assert_ne!(*ptr, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    /// The device pointer.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u8>(4)?;
    /// let p: &mut sys::CUdeviceptr = x.device_ptr_mut();
    /// assert_ne!(*p, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn device_ptr_mut(&mut self) -> &mut sys::CUdeviceptr;
}

impl<T> DeviceSlice<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        self.len
    }
}
impl<T> DeviceSlice<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
}
impl<T> DeviceSlice<T> for CudaViewMut<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
}

impl<T> DevicePtr<T> for CudaSlice<T> {
    fn device_ptr(&self) -> &sys::CUdeviceptr {
        self.bytes.device_ptr_ref()
    }
}
impl<T> DevicePtr<T> for CudaView<'_, T> {
    fn device_ptr(&self) -> &sys::CUdeviceptr {
        &self.ptr
    }
}
impl<T> DevicePtr<T> for CudaViewMut<'_, T> {
    fn device_ptr(&self) -> &sys::CUdeviceptr {
        &self.ptr
    }
}

impl<T> DevicePtrMut<T> for CudaSlice<T> {
    /// The pointer field itself. Writing through the reference changes where this slice
    /// points, not what it frees (the pool keeps the allocation's own address).
    fn device_ptr_mut(&mut self) -> &mut sys::CUdeviceptr {
        self.bytes.device_ptr_mut_ref()
    }
}
impl<T> DevicePtrMut<T> for CudaViewMut<'_, T> {
    fn device_ptr_mut(&mut self) -> &mut sys::CUdeviceptr {
        &mut self.ptr
    }
}
