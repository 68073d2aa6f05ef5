//! The two seams between the pool and the device: where memory comes from, and how the pool
//! learns that a stream's work has finished.

/// Identifies a stream (on a GPU: a `CUstream` handle, or any id the runtime maps one-to-one
/// onto its streams).
///
/// ```
/// use cudrv::memory::pool::StreamId;
/// let s = StreamId(0x7f00_1234); // e.g. a CUstream handle's value
/// assert_eq!(s.0, 0x7f00_1234);
/// ```
#[derive(Copy, Clone, Eq, PartialEq, Hash, Debug, Ord, PartialOrd)]
pub struct StreamId(pub u64);

/// Why a [`Backing`] could not reserve memory.
///
/// ```
/// use cudrv::memory::pool::{sim::SimBacking, Backing, BackingError};
/// let mem = SimBacking::new(1 << 20);
/// assert_eq!(mem.reserve(2 << 20), Err(BackingError::OutOfBackingMemory));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackingError {
    /// The device (or whatever backs the pool) has no room for the request. The pool reacts by
    /// releasing its cached segments and retrying once.
    #[error("the backing store is out of memory")]
    OutOfBackingMemory,
    /// Any other failure (on a GPU: a driver error other than `CUDA_ERROR_OUT_OF_MEMORY`). The pool
    /// does not retry; it reports [`PoolError::Backing`](super::PoolError::Backing).
    #[error("the backing store failed: {0}")]
    Other(String),
}

/// Where segments come from (real implementation: `cuMemAlloc`/`cuMemFree`; tests: a fake
/// address space).
///
/// The pool calls both methods without holding any of its locks, possibly from several threads at
/// once.
///
/// ```
/// use cudrv::memory::pool::{Backing, BackingError};
/// use std::sync::Mutex;
///
/// /// Hands out one fixed arena, front to back; releases nothing.
/// struct Arena { base: u64, len: usize, used: Mutex<usize> }
/// impl Backing for Arena {
///     fn reserve(&self, bytes: usize) -> Result<u64, BackingError> {
///         let mut used = self.used.lock().unwrap();
///         if *used + bytes > self.len {
///             return Err(BackingError::OutOfBackingMemory);
///         }
///         *used += bytes;
///         Ok(self.base + (*used - bytes) as u64)
///     }
///     fn release(&self, _addr: u64, _bytes: usize) {}
/// }
/// let arena = Arena { base: 1 << 40, len: 4 << 20, used: Mutex::new(0) };
/// assert_eq!(arena.reserve(2 << 20), Ok(1 << 40));
/// ```
pub trait Backing: Send + Sync {
    /// Reserves `bytes` of device memory and returns its address.
    ///
    /// `bytes` is always a multiple of [`MIN_BLOCK_SIZE`](super::MIN_BLOCK_SIZE) and at least
    /// [`SMALL_SEGMENT_SIZE`](super::SMALL_SEGMENT_SIZE). Blocks are carved at 512 B offsets from
    /// the returned address, so their alignment is the smaller of 512 and this address's.
    ///
    /// # Errors
    ///
    /// [`BackingError::OutOfBackingMemory`] when there is no room;
    /// [`BackingError::Other`] for anything else.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimBacking, Backing};
    /// let mem = SimBacking::new(4 << 20);
    /// let a = mem.reserve(2 << 20)?;
    /// let b = mem.reserve(2 << 20)?;
    /// assert_ne!(a, b);
    /// # Ok::<(), cudrv::memory::pool::BackingError>(())
    /// ```
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError>;

    /// Gives a whole segment back (address and size exactly as reserved).
    ///
    /// The pool calls this only for segments none of whose blocks is allocated or waiting on a
    /// fence, but it does **not** wait for the last stream work that used the segment: the
    /// implementation must make sure that work is finished before the memory can be handed out
    /// again. `cuMemFree` does (it synchronizes implicitly); an asynchronous free must be ordered
    /// after that work.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimBacking, Backing};
    /// let mem = SimBacking::new(2 << 20);
    /// let a = mem.reserve(2 << 20)?;
    /// mem.release(a, 2 << 20);
    /// assert!(mem.reserve(2 << 20).is_ok()); // room again
    /// # Ok::<(), cudrv::memory::pool::BackingError>(())
    /// ```
    fn release(&self, addr: u64, bytes: usize);
}

/// A point in a stream's work (real implementation: a `CUevent` recorded on the stream).
///
/// ```
/// use cudrv::memory::pool::Fence;
/// use std::time::Instant;
///
/// /// Work that takes a known time (a simulation of a kernel).
/// struct Until(Instant);
/// impl Fence for Until {
///     fn is_complete(&self) -> bool {
///         Instant::now() >= self.0
///     }
/// }
/// assert!(Until(Instant::now()).is_complete());
/// ```
pub trait Fence: Send + Sync {
    /// Whether all work enqueued on the stream before the fence was recorded has finished
    /// (on a GPU: `cuEventQuery` returned `CUDA_SUCCESS`). Must not block. Once it returns
    /// `true` it must keep returning `true`.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let f = fences.record(StreamId(1));
    /// assert!(!f.is_complete());
    /// fences.complete_all();
    /// assert!(f.is_complete());
    /// ```
    fn is_complete(&self) -> bool;
}

/// Records [`Fence`]s on streams.
///
/// ```
/// use cudrv::memory::pool::{Fence, FenceSource, StreamId};
///
/// /// Streams whose work is always finished by the time anyone asks.
/// struct Idle;
/// struct Done;
/// impl Fence for Done {
///     fn is_complete(&self) -> bool { true }
/// }
/// impl FenceSource for Idle {
///     type F = Done;
///     fn record(&self, _stream: StreamId) -> Done { Done }
///     fn wait(&self, _fence: &Done, _stream: StreamId) {}
/// }
/// assert!(Idle.record(StreamId(1)).is_complete());
/// ```
pub trait FenceSource: Send + Sync {
    /// The fence type (real implementation: an event, preferably from a recycled set).
    type F: Fence;

    /// Records a fence on `stream` that completes once all work enqueued on `stream` so far has
    /// finished (on a GPU: `cuEventRecord(event, stream)`).
    ///
    /// The pool calls this without holding any of its locks. It is called for the stream a block
    /// was allocated on and for every stream passed to
    /// [`CachingPool::record_stream`](super::CachingPool::record_stream), possibly after every
    /// block of that stream has been freed.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, Fence, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let first = fences.record(StreamId(1));
    /// fences.complete(StreamId(1));
    /// let second = fences.record(StreamId(1)); // work enqueued since
    /// assert!(first.is_complete() && !second.is_complete());
    /// ```
    fn record(&self, stream: StreamId) -> Self::F;

    /// Makes all work enqueued on `stream` from now on wait until `fence` has completed, without
    /// blocking the host (on a GPU: `cuStreamWaitEvent(stream, event, 0)`). When it returns, the
    /// pool treats memory freed before `fence` was recorded as usable on `stream`. If the
    /// dependency cannot be set up, the implementation must wait for the fence on the host
    /// instead (on a GPU: `cuEventSynchronize`).
    ///
    /// The pool calls this without holding any of its locks, only for fences it recorded with
    /// [`record`](Self::record) (on another stream than `stream`, or on streams that used a
    /// block), and only for `stream`s it is about to hand memory to. It drops the fence right
    /// after, so the dependency must not need the fence to stay alive.
    ///
    /// ```
    /// use cudrv::memory::pool::{sim::SimFences, FenceSource, StreamId};
    /// let fences = SimFences::manual();
    /// let f = fences.record(StreamId(1));
    /// fences.wait(&f, StreamId(2)); // stream 2's later work runs after stream 1's so far
    /// assert_eq!(fences.waits(), 1);
    /// ```
    fn wait(&self, fence: &Self::F, stream: StreamId);
}
