//! A `Blob`/`File` read range by range with `FileReaderSync` (available in workers only).
//!
//! `Blob.slice` is called with f64 offsets: the i32 form cannot address past 2 GiB, and shards are
//! often larger. Only the bytes asked for are read; the file is never loaded whole.

use js_sys::Uint8Array;
use web_sys::{Blob, FileReaderSync};

use crate::read::source::{check_range, ByteSource, ReadError};

pub struct BlobSource {
    name: String,
    blob: Blob,
    reader: FileReaderSync,
    len: u64,
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
        Ok(Self { name, blob, reader, len })
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
        let io = |message: String| ReadError::Io { file: self.name.clone(), offset, len, message };
        let slice = self
            .blob
            .slice_with_f64_and_f64(offset as f64, (offset + len) as f64)
            .map_err(|e| io(format!("Blob.slice failed: {e:?}")))?;
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
