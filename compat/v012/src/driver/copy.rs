//! [`CudaDevice`]'s allocations and copies. Everything is queued on the device's stream; the
//! `sync` copies (and `dtoh` ones) return after it finished. Lengths are checked: a mismatch is
//! `CUDA_ERROR_INVALID_VALUE` with both lengths in the error's detail (cudarc 0.12 panics).

use std::mem::{size_of, MaybeUninit};
use std::sync::Arc;

use super::device::CudaDevice;
use super::launch::DeviceRepr;
use super::slice::{CudaSlice, DevicePtr, DevicePtrMut};
use super::{cu, invalid, sys, DriverError, ValidAsZeroBits};

fn same_len(what: &str, dst: usize, src: usize) -> Result<(), DriverError> {
    if dst == src {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what}: the destination holds {dst} elements, the source {src}"
        )))
    }
}

impl CudaDevice {
    /// A zero-length slice.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// assert!(dev.null::<f32>()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn null<T>(self: &Arc<Self>) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: zero bytes: nothing to initialise.
        unsafe { self.alloc_bytes(0, 0) }
    }

    /// # Safety
    /// The contents are uninitialised.
    unsafe fn alloc_bytes<T>(self: &Arc<Self>, len: usize, bytes: usize) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: forwarded: the caller initialises the memory.
        let raw = unsafe { self.stream.alloc::<u8>(bytes) }?;
        Ok(CudaSlice::from_bytes(raw, len, self.clone()))
    }

    /// `len` uninitialised elements, allocated in order on the device's stream.
    ///
    /// # Safety
    /// The contents are uninitialised: write them before reading them.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// // SAFETY: written (the copy below) before it is read.
    /// let mut x = unsafe { dev.alloc::<f32>(2) }?;
    /// dev.htod_sync_copy_into(&[1.0f32, 2.0], &mut x)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<CudaSlice<T>, DriverError> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| invalid(format!("{len} elements of {} bytes overflow", size_of::<T>())))?;
        // SAFETY: forwarded.
        unsafe { self.alloc_bytes(len, bytes) }
    }

    /// `len` zeroed elements.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.alloc_zeros::<i32>(3)?;
    /// assert_eq!(dev.dtoh_sync_copy(&x)?, vec![0; 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc_zeros<T: ValidAsZeroBits + DeviceRepr>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: zeroed below, before anything can read it.
        let mut dst = unsafe { self.alloc::<T>(len) }?;
        self.memset_zeros(&mut dst)?;
        Ok(dst)
    }

    /// Sets every byte of `dst` to zero.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.htod_sync_copy(&[7i32; 3])?;
    /// dev.memset_zeros(&mut x)?;
    /// assert_eq!(dev.dtoh_sync_copy(&x)?, vec![0; 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memset_zeros<T: ValidAsZeroBits + DeviceRepr, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        let bytes = dst.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.bind_to_thread()?;
        // SAFETY: `dst` holds `bytes` bytes of device memory; the zero pattern is valid for T.
        unsafe { cu!(cuMemsetD8Async(*dst.device_ptr_mut(), 0, bytes, *self.cu_stream())) }
    }

    /// Copies `src` into `dst` (equal lengths), device to device.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let a = dev.htod_sync_copy(&[1u8, 2])?;
    /// let mut b = dev.alloc_zeros::<u8>(2)?;
    /// dev.dtod_copy(&a, &mut b)?;
    /// assert_eq!(dev.dtoh_sync_copy(&b)?, vec![1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtod_copy<T: DeviceRepr, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        same_len("dtod_copy", dst.len(), src.len())?;
        let bytes = src.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.bind_to_thread()?;
        // SAFETY: both hold `bytes` bytes of device memory.
        unsafe {
            cu!(cuMemcpyDtoDAsync_v2(
                *dst.device_ptr_mut(),
                *src.device_ptr(),
                bytes,
                *self.cu_stream()
            ))
        }
    }

    /// A new slice holding `src`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_copy(vec![1.5f32; 8])?; // the Vec is kept until the copy is done
    /// assert_eq!(x.len(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn htod_copy<T: Unpin + DeviceRepr>(self: &Arc<Self>, src: Vec<T>) -> Result<CudaSlice<T>, DriverError> {
        self.htod_sync_copy(&src)
    }

    /// Copies `src` into `dst` (equal lengths).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<f32>(2)?;
    /// dev.htod_copy_into(vec![3.0f32, 4.0], &mut x)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn htod_copy_into<T: DeviceRepr + Unpin>(
        self: &Arc<Self>,
        src: Vec<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), DriverError> {
        self.htod_sync_copy_into(&src, dst)
    }

    /// A new slice holding `src`.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[1u64, 2, 3])?;
    /// assert_eq!(x.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn htod_sync_copy<T: DeviceRepr>(self: &Arc<Self>, src: &[T]) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: every element is written by the copy before anyone reads it.
        let mut dst = unsafe { self.alloc::<T>(src.len()) }?;
        self.htod_sync_copy_into(src, &mut dst)?;
        Ok(dst)
    }

    /// Copies `src` into `dst` (equal lengths); returns when the copy is done.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let mut x = dev.alloc_zeros::<u64>(3)?;
    /// dev.htod_sync_copy_into(&[4u64, 5, 6], &mut x)?;
    /// assert!(dev.htod_sync_copy_into(&[1u64], &mut x).is_err()); // lengths must match
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn htod_sync_copy_into<T: DeviceRepr, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &[T],
        dst: &mut Dst,
    ) -> Result<(), DriverError> {
        same_len("htod_sync_copy_into", dst.len(), src.len())?;
        let bytes = std::mem::size_of_val(src);
        if bytes == 0 {
            return Ok(());
        }
        self.bind_to_thread()?;
        // SAFETY: `dst` holds `bytes` bytes; `src` stays borrowed until the stream is synchronized.
        unsafe {
            cu!(cuMemcpyHtoDAsync_v2(
                *dst.device_ptr_mut(),
                src.as_ptr().cast(),
                bytes,
                *self.cu_stream()
            ))?
        };
        self.stream.synchronize()
    }

    /// `src`'s contents.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[1.0f64, 2.0])?;
    /// assert_eq!(dev.dtoh_sync_copy(&x)?, vec![1.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtoh_sync_copy<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<Vec<T>, DriverError> {
        let mut out: Vec<MaybeUninit<T>> = Vec::with_capacity(src.len());
        // SAFETY: MaybeUninit needs no initialisation.
        unsafe { out.set_len(src.len()) };
        self.dtoh_raw(src, out.as_mut_ptr().cast(), src.len())?;
        let mut out = std::mem::ManuallyDrop::new(out);
        // SAFETY: every element was written by the finished copy, and T: DeviceRepr means any
        // bytes the device holds are a valid T; the allocation is reused with its capacity.
        Ok(unsafe { Vec::from_raw_parts(out.as_mut_ptr().cast::<T>(), out.len(), out.capacity()) })
    }

    /// Copies `src` into `dst` (equal lengths).
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[8u8, 9])?;
    /// let mut host = [0u8; 2];
    /// dev.dtoh_sync_copy_into(&x, &mut host)?;
    /// assert_eq!(host, [8, 9]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtoh_sync_copy_into<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut [T],
    ) -> Result<(), DriverError> {
        same_len("dtoh_sync_copy_into", dst.len(), src.len())?;
        self.dtoh_raw(src, dst.as_mut_ptr(), dst.len())
    }

    fn dtoh_raw<T, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src, dst: *mut T, len: usize) -> Result<(), DriverError> {
        let bytes = len * size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        self.bind_to_thread()?;
        // SAFETY: `dst` has room for `len` elements and is not read until the copy finished.
        unsafe {
            cu!(cuMemcpyDtoHAsync_v2(
                dst.cast(),
                *src.device_ptr(),
                bytes,
                *self.cu_stream()
            ))?
        };
        self.stream.synchronize()
    }

    /// `src`'s contents; the slice is freed.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let x = dev.htod_sync_copy(&[1i16, 2])?;
    /// assert_eq!(dev.sync_reclaim(x)?, vec![1, 2]); // the buffer is freed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_reclaim<T: Clone + Default + DeviceRepr + Unpin>(
        self: &Arc<Self>,
        src: CudaSlice<T>,
    ) -> Result<Vec<T>, DriverError> {
        self.dtoh_sync_copy(&src)
    }

    /// Takes ownership of device memory: `len` elements at `cu_device_ptr`.
    ///
    /// # Safety
    /// `cu_device_ptr` must be a live allocation of at least `len` elements, from
    /// [`CudaSlice::leak`] or the driver's allocator, owned by nobody else.
    ///
    /// ```no_run
    /// # use cudrv_compat_012::driver::*;
    /// # use std::sync::Arc;
    /// # let dev = CudaDevice::new(0)?;
    /// let raw = dev.alloc_zeros::<f32>(16)?.leak();
    /// // SAFETY: `raw` holds 16 f32 of this device and nothing else owns it.
    /// let x: CudaSlice<f32> = unsafe { dev.upgrade_device_ptr(raw, 16) };
    /// assert_eq!(x.len(), 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn upgrade_device_ptr<T>(self: &Arc<Self>, cu_device_ptr: sys::CUdeviceptr, len: usize) -> CudaSlice<T> {
        // SAFETY: forwarded: the caller hands over the allocation.
        let bytes = unsafe {
            self.stream
                .upgrade_device_ptr::<u8>(cu_device_ptr, len * size_of::<T>())
        };
        CudaSlice::from_bytes(bytes, len, self.clone())
    }
}
