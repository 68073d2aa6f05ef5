//! The size policy: how requests are rounded and how large a new segment is.

/// Every block size is a multiple of this (and at least this), in bytes: 512 B.
///
/// ```
/// use cudrv::memory::pool::{round_size, MIN_BLOCK_SIZE};
/// assert_eq!(round_size(1), Some(MIN_BLOCK_SIZE));
/// ```
pub const MIN_BLOCK_SIZE: usize = 512;

/// Requests of at most this many bytes (after rounding) are *small*: carved from small
/// segments and never mixed with large ones. 1 MiB.
///
/// ```
/// use cudrv::memory::pool::{segment_size, SMALL_REQUEST_MAX, SMALL_SEGMENT_SIZE};
/// assert_eq!(segment_size(SMALL_REQUEST_MAX), Some(SMALL_SEGMENT_SIZE));
/// ```
pub const SMALL_REQUEST_MAX: usize = 1 << 20;

/// The size of every small segment: 2 MiB.
///
/// ```
/// use cudrv::memory::pool::{segment_size, SMALL_SEGMENT_SIZE};
/// assert_eq!(segment_size(4096), Some(SMALL_SEGMENT_SIZE));
/// ```
pub const SMALL_SEGMENT_SIZE: usize = 2 << 20;

/// The size of a shared large segment, used for large requests of at most
/// [`LARGE_SEGMENT_THRESHOLD`]: 20 MiB.
///
/// ```
/// use cudrv::memory::pool::{segment_size, LARGE_SEGMENT_SIZE};
/// assert_eq!(segment_size(2 << 20), Some(LARGE_SEGMENT_SIZE));
/// ```
pub const LARGE_SEGMENT_SIZE: usize = 20 << 20;

/// Large requests above this get a segment of their own, of the request's size rounded up to
/// [`LARGE_SEGMENT_ROUNDING`]: 10 MiB.
///
/// ```
/// use cudrv::memory::pool::{segment_size, LARGE_SEGMENT_SIZE, LARGE_SEGMENT_THRESHOLD};
/// assert_eq!(segment_size(LARGE_SEGMENT_THRESHOLD), Some(LARGE_SEGMENT_SIZE));
/// ```
pub const LARGE_SEGMENT_THRESHOLD: usize = 10 << 20;

/// The granularity of segments made for requests above [`LARGE_SEGMENT_THRESHOLD`]: 2 MiB.
///
/// ```
/// use cudrv::memory::pool::{segment_size, LARGE_SEGMENT_ROUNDING};
/// assert_eq!(segment_size(33 << 20), Some(17 * LARGE_SEGMENT_ROUNDING));
/// ```
pub const LARGE_SEGMENT_ROUNDING: usize = 2 << 20;

/// The pools a segment (and each block carved from it) can belong to. Requests are served only
/// from their own pool, so huge segments are never carved up by smaller requests (which would
/// leave the next huge request without a whole block and make it reserve a new segment).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Small = 0,
    Large = 1,
    Huge = 2,
}

/// How many [`Kind`]s there are.
pub(crate) const KINDS: usize = 3;

impl Kind {
    /// The pool a request of `rounded` bytes (already rounded) is served from.
    #[inline]
    pub(crate) fn of(rounded: usize) -> Kind {
        if rounded <= SMALL_REQUEST_MAX {
            Kind::Small
        } else if rounded <= LARGE_SEGMENT_THRESHOLD {
            Kind::Large
        } else {
            Kind::Huge
        }
    }

    /// Whether a free remainder of `bytes` is worth keeping as a block of its own when a block of
    /// this kind is split. Small: any remainder (>= 512 B); large: more than 1 MiB; huge: more
    /// than the large-request threshold (a huge block only serves huge requests).
    pub(crate) fn worth_splitting(self, bytes: usize) -> bool {
        match self {
            Kind::Small => bytes >= MIN_BLOCK_SIZE,
            Kind::Large => bytes > SMALL_REQUEST_MAX,
            Kind::Huge => bytes > LARGE_SEGMENT_THRESHOLD,
        }
    }
}

/// The size of the block a request of `bytes` asks for: `bytes` rounded up to a multiple of
/// [`MIN_BLOCK_SIZE`], and at least [`MIN_BLOCK_SIZE`] (so a 0-byte request gets a 512 B block
/// with an address of its own). `None` when rounding overflows.
///
/// ```
/// use cudrv::memory::pool::round_size;
/// assert_eq!(round_size(0), Some(512));
/// assert_eq!(round_size(513), Some(1024));
/// assert_eq!(round_size(usize::MAX), None);
/// ```
#[inline]
pub fn round_size(bytes: usize) -> Option<usize> {
    let rounded = bytes.checked_next_multiple_of(MIN_BLOCK_SIZE)?;
    Some(rounded.max(MIN_BLOCK_SIZE))
}

/// The size of the segment the pool reserves when a request of `rounded` bytes (a result of
/// [`round_size`]) finds nothing cached: [`SMALL_SEGMENT_SIZE`] for small requests,
/// [`LARGE_SEGMENT_SIZE`] up to [`LARGE_SEGMENT_THRESHOLD`], else `rounded` rounded up to
/// [`LARGE_SEGMENT_ROUNDING`]. `None` when that overflows. (Over its
/// [reserve budget](super::CachingPool::set_reserve_budget), the pool reserves a large request's
/// own size rounded up to [`LARGE_SEGMENT_ROUNDING`] instead of a shared large segment.)
///
/// ```
/// use cudrv::memory::pool::segment_size;
/// assert_eq!(segment_size(512), Some(2 << 20));
/// assert_eq!(segment_size(3 << 20), Some(20 << 20));
/// assert_eq!(segment_size((10 << 20) + 512), Some(12 << 20));
/// ```
pub fn segment_size(rounded: usize) -> Option<usize> {
    if rounded <= SMALL_REQUEST_MAX {
        Some(SMALL_SEGMENT_SIZE)
    } else if rounded <= LARGE_SEGMENT_THRESHOLD {
        Some(LARGE_SEGMENT_SIZE)
    } else {
        rounded.checked_next_multiple_of(LARGE_SEGMENT_ROUNDING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(round_size(1), Some(512));
        assert_eq!(round_size(512), Some(512));
        assert_eq!(round_size(SMALL_REQUEST_MAX), Some(SMALL_REQUEST_MAX));
        assert_eq!(Kind::of(SMALL_REQUEST_MAX), Kind::Small);
        assert_eq!(Kind::of(SMALL_REQUEST_MAX + 512), Kind::Large);
        assert_eq!(segment_size(SMALL_REQUEST_MAX), Some(SMALL_SEGMENT_SIZE));
        assert_eq!(segment_size(SMALL_REQUEST_MAX + 512), Some(LARGE_SEGMENT_SIZE));
        assert_eq!(segment_size(LARGE_SEGMENT_THRESHOLD), Some(LARGE_SEGMENT_SIZE));
        assert_eq!(segment_size(usize::MAX - 511), None);
    }

    #[test]
    fn splitting() {
        assert!(Kind::Small.worth_splitting(512));
        assert!(!Kind::Small.worth_splitting(0));
        assert!(!Kind::Large.worth_splitting(SMALL_REQUEST_MAX));
        assert!(Kind::Large.worth_splitting(SMALL_REQUEST_MAX + 512));
    }
}
