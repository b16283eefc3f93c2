//! Which bytes a read must fetch: the cached window and its read-ahead, and the memo that serves
//! the histogram's sample blocks when the pass reads them again.

use std::collections::HashMap;

/// Reads shorter than this are header fields (the format readers ask for 4 to 16 bytes at a time;
/// GGUF brings its own 1 MiB window): they fetch a [`WINDOW_BYTES`] read-ahead so a header costs a
/// few requests, not one per field. A block of 64 embedding rows is never this short, so rows are
/// never read ahead (that would pull bytes nobody asked for).
pub const READ_AHEAD_BELOW: u64 = 64;

/// Size of the read-ahead window.
pub const WINDOW_BYTES: u64 = 64 << 10;

/// Bytes of block reads kept until they are read again (the histogram's sample blocks are the
/// first blocks of the pass, so each is asked for twice; see [`Memo`]).
pub const MEMO_BUDGET: u64 = 48 << 20;

/// How one `read_at(offset, len)` is served, given the cached window `window_start ..
/// window_start + window_len` of a file of `file_len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    /// The first `count` bytes of the read come from the window, starting `window_offset` into it.
    pub cached: Option<(u64, u64)>,
    /// Bytes `start .. end` to fetch; their first bytes complete the read.
    pub fetch: Option<(u64, u64)>,
    /// Whether the fetched bytes replace the window (a read-ahead).
    pub new_window: bool,
}

/// Plans a read (`offset + len <= file_len`, checked by the caller):
/// - all of it inside the window → from the window;
/// - a short read ([`READ_AHEAD_BELOW`]) otherwise → fetch a [`WINDOW_BYTES`] read-ahead from
///   `offset`, which becomes the window;
/// - a long read → the part that starts inside the window from it, the rest fetched exactly.
pub fn plan_read(offset: u64, len: u64, window_start: u64, window_len: u64, file_len: u64) -> ReadPlan {
    let window_end = window_start.saturating_add(window_len);
    let end = offset.saturating_add(len);
    if len == 0 {
        return ReadPlan { cached: None, fetch: None, new_window: false };
    }
    let starts_inside = offset >= window_start && offset < window_end;
    if starts_inside && end <= window_end {
        return ReadPlan { cached: Some((offset - window_start, len)), fetch: None, new_window: false };
    }
    if len < READ_AHEAD_BELOW {
        let ahead_end = offset.saturating_add(WINDOW_BYTES).min(file_len).max(end);
        return ReadPlan { cached: None, fetch: Some((offset, ahead_end)), new_window: true };
    }
    if starts_inside {
        let count = window_end - offset;
        return ReadPlan {
            cached: Some((offset - window_start, count)),
            fetch: Some((window_end, end)),
            new_window: false,
        };
    }
    ReadPlan { cached: None, fetch: Some((offset, end)), new_window: false }
}

/// Where a [`Memo`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoState {
    /// Keeping reads, none asked for again yet.
    Filling,
    /// Reads are being asked for again and handed out.
    Draining,
    /// A read was missed after the re-reads began: the pattern is over; nothing is kept.
    Off,
}

/// Keeps block reads until they are read again, once.
///
/// The analysis reads the histogram's sample blocks first and then starts its pass with those
/// same blocks (`plan`: the sample is the first blocks of the pass order). Over HTTP that would
/// pull the sample twice; this memo serves the second read instead. It keeps reads (up to
/// [`MEMO_BUDGET`] bytes) until one is asked for again, hands each out once, and switches itself
/// off at the first read it cannot serve after that, so the rest of the pass holds nothing.
pub struct Memo<V> {
    entries: HashMap<(u64, u64), V>,
    bytes: u64,
    budget: u64,
    state: MemoState,
}

impl<V> Memo<V> {
    pub fn new(budget: u64) -> Self {
        Self { entries: HashMap::new(), bytes: 0, budget, state: MemoState::Filling }
    }

    pub fn state(&self) -> MemoState {
        self.state
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The kept read of `offset .. offset + len`, removed from the memo.
    pub fn take(&mut self, offset: u64, len: u64) -> Option<V> {
        if self.state == MemoState::Off {
            return None;
        }
        match self.entries.remove(&(offset, len)) {
            Some(v) => {
                self.bytes -= len;
                self.state = MemoState::Draining;
                Some(v)
            }
            None => {
                if self.state == MemoState::Draining {
                    self.state = MemoState::Off;
                    self.entries.clear();
                    self.bytes = 0;
                }
                None
            }
        }
    }

    /// Keeps a read while filling and within the budget.
    pub fn keep(&mut self, offset: u64, len: u64, value: V) {
        if self.state != MemoState::Filling || self.bytes.saturating_add(len) > self.budget {
            return;
        }
        if self.entries.insert((offset, len), value).is_none() {
            self.bytes += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::remote::PROBE_BYTES;

    #[test]
    fn reads_inside_the_window_fetch_nothing() {
        let p = plan_read(8, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: Some((8, 8)), fetch: None, new_window: false });
        let p = plan_read(PROBE_BYTES - 16, 16, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.cached, Some((PROBE_BYTES - 16, 16)));
        assert_eq!(p.fetch, None);
        assert_eq!(plan_read(5, 0, 0, 0, 10), ReadPlan { cached: None, fetch: None, new_window: false });
    }

    #[test]
    fn short_reads_outside_the_window_read_ahead_within_the_file() {
        let p = plan_read(100_000, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: None, fetch: Some((100_000, 100_000 + WINDOW_BYTES)), new_window: true });
        // Near the end of the file the read-ahead stops at the end.
        let p = plan_read(990, 8, 0, 100, 1000);
        assert_eq!(p.fetch, Some((990, 1000)));
        // A short read straddling the window's end is re-fetched whole as a new window.
        let p = plan_read(PROBE_BYTES - 4, 8, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.fetch, Some((PROBE_BYTES - 4, PROBE_BYTES - 4 + WINDOW_BYTES)));
        assert!(p.new_window);
    }

    #[test]
    fn long_reads_take_the_window_prefix_and_fetch_exactly_the_rest() {
        // A safetensors header longer than the probe: 8 .. 8 + 100 000.
        let p = plan_read(8, 100_000, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p.cached, Some((8, PROBE_BYTES - 8)));
        assert_eq!(p.fetch, Some((PROBE_BYTES, 100_008)));
        assert!(!p.new_window);
        // A block of rows far from the window: exactly its bytes.
        let p = plan_read(5_000_000, 16384, 0, PROBE_BYTES, 1 << 30);
        assert_eq!(p, ReadPlan { cached: None, fetch: Some((5_000_000, 5_016_384)), new_window: false });
        // A long read starting before the window is fetched whole (forward readers never do this).
        let p = plan_read(10, 1000, 500, 1000, 1 << 30);
        assert_eq!(p.fetch, Some((10, 1010)));
        assert_eq!(p.cached, None);
    }

    #[test]
    fn the_window_covers_every_byte_exactly_once() {
        // Property: for any read, cached count + fetched bytes used == len, and the fetch starts
        // where the cached part ends.
        let (ws, wl, file_len) = (1000u64, 5000u64, 20_000u64);
        for offset in (0..file_len).step_by(97) {
            for len in [0u64, 1, 7, 63, 64, 65, 4000, 9000] {
                if offset + len > file_len {
                    continue;
                }
                let p = plan_read(offset, len, ws, wl, file_len);
                let cached = p.cached.map_or(0, |(o, c)| {
                    assert_eq!(ws + o, offset, "cached bytes start at the read");
                    assert!(o + c <= wl);
                    c
                });
                let fetched = p.fetch.map_or(0, |(s, e)| {
                    assert_eq!(s, offset + cached, "fetch continues the cached part");
                    assert!(e <= file_len);
                    (e - s).min(len - cached)
                });
                assert_eq!(cached + fetched, len, "offset {offset} len {len}");
            }
        }
    }

    #[test]
    fn the_memo_serves_each_sample_block_once_then_switches_off() {
        let mut memo: Memo<Vec<u8>> = Memo::new(300);
        // Sample phase: three blocks kept, a fourth over budget is not.
        for (i, off) in [0u64, 100, 200, 300].iter().enumerate() {
            assert_eq!(memo.take(*off, 100), None);
            memo.keep(*off, 100, vec![i as u8; 100]);
        }
        assert_eq!(memo.bytes(), 300);
        assert_eq!(memo.state(), MemoState::Filling);
        // Pass: the same blocks again, in order.
        assert_eq!(memo.take(0, 100), Some(vec![0; 100]));
        assert_eq!(memo.state(), MemoState::Draining);
        assert_eq!(memo.take(0, 100), None, "handed out once");
        assert_eq!(memo.state(), MemoState::Off, "a miss after the re-reads began ends the memo");
        assert_eq!(memo.bytes(), 0);
        memo.keep(500, 100, vec![9; 100]);
        assert_eq!(memo.take(500, 100), None, "nothing is kept once off");
    }

    #[test]
    fn the_memo_keys_on_offset_and_length() {
        let mut memo: Memo<u8> = Memo::new(1000);
        memo.keep(0, 100, 1);
        assert_eq!(memo.take(0, 50), None);
        assert_eq!(memo.state(), MemoState::Filling, "a miss while filling changes nothing");
        assert_eq!(memo.take(0, 100), Some(1));
    }
}
