//! Reading ahead: which byte ranges to read next in one batch, and which are held until the pass
//! asks for them. Pure bookkeeping over a [`Batches`] source, so the policy is tested natively
//! (`tests/read_ahead.rs`); the browser's `BlobSource` (in `worker/`) is the source that does I/O.
//!
//! Why batches: a browser read of a `Blob` costs ~0.7 ms whatever its size, and the pass reads one
//! block of rows at a time in a shuffled order, so the worker asks the pass what it will read next
//! (`Analysis::upcoming_reads`) and reads that as one `Blob` of many slices, a few batches ahead
//! of the steps ([`Limits::in_flight`]). Measured in Chromium (2-core machine): 16 slices of 1 MiB
//! in a batch read at ~490 MB/s, 256 slices of 64 KiB at ~100 MB/s, so a slice costs ~0.6 ms even
//! inside one batch.
//!
//! A range is served once, and only the range asked for leaves the queue. An earlier version also
//! dropped every range queued before it; when a batch was installed out of reading order (the
//! next-but-one batch arriving before the next one was read again), each read of the later batch
//! dropped the earlier one, which was then read again: every batch was read twice, for good.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::rc::Rc;

/// How much is read ahead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Ranges of one batch at most.
    pub batch_ranges: usize,
    /// Bytes of one batch at most (a single larger range is still one batch).
    pub batch_bytes: u64,
    /// Batches read at once at most, ahead of the one the steps read from (at least one). A pass
    /// starts with one, and reads one more at once each time a step had to wait for a batch (up
    /// to this many): where reading, not the arithmetic, bounds the pass.
    pub in_flight: usize,
    /// Bytes held at most; past it the oldest ranges go first (ranges listed but not asked for,
    /// e.g. after a Stop here, must not pile up).
    pub max_held: u64,
}

impl Limits {
    /// The browser's: a batch large enough that it costs its bytes rather than its request (tens of
    /// ms at a few hundred MB/s), small enough to bound memory; up to three batches read at once
    /// where the steps wait for them, since a `Blob` read leaves the browser idle between its
    /// end and the next one's start. Measured in a bare worker on this project's 2-core machine,
    /// batches of sixteen 1 MiB slices in random order: 545–663 MB/s one batch at a time, 705
    /// two, 741–818 three (four: no more); 16 MiB contiguous: 523–676, 735, 923–1050. Where the
    /// arithmetic bounds the pass, one batch in flight keeps up, and more took CPU from the
    /// workers (a 2,000,000×256 matrix on two workers: 6.1–7.4 s with one, 6.9–9.5 s with three).
    /// At most 48 MiB in flight and 48 MiB held, all of it JavaScript memory, none of it wasm's.
    pub const BROWSER: Limits =
        Limits { batch_ranges: 1024, batch_bytes: 16 << 20, in_flight: 3, max_held: 3 * (16 << 20) };

    /// Ranges listed ahead of the steps: those held and not yet read, and the batches in flight.
    fn listed(&self) -> usize {
        (self.in_flight.max(1) + 1) * self.batch_ranges
    }
}

/// A source that reads batches of ranges ahead and holds them.
pub trait Batches {
    /// A batch being read.
    type Batch;
    /// Whether the range at `offset` of `len` bytes is held and not yet served.
    fn holds(&self, offset: u64, len: u64) -> bool;
    /// Starts reading `ranges` as one batch; None when there is nothing to read or a range is
    /// outside the file (its own read will then say why).
    fn fetch(&self, ranges: Vec<(u64, u64)>) -> Option<Self::Batch>;
    /// Waits for `batch` and holds its ranges, `max_held` bytes at most in all.
    fn install(&self, batch: Self::Batch, max_held: u64) -> impl Future<Output = ()>;
    /// Whether `batch` has been read (installing it would not wait).
    fn arrived(&self, batch: &Self::Batch) -> bool;
}

/// A batch being read: the file, the batch, and its ranges.
type Flying<B> = (usize, B, Vec<(u64, u64)>);

/// Reads the ranges a pass will read next, up to [`Limits::in_flight`] batches ahead of its
/// steps, over the sources of a request by file index (None where a source reads for itself:
/// demos, URLs). The data flows one way: the loop asks the pass what it reads next, reads it,
/// then steps.
pub struct ReadAhead<S: Batches> {
    sources: Vec<Option<Rc<S>>>,
    limits: Limits,
    /// Batches being read, oldest first.
    in_flight: VecDeque<Flying<S::Batch>>,
    /// Batches read at once now: one more each time a step waits for one, up to the limit's.
    depth: usize,
}

impl<S: Batches> ReadAhead<S> {
    pub fn new(sources: Vec<Option<Rc<S>>>, limits: Limits) -> Self {
        ReadAhead { sources, limits, in_flight: VecDeque::new(), depth: 1 }
    }

    /// Batches read at once now (tests).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Before a step: makes sure its reads (the first `step_reads` of the listing) are held,
    /// waiting for the batches in flight or reading a new one, then starts reading batches after
    /// them until [`ReadAhead::depth`] are in flight. `upcoming(n)` lists the next `n` reads
    /// (`Job::upcoming_reads`): the file and its ranges in reading order.
    pub async fn before_step(&mut self, step_reads: usize, upcoming: impl Fn(usize) -> (usize, Vec<(u64, u64)>)) {
        let (file, step) = upcoming(step_reads.max(1));
        if step.is_empty() {
            return;
        }
        let Some(source) = self.sources.get(file).cloned().flatten() else { return };
        let max_held = self.limits.max_held;
        let missing = |source: &S| step.iter().any(|&(o, l)| !source.holds(o, l));
        if missing(&source) {
            // Waits for the batches in flight up to the last one with a read of the step, if one
            // has it: the others hold what the steps after read, and installed now would crowd it
            // out.
            let with_step =
                self.in_flight.iter().rposition(|(of, _, r)| *of == file && r.iter().any(|range| step.contains(range)));
            let waits = self.in_flight.front().is_some_and(|(of, batch, _)| {
                self.sources.get(*of).cloned().flatten().is_some_and(|s| !s.arrived(batch))
            });
            if with_step.is_some() && waits {
                self.depth = (self.depth + 1).min(self.limits.in_flight.max(1));
            }
            for _ in 0..with_step.map_or(0, |k| k + 1) {
                let Some((of, batch, _)) = self.in_flight.pop_front() else { break };
                if let Some(Some(flying)) = self.sources.get(of) {
                    flying.install(batch, max_held).await;
                }
            }
        }
        let flying_set = |in_flight: &VecDeque<Flying<S::Batch>>| -> HashSet<(u64, u64)> {
            in_flight.iter().filter(|(of, _, _)| *of == file).flat_map(|(_, _, r)| r.iter().copied()).collect()
        };
        // Listed once: reading a batch now changes neither the listing (no step was taken) nor
        // the batches in flight.
        let mut listing = None;
        if missing(&source) {
            // Read now, and only what is neither held nor in flight.
            let (_, listed) = upcoming(self.limits.listed());
            let flying = flying_set(&self.in_flight);
            let batch = batch_of(&listed, self.limits, |o, l| source.holds(o, l) || flying.contains(&(o, l)));
            if let Some(batch) = source.fetch(batch) {
                source.install(batch, max_held).await;
            }
            listing = Some((listed, flying));
        }
        if self.in_flight.len() >= self.depth {
            return;
        }
        let (listed, mut flying) =
            listing.unwrap_or_else(|| (upcoming(self.limits.listed()).1, flying_set(&self.in_flight)));
        while self.in_flight.len() < self.depth {
            let ranges = batch_of(&listed, self.limits, |o, l| source.holds(o, l) || flying.contains(&(o, l)));
            flying.extend(ranges.iter().copied());
            let Some(batch) = source.fetch(ranges.clone()) else { break };
            self.in_flight.push_back((file, batch, ranges));
        }
    }
}

/// The first ranges of `listed` not already `held`, up to the limits' bytes and ranges (at least
/// one), each once. A range listed a second time (a sample block the pass reads again) ends the
/// batch: it is read again once its first read is served, and the batch does not jump ahead of
/// it, which would hold ranges read long after the ones after it.
pub fn batch_of(listed: &[(u64, u64)], limits: Limits, held: impl Fn(u64, u64) -> bool) -> Vec<(u64, u64)> {
    let mut batch: Vec<(u64, u64)> = Vec::new();
    let mut seen = HashSet::new();
    let mut bytes = 0u64;
    for &(offset, len) in listed {
        if !seen.insert((offset, len)) {
            break;
        }
        if held(offset, len) {
            continue;
        }
        if !batch.is_empty() && (bytes + len > limits.batch_bytes || batch.len() >= limits.batch_ranges) {
            break;
        }
        bytes += len;
        batch.push((offset, len));
    }
    batch
}

/// Bytes of file a batch reads between two of its ranges rather than cut it into two slices:
/// each slice costs ~0.6 ms in Chromium, as much as reading ~256 KiB, and a sweep (`pass::plan`)
/// lists runs of blocks with the random phase's blocks between them.
pub const BRIDGE_BYTES: u64 = 256 << 10;

/// How a batch is read ([`spans_of`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Spans {
    /// The spans of the file to slice (offset, length), read back to back into one buffer.
    pub spans: Vec<(u64, u64)>,
    /// Where each range of the batch starts in that buffer.
    pub starts: Vec<u32>,
}

/// How a batch of `ranges` (in the order listed) is read: the spans of the file to slice, each
/// covering consecutive ranges that follow one another in the file with at most `bridge` bytes
/// between them, and where each range starts in the batch's buffer. None when the buffer would
/// pass `u32::MAX` bytes (it is addressed with u32 offsets).
pub fn spans_of(ranges: &[(u64, u64)], bridge: u64) -> Option<Spans> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    let mut starts = Vec::with_capacity(ranges.len());
    let mut total = 0u64;
    for &(offset, len) in ranges {
        let end = offset.checked_add(len)?;
        match spans.last_mut() {
            Some((at, span)) if offset >= *at + *span && offset - (*at + *span) <= bridge => {
                let grown = end - *at;
                total += grown - *span;
                *span = grown;
            }
            _ => {
                spans.push((offset, len));
                total += len;
            }
        }
        let (at, span) = spans.last().copied()?;
        // Where the range starts: the bytes of the spans before its own, then its place in it.
        starts.push(u32::try_from(total - span + (offset - at)).ok()?);
    }
    u32::try_from(total).ok()?;
    Some(Spans { spans, starts })
}

/// The ranges read ahead and not yet served, oldest first, each with its bytes (`T`: where they
/// lie in a batch's buffer), and how many times each (offset, length) is held, so that asking
/// whether one is held costs no scan.
pub struct Held<T> {
    queue: VecDeque<(u64, u64, T)>,
    count: HashMap<(u64, u64), u32>,
    bytes: u64,
}

impl<T> Default for Held<T> {
    fn default() -> Self {
        Held { queue: VecDeque::new(), count: HashMap::new(), bytes: 0 }
    }
}

impl<T> Held<T> {
    /// Holds `len` bytes of the file at `offset`, then drops the oldest ranges while more than
    /// `max_held` bytes are held.
    pub fn push(&mut self, offset: u64, len: u64, bytes: T, max_held: u64) {
        *self.count.entry((offset, len)).or_insert(0) += 1;
        self.bytes += len;
        self.queue.push_back((offset, len, bytes));
        while self.bytes > max_held && self.pop_front().is_some() {}
    }

    fn pop_front(&mut self) -> Option<(u64, u64, T)> {
        let front = self.queue.pop_front()?;
        self.forget(front.0, front.1);
        Some(front)
    }

    fn forget(&mut self, offset: u64, len: u64) {
        match self.count.get_mut(&(offset, len)) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                self.count.remove(&(offset, len));
            }
        }
        self.bytes -= len;
    }

    /// Whether the range at `offset` of `len` bytes is held.
    pub fn holds(&self, offset: u64, len: u64) -> bool {
        self.count.contains_key(&(offset, len))
    }

    /// Serves the range at `offset` of `len` bytes: the oldest one held, which leaves the queue
    /// (the others stay: a read out of the listed order must not drop what is read next).
    pub fn take(&mut self, offset: u64, len: u64) -> Option<T> {
        if !self.holds(offset, len) {
            return None;
        }
        let at = self.queue.iter().position(|&(o, l, _)| o == offset && l == len)?;
        let (o, l, bytes) = self.queue.remove(at)?;
        self.forget(o, l);
        Some(bytes)
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits { batch_ranges: 3, batch_bytes: 100, in_flight: 1, max_held: 250 };

    #[test]
    fn a_read_out_of_order_keeps_the_others() {
        let mut held = Held::default();
        for (i, offset) in [10u64, 20, 30].into_iter().enumerate() {
            held.push(offset, 5, i, 1000);
        }
        assert_eq!(held.take(30, 5), Some(2));
        assert!(held.holds(10, 5) && held.holds(20, 5) && !held.holds(30, 5));
        assert_eq!((held.take(10, 5), held.take(20, 5), held.take(10, 5)), (Some(0), Some(1), None));
        assert_eq!(held.bytes(), 0);
    }

    #[test]
    fn a_range_held_twice_is_served_twice_and_the_oldest_go_past_the_bound() {
        let mut held = Held::default();
        held.push(0, 100, 'a', 250);
        held.push(0, 100, 'b', 250);
        held.push(100, 100, 'c', 250);
        // 300 bytes > 250: the oldest ('a') went.
        assert_eq!(held.bytes(), 200);
        assert_eq!((held.take(0, 100), held.take(0, 100)), (Some('b'), None));
        assert_eq!(held.take(100, 100), Some('c'));
    }

    #[test]
    fn a_batch_reads_ranges_that_follow_each_other_as_one_span() {
        // Adjacent, then a gap of 10 bytes bridged, then one too far, then one before (never merged).
        let ranges = [(100, 50), (150, 50), (210, 40), (1000, 8), (0, 10)];
        let Spans { spans, starts } = spans_of(&ranges, 16).unwrap();
        assert_eq!(spans, vec![(100, 150), (1000, 8), (0, 10)]);
        assert_eq!(starts, vec![0, 50, 110, 150, 158]);
        // Each range's bytes are at its start in the spans read back to back.
        let file: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
        let buffer: Vec<u8> = spans.iter().flat_map(|&(o, l)| file[o as usize..(o + l) as usize].to_vec()).collect();
        for (&(o, l), &at) in ranges.iter().zip(&starts) {
            assert_eq!(&buffer[at as usize..at as usize + l as usize], &file[o as usize..(o + l) as usize]);
        }
        assert_eq!(spans_of(&[(0, 10), (10, 10)], 0).unwrap().spans, vec![(0, 20)]);
        assert!(spans_of(&[(0, u32::MAX as u64), (u32::MAX as u64, 1)], 0).is_none(), "past u32 offsets");
        assert!(spans_of(&[(u64::MAX, 2)], 0).is_none());
    }

    #[test]
    fn batches_skip_what_is_held_stop_at_a_repeat_and_keep_their_limits() {
        let listed = [(0, 40), (40, 40), (80, 40), (120, 40), (0, 40)];
        assert_eq!(batch_of(&listed, SMALL, |_, _| false), vec![(0, 40), (40, 40)]);
        assert_eq!(batch_of(&listed, SMALL, |o, _| o < 80), vec![(80, 40), (120, 40)]);
        // A repeat ends the batch (it is read again later), and one range larger than a batch is
        // a batch of its own.
        assert_eq!(batch_of(&[(0, 10), (10, 10), (0, 10)], SMALL, |_, _| false), vec![(0, 10), (10, 10)]);
        // So does the repeat of a range held: the batch does not jump ahead of its second read.
        assert_eq!(batch_of(&[(0, 10), (10, 10), (0, 10), (20, 10)], SMALL, |o, _| o == 0), vec![(10, 10)]);
        assert_eq!(batch_of(&[(0, 500), (500, 1)], SMALL, |_, _| false), vec![(0, 500)]);
        let many: Vec<_> = (0..10).map(|i| (i * 10, 10)).collect();
        assert_eq!(batch_of(&many, SMALL, |_, _| false).len(), 3);
    }
}
