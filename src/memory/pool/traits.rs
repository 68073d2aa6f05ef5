//! The two seams between the pool and the device: where memory comes from, and how the pool
//! learns that a stream's work has finished.

/// Identifies a stream (on a GPU: a `CUstream` handle, or any id the runtime maps one-to-one
/// onto its streams).
#[derive(Copy, Clone, Eq, PartialEq, Hash, Debug, Ord, PartialOrd)]
pub struct StreamId(pub u64);

/// Why a [`Backing`] could not reserve memory.
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
    fn reserve(&self, bytes: usize) -> Result<u64, BackingError>;

    /// Gives a whole segment back (address and size exactly as reserved).
    ///
    /// The pool calls this only for segments none of whose blocks is allocated or waiting on a
    /// fence, but it does **not** wait for the last stream work that used the segment: the
    /// implementation must make sure that work is finished before the memory can be handed out
    /// again. `cuMemFree` does (it synchronizes implicitly); an asynchronous free must be ordered
    /// after that work.
    fn release(&self, addr: u64, bytes: usize);
}

/// A point in a stream's work (real implementation: a `CUevent` recorded on the stream).
pub trait Fence: Send + Sync {
    /// Whether all work enqueued on the stream before the fence was recorded has finished
    /// (on a GPU: `cuEventQuery` returned `CUDA_SUCCESS`). Must not block. Once it returns
    /// `true` it must keep returning `true`.
    fn is_complete(&self) -> bool;
}

/// Records [`Fence`]s on streams.
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
    fn wait(&self, fence: &Self::F, stream: StreamId);
}
