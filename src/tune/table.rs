//! A tuned kernel's remembered block sizes, one per size bucket, read without a lock: the
//! cache-hit path is a logarithm, two atomic loads and one atomic add.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Size buckets: one per decimal order of magnitude (sizes 0..9, 10..99, 100..999, ...).
pub const BUCKETS: usize = 21;

/// The bucket of a problem size: its number of decimal digits (0 for size 0), so 100 and 999
/// share one and 1000 starts the next.
///
/// ```
/// use cudrv::tune::bucket_of;
/// assert_eq!((bucket_of(0), bucket_of(9), bucket_of(10)), (0, 1, 2));
/// assert_eq!((bucket_of(999), bucket_of(1000), bucket_of(u64::MAX)), (3, 4, 20));
/// ```
#[inline]
pub fn bucket_of(size: u64) -> usize {
    match size.checked_ilog10() {
        Some(d) => d as usize + 1,
        None => 0,
    }
}

/// The smallest size in bucket `b` (0, 1, 10, 100, ...), as reports print it.
pub fn bucket_floor(b: usize) -> u64 {
    if b == 0 {
        0
    } else {
        10u64.saturating_pow(b as u32 - 1)
    }
}

/// What is remembered for one bucket.
#[derive(Default)]
pub(crate) struct Slot {
    /// The chosen block size; 0 while the bucket is untuned.
    block: AtomicU32,
    /// Blocks resident on the device at once with that block size (for grid-stride kernels).
    resident: AtomicU32,
    /// The choice is to be measured again at the next tuning call.
    stale: AtomicBool,
    /// Cache hits since the last tuning.
    hits: AtomicU64,
    /// Microseconds per launch when tuned (f64 bits).
    tuned_us: AtomicU64,
    /// Moving average of observed microseconds (f64 bits; NaN: none yet).
    ema_us: AtomicU64,
}

/// One bucket's state, as read for reports and the cache file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlotState {
    pub block: u32,
    pub resident: u32,
    pub tuned_us: f64,
    pub ema_us: Option<f64>,
    pub stale: bool,
}

/// The per-bucket table of one tuned kernel.
pub(crate) struct Table {
    slots: [Slot; BUCKETS],
}

impl Default for Table {
    fn default() -> Self {
        Table {
            slots: std::array::from_fn(|_| Slot {
                ema_us: AtomicU64::new(f64::NAN.to_bits()),
                ..Slot::default()
            }),
        }
    }
}

impl Table {
    /// The block size and resident block count remembered for `size`, if tuned and not stale;
    /// counts the hit and marks the bucket stale every `retune_every` hits.
    #[inline]
    pub fn hit(&self, size: u64, retune_every: Option<u64>) -> Option<(u32, u32)> {
        let slot = &self.slots[bucket_of(size)];
        let block = slot.block.load(Ordering::Acquire);
        if block == 0 || slot.stale.load(Ordering::Relaxed) {
            return None;
        }
        let hits = slot.hits.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(every) = retune_every {
            if hits >= every.max(1) {
                slot.stale.store(true, Ordering::Relaxed);
            }
        }
        Some((block, slot.resident.load(Ordering::Relaxed)))
    }

    /// Remembers a tuning result for `bucket`.
    pub fn set(&self, bucket: usize, block: u32, resident: u32, tuned_us: f64) {
        let slot = &self.slots[bucket];
        slot.resident.store(resident, Ordering::Relaxed);
        slot.tuned_us.store(tuned_us.to_bits(), Ordering::Relaxed);
        slot.ema_us.store(f64::NAN.to_bits(), Ordering::Relaxed);
        slot.hits.store(0, Ordering::Relaxed);
        slot.stale.store(false, Ordering::Relaxed);
        slot.block.store(block, Ordering::Release);
    }

    /// Folds an observed launch time into the bucket's moving average; marks the bucket stale
    /// when the average is more than `drift` above the tuned time. Returns the new average
    /// (`None` for an untuned bucket).
    pub fn observe(&self, size: u64, micros: f64, alpha: f64, drift: f64) -> Option<f64> {
        let slot = &self.slots[bucket_of(size)];
        if slot.block.load(Ordering::Acquire) == 0 || !micros.is_finite() || micros < 0.0 {
            return None;
        }
        let alpha = alpha.clamp(0.0, 1.0);
        let mut new = micros;
        let _ = slot.ema_us.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            let old = f64::from_bits(bits);
            new = if old.is_nan() {
                micros
            } else {
                alpha * micros + (1.0 - alpha) * old
            };
            Some(new.to_bits())
        });
        let tuned = f64::from_bits(slot.tuned_us.load(Ordering::Relaxed));
        if tuned > 0.0 && new > tuned * (1.0 + drift) {
            slot.stale.store(true, Ordering::Relaxed);
        }
        Some(new)
    }

    /// Marks every bucket stale (they are measured again at their next tuning call).
    pub fn invalidate(&self) {
        for slot in &self.slots {
            slot.stale.store(true, Ordering::Relaxed);
        }
    }

    /// Bucket `b`'s state, `None` while untuned.
    pub fn state(&self, b: usize) -> Option<SlotState> {
        let slot = &self.slots[b];
        let block = slot.block.load(Ordering::Acquire);
        if block == 0 {
            return None;
        }
        let ema = f64::from_bits(slot.ema_us.load(Ordering::Relaxed));
        Some(SlotState {
            block,
            resident: slot.resident.load(Ordering::Relaxed),
            tuned_us: f64::from_bits(slot.tuned_us.load(Ordering::Relaxed)),
            ema_us: (!ema.is_nan()).then_some(ema),
            stale: slot.stale.load(Ordering::Relaxed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_is_missed_until_set_and_hit_after() {
        let t = Table::default();
        assert_eq!(t.hit(5000, None), None);
        t.set(bucket_of(5000), 256, 528, 12.5);
        assert_eq!(t.hit(1000, None), Some((256, 528)));
        assert_eq!(t.hit(9999, None), Some((256, 528)));
        assert_eq!(t.hit(10_000, None), None, "the next decade is its own bucket");
        let s = t.state(bucket_of(5000)).unwrap();
        assert_eq!((s.block, s.tuned_us, s.ema_us, s.stale), (256, 12.5, None, false));
    }

    #[test]
    fn hits_past_the_interval_make_the_bucket_stale() {
        let t = Table::default();
        t.set(3, 128, 0, 1.0);
        for _ in 0..4 {
            assert!(t.hit(500, Some(5)).is_some());
        }
        assert!(t.hit(500, Some(5)).is_some(), "the fifth hit is still served");
        assert_eq!(t.hit(500, Some(5)), None, "then the bucket waits to be tuned again");
        t.set(3, 64, 0, 1.0);
        assert_eq!(t.hit(500, Some(5)), Some((64, 0)));
    }

    #[test]
    fn the_moving_average_follows_observations_and_drift_makes_stale() {
        let t = Table::default();
        assert_eq!(t.observe(50, 1.0, 0.5, 0.25), None, "untuned: nothing to average");
        t.set(2, 256, 0, 10.0);
        assert_eq!(t.observe(50, 10.0, 0.5, 0.25), Some(10.0));
        assert_eq!(t.observe(50, 12.0, 0.5, 0.25), Some(11.0));
        assert!(!t.state(2).unwrap().stale, "11 us is within 25% of 10 us");
        assert_eq!(t.observe(50, 20.0, 0.5, 0.25), Some(15.5));
        assert!(t.state(2).unwrap().stale, "15.5 us is past 12.5 us");
        assert_eq!(t.hit(50, None), None);
        assert_eq!(t.observe(50, f64::NAN, 0.5, 0.25), None, "a non-finite time is ignored");
    }
}
