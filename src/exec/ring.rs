//! The host side of the executor's queue: a ring of items and two counters in pinned host memory
//! that the device reads and writes directly (mapped, no copies, no launches).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::source::ITEM_WORDS;
use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::sys;

/// Words before the items.
const HEADER: usize = 16;

/// Pinned, device-mapped host memory: `[tail, completed, started, fetcher started]`, twelve
/// profile counters, then `capacity` items.
pub(crate) struct HostRing {
    ptr: *mut u64,
    device: sys::CUdeviceptr,
    capacity: usize,
    ctx: Arc<Context>,
}

// SAFETY: the memory is owned by this value; the counters are accessed atomically and the items
// are written only by the thread that holds the executor's submit lock.
unsafe impl Send for HostRing {}
// SAFETY: as above.
unsafe impl Sync for HostRing {}

impl HostRing {
    pub(crate) fn new(ctx: &Arc<Context>, capacity: usize) -> Result<HostRing> {
        let bytes = (HEADER + capacity * ITEM_WORDS)
            .checked_mul(8)
            .ok_or_else(|| Error::InvalidArgument(format!("a queue of {capacity} items is too large")))?;
        ctx.bind_to_thread()?;
        let mut p = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: writes one host pointer; the context is current. Freed in Drop.
        unsafe { cu!(cuMemHostAlloc(&mut p, bytes, flags))? };
        // SAFETY: the allocation holds `bytes` bytes; zeroed before the device sees it.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes) };
        let mut device = 0;
        // SAFETY: `p` is a mapped pinned allocation of this context; writes one device pointer.
        if let Err(e) = unsafe { cu!(cuMemHostGetDevicePointer_v2(&mut device, p, 0)) } {
            // SAFETY: allocated above, freed once.
            let _ = unsafe { sys::cuMemFreeHost(p) };
            return Err(e);
        }
        Ok(HostRing {
            ptr: p as *mut u64,
            device,
            capacity,
            ctx: ctx.clone(),
        })
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The device addresses of the counters (`Host` in the kernel) and of the items.
    pub(crate) fn device_pointers(&self) -> (sys::CUdeviceptr, sys::CUdeviceptr) {
        (self.device, self.device + 8 * HEADER as u64)
    }

    fn counter(&self, i: usize) -> &AtomicU64 {
        // SAFETY: words 0 to 15 are 8-byte aligned u64 counters that live as long as `self`;
        // the device accesses them with system-scope acquire/release.
        unsafe { AtomicU64::from_ptr(self.ptr.add(i)) }
    }

    /// Items published so far.
    pub(crate) fn tail(&self) -> u64 {
        self.counter(0).load(Ordering::Acquire)
    }

    /// Whether the kernel has started (it sets the word first thing).
    pub(crate) fn started(&self) -> bool {
        self.counter(2).load(Ordering::Acquire) != 0
    }

    /// Whether the fetcher has started (it sets the word first thing).
    pub(crate) fn fetcher_started(&self) -> bool {
        self.counter(3).load(Ordering::Acquire) != 0
    }

    /// The profile counters of block `b` (0 or 1): wait, copy, items, barrier cycles, items,
    /// refills.
    pub(crate) fn profile(&self, b: usize) -> [u64; 6] {
        std::array::from_fn(|i| self.counter(4 + 6 * b + i).load(Ordering::Acquire))
    }

    /// The number of the last batch the device finished.
    pub(crate) fn completed(&self) -> u64 {
        self.counter(1).load(Ordering::Acquire)
    }

    /// Writes `items` at positions `tail..` (the caller has checked there is room) and publishes
    /// them.
    pub(crate) fn publish(&self, items: &[[u64; ITEM_WORDS]]) {
        let tail = self.tail();
        for (k, item) in items.iter().enumerate() {
            let slot = (tail as usize + k) % self.capacity;
            // SAFETY: the slot is inside the allocation; the device does not read it until the
            // tail below passes it (the caller keeps at most `capacity` items unfinished).
            unsafe {
                let dst = self.ptr.add(HEADER + slot * ITEM_WORDS);
                std::ptr::copy_nonoverlapping(item.as_ptr(), dst, ITEM_WORDS);
            }
        }
        self.counter(0).store(tail + items.len() as u64, Ordering::Release);
    }
}

impl Drop for HostRing {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemHostAlloc in `new`; the executor's kernel has ended (or the
        // context is being torn down), so nothing reads it any more.
        let _ = unsafe { sys::cuMemFreeHost(self.ptr as *mut std::ffi::c_void) };
    }
}
