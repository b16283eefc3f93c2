//! A `Blob`/`File` read range by range with `FileReaderSync` (available in workers only), and read
//! ahead in batches when the worker knows what the pass will read next.
//!
//! `Blob.slice` is called with f64 offsets: the i32 form cannot address past 2 GiB, and shards are
//! often larger. Only the bytes asked for are read; the file is never loaded whole.
//!
//! Why batches: each browser read of a `Blob` costs ~0.7 ms whatever its size (more on a busy
//! machine), and the pass reads one block of 64 rows at a time in a shuffled order, so a narrow
//! matrix (64 rows of 256 bf16 = 32 KiB) was read at a few tens of MB/s. Adjacent blocks are rarely
//! read together in a shuffled order, so batching by contiguity does not help; a `Blob` made of many
//! slices of the file is read by the browser in one request instead, its cost close to one read of
//! their total size. The batch is read asynchronously (`Blob.arrayBuffer`), so the browser fetches
//! the next batch while the pass computes on this one. Its bytes stay in JavaScript memory (the wasm
//! memory never shrinks) and are copied out range by range as the pass asks for them.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use js_sys::{Array, ArrayBuffer, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, FileReaderSync};

use crate::read::source::{check_range, ByteSource, ReadError};

pub struct BlobSource {
    name: String,
    blob: Blob,
    reader: FileReaderSync,
    len: u64,
    /// Ranges read ahead, in the order the pass will ask for them, each served once.
    ahead: RefCell<Held>,
}

/// The ranges read ahead, in order, with how many times each (offset, length) is held (so that
/// asking whether one is held costs no scan) and their bytes.
#[derive(Default)]
struct Held {
    queue: VecDeque<Ahead>,
    count: HashMap<(u64, u64), u32>,
    bytes: u64,
}

impl Held {
    fn push(&mut self, a: Ahead) {
        *self.count.entry((a.offset, a.len)).or_insert(0) += 1;
        self.bytes += a.len;
        self.queue.push_back(a);
    }

    fn pop_front(&mut self) -> Option<Ahead> {
        let a = self.queue.pop_front()?;
        let key = (a.offset, a.len);
        match self.count.get_mut(&key) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                self.count.remove(&key);
            }
        }
        self.bytes -= a.len;
        Some(a)
    }

    fn holds(&self, offset: u64, len: u64) -> bool {
        self.count.contains_key(&(offset, len))
    }
}

/// One range read ahead: `len` bytes of the file at `offset`, at `start` in a batch's buffer.
struct Ahead {
    offset: u64,
    len: u64,
    batch: Rc<Uint8Array>,
    start: u32,
}

/// A batch of ranges being read: [`BlobSource::fetch`], then [`BlobSource::install`].
pub struct Batch {
    pub ranges: Vec<(u64, u64)>,
    bytes: JsFuture,
}

impl BlobSource {
    pub fn new(name: String, blob: Blob) -> Result<Self, ReadError> {
        let reader = FileReaderSync::new().map_err(|e| ReadError::Io {
            file: name.clone(),
            offset: 0,
            len: 0,
            message: format!("FileReaderSync is unavailable here ({e:?})"),
        })?;
        let len = blob.size() as u64;
        Ok(Self { name, blob, reader, len, ahead: RefCell::new(Held::default()) })
    }

    fn slice(&self, offset: u64, len: u64) -> Result<Blob, ReadError> {
        check_range(&self.name, offset, len, self.len)?;
        self.blob.slice_with_f64_and_f64(offset as f64, (offset + len) as f64).map_err(|e| ReadError::Io {
            file: self.name.clone(),
            offset,
            len,
            message: format!("Blob.slice failed: {e:?}"),
        })
    }

    /// Starts reading `ranges` (offset, length) as one request: a `Blob` of their slices. None
    /// when there is nothing to read or a range is outside the file (its read will say why).
    pub fn fetch(&self, ranges: Vec<(u64, u64)>) -> Option<Batch> {
        let total: u64 = ranges.iter().map(|&(_, len)| len).sum();
        // A batch is addressed with u32 offsets into one ArrayBuffer.
        if ranges.is_empty() || total > u32::MAX as u64 {
            return None;
        }
        let parts = Array::new();
        for &(offset, len) in &ranges {
            let part = self.slice(offset, len).ok()?;
            parts.push(&part);
        }
        let batch = Blob::new_with_blob_sequence(&parts).ok()?;
        Some(Batch { ranges, bytes: JsFuture::from(batch.array_buffer()) })
    }

    /// Waits for `batch` and keeps its ranges for [`ByteSource::read_at`], with at most `max_held`
    /// bytes kept in all (the oldest ranges go first: ranges the pass did not ask for in the
    /// order listed must not pile up). A batch that fails is dropped: its ranges are then read one
    /// by one, and a failing read says why.
    pub async fn install(&self, batch: Batch, max_held: u64) {
        let Ok(bytes) = batch.bytes.await else { return };
        let Ok(buffer) = bytes.dyn_into::<ArrayBuffer>() else { return };
        let view = Rc::new(Uint8Array::new(&buffer));
        let total: u64 = batch.ranges.iter().map(|&(_, len)| len).sum();
        if view.length() as u64 != total {
            return;
        }
        let mut ahead = self.ahead.borrow_mut();
        let mut start = 0u32;
        for (offset, len) in batch.ranges {
            ahead.push(Ahead { offset, len, batch: view.clone(), start });
            // The sum of the lengths fits u32 (checked in `fetch`).
            start += len as u32;
        }
        while ahead.bytes > max_held && ahead.pop_front().is_some() {}
    }

    /// Whether the range at `offset` of `len` bytes was read ahead and not yet served.
    pub fn holds(&self, offset: u64, len: u64) -> bool {
        self.ahead.borrow().holds(offset, len)
    }

    /// Serves a read from the ranges read ahead: true when `buf` was filled. The ranges before it
    /// are dropped: reads come in the order they were listed, so those will not be asked for.
    fn take_ahead(&self, offset: u64, buf: &mut [u8]) -> bool {
        let mut ahead = self.ahead.borrow_mut();
        let len = buf.len() as u64;
        if !ahead.holds(offset, len) {
            return false;
        }
        let a = loop {
            match ahead.pop_front() {
                Some(a) if a.offset == offset && a.len == len => break a,
                Some(_) => {}
                None => return false,
            }
        };
        let end = a.start as u64 + a.len;
        if end > a.batch.length() as u64 {
            return false;
        }
        a.batch.subarray(a.start, end as u32).copy_to(buf);
        true
    }
}

impl ByteSource for BlobSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let len = buf.len() as u64;
        check_range(&self.name, offset, len, self.len)?;
        if self.take_ahead(offset, buf) {
            return Ok(());
        }
        let io = |message: String| ReadError::Io { file: self.name.clone(), offset, len, message };
        let slice = self.slice(offset, len)?;
        let bytes = self
            .reader
            .read_as_array_buffer(&slice)
            .map_err(|e| io(format!("the browser could not read the file (was it moved or changed?): {e:?}")))?;
        let view = Uint8Array::new(&bytes);
        if view.length() as u64 != len {
            return Err(io(format!("got {} bytes", view.length())));
        }
        view.copy_to(buf);
        Ok(())
    }
}
