//! Page-locked (pinned) host memory, the source and target of truly asynchronous copies.

use std::mem::size_of;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::context::Context;
use crate::error::{bail_invalid, Result};
use crate::event::Event;
use crate::memory::repr::ValidAsZeroBits;
use crate::stream::Stream;

/// A zero-initialised array of `T` in pinned host memory, from the context's
/// [pinned pool](crate::memory::pinned_pool::PinnedPool).
///
/// Copies to and from it run asynchronously at full bus speed. The buffer remembers the last
/// copy queued against it and waits for that copy before its contents are read, written or freed,
/// so an async copy can never race with host access.
///
/// ```no_run
/// use cudrv::{DeviceSlice, DeviceSliceMut};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let mut host = cudrv::PinnedHostBuffer::<f32>::new(&ctx, 1024)?;
/// host.as_mut_slice()?.fill(1.5);
/// let mut dev = cudrv::DeviceBuffer::<f32>::zeroed(&stream, 1024)?;
/// dev.copy_from_pinned_async(&host)?;
/// dev.copy_to_pinned_async(&mut host)?;
/// assert!(host.as_slice()?.iter().all(|&x| x == 1.5));
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct PinnedHostBuffer<T> {
    ptr: *mut T,
    len: usize,
    /// Bytes of the pinned allocation (0 for an empty buffer), from the context's pinned pool.
    capacity: usize,
    ctx: Arc<Context>,
    /// The last copy queued against the buffer on each stream that used it.
    pending: Mutex<Vec<(usize, Event)>>,
}

// SAFETY: the buffer owns its host memory; access goes through &/&mut self and the pending
// event, which is behind a mutex.
unsafe impl<T: Send> Send for PinnedHostBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for PinnedHostBuffer<T> {}

impl<T: ValidAsZeroBits> PinnedHostBuffer<T> {
    /// Allocates `len` zeroed elements of pinned host memory.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let host = cudrv::PinnedHostBuffer::<f32>::new(&ctx, 1024)?;
    /// assert!(host.as_slice()?.iter().all(|&x| x == 0.0));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn new(ctx: &Arc<Context>, len: usize) -> Result<Self> {
        let Some(bytes) = len.checked_mul(size_of::<T>()) else {
            bail_invalid!(
                "a pinned buffer of {len} elements of {} bytes overflows usize",
                size_of::<T>()
            );
        };
        let (ptr, capacity) = if bytes > 0 {
            let (ptr, capacity) = ctx.pinned_pool().take(bytes)?;
            // SAFETY: the allocation holds at least `bytes` writable bytes; zero is a valid T.
            unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
            (ptr.cast::<T>(), capacity)
        } else {
            (std::ptr::NonNull::<T>::dangling().as_ptr(), 0)
        };
        Ok(PinnedHostBuffer {
            ptr,
            len,
            capacity,
            ctx: ctx.clone(),
            pending: Mutex::new(Vec::new()),
        })
    }
}

impl<T> PinnedHostBuffer<T> {
    /// The number of elements.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert_eq!(cudrv::PinnedHostBuffer::<u8>::new(&ctx, 100)?.len(), 100);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert!(cudrv::PinnedHostBuffer::<u8>::new(&ctx, 0)?.is_empty());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waits for any copy queued against the buffer.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, PinnedHostBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let dev = DeviceBuffer::from_slice(&stream, &[7u32; 256])?;
    /// let mut host = PinnedHostBuffer::<u32>::new(&ctx, 256)?;
    /// dev.copy_to_pinned_async(&mut host)?;
    /// host.synchronize()?; // the copy has landed
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        let mut pending = self.pending.lock();
        for (_, event) in pending.iter() {
            event.synchronize()?;
        }
        pending.clear();
        Ok(())
    }

    /// The contents, after any queued copy has finished.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, PinnedHostBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let dev = DeviceBuffer::from_slice(&stream, &[3i32, 4])?;
    /// let mut host = PinnedHostBuffer::<i32>::new(&ctx, 2)?;
    /// dev.copy_to_pinned_async(&mut host)?;
    /// assert_eq!(host.as_slice()?, &[3, 4]); // waits for the copy first
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn as_slice(&self) -> Result<&[T]> {
        self.synchronize()?;
        // SAFETY: `ptr` points to `len` initialised elements (zeroed at allocation, written
        // only by copies of valid T) and no copy is pending.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The contents, writable, after any queued copy has finished.
    ///
    /// ```no_run
    /// use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut, PinnedHostBuffer};
    /// let ctx = cudrv::Context::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut host = PinnedHostBuffer::<f32>::new(&ctx, 3)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1.0, 2.0, 3.0]);
    /// let mut dev = DeviceBuffer::<f32>::zeroed(&stream, 3)?;
    /// dev.copy_from_pinned_async(&host)?;
    /// assert_eq!(dev.to_vec()?, vec![1.0, 2.0, 3.0]);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.synchronize()?;
        // SAFETY: as in `as_slice`, and &mut self gives exclusive access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    pub(crate) fn as_raw_ptr(&self) -> *const T {
        self.ptr
    }

    pub(crate) fn as_raw_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }

    /// Records that a copy touching this buffer was queued on `stream`.
    pub(crate) fn mark_in_use(&self, stream: &Stream) -> Result<()> {
        let event = stream.record_event()?;
        let key = stream.raw() as usize;
        let mut pending = self.pending.lock();
        // On one stream the newest copy completes after the older ones, so it replaces them.
        match pending.iter_mut().find(|(s, _)| *s == key) {
            Some(slot) => slot.1 = event,
            None => pending.push((key, event)),
        }
        Ok(())
    }
}

impl<T> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        // Wait for pending copies before the memory can be handed to anyone else. If waiting
        // fails the context is broken; leak the memory rather than risk a copy still using it.
        if self.synchronize().is_err() || self.capacity == 0 {
            return;
        }
        self.ctx.pinned_pool().give_back(self.ptr.cast(), self.capacity);
    }
}
