//! Random access into a deflate stream (a compressed zip member): the bytes of an `.npz` member
//! as if it were stored, inflated as a stream in bounded memory.
//!
//! Deflate has no index: byte `n` of the output can only be had by inflating everything before
//! it. So the stream is inflated forward once, and on the way a *checkpoint* is kept every
//! [`InflatedSource::spacing`] bytes of output: the decompressor's state, the last 32 KiB of
//! output (the most a match can reach back) and the input position. A read goes back to the
//! nearest checkpoint at or before its offset (or keeps going from where the last read stopped,
//! if that is nearer) and inflates forward from there.
//!
//! **Spacing and the pass.** The pass reads whole row blocks (64 rows by default) in a seeded
//! random order, then (for narrow matrices) sweeps the rest in file order. A random block read
//! inflates from the checkpoint at or before its offset; a sweep continues from the previous read
//! and inflates nothing twice. The spacing is therefore as small as memory allows:
//! `len / MAX_CHECKPOINTS`, never under [`MIN_SPACING`] (256 KiB: a checkpoint's 43 KiB copy is
//! then still small beside the inflating), and for a matrix rounded up to a power of two whole
//! rows from row 0 ([`Checkpoints::at_rows`]), so that a block at least as long as the spacing
//! begins at a checkpoint and inflates only itself. The checkpoints of a member are made once and
//! shared by every source of it, on every thread ([`SharedCheckpoints`]): the histogram's sample
//! inflates the member once to reach its far rows, and the pass then inflates each block once,
//! whichever thread reads it (tested: 1.000× the member after the sample's trip, on 1 to 3
//! shares; 1.04× after a trip of 1.06× on 16000 × 2048 f32, on 1 and 2 threads). Before, each thread inflated the member from its start for itself and an unaligned
//! block a quarter more: 16000 × 2048 f32 (128 MiB) took 3.72 s on one thread and 2.41 s on two
//! against 2.32 s and 1.27 s for the same matrix as BF16. A 4 GiB member gets 8 MiB spacing: a
//! block shorter than that inflates on average half the spacing before it, which is why the pass of
//! a member whose blocks are shorter than its spacing sweeps in file order after a short random
//! phase (`pass::plan`). The first read past what has been inflated pays once for everything
//! before it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use miniz_oxide::inflate::core::{decompress_with_limit, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::read::source::{check_range, ByteSource, ReadError};

mod checkpoints;

use checkpoints::SharedPoints;
pub use checkpoints::{checkpoint_spacing, Checkpoints, SharedCheckpoints, MAX_CHECKPOINTS, MIN_SPACING};

/// Deflate's window: the furthest back a match can reach, and so the output a checkpoint keeps.
/// The decompressor writes into it as a ring (its size must be a power of two).
const WINDOW: usize = 32 << 10;

/// Compressed bytes read from the file at a time: the first read of a source is small (opening
/// an archive inflates only each member's header), later ones grow to the largest.
const FIRST_INPUT_WINDOW: u64 = 16 << 10;
const INPUT_WINDOW: u64 = 256 << 10;

/// A resumable point of the stream: inflating from here with the same input gives the same output.
#[derive(Clone)]
struct Point {
    decompressor: Box<DecompressorOxide>,
    /// The last `WINDOW` bytes of output, as a ring: output byte `n` sits at `n % WINDOW`.
    window: Box<[u8]>,
    /// Output bytes produced so far.
    out: u64,
    /// File offset of the next compressed byte the decompressor has not consumed.
    input: u64,
    /// The stream's final block has ended.
    done: bool,
}

impl Point {
    fn start(input: u64) -> Point {
        Point { decompressor: Box::default(), window: vec![0u8; WINDOW].into_boxed_slice(), out: 0, input, done: false }
    }

    fn bytes() -> u64 {
        (std::mem::size_of::<Point>() + std::mem::size_of::<DecompressorOxide>() + WINDOW) as u64
    }
}

struct State {
    /// Where the last read stopped (continued by a read at or after it).
    cursor: Point,
    /// False after the decompressor failed: the next read starts again from a checkpoint.
    cursor_valid: bool,
    /// Compressed bytes `input_at .. input_at + input.len()` of the file.
    input: Vec<u8>,
    input_at: u64,
    /// Bytes the next read of compressed input asks for.
    input_window: u64,
    /// Output bytes this source inflated (measurement: how much reading costs).
    inflated: u64,
}

/// The inflated bytes of the raw deflate stream (zip method 8) at `[start, end)` of `inner`,
/// `len` bytes long, readable at any offset in any order. `I` is the file: shared by the pass's
/// sources, borrowed by a reader that inflates a member's header.
pub struct InflatedSource<I: ByteSource = Rc<dyn ByteSource>> {
    name: String,
    member: String,
    inner: I,
    start: u64,
    end: u64,
    len: u64,
    checkpoints: Checkpoints,
    state: RefCell<State>,
}

impl<I: ByteSource> InflatedSource<I> {
    /// Refuses a range that does not lie in `inner`; reads nothing yet. Its checkpoints are its own.
    pub fn new(inner: I, start: u64, end: u64, len: u64) -> Result<Self, ReadError> {
        Self::sharing(inner, Checkpoints::new(start, end, len))
    }

    /// [`InflatedSource::new`] for the member `checkpoints` are of, using and adding to them.
    pub fn sharing(inner: I, checkpoints: Checkpoints) -> Result<Self, ReadError> {
        let SharedPoints { start, end, len, .. } = *checkpoints.shared;
        let name = inner.name().to_string();
        check_range(&name, start, end.saturating_sub(start), inner.len())?;
        if end < start {
            return Err(ReadError::OutOfBounds { file: name, offset: start, len: 0, file_len: inner.len() });
        }
        let state = State {
            cursor: Point::start(start),
            cursor_valid: true,
            input: Vec::new(),
            input_at: start,
            input_window: FIRST_INPUT_WINDOW,
            inflated: 0,
        };
        Ok(Self {
            member: format!("compressed member at offset {start}"),
            name,
            inner,
            start,
            end,
            len,
            checkpoints,
            state: RefCell::new(state),
        })
    }

    /// Names the member in messages (`what`: e.g. its name in the archive).
    pub fn with_member_name(mut self, what: &str) -> Self {
        self.member = format!("compressed member '{what}' at offset {}", self.start);
        self
    }

    /// Names the member in messages by the tensor it holds (what the pass knows of it).
    pub fn with_tensor_name(mut self, tensor: &str) -> Self {
        self.member = format!("compressed member of tensor '{tensor}' at offset {}", self.start);
        self
    }

    /// Output bytes between checkpoints.
    pub fn spacing(&self) -> u64 {
        self.checkpoints.spacing()
    }

    /// Memory held by the member's checkpoints (shared) and this source's cursor now.
    pub fn checkpoint_bytes(&self) -> u64 {
        self.checkpoints.bytes() + Point::bytes()
    }

    /// Output bytes this source inflated so far, re-inflation included.
    pub fn inflated_bytes(&self) -> u64 {
        self.state.borrow().inflated
    }

    /// The member's checkpoints, shared with every other source of it.
    pub fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    fn corrupt(&self, offset: u64, why: String) -> ReadError {
        ReadError::InflateCorrupt { file: self.name.clone(), member: self.member.clone(), offset, why }
    }

    fn truncated(&self, inflated: u64) -> ReadError {
        ReadError::InflateTruncated {
            file: self.name.clone(),
            member: self.member.clone(),
            end: self.end,
            inflated,
            len: self.len,
        }
    }

    /// Puts the cursor at the latest known point at or before `offset`.
    fn seek(&self, state: &mut State, offset: u64) {
        let k = usize::try_from(self.checkpoints.slot(offset)).unwrap_or(usize::MAX);
        let points = self.checkpoints.points();
        let nearest = points.get(k).or(points.last());
        if let Some(point) = nearest {
            let cursor_usable = state.cursor_valid && state.cursor.out <= offset && state.cursor.out >= point.out;
            if !cursor_usable {
                state.cursor.clone_from(point);
                state.cursor_valid = true;
            }
        }
    }

    /// Inflates forward until the cursor reaches `to`, copying output that falls in
    /// `[offset, offset + buf.len())` into `buf`.
    fn inflate_to(&self, state: &mut State, to: u64, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let mut stalls = 0u32;
        while state.cursor.out < to {
            if state.cursor.done {
                return Err(ReadError::InflateShort {
                    file: self.name.clone(),
                    member: self.member.clone(),
                    inflated: state.cursor.out,
                    len: self.len,
                });
            }
            // The compressed bytes from the cursor on, read from the file when not at hand.
            let buffered_end = state.input_at.saturating_add(state.input.len() as u64);
            if state.cursor.input < state.input_at || state.cursor.input >= buffered_end {
                let n = self.end.saturating_sub(state.cursor.input).min(state.input_window);
                state.input_window = state.input_window.saturating_mul(2).min(INPUT_WINDOW);
                if n == 0 {
                    return Err(self.truncated(state.cursor.out));
                }
                state.input.resize(n as usize, 0);
                state.input_at = state.cursor.input;
                self.inner.read_at(state.input_at, &mut state.input)?;
            }
            let buffered_end = state.input_at + state.input.len() as u64;
            let skip = (state.cursor.input - state.input_at) as usize;
            let input = state.input.get(skip..).unwrap_or(&[]);
            let more = buffered_end < self.end;
            let flags = if more { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT } else { 0 };

            // Stop at the next spacing boundary, so that checkpoints fall exactly on them, and at
            // `to`, so that a following read of the next bytes continues from here.
            let boundary = self.checkpoints.next_boundary(state.cursor.out);
            let limit = to.min(boundary) - state.cursor.out;
            let pos = (state.cursor.out % WINDOW as u64) as usize;
            let before = state.cursor.out;
            let (status, consumed, written) = decompress_with_limit(
                &mut state.cursor.decompressor,
                input,
                &mut state.cursor.window,
                pos,
                usize::try_from(limit).unwrap_or(usize::MAX),
                flags,
            );
            state.cursor.input += consumed as u64;
            state.cursor.out += written as u64;
            state.inflated += written as u64;
            self.checkpoints.shared.inflated.fetch_add(written as u64, Ordering::Relaxed);

            // The new output, where it overlaps the read.
            let (lo, hi) = (before.max(offset), state.cursor.out.min(offset + buf.len() as u64));
            if lo < hi {
                let src = state.cursor.window.get(pos + (lo - before) as usize..pos + (hi - before) as usize);
                let dst = buf.get_mut((lo - offset) as usize..(hi - offset) as usize);
                if let (Some(src), Some(dst)) = (src, dst) {
                    dst.copy_from_slice(src);
                }
            }

            // The cursor passed every boundary before this one (it started at a checkpoint), so
            // the next checkpoint to make is this one or it exists.
            if written > 0 && self.checkpoints.is_boundary(state.cursor.out) {
                let k = self.checkpoints.slot(state.cursor.out);
                let mut points = self.checkpoints.points();
                if k == points.len() as u64 {
                    points.push(state.cursor.clone());
                }
            }

            match status {
                TINFLStatus::Done => state.cursor.done = true,
                TINFLStatus::HasMoreOutput => {}
                TINFLStatus::NeedsMoreInput => {
                    // Read on from the first unconsumed byte (with whatever was left of the window).
                    state.input.clear();
                }
                TINFLStatus::FailedCannotMakeProgress => {
                    state.cursor_valid = false;
                    return Err(self.truncated(state.cursor.out));
                }
                other => {
                    state.cursor_valid = false;
                    return Err(self.corrupt(state.cursor.input, format!("{other:?}")));
                }
            }
            // Every call consumes input or writes output; one that does neither twice over (input
            // left, room to write) would loop forever on a stream that cannot go on.
            if consumed == 0 && written == 0 {
                stalls += 1;
                if stalls > 2 {
                    state.cursor_valid = false;
                    return Err(self.corrupt(state.cursor.input, "the decompressor makes no progress".into()));
                }
            } else {
                stalls = 0;
            }
        }
        Ok(())
    }
}

impl<I: ByteSource> ByteSource for InflatedSource<I> {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, offset, buf.len() as u64, self.len)?;
        if buf.is_empty() {
            return Ok(());
        }
        let mut state = self.state.borrow_mut();
        self.seek(&mut state, offset);
        let to = offset + buf.len() as u64;
        self.inflate_to(&mut state, to, offset, buf)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::read::source::SliceSource;
    use miniz_oxide::deflate::compress_to_vec;
    use proptest::prelude::*;
    use rand_xoshiro::rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v = vec![0u8; n];
        rng.fill_bytes(&mut v);
        v
    }

    /// Compressible: f32 values of a smooth signal, with some noise (like trained weights, whose
    /// exponent bytes repeat).
    fn compressible_bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v = Vec::with_capacity(n);
        let mut i = 0u64;
        while v.len() < n {
            let noise = (rng.next_u32() >> 24) as f32 / 4096.0;
            let x = ((i as f32) * 0.001).sin() * 0.05 + noise;
            v.extend_from_slice(&x.to_le_bytes());
            i += 1;
        }
        v.truncate(n);
        v
    }

    /// A file holding `prefix` junk bytes, the stream, then `suffix` junk bytes.
    fn source_of(stream: &[u8], prefix: usize, suffix: usize) -> (Rc<dyn ByteSource>, u64, u64) {
        let mut file = vec![0xA5u8; prefix];
        file.extend_from_slice(stream);
        file.extend(std::iter::repeat_n(0x5Au8, suffix));
        let start = prefix as u64;
        (Rc::new(SliceSource::new("model.npz", file)), start, start + stream.len() as u64)
    }

    fn open(data: &[u8], level: u8) -> InflatedSource {
        let stream = compress_to_vec(data, level);
        let (source, start, end) = source_of(&stream, 37, 11);
        InflatedSource::new(source, start, end, data.len() as u64).unwrap()
    }

    fn check_read(s: &InflatedSource, data: &[u8], offset: usize, n: usize) {
        let mut buf = vec![0u8; n];
        s.read_at(offset as u64, &mut buf).unwrap();
        assert!(buf == data[offset..offset + n], "read of {n} at {offset} differs");
    }

    #[test]
    fn reads_back_in_every_order_at_every_level() {
        let n = (3 << 20) + 12_345; // past a few checkpoints, not a whole number of windows
        for (kind, data) in [("random", random_bytes(n, 1)), ("compressible", compressible_bytes(n, 2))] {
            for level in [0u8, 1, 6, 9] {
                let s = open(&data, level);
                assert_eq!(s.spacing(), MIN_SPACING, "{kind} level {level}");
                // Sequential, in odd sizes.
                let mut at = 0;
                while at < n {
                    let k = (7919 * (at / 7919 + 1) % 100_003 + 1).min(n - at);
                    check_read(&s, &data, at, k);
                    at += k;
                }
                // Backwards.
                let mut end = n;
                while end > 0 {
                    let k = end.min(250_000);
                    check_read(&s, &data, end - k, k);
                    end -= k;
                }
                // Across each checkpoint boundary, and at the very end.
                for b in 1..=3usize {
                    let at = b * MIN_SPACING as usize;
                    check_read(&s, &data, at - 5, 10);
                    check_read(&s, &data, at, 1);
                    check_read(&s, &data, at - 1, 1);
                }
                check_read(&s, &data, n - 1, 1);
                check_read(&s, &data, 0, n);
                // Random offsets and sizes.
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(level as u64);
                for _ in 0..40 {
                    let at = (rng.next_u64() % n as u64) as usize;
                    let k = (rng.next_u64() % 300_000) as usize % (n - at) + 1;
                    check_read(&s, &data, at, k);
                }
                assert!(s.checkpoint_bytes() <= (MAX_CHECKPOINTS + 2) * Point::bytes());
            }
        }
    }

    #[test]
    fn a_fresh_source_read_first_at_its_end_makes_the_checkpoints_on_the_way() {
        let data = compressible_bytes(5 << 20, 3);
        let s = open(&data, 6);
        check_read(&s, &data, data.len() - 100, 100);
        assert_eq!(s.checkpoints.points().len() as u64, (5 << 20) / MIN_SPACING + 1);
        // Going back costs at most one spacing (plus the read); 2 MiB is a checkpoint.
        let before = s.inflated_bytes();
        check_read(&s, &data, (2 << 20) + 17, 1000);
        assert_eq!(s.inflated_bytes() - before, 17 + 1000);
        // The next bytes continue from where that read stopped.
        let before = s.inflated_bytes();
        check_read(&s, &data, (2 << 20) + 1017, 1000);
        assert_eq!(s.inflated_bytes() - before, 1000);
    }

    #[test]
    fn empty_and_tiny_members() {
        for data in [Vec::new(), vec![7u8], b"hello hello hello".to_vec()] {
            let s = open(&data, 6);
            check_read(&s, &data, 0, data.len());
            assert!(s.read_at(data.len() as u64, &mut [0u8; 1]).is_err());
        }
    }

    #[test]
    fn a_large_member_keeps_at_most_max_checkpoints() {
        // The claimed length sets the spacing; the memory bound holds whatever the stream holds.
        let data = compressible_bytes(1 << 20, 4);
        let stream = compress_to_vec(&data, 1);
        let (source, start, end) = source_of(&stream, 0, 0);
        let s = InflatedSource::new(source, start, end, 1 << 40).unwrap();
        assert_eq!(s.spacing(), (1u64 << 40) / MAX_CHECKPOINTS);
        assert!(matches!(s.read_at(0, &mut vec![0u8; 2 << 20]), Err(ReadError::InflateShort { .. })));
        assert!(s.checkpoint_bytes() <= 2 * Point::bytes());
    }

    #[test]
    fn truncated_and_corrupt_streams_are_errors() {
        let data = compressible_bytes(2 << 20, 5);
        let stream = compress_to_vec(&data, 6);
        let len = data.len() as u64;

        // Cut short: the member's bytes end before the stream does.
        let cut = &stream[..stream.len() / 2];
        let (source, start, end) = source_of(cut, 3, 100);
        let s = InflatedSource::new(source, start, end, len).unwrap().with_member_name("W_dec.npy");
        let e = s.read_at(len - 10, &mut [0u8; 10]).unwrap_err();
        assert!(matches!(e, ReadError::InflateTruncated { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("model.npz") && msg.contains("'W_dec.npy' at offset 3"), "{msg}");
        // Again, from a checkpoint: the same error, not a panic or a wrong answer.
        assert!(matches!(s.read_at(len - 10, &mut [0u8; 10]), Err(ReadError::InflateTruncated { .. })));
        // What was there still reads.
        check_read(&s, &data, 0, 1000);

        // The stream says it holds less than the entry.
        let (source, start, end) = source_of(&stream, 0, 0);
        let s = InflatedSource::new(source, start, end, len + 1).unwrap();
        assert!(
            matches!(s.read_at(len, &mut [0u8; 1]), Err(ReadError::InflateShort { inflated, .. }) if inflated == len)
        );

        // Flipped bytes: an error, or (deflate has no checksum) different bytes; never a panic.
        let mut bad = stream.clone();
        for i in (100..bad.len()).step_by(997) {
            bad[i] ^= 0x5C;
        }
        let (source, start, end) = source_of(&bad, 0, 0);
        let s = InflatedSource::new(source, start, end, len).unwrap();
        let mut buf = vec![0u8; data.len()];
        match s.read_at(0, &mut buf) {
            Err(e) => assert!(e.to_string().contains("model.npz"), "{e}"),
            Ok(()) => assert!(buf != data),
        }
        // An invalid block type (3) in the first header byte.
        let (source, start, end) = source_of(&[0x07, 0, 0, 0], 0, 0);
        let s = InflatedSource::new(source, start, end, 10).unwrap();
        assert!(matches!(s.read_at(0, &mut [0u8; 10]), Err(ReadError::InflateCorrupt { .. })));

        // A range outside the file.
        let (source, _, _) = source_of(&stream, 0, 0);
        assert!(InflatedSource::new(source.clone(), 10, stream.len() as u64 + 1, len).is_err());
        assert!(InflatedSource::new(source, 10, 5, len).is_err());
    }

    proptest! {
        #[test]
        fn random_bytes_as_a_stream_never_panic_or_hang(
            stream in proptest::collection::vec(any::<u8>(), 0..2048),
            len in 0u64..(4 << 20),
            offset in 0u64..(4 << 20),
            n in 1usize..70_000,
        ) {
            let (source, start, end) = source_of(&stream, 5, 5);
            let s = InflatedSource::new(source, start, end, len).unwrap();
            let mut buf = vec![0u8; n];
            let _ = s.read_at(offset, &mut buf);
            let _ = s.read_at(0, &mut buf[..n.min(len as usize).max(1)]);
        }
    }

    /// Throughput of sequential reads and of the pass's read order (64-row blocks in a seeded
    /// random order over a 64 MiB member of trained-like f32 rows). Printed, not asserted:
    /// `cargo test --release --lib inflate -- --nocapture --ignored`.
    #[test]
    #[ignore]
    fn measure_throughput() {
        let (rows, dim) = (4096u64, 4096u64);
        let row_bytes = dim * 4;
        let data = compressible_bytes((rows * row_bytes) as usize, 6);
        let stream = compress_to_vec(&data, 6);
        let mb = data.len() as f64 / 1e6;
        println!("member {mb:.0} MB, compressed {:.0} MB", stream.len() as f64 / 1e6);
        let (source, start, end) = source_of(&stream, 0, 0);

        let s = InflatedSource::new(source.clone(), start, end, data.len() as u64).unwrap();
        let block = vec![0u8; (64 * row_bytes) as usize];
        let mut buf = block.clone();
        let t = std::time::Instant::now();
        for b in 0..rows / 64 {
            s.read_at(b * 64 * row_bytes, &mut buf).unwrap();
        }
        let secs = t.elapsed().as_secs_f64();
        println!("sequential 64-row blocks: {:.0} MB/s", mb / secs);

        for block_rows in [64u64, 256] {
            let s = InflatedSource::new(source.clone(), start, end, data.len() as u64).unwrap();
            let plan = crate::pass::plan::Plan::new(rows, 0, block_rows, 0);
            let mut buf = vec![0u8; (block_rows * row_bytes) as usize];
            let t = std::time::Instant::now();
            for &b in &plan.blocks {
                let (first, stop) = plan.block_range(b);
                let n = ((stop - first) * row_bytes) as usize;
                s.read_at(first * row_bytes, &mut buf[..n]).unwrap();
            }
            let secs = t.elapsed().as_secs_f64();
            println!(
                "random {block_rows}-row blocks: {:.0} MB/s of rows, {:.2}x inflated, checkpoints {} KiB",
                mb / secs,
                s.inflated_bytes() as f64 / data.len() as f64,
                s.checkpoint_bytes() >> 10
            );
        }
    }
}
