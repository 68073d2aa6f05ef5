//! Pairs CUPTI's kernel records with the launches the profiler saw, per stream.
//!
//! CUPTI reports every kernel of the process with its stream, its name and the driver call's
//! correlation id, but not which cudrv launch it was. Kernels on one stream run in launch
//! order and their correlation ids grow with it, so the profiler keeps, per stream, the
//! launches it has seen in order, and a record (taken in correlation-id order) belongs to the
//! oldest launch on its stream with the same kernel name among the first [`WINDOW`]. The
//! launches before that one got no record (CUPTI dropped it): they are counted as lost. A record
//! that matches no launch is another library's kernel (or one launched while the profiler was
//! off) and is skipped.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

/// How far into a stream's launches a record looks for its own.
pub(crate) const WINDOW: usize = 64;

/// Launches a stream keeps waiting for their records; past this the oldest are given up as
/// lost (a stream whose records never come stays bounded in a long run without a report).
pub(crate) const MAX_WAITING: usize = 1 << 16;

/// A launch on a stream whose record has not come yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expected {
    /// Its kernel's index in the profiler's table.
    pub key: usize,
    /// Its kernel's name, hashed ([`name_hash`]).
    pub name: u64,
    /// Whether its time goes into the figures (sampling may leave it out: then its record is
    /// only taken off).
    pub timed: bool,
    /// The stream's driver handle (for the trace).
    pub stream: u64,
    /// The operation's work, when this launch carries it.
    pub flops: f64,
    pub bytes: f64,
}

/// A kernel record's fields, as the collector keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub stream_id: u32,
    pub correlation_id: u32,
    pub name: u64,
    /// On CUPTI's clock, ns.
    pub start: u64,
    pub end: u64,
}

/// A launch and its record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Matched {
    pub launch: Expected,
    pub start: u64,
    pub end: u64,
}

/// What one round of matching found.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// Timed launches with their records, in record order.
    pub matched: Vec<Matched>,
    /// Launches passed over by a later launch's record (no record will come for them).
    pub lost: usize,
    /// Records of kernels the profiler did not see launched.
    pub foreign: usize,
}

/// The hash a kernel's name is compared by.
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// The launches the profiler has seen and not matched yet, per CUPTI stream id.
#[derive(Debug, Default)]
pub(crate) struct Expecting {
    streams: HashMap<u32, VecDeque<Expected>>,
    len: usize,
    /// Launches given up by [`Expecting::push`] since the last [`Expecting::take`].
    overflowed: usize,
}

impl Expecting {
    /// Launches waiting for their record.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A launch on stream `stream_id`, after those before it.
    pub(crate) fn push(&mut self, stream_id: u32, launch: Expected) {
        let q = self.streams.entry(stream_id).or_default();
        if q.len() >= MAX_WAITING {
            q.pop_front();
            self.len -= 1;
            self.overflowed += 1;
        }
        q.push_back(launch);
        self.len += 1;
    }

    /// Takes back the last launch on `stream_id` (it failed), if it is of kernel `key`.
    pub(crate) fn withdraw(&mut self, stream_id: u32, key: usize) {
        if let Some(q) = self.streams.get_mut(&stream_id) {
            if q.back().is_some_and(|l| l.key == key) {
                q.pop_back();
                self.len -= 1;
            }
        }
    }

    /// Matches `records` (any order) to the launches, adding to `out`.
    pub(crate) fn take(&mut self, mut records: Vec<Record>, out: &mut Outcome) {
        out.lost += std::mem::take(&mut self.overflowed);
        records.sort_unstable_by_key(|r| r.correlation_id);
        for r in records {
            let Some(q) = self.streams.get_mut(&r.stream_id) else {
                out.foreign += 1;
                continue;
            };
            let Some(i) = q.iter().take(WINDOW).position(|l| l.name == r.name) else {
                out.foreign += 1;
                continue;
            };
            out.lost += i;
            q.drain(..i);
            let launch = q.pop_front().expect("position i is in the queue");
            self.len -= i + 1;
            if launch.timed {
                out.matched.push(Matched {
                    launch,
                    start: r.start,
                    end: r.end,
                });
            }
        }
        self.streams.retain(|_, q| !q.is_empty());
    }

    /// Forgets every launch still waiting, returning how many there were.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.len + std::mem::take(&mut self.overflowed);
        self.streams.clear();
        self.len = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(key: usize, name: &str, timed: bool) -> Expected {
        Expected {
            key,
            name: name_hash(name.as_bytes()),
            timed,
            stream: 7,
            flops: 0.0,
            bytes: 0.0,
        }
    }

    fn record(stream_id: u32, correlation_id: u32, name: &str, start: u64) -> Record {
        Record {
            stream_id,
            correlation_id,
            name: name_hash(name.as_bytes()),
            start,
            end: start + 10,
        }
    }

    #[test]
    fn records_in_any_order_go_to_their_launches_per_stream() {
        let mut e = Expecting::default();
        e.push(1, launch(0, "a", true));
        e.push(2, launch(1, "b", true));
        e.push(1, launch(2, "c", true));
        e.push(1, launch(0, "a", true));
        let mut out = Outcome::default();
        // A round's records in any order; a stream's later records in a later round.
        e.take(
            vec![
                record(1, 30, "c", 300),
                record(2, 20, "b", 200),
                record(1, 10, "a", 100),
            ],
            &mut out,
        );
        e.take(vec![record(1, 40, "a", 400)], &mut out);
        let got: Vec<(usize, u64)> = out.matched.iter().map(|m| (m.launch.key, m.start)).collect();
        assert_eq!(got, vec![(0, 100), (1, 200), (2, 300), (0, 400)]);
        assert_eq!((out.lost, out.foreign, e.len()), (0, 0, 0));
    }

    #[test]
    fn foreign_records_are_skipped_and_lost_launches_counted() {
        let mut e = Expecting::default();
        for i in 0..5 {
            e.push(3, launch(i, &format!("k{i}"), true));
        }
        let mut out = Outcome::default();
        // Another library's kernel on the same stream, one on a stream never used, then the
        // record of the third launch: the first two are lost.
        e.take(
            vec![record(3, 1, "cublas", 1), record(9, 2, "k0", 2), record(3, 5, "k2", 50)],
            &mut out,
        );
        assert_eq!((out.lost, out.foreign, e.len()), (2, 2, 2));
        assert_eq!(out.matched.len(), 1);
        assert_eq!(out.matched[0].launch.key, 2);
        assert_eq!(e.clear(), 2);
        assert_eq!(e.len(), 0);
    }

    #[test]
    fn untimed_launches_take_their_record_off_and_withdrawn_ones_do_not_wait() {
        let mut e = Expecting::default();
        e.push(1, launch(0, "a", false));
        e.push(1, launch(0, "a", true));
        e.push(1, launch(1, "b", true));
        e.withdraw(1, 0); // not the last: nothing
        assert_eq!(e.len(), 3);
        e.withdraw(1, 1);
        assert_eq!(e.len(), 2);
        let mut out = Outcome::default();
        e.take(vec![record(1, 1, "a", 10), record(1, 2, "a", 20)], &mut out);
        assert_eq!(out.matched.len(), 1);
        assert_eq!(out.matched[0].start, 20);
        assert_eq!((out.lost, out.foreign, e.len()), (0, 0, 0));
    }

    #[test]
    fn a_stream_whose_records_never_come_stays_bounded() {
        let mut e = Expecting::default();
        for _ in 0..MAX_WAITING + 10 {
            e.push(5, launch(0, "a", true));
        }
        assert_eq!(e.len(), MAX_WAITING);
        let mut out = Outcome::default();
        e.take(Vec::new(), &mut out);
        assert_eq!(out.lost, 10);
    }

    #[test]
    fn a_record_looks_only_a_window_deep() {
        let mut e = Expecting::default();
        for _ in 0..WINDOW {
            e.push(1, launch(0, "a", true));
        }
        e.push(1, launch(1, "b", true));
        let mut out = Outcome::default();
        e.take(vec![record(1, 1, "b", 5)], &mut out);
        assert_eq!((out.matched.len(), out.foreign, e.len()), (0, 1, WINDOW + 1));
    }
}
