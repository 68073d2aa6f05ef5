//! Model tests of the caching device allocator (`cudrv::memory::pool`) over a fake address space
//! and fake fences (tests/support/pool_fakes.rs): focused scenarios. The property test against a
//! simple model and the multi-threaded stress test are in tests/pool_property.rs. No GPU needed.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use cudrv::memory::pool::{Block, PoolError, ReserveBudget, StreamId, LARGE_SEGMENT_SIZE, SMALL_SEGMENT_SIZE};

const MIB: usize = 1 << 20;

#[path = "support/pool_fakes.rs"]
mod fakes;
use fakes::*;

// ---------------------------------------------------------------------------------------------
// Focused tests
// ---------------------------------------------------------------------------------------------

#[test]
fn split_then_coalesce_returns_the_segment_to_one_free_block() {
    let pool = pool(usize::MAX);
    // These check when frees coalesce and record fences; the quick cache defers both.
    pool.set_quick_cache(false);
    let blocks: Vec<Block> = [1000, 512, 70_000, 3000]
        .iter()
        .map(|&n| pool.allocate(n, S1).unwrap())
        .collect();
    assert_eq!(pool.backing().reserves(), 1);
    let seg = blocks[0].addr();
    assert_eq!(blocks[1].addr(), seg + 1024);
    let used: usize = blocks.iter().map(Block::size).sum();
    let st = check_quiescent(&pool, &blocks);
    assert_eq!(st.largest_free_block, (SMALL_SEGMENT_SIZE - used) as u64);
    let mut blocks: Vec<Option<Block>> = blocks.into_iter().map(Some).collect();
    for i in [1, 3, 0, 2] {
        pool.free(blocks[i].take().unwrap());
    }
    let st = check_quiescent::<Block>(&pool, &[]);
    assert_eq!(st.largest_free_block, SMALL_SEGMENT_SIZE as u64);
    assert_eq!(st.cached_bytes, SMALL_SEGMENT_SIZE as u64);
    assert_eq!(st.fragmentation, 0.0);
    // One free block again: the whole segment can be handed out in one piece.
    let whole = pool.allocate(SMALL_SEGMENT_SIZE / 2, S1).unwrap();
    let other = pool.allocate(SMALL_SEGMENT_SIZE / 2, S1).unwrap();
    assert_eq!((whole.addr(), other.addr()), (seg, seg + MIB as u64));
    assert_eq!(pool.backing().reserves(), 1);
    drain_and_check_empty(&pool, vec![whole, other], &[S1]);
    assert_eq!(pool.backing().releases(), 1);
}

#[test]
fn fragmentation_reflects_scattered_free_space() {
    let pool = pool(usize::MAX);
    // These check when frees coalesce and record fences; the quick cache defers both.
    pool.set_quick_cache(false);
    let a = pool.allocate(MIB, S1).unwrap();
    let b = pool.allocate(MIB / 2, S1).unwrap();
    pool.free(a);
    // Free: a 1 MiB hole and a 0.5 MiB tail, not adjacent.
    let st = check_quiescent(&pool, std::slice::from_ref(&b));
    assert_eq!(st.largest_free_block, MIB as u64);
    assert!((st.fragmentation - (1.0 - 1.0 / 1.5)).abs() < 1e-12);
    drain_and_check_empty(&pool, vec![b], &[S1]);
}

#[test]
fn same_stream_reuse_is_a_hit_without_backing_call() {
    let pool = pool(usize::MAX);
    let a = pool.allocate(4000, S1).unwrap();
    let addr = a.addr();
    pool.free(a);
    let b = pool.allocate(3900, S1).unwrap();
    assert_eq!(b.addr(), addr);
    assert_eq!(b.size(), 4096);
    assert_eq!(b.requested(), 3900);
    assert_eq!(b.stream(), S1);
    assert_eq!(pool.backing().reserves(), 1);
    let st = pool.stats();
    assert_eq!((st.allocations, st.cache_hits, st.cache_misses), (2, 1, 1));
    assert_eq!(st.hit_rate, 0.5);
    // Large blocks too.
    let big = pool.allocate(30 * MIB, S1).unwrap();
    let big_addr = big.addr();
    pool.free(big);
    let again = pool.allocate(29 * MIB, S1).unwrap();
    assert_eq!(again.addr(), big_addr);
    assert_eq!(pool.backing().reserves(), 2);
    drain_and_check_empty(&pool, vec![b, again], &[S1]);
}

#[test]
fn cross_stream_reuse_waits_for_the_fence() {
    let pool = pool(usize::MAX);
    // These check when frees coalesce and record fences; the quick cache defers both.
    pool.set_quick_cache(false);
    let fences = pool.fence_source();
    // Completing S1 *before* the free says nothing about work after it.
    fences.complete(S1);
    let a = pool.allocate(1000, S1).unwrap();
    let seg = a.addr();
    pool.free(a);
    // The free left a whole segment free: a fence is recorded on S1 right away.
    assert_eq!(fences.records(), 1);
    let b = pool.allocate(1000, S2).unwrap();
    assert_ne!(b.addr(), seg, "S2 reused S1's memory before S1's fence completed");
    assert_eq!(pool.backing().reserves(), 2);
    fences.complete(S1);
    let c = pool.allocate(1000, S3).unwrap();
    assert_eq!(c.addr(), seg, "S3 should take over S1's free segment");
    assert_eq!(pool.backing().reserves(), 2);
    let st = pool.stats();
    assert_eq!((st.cache_hits, st.cross_stream_reuses), (1, 1));
    drain_and_check_empty(&pool, vec![b, c], &[S1, S2, S3]);
}

#[test]
fn cross_stream_fence_is_recorded_after_the_latest_free() {
    let pool = pool(usize::MAX);
    // These check when frees coalesce and record fences; the quick cache defers both.
    pool.set_quick_cache(false);
    let fences = pool.fence_source();
    let a = pool.allocate(1000, S1).unwrap();
    let seg = a.addr();
    pool.free(a); // records fence #1 on S1
    let a = pool.allocate(1000, S1).unwrap(); // same-stream hit
    assert_eq!(a.addr(), seg);
    pool.free(a); // fence #1 still in flight: no new one
    assert_eq!(fences.records(), 1);
    fences.complete(S1); // completes fence #1 only, which predates the second free
    let b = pool.allocate(1000, S2).unwrap();
    assert_ne!(b.addr(), seg);
    // S2's miss recorded a fresh fence on S1 after the second free.
    assert_eq!(fences.records(), 2);
    fences.complete(S1);
    let c = pool.allocate(1000, S3).unwrap();
    assert_eq!(c.addr(), seg);
    drain_and_check_empty(&pool, vec![b, c], &[S1, S2, S3]);
}

#[test]
fn record_stream_holds_the_block_until_every_fence_completes() {
    let pool = pool(usize::MAX);
    let fences = pool.fence_source();
    let a = pool.allocate(1000, S1).unwrap();
    let addr = a.addr();
    pool.record_stream(&a, S2);
    pool.record_stream(&a, S3);
    pool.record_stream(&a, S1); // own stream: no-op
    pool.free(a);
    assert_eq!(fences.records(), 2);
    assert_eq!(pool.stats().pending_bytes, 1024);
    let b = pool.allocate(1000, S1).unwrap();
    assert_ne!(b.addr(), addr, "reused before S2/S3 finished with it");
    fences.complete(S2);
    let c = pool.allocate(1000, S1).unwrap();
    assert_ne!(c.addr(), addr, "reused before S3 finished with it");
    // Empty cache cannot release a segment with a pending block.
    pool.free(b);
    pool.free(c);
    assert_eq!(pool.empty_cache(), 0);
    fences.complete(S3);
    let d = pool.allocate(1000, S1).unwrap();
    assert_eq!(d.addr(), addr);
    assert_eq!(pool.stats().pending_bytes, 0);
    drain_and_check_empty(&pool, vec![d], &[S1, S2, S3]);
}

#[test]
fn zero_byte_requests_get_distinct_minimal_blocks() {
    let pool = pool(usize::MAX);
    let a = pool.allocate(0, S1).unwrap();
    let b = pool.allocate(0, S1).unwrap();
    assert_eq!((a.size(), a.requested()), (512, 0));
    assert_ne!(a.addr(), b.addr());
    drain_and_check_empty(&pool, vec![a, b], &[S1]);
}

#[test]
fn segment_sizes_follow_the_policy() {
    let pool = pool(usize::MAX);
    let small = pool.allocate(MIB, S1).unwrap();
    let huge = pool.allocate(11 * MIB, S1).unwrap();
    let mid = pool.allocate(MIB + 1, S1).unwrap();
    let mut segs: Vec<usize> = pool.backing().live_segments().iter().map(|s| s.1).collect();
    segs.sort_unstable();
    assert_eq!(segs, vec![SMALL_SEGMENT_SIZE, 12 * MIB, LARGE_SEGMENT_SIZE]);
    assert_eq!(huge.size(), 12 * MIB, "a remainder of <= 1 MiB stays with the block");
    assert_eq!(mid.size(), MIB + 512);
    // Small requests never use large segments.
    let small2 = pool.allocate(512, S1).unwrap();
    assert!(pool.backing().contains(small2.addr(), 512));
    assert_eq!(small2.addr(), small.addr() + MIB as u64);
    drain_and_check_empty(&pool, vec![small, mid, huge, small2], &[S1]);
}

#[test]
fn oom_releases_the_cache_and_retries_once() {
    let pool = pool(21 * MIB);
    let small = pool.allocate(1000, S1).unwrap();
    pool.free(small); // 2 MiB cached
    let big = pool.allocate(3 * MIB, S1).unwrap(); // needs 20 MiB: 22 > 21
    let st = pool.stats();
    assert_eq!(st.oom_retries, 1);
    assert_eq!(st.oom_failures, 0);
    assert_eq!(pool.backing().failed_reserves(), 1);
    assert_eq!(pool.backing().releases(), 1);
    assert_eq!(st.reserved_bytes, LARGE_SEGMENT_SIZE as u64);
    // 17 MiB free in the large segment, but 18 MiB asks for an 18 MiB segment of its own.
    let err = pool.allocate(18 * MIB, S1).unwrap_err();
    assert_eq!(
        err,
        PoolError::OutOfMemory {
            requested: 18 * MIB,
            reserved: LARGE_SEGMENT_SIZE,
            allocated: 3 * MIB,
            cached: 17 * MIB,
            limit: None,
        }
    );
    assert!(err.to_string().contains("18874368 B"), "{err}");
    assert_eq!(pool.backing().failed_reserves(), 3, "one retry, not more");
    let st = pool.stats();
    assert_eq!((st.oom_retries, st.oom_failures), (2, 1));
    assert_eq!(st.allocations, 2);
    // Overflowing sizes fail cleanly.
    assert!(matches!(
        pool.allocate(usize::MAX, S1),
        Err(PoolError::OutOfMemory { .. })
    ));
    drain_and_check_empty(&pool, vec![big], &[S1]);
}

#[test]
fn other_backing_errors_are_not_retried() {
    let pool = pool(usize::MAX);
    pool.backing().broken.store(true, SeqCst);
    let err = pool.allocate(100, S1).unwrap_err();
    assert_eq!(err, PoolError::Backing("device lost".into()));
    let st = pool.stats();
    assert_eq!((st.reserved_bytes, st.oom_retries, st.allocations), (0, 0, 0));
}

#[test]
fn limit_is_enforced() {
    let pool = pool(usize::MAX);
    pool.set_limit(Some(4 * MIB));
    assert_eq!(pool.limit(), Some(4 * MIB));
    // Two full small segments (two 1 MiB blocks each), so no stream can borrow free space.
    let a = pool.allocate(MIB, S1).unwrap();
    let a2 = pool.allocate(MIB, S1).unwrap();
    let b = pool.allocate(MIB, S2).unwrap();
    let b2 = pool.allocate(MIB, S2).unwrap();
    assert_eq!(pool.stats().reserved_bytes, 4 * MIB as u64);
    let err = pool.allocate(1000, S3).unwrap_err();
    assert!(matches!(
        err,
        PoolError::OutOfMemory { limit: Some(l), reserved, .. } if l == 4 * MIB && reserved == 4 * MIB
    ));
    assert_eq!(pool.backing().reserves(), 2);
    assert_eq!(pool.backing().failed_reserves(), 0, "the limit is checked first");
    // A large request beyond the limit fails without asking the backing.
    assert!(pool.allocate(3 * MIB, S1).is_err());
    assert_eq!(pool.backing().reserves(), 2);
    // Freeing S2's blocks leaves its segment entirely free: the limit path releases it.
    pool.free(b);
    pool.free(b2);
    let c = pool.allocate(1000, S3).unwrap();
    let st = check_quiescent(&pool, &[&a, &a2, &c]);
    assert_eq!(st.reserved_bytes, 4 * MIB as u64);
    assert_eq!(pool.backing().releases(), 1);
    pool.set_limit(None);
    let d = pool.allocate(3 * MIB, S1).unwrap();
    drain_and_check_empty(&pool, vec![a, a2, c, d], &[S1, S2, S3]);
}

#[test]
fn release_threshold_is_honoured() {
    let pool = pool(usize::MAX);
    pool.set_release_threshold(Some(2 * MIB));
    assert_eq!(pool.release_threshold(), Some(2 * MIB));
    // Three small segments, two 1 MiB blocks each.
    let blocks: Vec<Block> = (0..6).map(|_| pool.allocate(MIB, S1).unwrap()).collect();
    assert_eq!(pool.backing().reserves(), 3);
    let mut it = blocks.into_iter();
    for _ in 0..2 {
        pool.free(it.next().unwrap());
    }
    assert_eq!(pool.stats().reserved_bytes, 6 * MIB as u64, "2 MiB cached: kept");
    for _ in 0..2 {
        pool.free(it.next().unwrap());
    }
    let st = pool.stats();
    assert_eq!(st.cached_bytes, 2 * MIB as u64);
    assert_eq!(st.reserved_bytes, 4 * MIB as u64);
    pool.free(it.next().unwrap());
    // 3 MiB cached, but the only releasable segment is busy: nothing to do.
    assert_eq!(pool.stats().reserved_bytes, 4 * MIB as u64);
    pool.free(it.next().unwrap());
    let st = pool.stats();
    assert_eq!(st.reserved_bytes, 2 * MIB as u64);
    assert_eq!(st.cached_bytes, 2 * MIB as u64);
    assert_eq!(pool.backing().releases(), 2);
    // trim() applies any bound right away.
    assert_eq!(pool.trim(MIB), 2 * MIB);
    pool.set_release_threshold(None);
    let a = pool.allocate(MIB, S1).unwrap();
    pool.free(a);
    assert_eq!(pool.stats().reserved_bytes, 2 * MIB as u64);
    drain_and_check_empty(&pool, vec![], &[S1]);
}

#[test]
fn leaked_blocks_stay_allocated_and_corrupt_nothing() {
    let pool = pool(usize::MAX);
    let leaked = pool.allocate(1000, S1).unwrap();
    let addr = leaked.addr();
    drop(leaked);
    let b = pool.allocate(1000, S1).unwrap();
    assert_ne!(b.addr(), addr);
    pool.free(b);
    assert_eq!(pool.empty_cache(), 0, "the leaked block pins its segment");
    let st = pool.stats();
    assert_eq!((st.allocated_bytes, st.active_blocks), (1024, 1));
}

#[test]
#[should_panic(expected = "did not allocate it")]
fn freeing_into_another_pool_panics() {
    let p1 = pool(usize::MAX);
    let p2 = pool(usize::MAX);
    let b = p1.allocate(10, S1).unwrap();
    p2.free(b);
}

#[test]
fn stats_json_is_flat_and_complete() {
    let pool = pool(usize::MAX);
    let a = pool.allocate(100, S1).unwrap();
    let json = pool.stats().to_json();
    assert!(json.starts_with('{') && json.ends_with('}'));
    for key in [
        "\"allocations\":1",
        "\"cache_misses\":1",
        "\"hit_rate\":0.0,",
        "\"segments\":1",
    ] {
        assert!(json.contains(key), "{key} missing from {json}");
    }
    assert!(format!("{pool:?}").contains("CachingPool"));
    drain_and_check_empty(&pool, vec![a], &[S1]);
}

#[test]
fn quick_cache_reuses_exact_sizes_and_coalesces_when_room_is_needed() {
    let pool = pool(usize::MAX);
    let blocks: Vec<Block> = (0..4).map(|_| pool.allocate(MIB / 2, S1).unwrap()).collect();
    let addrs: Vec<u64> = blocks.iter().map(Block::addr).collect();
    for b in blocks {
        pool.free(b);
    }
    // Exact size: the newest quick block comes back, no backing call.
    let again = pool.allocate(MIB / 2, S1).unwrap();
    assert_eq!(again.addr(), addrs[3]);
    pool.free(again);
    // A larger request coalesces the quick blocks into one free run of the segment.
    let big = pool.allocate(MIB, S1).unwrap();
    assert_eq!(big.addr(), addrs[0]);
    assert_eq!(pool.backing().reserves(), 1);
    let st = check_quiescent(&pool, std::slice::from_ref(&big));
    assert_eq!(st.allocations, 6);
    drain_and_check_empty(&pool, vec![big], &[S1]);
}

#[test]
fn shard_handles_serve_their_stream_and_fall_back_for_others() {
    let pool = pool(usize::MAX);
    let h1 = pool.shard_handle(S1);
    let a = pool.allocate_in(&h1, 3000).unwrap();
    assert_eq!(a.stream(), S1);
    let addr = a.addr();
    pool.free_in(&h1, a);
    let b = pool.allocate_in(&h1, 3000).unwrap();
    assert_eq!(b.addr(), addr, "same stream through the handle: a cache hit");
    // A block of another stream freed through S1's handle goes to its own stream.
    let c = pool.allocate(5000, S2).unwrap();
    pool.free_in(&h1, c);
    let st = check_quiescent(&pool, std::slice::from_ref(&b));
    assert_eq!((st.allocations, st.frees), (3, 2));
    drain_and_check_empty(&pool, vec![b], &[S1, S2]);
}

#[test]
fn free_blocks_are_lent_to_other_streams_only_after_their_fence() {
    let pool = pool(usize::MAX);
    pool.set_quick_cache(false);
    let fences = pool.fence_source();
    let keep = pool.allocate(MIB / 2, S1).unwrap();
    let a = pool.allocate(MIB / 2, S1).unwrap();
    let a_addr = a.addr();
    pool.free(a);
    // S1's segment is not idle (keep) and its free is not known finished: S2 must not get it.
    let b = pool.allocate(MIB / 2, S2).unwrap();
    assert_ne!(b.addr(), a_addr);
    let blocks_before = pool.backing().reserves();
    fences.complete(S1);
    // Now the freed half (and the never-used rest) may be lent to S3.
    let c = pool.allocate(MIB / 2, S3).unwrap();
    assert_eq!(pool.backing().reserves(), blocks_before, "borrowed, not reserved");
    assert_eq!(c.stream(), S3);
    assert!(pool.stats().cross_stream_reuses >= 1);
    // Freeing the borrowed block waits for S3's work before S1 can reuse the memory.
    let c_addr = c.addr();
    pool.free(c);
    let d = pool.allocate(MIB / 2, S1).unwrap();
    assert_ne!(d.addr(), c_addr, "S1 reused memory S3 may still be using");
    fences.complete(S3);
    pool.free(d);
    drain_and_check_empty(&pool, vec![keep, b], &[S1, S2, S3]);
}

#[test]
fn huge_segments_serve_only_huge_requests() {
    let pool = pool(usize::MAX);
    pool.set_quick_cache(false);
    let big = pool.allocate(32 * MIB, S1).unwrap();
    let big_addr = big.addr();
    pool.free(big);
    // A 2 MiB request must not carve the free 32 MiB segment (the next 32 MiB request needs it).
    let mid = pool.allocate(2 * MIB, S1).unwrap();
    assert!(
        mid.addr() < big_addr || mid.addr() >= big_addr + (32 * MIB) as u64,
        "a large request was carved from a huge segment"
    );
    let again = pool.allocate(32 * MIB, S1).unwrap();
    assert_eq!(again.addr(), big_addr);
    assert_eq!(pool.backing().reserves(), 2);
    drain_and_check_empty(&pool, vec![mid, again], &[S1]);
}

/// A pool whose reserve budget is its peak allocated bytes exactly: every segment beyond what was
/// allocated at once is over budget.
fn tight_budget_pool() -> Pool {
    let pool = pool(usize::MAX);
    pool.set_quick_cache(false);
    pool.set_reserve_budget(Some(ReserveBudget {
        multiple: 1.0,
        slack: 0,
    }));
    pool
}

#[test]
fn over_budget_a_free_segment_of_another_stream_is_taken_after_a_wait() {
    let pool = tight_budget_pool();
    let fences = pool.fence_source();
    let a = pool.allocate(32 * MIB, S1).unwrap();
    let addr = a.addr();
    let recorded = fences.recorded(S1);
    pool.free(a);
    // S1 may still be using it, but S2 gets it at once by waiting on a fence of S1.
    let b = pool.allocate(32 * MIB, S2).unwrap();
    assert_eq!(b.addr(), addr);
    assert!(fences.waited(S2, S1, recorded), "S2 was not made to wait on S1");
    assert_eq!(pool.backing().reserves(), 1);
    let st = pool.stats();
    assert_eq!((st.waited_reuses, st.cross_stream_reuses, st.cache_misses), (1, 1, 1));
    // S2's own use is not known finished: S3 gets the memory only by waiting on S2 too.
    let recorded = fences.recorded(S2);
    pool.free(b);
    let c = pool.allocate(32 * MIB, S3).unwrap();
    assert_eq!(c.addr(), addr);
    assert!(fences.waited(S3, S2, recorded));
    assert_eq!(pool.stats().waited_reuses, 2);
    drain_and_check_empty(&pool, vec![c], &[S1, S2, S3]);
}

#[test]
fn without_a_budget_nothing_is_taken_before_its_fence() {
    let pool = tight_budget_pool();
    pool.set_reserve_budget(None);
    assert_eq!(pool.reserve_budget(), None);
    let a = pool.allocate(32 * MIB, S1).unwrap();
    let addr = a.addr();
    pool.free(a);
    let b = pool.allocate(32 * MIB, S2).unwrap();
    assert_ne!(b.addr(), addr);
    assert_eq!(pool.fence_source().wait_count(), 0);
    assert_eq!(pool.stats().waited_reuses, 0);
    drain_and_check_empty(&pool, vec![b], &[S1, S2]);
}

#[test]
fn over_budget_a_free_block_is_lent_after_a_wait() {
    let pool = tight_budget_pool();
    let fences = pool.fence_source();
    let keep = pool.allocate(MIB / 2, S1).unwrap();
    let a = pool.allocate(MIB / 2, S1).unwrap();
    let addr = a.addr();
    let recorded = fences.recorded(S1);
    pool.free(a);
    // The segment is not entirely free (keep), so the freed block itself is lent.
    let b = pool.allocate(MIB / 2, S2).unwrap();
    assert_eq!((b.addr(), b.stream()), (addr, S2));
    assert!(fences.waited(S2, S1, recorded));
    assert_eq!(pool.backing().reserves(), 1);
    // Back home only after S2's work with it: S1 cannot reuse it before S2's fence completes.
    pool.free(b);
    let c = pool.allocate(MIB / 2, S1).unwrap();
    assert_ne!(c.addr(), addr);
    drain_and_check_empty(&pool, vec![keep, c], &[S1, S2]);
}

#[test]
fn over_budget_a_block_waiting_on_other_streams_is_lent_after_waiting_on_them_all() {
    let pool = tight_budget_pool();
    let fences = pool.fence_source();
    let a = pool.allocate(32 * MIB, S1).unwrap();
    let addr = a.addr();
    pool.record_stream(&a, S2);
    let (on_s1, on_s2) = (fences.recorded(S1), fences.recorded(S2));
    pool.free(a);
    assert_eq!(pool.stats().pending_bytes, (32 * MIB) as u64);
    let b = pool.allocate(32 * MIB, S3).unwrap();
    assert_eq!(b.addr(), addr);
    assert!(fences.waited(S3, S1, on_s1), "S3 was not made to wait on S1");
    assert!(fences.waited(S3, S2, on_s2), "S3 was not made to wait on S2");
    let st = check_quiescent(&pool, std::slice::from_ref(&b));
    assert_eq!((st.pending_bytes, st.waited_reuses, st.segments), (0, 1, 1));
    drain_and_check_empty(&pool, vec![b], &[S1, S2, S3]);
}

#[test]
fn over_budget_idle_segments_are_released_before_reserving() {
    let pool = tight_budget_pool();
    let a = pool.allocate(32 * MIB, S1).unwrap();
    pool.free(a);
    // Nothing of the large kind is cached: the idle huge segment goes back first.
    let b = pool.allocate(4 * MIB, S1).unwrap();
    let st = check_quiescent(&pool, std::slice::from_ref(&b));
    assert_eq!(st.budget_released_bytes, (32 * MIB) as u64);
    assert_eq!(st.reserved_bytes, LARGE_SEGMENT_SIZE as u64);
    assert_eq!(st.peak_reserved_bytes, (32 * MIB) as u64);
    assert_eq!(pool.backing().releases(), 1);
    drain_and_check_empty(&pool, vec![b], &[S1]);
}

#[test]
fn the_default_budget_leaves_small_pools_alone() {
    let pool = pool(usize::MAX);
    assert_eq!(pool.reserve_budget(), Some(ReserveBudget::default()));
    // Alternating sizes of different kinds: both stay cached, nothing waits or is released.
    for _ in 0..10 {
        let a = pool.allocate(32 * MIB, S1).unwrap();
        pool.free(a);
        let b = pool.allocate(4 * MIB, S2).unwrap();
        pool.free(b);
    }
    let st = pool.stats();
    assert_eq!((st.cache_misses, st.budget_released_bytes, st.waited_reuses), (2, 0, 0));
    assert_eq!(pool.backing().releases(), 0);
    drain_and_check_empty(&pool, vec![], &[S1, S2]);
}

#[test]
#[should_panic(expected = "reserve budget")]
fn a_budget_below_the_peak_is_refused() {
    pool(usize::MAX).set_reserve_budget(Some(ReserveBudget {
        multiple: 0.9,
        slack: 0,
    }));
}

#[test]
fn totals_stay_exact_when_a_second_stream_arrives_during_solo_hits() {
    // One stream: the totals are updated under its shard lock. A second stream's first
    // allocation switches the pool to atomic updates while four threads keep hitting the cache
    // of the first; no update may be lost on either side of the switch.
    let pool = Arc::new(pool(usize::MAX));
    let warm: Vec<Block> = (0..4).map(|_| pool.allocate(4096, S1).unwrap()).collect();
    for b in warm {
        pool.free(b);
    }
    let start = Arc::new(std::sync::Barrier::new(5));
    let hitters: Vec<_> = (0..4)
        .map(|t| {
            let (pool, start) = (pool.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut held = Vec::new();
                for i in 0..50_000u64 {
                    held.push(pool.allocate(4096 + 512 * ((i + t) % 3) as usize, S1).unwrap());
                    if held.len() > 2 {
                        pool.free(held.remove(0));
                    }
                }
                for b in held {
                    pool.free(b);
                }
            })
        })
        .collect();
    start.wait();
    let mut others = Vec::new();
    for s in 2..6 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        others.push(pool.allocate(1 << 20, StreamId(s)).unwrap());
    }
    for h in hitters {
        h.join().unwrap();
    }
    let st = check_quiescent(&pool, &others);
    assert_eq!(st.allocated_bytes, 4 << 20);
    drain_and_check_empty(&pool, others, &[S1, StreamId(2), StreamId(3), StreamId(4), StreamId(5)]);
}

#[test]
fn peak_allocated_is_exact_on_one_stream_and_after_a_second_arrives() {
    let pool = pool(usize::MAX);
    let a = pool.allocate(3 << 20, S1).unwrap();
    pool.free(a);
    let b = pool.allocate(1 << 20, S1).unwrap();
    assert_eq!(pool.stats().peak_allocated_bytes, 3 << 20);
    // A hit from the quick cache that raises the total above the earlier peak.
    let a = pool.allocate(3 << 20, S1).unwrap();
    assert_eq!(pool.stats().peak_allocated_bytes, 4 << 20);
    let c = pool.allocate(2 << 20, S2).unwrap();
    assert_eq!(pool.stats().peak_allocated_bytes, 6 << 20);
    pool.free(a);
    let d = pool.allocate(3 << 20, S1).unwrap();
    assert_eq!(pool.stats().peak_allocated_bytes, 6 << 20);
    let st = check_quiescent(&pool, &[&b, &c, &d]);
    assert_eq!(st.allocated_bytes, 6 << 20);
    drain_and_check_empty(&pool, vec![b, c, d], &[S1, S2]);
}
