//! Unit tests of a shard: splitting, coalescing, quick caches, fences and lending.

use super::*;
use crate::memory::pool::{LARGE_SEGMENT_SIZE, SMALL_SEGMENT_SIZE};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

struct Flag(Arc<AtomicBool>);
impl Fence for Flag {
    fn is_complete(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

const SEG: u64 = 1 << 30;

fn shard_with_small_segment() -> ShardState<Flag> {
    let mut s = ShardState::default();
    s.add_segment(SEG, SMALL_SEGMENT_SIZE, Kind::Small, true);
    s.check();
    s
}

#[test]
fn split_and_coalesce_in_any_order() {
    let mut s = shard_with_small_segment();
    let blocks: Vec<_> = (0..4).map(|_| s.alloc_from_free(Kind::Small, 1024).unwrap()).collect();
    s.check();
    assert_eq!(blocks[1].0, SEG + 1024);
    assert_eq!(s.largest_free(), SMALL_SEGMENT_SIZE - 4096);
    for &i in &[1, 3, 0, 2] {
        let out = s.free(blocks[i].0).unwrap();
        s.check();
        let last = i == 2;
        assert!(matches!(out, FreeOutcome::Freed { became_idle, .. } if became_idle == last));
    }
    assert_eq!(s.largest_free(), SMALL_SEGMENT_SIZE);
    assert_eq!(s.idle[0].len(), 1);
    assert_eq!(s.nodes.len(), 1);
}

#[test]
fn a_full_quick_cache_makes_room_for_the_newest_block() {
    let mut s = shard_with_small_segment();
    let blocks: Vec<_> = (0..=QUICK_MAX)
        .map(|i| s.alloc_from_free(Kind::Small, 512 * (i + 1)).unwrap())
        .collect();
    for b in &blocks[..QUICK_MAX] {
        assert_eq!(s.free_quick(b.0, b.1), Some(b.1));
    }
    s.check();
    // Full: the oldest (512 B) goes back to the free sets, the newest is cached.
    let last = blocks[QUICK_MAX];
    assert_eq!(s.free_quick(last.0, last.1), Some(last.1));
    s.check();
    assert_eq!(s.quick.len(), QUICK_MAX);
    assert!(matches!(s.nodes[&blocks[0].0].state, State::Free));
    assert_eq!(s.alloc_quick(last.1), Some(last));
    assert_eq!(s.alloc_quick(512), None);
    s.check();
}

#[test]
fn blocks_shared_with_other_streams_never_enter_the_quick_cache() {
    let mut s = shard_with_small_segment();
    let a = s.alloc_from_free(Kind::Small, 1024).unwrap();
    let b = s.alloc_from_free(Kind::Small, 1024).unwrap();
    assert!(s.record_stream(a.0, StreamId(9)));
    assert!(s.record_stream(a.0, StreamId(9)));
    s.check();
    // With a shared block in the shard the quick path looks the block up: b is unshared.
    assert_eq!(s.free_quick(b.0, b.1), Some(b.1));
    assert_eq!(s.free_quick(a.0, a.1), None);
    s.check();
    assert!(matches!(s.free(a.0), Some(FreeOutcome::Deferred { .. })));
    s.check();
    assert_eq!(s.shared, 0);
    assert_eq!(s.alloc_quick(1024), Some(b));
    s.check();
}

#[test]
fn best_fit_prefers_smallest_hole() {
    let mut s = shard_with_small_segment();
    let a = s.alloc_from_free(Kind::Small, 4096).unwrap();
    let _b = s.alloc_from_free(Kind::Small, 512).unwrap();
    let c = s.alloc_from_free(Kind::Small, 2048).unwrap();
    let _d = s.alloc_from_free(Kind::Small, 512).unwrap();
    s.free(a.0).unwrap();
    s.free(c.0).unwrap();
    s.check();
    // The 2048 B hole fits best.
    assert_eq!(s.alloc_from_free(Kind::Small, 1536).unwrap(), (c.0, 1536));
    s.check();
}

#[test]
fn large_remainders_of_one_mib_or_less_stay_attached() {
    let mut s: ShardState<Flag> = ShardState::default();
    s.add_segment(SEG, LARGE_SEGMENT_SIZE, Kind::Large, true);
    let (addr, size) = s.alloc_from_free(Kind::Large, LARGE_SEGMENT_SIZE - (1 << 20)).unwrap();
    assert_eq!((addr, size), (SEG, LARGE_SEGMENT_SIZE));
    s.check();
    s.free(addr).unwrap();
    let (_, size) = s
        .alloc_from_free(Kind::Large, LARGE_SEGMENT_SIZE - (1 << 20) - 512)
        .unwrap();
    assert_eq!(size, LARGE_SEGMENT_SIZE - (1 << 20) - 512);
    s.check();
}

#[test]
fn pending_blocks_wait_for_fences() {
    let mut s = shard_with_small_segment();
    let (addr, _) = s.alloc_from_free(Kind::Small, 512).unwrap();
    assert!(s.record_stream(addr, StreamId(7)));
    assert!(s.record_stream(addr, StreamId(7)));
    let out = s.free(addr).unwrap();
    let FreeOutcome::Deferred { seq, streams, .. } = out else {
        panic!("expected a deferred free, got {out:?}")
    };
    assert_eq!(streams, vec![StreamId(7)]);
    let done = Arc::new(AtomicBool::new(false));
    s.push_pending(addr, seq, vec![Flag(done.clone())]);
    s.check();
    assert!(!s.poll_pending());
    assert_eq!(s.pending_bytes(), 512);
    // The remainder is still usable, the pending block is not.
    assert_eq!(s.alloc_from_free(Kind::Small, 512).unwrap().0, SEG + 512);
    done.store(true, Ordering::SeqCst);
    assert!(!s.poll_pending());
    s.check();
    assert_eq!(s.pending_bytes(), 0);
    assert_eq!(s.alloc_from_free(Kind::Small, 512).unwrap().0, SEG);
}

#[test]
fn migration_needs_a_fence_after_the_last_free() {
    let mut s = shard_with_small_segment();
    // A fresh segment has never been used: anyone may take it.
    assert_eq!(s.take_idle(Kind::Small, 512), Some((SEG, SMALL_SEGMENT_SIZE)));
    s.add_segment(SEG, SMALL_SEGMENT_SIZE, Kind::Small, true);
    let (addr, _) = s.alloc_from_free(Kind::Small, 512).unwrap();
    let out = s.free(addr).unwrap();
    assert_eq!(
        out,
        FreeOutcome::Freed {
            size: 512,
            became_idle: true,
            record_migration: Some(1)
        }
    );
    assert_eq!(s.take_idle(Kind::Small, 512), None);
    let done = Arc::new(AtomicBool::new(false));
    s.set_migration(1, Flag(done.clone()));
    assert_eq!(s.migration_fence_wanted(), None);
    assert_eq!(s.take_idle(Kind::Small, 512), None);
    done.store(true, Ordering::SeqCst);
    assert_eq!(s.take_idle(Kind::Small, 512), Some((SEG, SMALL_SEGMENT_SIZE)));
    s.check();
    assert!(s.segments.is_empty());
}

#[test]
fn drain_picks_the_smallest_covering_segment() {
    let mut s: ShardState<Flag> = ShardState::default();
    s.add_segment(SEG, SMALL_SEGMENT_SIZE, Kind::Small, true);
    s.add_segment(2 * SEG, LARGE_SEGMENT_SIZE, Kind::Large, true);
    s.add_segment(3 * SEG, 40 << 20, Kind::Large, true);
    assert_eq!(s.drain_idle(3 << 20), vec![(2 * SEG, LARGE_SEGMENT_SIZE)]);
    assert_eq!(
        s.drain_idle(50 << 20),
        vec![(3 * SEG, 40 << 20), (SEG, SMALL_SEGMENT_SIZE)]
    );
    s.check();
    assert!(s.nodes.is_empty());
}
