//! Copies between ordinary (pageable) host memory and the device at pinned-memory speed.
//!
//! The driver copies pageable memory through its own small staging buffer with one CPU thread,
//! which caps such copies far below the bus (8.7 GB/s host to device on the H100 machine, against
//! 53 GB/s from pinned memory). For large copies cudrv stages through its own pinned chunks
//! instead: several CPU threads copy chunk `k + 1` between the user's memory and a pinned chunk
//! while the copy engine moves chunk `k`, so the bus stays busy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::sys::{self, CUdeviceptr};

/// Copies at least this large go through the staging pipeline; smaller ones use the driver's
/// synchronous copy, which costs less for them.
///
/// ```no_run
/// use cudrv::memory::staging::STAGING_THRESHOLD;
/// use cudrv::{DeviceBuffer, DeviceSlice};
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// // 64 MiB from a pageable Vec: copied through pinned chunks, overlapping the two halves.
/// let host = vec![1u8; 64 << 20];
/// assert!(host.len() >= STAGING_THRESHOLD);
/// let dev = DeviceBuffer::from_slice(&stream, &host)?;
/// # drop(dev);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub const STAGING_THRESHOLD: usize = 4 << 20;
/// The default size of one pinned staging chunk (`CUDRV_STAGING_CHUNK_MIB` overrides it).
///
/// ```
/// use cudrv::memory::staging::DEFAULT_CHUNK_BYTES;
/// // 16 MiB chunks unless CUDRV_STAGING_CHUNK_MIB says otherwise.
/// assert_eq!(DEFAULT_CHUNK_BYTES, 16 << 20);
/// ```
pub const DEFAULT_CHUNK_BYTES: usize = 16 << 20;
/// Pinned chunks in flight: one being filled or drained by the CPU while the others move.
const CHUNKS: usize = 3;
/// The default most CPU threads that copy into or out of a chunk (`CUDRV_STAGING_THREADS`
/// overrides it).
const DEFAULT_MAX_THREADS: usize = 12;

/// (most copy threads, chunk bytes), read once from the environment.
fn tuning() -> (usize, usize) {
    static TUNING: once_cell::sync::OnceCell<(usize, usize)> = once_cell::sync::OnceCell::new();
    *TUNING.get_or_init(|| {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<usize>().ok());
        let threads = var("CUDRV_STAGING_THREADS").unwrap_or(DEFAULT_MAX_THREADS).clamp(1, 64);
        let chunk = var("CUDRV_STAGING_CHUNK_MIB").map_or(DEFAULT_CHUNK_BYTES, |m| m.clamp(1, 256) << 20);
        (threads, chunk)
    })
}

/// A pinned host chunk and the event of the last copy that used it.
///
/// Raw handles, not [`Event`](crate::Event): the staging area belongs to its context, and an
/// `Event` would hold an `Arc` back to it.
struct Chunk {
    ptr: *mut u8,
    event: sys::CUevent,
}

// SAFETY: the chunk's host memory and event are used by the copy threads of one copy at a time,
// each on sub-blocks no other thread takes, and the driver handles may be used from any thread.
unsafe impl Send for Chunk {}
// SAFETY: as above.
unsafe impl Sync for Chunk {}

impl Chunk {
    fn wait(&self) -> Result<()> {
        // SAFETY: the event is live for as long as the chunk.
        unsafe { cu!(cuEventSynchronize(self.event)) }
    }

    fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live.
        unsafe { cu!(cuEventRecord(self.event, stream.raw())) }
    }
}

/// The pinned chunks of one context, taken whole by one copy at a time.
#[derive(Default)]
pub(crate) struct Staging {
    chunks: Mutex<Vec<Chunk>>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").finish_non_exhaustive()
    }
}

/// A raw pointer that may cross into the copy threads (each thread touches the sub-blocks it took).
#[derive(Copy, Clone)]
struct SendPtr(*mut u8);
impl SendPtr {
    /// The pointer (a method, so closures capture the whole `SendPtr`, not its field).
    fn get(self) -> *mut u8 {
        self.0
    }
}
// SAFETY: the threads write disjoint sub-blocks and are joined before the pointer's owner is used.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

fn threads_for(bytes: usize) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    cores.clamp(1, tuning().0).min(bytes.div_ceil(1 << 20)).max(1)
}

/// Bytes of one unit of the CPU threads' work. The threads take a piece's sub-blocks from a
/// shared counter, so a thread that the host slows down or deschedules copies fewer of them
/// instead of holding up the whole piece with a fixed share.
const SUB_BYTES: usize = 256 << 10;

/// Copies bytes [start, end) of a piece from `src` to `dst`.
///
/// # Safety
/// `dst` and `src` must each be valid for `end` bytes and must not overlap, and no other thread
/// may use [start, end) of `dst` meanwhile.
unsafe fn copy_sub(dst: SendPtr, src: SendPtr, (start, end): (usize, usize)) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.0.add(start), dst.0.add(start), end - start) };
}

impl Staging {
    fn take(&self, ctx: &Arc<Context>) -> Result<parking_lot::MutexGuard<'_, Vec<Chunk>>> {
        let mut chunks = self.chunks.lock();
        while chunks.len() < CHUNKS {
            ctx.bind_to_thread()?;
            let mut ptr = std::ptr::null_mut();
            // SAFETY: writes one host pointer through a valid pointer; the context is current.
            // Freed in Drop.
            unsafe { cu!(cuMemHostAlloc(&mut ptr, tuning().1, 0))? };
            let mut event = std::ptr::null_mut();
            let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
            // SAFETY: writes one CUevent through a valid pointer; the context is current.
            if let Err(e) = unsafe { cu!(cuEventCreate(&mut event, flags)) } {
                // SAFETY: allocated just above and not yet used.
                let _ = unsafe { sys::cuMemFreeHost(ptr) };
                return Err(e);
            }
            chunks.push(Chunk { ptr: ptr.cast(), event });
        }
        Ok(chunks)
    }

    /// Copies `bytes` from host `src` to device `dst` on `stream`; returns when the copy is done.
    ///
    /// The threads copy each piece into the piece's chunk, sub-block by sub-block as they take
    /// them; the thread that finishes a piece's last sub-block queues its DMA and records the
    /// chunk's event. A thread starts on a chunk only after the DMA of the piece that used it
    /// before was queued and has completed. There is no barrier: threads run ahead as far as the
    /// chunks allow.
    ///
    /// # Safety
    /// `src` must be valid for reading `bytes`, and `dst` a device range of `bytes` that the
    /// caller may write.
    pub(crate) unsafe fn host_to_device(
        &self,
        stream: &Stream,
        dst: CUdeviceptr,
        src: *const u8,
        bytes: usize,
    ) -> Result<()> {
        let ctx = stream.context();
        let chunks = self.take(ctx)?;
        let chunk_bytes = tuning().1;
        let pieces = bytes.div_ceil(chunk_bytes);
        let threads = threads_for(bytes);
        let pipeline = Pipeline::new(bytes, chunk_bytes);
        let src = SendPtr(src as *mut u8);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let (chunks, pipeline) = (&chunks, &pipeline);
                scope.spawn(move || {
                    for p in 0..pieces {
                        let (b, offset) = (p % CHUNKS, p * chunk_bytes);
                        let len = chunk_bytes.min(bytes - offset);
                        // The piece that used this chunk before must have been queued...
                        if p >= CHUNKS && !pipeline.wait_published(b, p - CHUNKS) {
                            return;
                        }
                        // ...and copied to the device.
                        if let Err(e) = chunks[b].wait() {
                            return pipeline.fail(e);
                        }
                        while let Some(range) = pipeline.take_sub(p, len) {
                            // SAFETY: the source piece lies within the caller's range; the chunk
                            // holds chunk_bytes >= len and no DMA reads it (waited above); each
                            // sub-block is taken by one thread.
                            unsafe { copy_sub(SendPtr(chunks[b].ptr), SendPtr(src.get().add(offset)), range) };
                            if !pipeline.finish_sub(p) {
                                continue;
                            }
                            let queued = ctx.bind_to_thread().and_then(|()| {
                                // SAFETY: the chunk is pinned and holds the piece's `len` bytes;
                                // the destination lies within the caller's device range.
                                unsafe {
                                    cu!(cuMemcpyHtoDAsync_v2(
                                        dst + offset as u64,
                                        chunks[b].ptr.cast(),
                                        len,
                                        stream.raw()
                                    ))
                                }
                                .and_then(|()| chunks[b].record(stream))
                            });
                            match queued {
                                Ok(()) => pipeline.publish(b, p),
                                Err(e) => return pipeline.fail(e),
                            }
                        }
                    }
                });
            }
        });
        let sync = stream.synchronize();
        pipeline.result().and(sync)
    }

    /// Copies `bytes` from device `src` to host `dst` on `stream`; returns when the data is there.
    ///
    /// The calling thread queues the first pieces; after that, the thread that finishes copying a
    /// piece out of its chunk last queues the DMA of the piece that reuses the chunk.
    ///
    /// # Safety
    /// `dst` must be valid for writing `bytes`, and `src` a readable device range of `bytes`.
    pub(crate) unsafe fn device_to_host(
        &self,
        stream: &Stream,
        dst: *mut u8,
        src: CUdeviceptr,
        bytes: usize,
    ) -> Result<()> {
        let ctx = stream.context();
        let chunks = self.take(ctx)?;
        let chunk_bytes = tuning().1;
        let pieces = bytes.div_ceil(chunk_bytes);
        let threads = threads_for(bytes);
        let pipeline = Pipeline::new(bytes, chunk_bytes);
        let dst = SendPtr(dst);
        let queue = |p: usize| -> Result<()> {
            let (b, offset) = (p % CHUNKS, p * chunk_bytes);
            let len = chunk_bytes.min(bytes - offset);
            ctx.bind_to_thread()?;
            // SAFETY: the chunk is pinned, holds chunk_bytes >= len, and every thread has copied
            // the previous piece out of it; the source lies within the caller's device range.
            unsafe {
                cu!(cuMemcpyDtoHAsync_v2(
                    chunks[b].ptr.cast(),
                    src + offset as u64,
                    len,
                    stream.raw()
                ))?
            };
            chunks[b].record(stream)?;
            pipeline.publish(b, p);
            Ok(())
        };
        for p in 0..pieces.min(CHUNKS) {
            queue(p)?;
        }
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let (chunks, pipeline, queue) = (&chunks, &pipeline, &queue);
                scope.spawn(move || {
                    for p in 0..pieces {
                        let (b, offset) = (p % CHUNKS, p * chunk_bytes);
                        let len = chunk_bytes.min(bytes - offset);
                        if !pipeline.wait_published(b, p) {
                            return;
                        }
                        if let Err(e) = chunks[b].wait() {
                            return pipeline.fail(e);
                        }
                        while let Some(range) = pipeline.take_sub(p, len) {
                            // SAFETY: the chunk's DMA has completed (waited above); the
                            // destination piece lies within the caller's range; each sub-block is
                            // taken by one thread.
                            unsafe { copy_sub(SendPtr(dst.get().add(offset)), SendPtr(chunks[b].ptr), range) };
                            if pipeline.finish_sub(p) && p + CHUNKS < pieces {
                                if let Err(e) = queue(p + CHUNKS) {
                                    return pipeline.fail(e);
                                }
                            }
                        }
                    }
                });
            }
        });
        if pipeline.failed.load(Ordering::Acquire) {
            let _ = stream.synchronize();
        }
        pipeline.result()
    }
}

/// The shared state of one staged copy.
struct Pipeline {
    /// Per piece: the next sub-block to take.
    next: Vec<AtomicUsize>,
    /// Per piece: sub-blocks still to copy.
    remaining: Vec<AtomicUsize>,
    /// Per chunk: 1 + the last piece whose DMA was queued through it (0: none yet).
    published: [AtomicUsize; CHUNKS],
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Pipeline {
    /// The state for `bytes` in pieces of `chunk_bytes`.
    fn new(bytes: usize, chunk_bytes: usize) -> Self {
        let pieces = bytes.div_ceil(chunk_bytes);
        let subs = |p: usize| chunk_bytes.min(bytes - p * chunk_bytes).div_ceil(SUB_BYTES);
        Pipeline {
            next: (0..pieces).map(|_| AtomicUsize::new(0)).collect(),
            remaining: (0..pieces).map(|p| AtomicUsize::new(subs(p))).collect(),
            published: std::array::from_fn(|_| AtomicUsize::new(0)),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// Takes the next sub-block of `piece` (of `len` bytes): its byte range within the piece,
    /// or `None` once every sub-block is taken.
    fn take_sub(&self, piece: usize, len: usize) -> Option<(usize, usize)> {
        let start = self.next[piece]
            .fetch_add(1, Ordering::Relaxed)
            .saturating_mul(SUB_BYTES);
        (start < len).then(|| (start, (start + SUB_BYTES).min(len)))
    }

    /// Counts one sub-block of `piece` done; true for the thread that did the last one (it then
    /// sees every sub-block's bytes).
    fn finish_sub(&self, piece: usize) -> bool {
        self.remaining[piece].fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Marks `piece`'s DMA (and the chunk's event after it) as queued.
    fn publish(&self, chunk: usize, piece: usize) {
        self.published[chunk].fetch_max(piece + 1, Ordering::Release);
    }

    /// Waits until `piece`'s DMA through `chunk` is queued; false if the copy failed meanwhile.
    fn wait_published(&self, chunk: usize, piece: usize) -> bool {
        let mut spins = 0u32;
        while self.published[chunk].load(Ordering::Acquire) < piece + 1 {
            if self.failed.load(Ordering::Acquire) {
                return false;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    fn fail(&self, e: Error) {
        self.error.lock().get_or_insert(e);
        self.failed.store(true, Ordering::Release);
    }

    fn result(&self) -> Result<()> {
        match self.error.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Staging {
    /// Frees the pinned chunks (after their last copies); the next staged copy makes new ones.
    pub(crate) fn release(&self) {
        for chunk in self.chunks.lock().drain(..) {
            let _ = chunk.wait();
            // SAFETY: allocated in `take`, no copy pending (waited above), each freed once.
            unsafe {
                let _ = sys::cuEventDestroy_v2(chunk.event);
                let _ = sys::cuMemFreeHost(chunk.ptr.cast());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_blocks_cover_each_piece_once_and_one_thread_finishes_it() {
        // 3 full pieces of 1 MiB and a last one of 700 KiB + 5 bytes, taken by 6 threads.
        let chunk = 1 << 20;
        let bytes = 3 * chunk + (700 << 10) + 5;
        let pipeline = Pipeline::new(bytes, chunk);
        let pieces = bytes.div_ceil(chunk);
        let covered: Vec<Mutex<Vec<(usize, usize)>>> = (0..pieces).map(|_| Mutex::new(Vec::new())).collect();
        let finished: Vec<AtomicUsize> = (0..pieces).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    for p in 0..pieces {
                        let len = chunk.min(bytes - p * chunk);
                        while let Some(range) = pipeline.take_sub(p, len) {
                            covered[p].lock().push(range);
                            if pipeline.finish_sub(p) {
                                finished[p].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        for p in 0..pieces {
            let len = chunk.min(bytes - p * chunk);
            let mut ranges = covered[p].lock().clone();
            ranges.sort_unstable();
            let mut at = 0;
            for (start, end) in ranges {
                assert_eq!(start, at, "piece {p}: a gap or an overlap at {start}");
                assert!(end > start && end - start <= SUB_BYTES);
                at = end;
            }
            assert_eq!(at, len, "piece {p} not covered");
            assert_eq!(finished[p].load(Ordering::Relaxed), 1, "piece {p}");
        }
    }
}
