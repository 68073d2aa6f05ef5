//! Property and stress tests of the caching device allocator (`cudrv::memory::pool`) over the
//! fakes of tests/support/pool_fakes.rs: random operation sequences against a simple model of
//! which memory may be reused on which stream, and eight threads on four streams. No GPU needed.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use cudrv::memory::pool::{round_size, segment_size, Block, PoolError, ReserveBudget, StreamId};
use proptest::prelude::*;

const MIB: usize = 1 << 20;

#[path = "support/pool_fakes.rs"]
mod fakes;
use fakes::*;

// ---------------------------------------------------------------------------------------------
// Property test against a model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Alloc(usize, u64),
    Free(usize),
    RecordStream(usize, u64),
    Complete(u64),
    EmptyCache,
    Trim(usize),
    Limit(Option<usize>),
    /// A reserve budget: (multiple in tenths, slack in MiB), or none.
    Budget(Option<(u8, u8)>),
}

fn size_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0usize..=8192,
        3 => 0usize..=(MIB + 4096),
        2 => MIB..=(10 * MIB + 4096),
        1 => (10 * MIB)..=(24 * MIB),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (size_strategy(), 0u64..4).prop_map(|(n, s)| Op::Alloc(n, s)),
        5 => any::<usize>().prop_map(Op::Free),
        2 => (any::<usize>(), 0u64..4).prop_map(|(i, s)| Op::RecordStream(i, s)),
        3 => (0u64..4).prop_map(Op::Complete),
        1 => Just(Op::EmptyCache),
        1 => (0usize..(8 * MIB)).prop_map(Op::Trim),
        1 => prop::option::of(0usize..(64 * MIB)).prop_map(Op::Limit),
        1 => prop::option::of((10u8..=15, 0u8..=8)).prop_map(Op::Budget),
    ]
}

/// A range freed on some streams: it may be reused on stream X only when every stream of
/// `users` other than X has drained since the free, or a fence of it recorded after the free has
/// completed, or X was made to wait on one. Each user comes with its drain epoch and the number
/// of fences recorded on it at the free.
struct Dirty {
    start: u64,
    end: u64,
    users: Vec<(StreamId, u64, u64)>,
}

/// The model: live blocks with the streams they are used on, per-stream drain epochs, and the
/// ranges still in use on some stream.
#[derive(Default)]
struct Model {
    live: Vec<(Block, Vec<StreamId>)>,
    epoch: HashMap<StreamId, u64>,
    dirty: Vec<Dirty>,
}

impl Model {
    fn epoch(&self, s: StreamId) -> u64 {
        self.epoch.get(&s).copied().unwrap_or(0)
    }

    fn check_reuse(&mut self, b: &Block, fences: &FakeFences) {
        let (start, end) = (b.addr(), b.addr() + b.size() as u64);
        let epoch = &self.epoch;
        self.dirty
            .retain(|d| d.users.iter().any(|(u, e, _)| epoch.get(u).copied().unwrap_or(0) == *e));
        for d in &self.dirty {
            if d.start < end && start < d.end {
                for &(u, e, recorded) in &d.users {
                    assert!(
                        u == b.stream()
                            || self.epoch(u) != e
                            || fences.completed(u) > recorded
                            || fences.waited(b.stream(), u, recorded),
                        "{b:?} reuses [{:#x}, {:#x}) while stream {u:?} may still use it",
                        d.start,
                        d.end
                    );
                }
            }
        }
    }
}

fn run_model(capacity: usize, ops: Vec<Op>) {
    let pool = pool(capacity);
    let mut m = Model::default();
    for op in ops {
        match op {
            Op::Alloc(n, s) => {
                let s = StreamId(s);
                match pool.allocate(n, s) {
                    Ok(b) => {
                        assert_eq!((b.requested(), b.stream()), (n, s));
                        m.check_reuse(&b, pool.fence_source());
                        m.live.push((b, vec![s]));
                    }
                    Err(PoolError::OutOfMemory { .. }) => {
                        // Legitimate only if the cache was emptied first (nothing is left to
                        // release) and the segment it needed still does not fit.
                        assert_eq!(pool.empty_cache(), 0, "OOM without emptying the cache");
                        let need = segment_size(round_size(n).unwrap()).unwrap();
                        let cap = capacity.min(pool.limit().unwrap_or(usize::MAX));
                        assert!(
                            pool.backing().used() + need > cap,
                            "spurious OOM for {n} B with {} B reserved",
                            pool.backing().used()
                        );
                    }
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            Op::Free(i) if !m.live.is_empty() => {
                let (b, users) = m.live.swap_remove(i % m.live.len());
                m.dirty.push(Dirty {
                    start: b.addr(),
                    end: b.addr() + b.size() as u64,
                    users: users
                        .iter()
                        .map(|&u| (u, m.epoch(u), pool.fence_source().recorded(u)))
                        .collect(),
                });
                pool.free(b);
            }
            Op::RecordStream(i, s) if !m.live.is_empty() => {
                let n = m.live.len();
                let (b, users) = &mut m.live[i % n];
                pool.record_stream(b, StreamId(s));
                if !users.contains(&StreamId(s)) {
                    users.push(StreamId(s));
                }
            }
            Op::Complete(s) => {
                pool.fence_source().complete(StreamId(s));
                *m.epoch.entry(StreamId(s)).or_default() += 1;
            }
            Op::EmptyCache => {
                pool.empty_cache();
            }
            Op::Trim(keep) => {
                pool.trim(keep);
                // Either it got down to `keep`, or nothing entirely free was left to release.
                let st = pool.stats();
                if st.cached_bytes > keep as u64 {
                    assert_eq!(pool.trim(keep), 0);
                }
            }
            Op::Limit(limit) => pool.set_limit(limit),
            Op::Budget(budget) => pool.set_reserve_budget(budget.map(|(tenths, slack)| ReserveBudget {
                multiple: f64::from(tenths) / 10.0,
                slack: usize::from(slack) * MIB,
            })),
            Op::Free(_) | Op::RecordStream(..) => {}
        }
        let blocks: Vec<&Block> = m.live.iter().map(|(b, _)| b).collect();
        check_quiescent(&pool, &blocks);
    }
    let live = m.live.into_iter().map(|(b, _)| b).collect();
    drain_and_check_empty(&pool, live, &[StreamId(0), StreamId(1), StreamId(2), StreamId(3)]);
}

// 256 cases by default; set PROPTEST_CASES for a longer run.
proptest! {
    #[test]
    fn random_sequences_keep_the_invariants(
        ops in prop::collection::vec(op_strategy(), 1..120),
        tight in any::<bool>(),
    ) {
        // A tight capacity provokes the OOM path; a roomy one exercises caching.
        let capacity = if tight { 48 * MIB } else { 1 << 40 };
        run_model(capacity, ops);
    }
}

// ---------------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift64*), so the test needs no extra dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn eight_threads_on_four_streams_never_overlap_or_leak() {
    let pool = Arc::new(pool(512 * MIB));
    let live_ranges = Arc::new(Mutex::new(BTreeMap::<u64, u64>::new()));
    let streams: Vec<StreamId> = (0..4).map(StreamId).collect();
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let pool = pool.clone();
            let ranges = live_ranges.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t + 1) * 0x1234_5678_9ABC));
                let mut mine: Vec<Block> = Vec::new();
                for _ in 0..10_000 {
                    match rng.below(100) {
                        0..=49 if mine.len() < 24 => {
                            let size = match rng.below(10) {
                                0 => rng.below(6 * MIB as u64) as usize,
                                1..=3 => rng.below(MIB as u64) as usize,
                                _ => rng.below(8192) as usize,
                            };
                            let stream = StreamId(if rng.below(4) == 0 { rng.below(4) } else { t % 4 });
                            let Ok(b) = pool.allocate(size, stream) else {
                                continue;
                            };
                            let (start, end) = (b.addr(), b.addr() + b.size() as u64);
                            let mut r = ranges.lock().unwrap();
                            if let Some((&s, &e)) = r.range(..end).next_back() {
                                assert!(e <= start, "[{start:#x},{end:#x}) overlaps [{s:#x},{e:#x})");
                            }
                            r.insert(start, end);
                            drop(r);
                            if rng.below(8) == 0 {
                                pool.record_stream(&b, StreamId(rng.below(4)));
                            }
                            mine.push(b);
                        }
                        0..=89 if !mine.is_empty() => {
                            let i = rng.below(mine.len() as u64) as usize;
                            let b = mine.swap_remove(i);
                            ranges.lock().unwrap().remove(&b.addr());
                            pool.free(b);
                        }
                        90..=97 => pool.fence_source().complete(StreamId(rng.below(4))),
                        98 => {
                            pool.empty_cache();
                        }
                        _ => {
                            let _ = pool.stats();
                        }
                    }
                }
                for b in mine {
                    ranges.lock().unwrap().remove(&b.addr());
                    pool.free(b);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(live_ranges.lock().unwrap().is_empty());
    let st = pool.stats();
    assert_eq!(st.allocations, st.frees);
    assert!(st.cache_hits > 0);
    drain_and_check_empty(&pool, vec![], &streams);
}
