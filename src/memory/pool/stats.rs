//! A snapshot of a pool's counters.

/// A snapshot of a [`CachingPool`](super::CachingPool)'s counters and byte totals.
///
/// Each number is exact when no other thread is using the pool; while others are, each is read on
/// its own and the snapshot as a whole may mix slightly different moments (derived values such as
/// `cached_bytes` are clamped so they stay in range).
///
/// ```
/// # use cudrv::memory::pool::{sim::{SimBacking, SimFences}, CachingPool, StreamId};
/// # let pool = CachingPool::new(SimBacking::new(1 << 30), SimFences::instant());
/// for _ in 0..10 {
///     let b = pool.allocate(1 << 16, StreamId(1))?;
///     pool.free(b);
/// }
/// let s = pool.stats();
/// assert_eq!((s.allocations, s.cache_hits, s.cache_misses), (10, 9, 1));
/// assert!((s.hit_rate - 0.9).abs() < 1e-12);
/// println!("{}", serde_json::to_string(&s).unwrap());
/// # Ok::<(), cudrv::memory::pool::PoolError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PoolStats {
    /// Successful allocations.
    pub allocations: u64,
    /// Frees.
    pub frees: u64,
    /// Allocations served without reserving memory from the backing (including those served by a
    /// segment taken over from another stream).
    pub cache_hits: u64,
    /// Allocations that reserved a new segment. `cache_hits + cache_misses == allocations`.
    pub cache_misses: u64,
    /// `cache_hits / allocations`, 0 when there were none.
    #[serde(serialize_with = "finite_or_zero")]
    pub hit_rate: f64,
    /// Allocations served by memory of another stream: an entirely free segment taken over, or a
    /// free block lent (counted in `cache_hits` too).
    pub cross_stream_reuses: u64,
    /// Allocations served by memory of another stream whose last use was not known to have
    /// finished, after making the allocating stream wait for it on the device instead of reserving
    /// a new segment (counted in `cross_stream_reuses` too).
    pub waited_reuses: u64,
    /// Segments currently reserved from the backing.
    pub segments: u64,
    /// Bytes currently reserved from the backing.
    pub reserved_bytes: u64,
    /// Bytes in allocated blocks (their [`Block::size`](super::Block::size)s).
    pub allocated_bytes: u64,
    /// Blocks currently allocated.
    pub active_blocks: u64,
    /// The highest `allocated_bytes` seen.
    pub peak_allocated_bytes: u64,
    /// The highest `reserved_bytes` seen.
    pub peak_reserved_bytes: u64,
    /// `reserved_bytes - allocated_bytes`: free blocks plus blocks waiting on fences.
    pub cached_bytes: u64,
    /// Bytes in freed blocks still waiting on fences of other streams (part of `cached_bytes`).
    pub pending_bytes: u64,
    /// The largest free block, in bytes (0 when none).
    pub largest_free_block: u64,
    /// `1 - largest_free_block / cached_bytes`, 0 when nothing is cached: how scattered the cached
    /// bytes are.
    #[serde(serialize_with = "finite_or_zero")]
    pub fragmentation: f64,
    /// Times an allocation released the cache and tried again (the backing ran out, or the limit
    /// would have been exceeded).
    pub oom_retries: u64,
    /// Allocations that failed with [`PoolError::OutOfMemory`](super::PoolError::OutOfMemory).
    pub oom_failures: u64,
    /// Bytes of entirely free segments released to keep the reserved total within the
    /// [reserve budget](super::CachingPool::set_reserve_budget).
    pub budget_released_bytes: u64,
}

impl PoolStats {
    /// The snapshot as one JSON object, with the field names as keys.
    ///
    /// ```
    /// let json = cudrv::memory::pool::PoolStats::default().to_json();
    /// assert!(json.starts_with("{\"allocations\":0,"));
    /// assert!(json.ends_with("\"budget_released_bytes\":0}"));
    /// ```
    pub fn to_json(&self) -> String {
        // A flat struct of numbers always serializes.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// A float as a JSON number (JSON has no NaN or infinities: those become 0).
fn finite_or_zero<S: serde::Serializer>(x: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(if x.is_finite() { *x } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_every_field_in_order() {
        let stats = PoolStats {
            allocations: 3,
            cache_hits: 2,
            cache_misses: 1,
            hit_rate: 2.0 / 3.0,
            fragmentation: f64::NAN,
            reserved_bytes: u64::MAX,
            ..PoolStats::default()
        };
        let json = stats.to_json();
        assert!(
            json.starts_with("{\"allocations\":3,\"frees\":0,\"cache_hits\":2,\"cache_misses\":1,\"hit_rate\":0.6666")
        );
        assert!(json.contains(&format!("\"reserved_bytes\":{}", u64::MAX)));
        assert!(json.contains("\"fragmentation\":0.0,"), "{json}");
        let keys = [
            "allocations",
            "frees",
            "cache_hits",
            "cache_misses",
            "hit_rate",
            "cross_stream_reuses",
            "waited_reuses",
            "segments",
            "reserved_bytes",
            "allocated_bytes",
            "active_blocks",
            "peak_allocated_bytes",
            "peak_reserved_bytes",
            "cached_bytes",
            "pending_bytes",
            "largest_free_block",
            "fragmentation",
            "oom_retries",
            "oom_failures",
            "budget_released_bytes",
        ];
        assert_eq!(json.matches(':').count(), keys.len());
        let mut at = 0;
        for key in keys {
            let found = json[at..].find(&format!("\"{key}\":")).expect(key);
            at += found;
        }
        assert!(json.ends_with('}'));
    }
}
