//! The process's CUPTI activity collection: kernel records for the contexts whose profiler uses
//! CUPTI ([`super::Timing::Cupti`]).
//!
//! CUPTI is one per process: its buffer callbacks are registered once, and concurrent-kernel
//! records are collected while at least one profiler is on. The completion callback (on
//! CUPTI's thread, or on the thread that flushes) keeps the records of the contexts that
//! listen, grouped by context, until their profiler takes them; at most [`KEPT_RECORDS`] per
//! context wait there (the oldest go first), so a profiler that is never read stays bounded.

use parking_lot::Mutex;
use std::alloc::{self, Layout};
use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;
use std::sync::OnceLock;

use super::matching::{name_hash, Record};
use crate::sys::{self, cupti};

/// Bytes in one record buffer (about 20 000 kernel records).
const BUFFER_BYTES: usize = 4 << 20;

/// Records kept per context before its profiler takes them.
pub(crate) const KEPT_RECORDS: usize = 1 << 20;

#[derive(Default)]
struct Shared {
    /// Context ids whose records are kept, with how many profilers listen.
    listening: HashMap<u32, usize>,
    records: HashMap<u32, VecDeque<Record>>,
}

/// The records. The completion callback takes this lock, so no CUPTI call is made holding it.
fn shared() -> &'static Mutex<Shared> {
    static SHARED: OnceLock<Mutex<Shared>> = OnceLock::new();
    SHARED.get_or_init(Default::default)
}

/// Profilers on, in all contexts: collection runs while this is above 0.
fn on_count() -> &'static Mutex<usize> {
    static ON: OnceLock<Mutex<usize>> = OnceLock::new();
    ON.get_or_init(Default::default)
}

fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size, 8).ok()
}

/// CUPTI asks for a buffer.
unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let _ = std::panic::catch_unwind(|| {
        let Some(l) = layout(BUFFER_BYTES) else { return };
        // SAFETY: a non-zero size; freed in `completed` with the same layout.
        let p = unsafe { alloc::alloc(l) };
        // SAFETY: CUPTI passes valid out-pointers; a null buffer tells it that none came.
        unsafe {
            *buffer = p;
            *size = if p.is_null() { 0 } else { BUFFER_BYTES };
            *max_records = 0;
        }
    });
}

/// CUPTI hands a buffer back: the kernel records of listening contexts are kept.
unsafe extern "C" fn completed(_ctx: sys::CUcontext, _stream: u32, buffer: *mut u8, size: usize, valid: usize) {
    let _ = std::panic::catch_unwind(|| {
        if let Ok(lib) = cupti::library() {
            let mut guard = shared().lock();
            let s = &mut *guard;
            let keep = |r: *const u8| {
                // SAFETY: `r` is a complete record of this buffer.
                let Some(k) = (unsafe { cupti::kernel_record(r) }) else {
                    return;
                };
                if k.name.is_null() || k.start == 0 || k.end < k.start || !s.listening.contains_key(&k.context_id) {
                    return;
                }
                // SAFETY: CUPTI's kernel name is a NUL-terminated string that lives while the
                // records that point at it do.
                let name = name_hash(unsafe { CStr::from_ptr(k.name) }.to_bytes());
                let q = s.records.entry(k.context_id).or_default();
                if q.len() >= KEPT_RECORDS {
                    q.pop_front();
                }
                q.push_back(Record {
                    stream_id: k.stream_id,
                    correlation_id: k.correlation_id,
                    name,
                    start: k.start,
                    end: k.end,
                });
            };
            // SAFETY: the buffer and its valid size are CUPTI's, unchanged.
            unsafe { lib.records(buffer, valid, keep) };
        }
    });
    if !buffer.is_null() {
        if let Some(l) = layout(size) {
            // SAFETY: allocated by `requested` with this size and alignment.
            unsafe { alloc::dealloc(buffer, l) };
        }
    }
}

/// A context's place in the collection: listening from [`Listener::new`] until dropped.
#[derive(Debug)]
pub(crate) struct Listener {
    lib: &'static cupti::Cupti,
    context_id: u32,
    /// CUPTI's clock when the profiler was first switched on (the trace's time zero).
    pub origin_ns: u64,
    on: bool,
}

impl Listener {
    /// Listens to `ctx`'s kernels (collection starts with [`Listener::start`]).
    ///
    /// # Safety
    /// `ctx` must be a live context.
    pub(crate) unsafe fn new(ctx: sys::CUcontext) -> Result<Listener, String> {
        let lib = cupti::library()?;
        static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
        REGISTERED
            // SAFETY: `requested` hands out 8-aligned buffers freed only by `completed`;
            // neither unwinds (both catch panics).
            .get_or_init(|| unsafe { lib.register(requested, completed) })
            .clone()?;
        // SAFETY: the caller's contract.
        let context_id = unsafe { lib.context_id(ctx) }?;
        let origin_ns = lib.timestamp()?;
        *shared().lock().listening.entry(context_id).or_default() += 1;
        Ok(Listener {
            lib,
            context_id,
            origin_ns,
            on: false,
        })
    }

    /// Collection on for this profiler (and so for the process).
    pub(crate) fn start(&mut self) -> Result<(), String> {
        if self.on {
            return Ok(());
        }
        let mut on = on_count().lock();
        if *on == 0 {
            self.lib.enable(cupti::KIND_CONCURRENT_KERNEL)?;
        }
        *on += 1;
        self.on = true;
        Ok(())
    }

    /// Collection off for this profiler (for the process when no other is on). Records of
    /// kernels launched before still come.
    pub(crate) fn stop(&mut self) {
        if !self.on {
            return;
        }
        let mut on = on_count().lock();
        *on -= 1;
        if *on == 0 {
            let _ = self.lib.disable(cupti::KIND_CONCURRENT_KERNEL);
        }
        self.on = false;
    }

    /// CUPTI's id of a stream of this context.
    ///
    /// # Safety
    /// `ctx` (this listener's) and `stream` must be live.
    pub(crate) unsafe fn stream_id(
        &self,
        ctx: sys::CUcontext,
        stream: sys::CUstream,
        per_thread: bool,
    ) -> Result<u32, String> {
        // SAFETY: the caller's contract.
        unsafe { self.lib.stream_id(ctx, stream, per_thread) }
    }

    /// Hands the finished records to the callback (`forced`: the buffers still filling too).
    pub(crate) fn flush(&self, forced: bool) -> Result<(), String> {
        self.lib.flush_all(if forced { cupti::FLUSH_FORCED } else { 0 })
    }

    /// The records of this context collected so far.
    pub(crate) fn take(&self) -> Vec<Record> {
        let mut s = shared().lock();
        s.records
            .get_mut(&self.context_id)
            .map(|q| q.drain(..).collect())
            .unwrap_or_default()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
        let mut s = shared().lock();
        if let Some(n) = s.listening.get_mut(&self.context_id) {
            *n -= 1;
            if *n == 0 {
                s.listening.remove(&self.context_id);
                s.records.remove(&self.context_id);
            }
        }
    }
}
