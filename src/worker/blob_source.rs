//! A `Blob`/`File` read range by range with `FileReaderSync` (available in workers only), and read
//! ahead in batches when the worker knows what the pass will read next.
//!
//! `Blob.slice` is called with f64 offsets: the i32 form cannot address past 2 GiB, and shards are
//! often larger. Only the bytes asked for are read; the file is never loaded whole.
//!
//! Batches (`read::ahead` says which ranges and why): a `Blob` made of many slices of the file is
//! read by the browser in one request. The batch is read asynchronously (`Blob.arrayBuffer`), so
//! the browser fetches the next batch while the pass computes on this one. Its bytes stay in
//! JavaScript memory (the wasm memory never shrinks) and are copied out range by range as the pass
//! asks for them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, ArrayBuffer, Function, Reflect, Uint8Array};
use wasm_bindgen::prelude::Closure;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, FileReaderSync};

use crate::read::ahead::{spans_of, Batches, Held, Spans, BRIDGE_BYTES};
use crate::read::source::{check_range, ByteSource, ReadError};

pub struct BlobSource {
    name: String,
    blob: Blob,
    reader: FileReaderSync,
    len: u64,
    /// Ranges read ahead, each served once: a batch's buffer and where the range starts in it.
    ahead: RefCell<Held<(Rc<Uint8Array>, u32)>>,
}

/// A batch of ranges being read: [`BlobSource::fetch`], then [`BlobSource::install`].
pub struct Batch {
    pub ranges: Vec<(u64, u64)>,
    /// Where each range starts in the batch's buffer (`read::ahead::spans_of`).
    starts: Vec<u32>,
    /// Bytes the batch reads: its ranges and the gaps bridged between them.
    total: u64,
    bytes: JsFuture,
    /// Set once the read has settled (`read::ahead` reads more at once when steps wait).
    arrived: Rc<Cell<bool>>,
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
        if ranges.is_empty() {
            return None;
        }
        // Ranges that follow one another in the file are one slice (a sweep's are, `pass::plan`).
        let Spans { spans, starts } = spans_of(&ranges, BRIDGE_BYTES)?;
        let parts = Array::new();
        for &(offset, len) in &spans {
            let part = self.slice(offset, len).ok()?;
            parts.push(&part);
        }
        let total = spans.iter().map(|&(_, len)| len).sum();
        let batch = Blob::new_with_blob_sequence(&parts).ok()?;
        let promise = batch.array_buffer();
        let arrived = Rc::new(Cell::new(false));
        // A closure JavaScript frees once called (the batch may be dropped before its read
        // settles), as both handlers of `then`: its promise then never rejects unhandled.
        let flag = arrived.clone();
        let settled = Closure::once_into_js(move || flag.set(true));
        let then = Reflect::get(&promise, &"then".into()).ok().and_then(|f| f.dyn_into::<Function>().ok());
        if then.and_then(|f| f.call2(&promise, &settled, &settled).ok()).is_none() {
            arrived.set(true);
        }
        Some(Batch { ranges, starts, total, bytes: JsFuture::from(promise), arrived })
    }

    /// Waits for `batch` and keeps its ranges for [`ByteSource::read_at`], with at most `max_held`
    /// bytes kept in all (the oldest ranges go first). A batch that fails is dropped: its ranges
    /// are then read one by one, and a failing read says why.
    pub async fn install(&self, batch: Batch, max_held: u64) {
        let Ok(bytes) = batch.bytes.await else { return };
        let Ok(buffer) = bytes.dyn_into::<ArrayBuffer>() else { return };
        let view = Rc::new(Uint8Array::new(&buffer));
        if view.length() as u64 != batch.total {
            return;
        }
        let mut ahead = self.ahead.borrow_mut();
        for ((offset, len), start) in batch.ranges.into_iter().zip(batch.starts) {
            ahead.push(offset, len, (view.clone(), start), max_held);
        }
    }

    /// Whether the range at `offset` of `len` bytes was read ahead and not yet served.
    pub fn holds(&self, offset: u64, len: u64) -> bool {
        self.ahead.borrow().holds(offset, len)
    }

    /// Serves a read from the ranges read ahead: true when `buf` was filled.
    fn take_ahead(&self, offset: u64, buf: &mut [u8]) -> bool {
        let len = buf.len() as u64;
        let Some((batch, start)) = self.ahead.borrow_mut().take(offset, len) else { return false };
        let end = start as u64 + len;
        if end > batch.length() as u64 {
            return false;
        }
        batch.subarray(start, end as u32).copy_to(buf);
        true
    }
}

impl Batches for BlobSource {
    type Batch = Batch;
    fn holds(&self, offset: u64, len: u64) -> bool {
        BlobSource::holds(self, offset, len)
    }
    fn fetch(&self, ranges: Vec<(u64, u64)>) -> Option<Batch> {
        BlobSource::fetch(self, ranges)
    }
    fn install(&self, batch: Batch, max_held: u64) -> impl std::future::Future<Output = ()> {
        BlobSource::install(self, batch, max_held)
    }
    fn arrived(&self, batch: &Batch) -> bool {
        batch.arrived.get()
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
