//! Byte sources: the only place that performs I/O.
//!
//! Offsets are `u64` everywhere: shards are routinely larger than 4 GiB and the wasm32 `usize` is
//! 32 bits wide. A source is read lazily, range by range; nothing here ever loads a whole file.

use thiserror::Error;

/// A failure to read bytes from a source.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReadError {
    /// The range asked for does not lie inside the file (the file is shorter than its header claims).
    #[error("{file}: cannot read {len} bytes at offset {offset}: the file is only {file_len} bytes long")]
    OutOfBounds { file: String, offset: u64, len: u64, file_len: u64 },
    /// The operating system or the browser refused the read.
    #[error("{file}: reading {len} bytes at offset {offset} failed: {message}")]
    Io { file: String, offset: u64, len: u64, message: String },
    /// A source that reads over the network could not get the bytes. The source writes the
    /// message (what failed and what to do), so this layer stays free of HTTP.
    #[error("{message}")]
    Unavailable { message: String },
    /// A compressed (deflated) zip member does not decode: its bytes are damaged. `member` names
    /// it (its name where known, and its offset in the file); `offset` is the file offset near
    /// which decoding failed.
    #[error(
        "{file}: {member}: the deflate stream does not decode near byte {offset} of the file ({why}); \
         the archive is damaged: download or save it again"
    )]
    InflateCorrupt { file: String, member: String, offset: u64, why: String },
    /// A compressed zip member's deflate stream ends before the size its zip entry states.
    #[error(
        "{file}: {member}: the deflate stream ends after {inflated} bytes, but the zip entry says the \
         member holds {len}; the archive is damaged: download or save it again"
    )]
    InflateShort { file: String, member: String, inflated: u64, len: u64 },
    /// A compressed zip member's deflate stream goes on past the member's end (`end`, a file
    /// offset): the file was cut short, or the entry's compressed size is wrong.
    #[error(
        "{file}: {member}: the member's compressed bytes end at byte {end} of the file before its \
         deflate stream does (after {inflated} of {len} bytes); the file was cut short or its zip \
         entry is wrong: download or save it again"
    )]
    InflateTruncated { file: String, member: String, end: u64, inflated: u64, len: u64 },
}

/// Largest JSON side file (shard index, config.json, tokenizer.json) read whole. Real indexes stay
/// below ~10 MB even for models with tens of thousands of tensors, tokenizers below ~30 MB; anything
/// larger is not what its name says.
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// The part of a source name after the last `/` or `\` (CLI sources are paths; the browser gives
/// plain names, or relative paths for a dropped folder).
pub fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// Random-access bytes: an in-memory buffer, a native file or a browser `Blob`.
pub trait ByteSource {
    /// A name for messages (the file name).
    fn name(&self) -> &str;
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// Fills `buf` with the bytes at `offset .. offset + buf.len()`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError>;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared source (the embedding and the unembedding may live in one file).
impl<T: ByteSource + ?Sized> ByteSource for std::rc::Rc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        (**self).read_at(offset, buf)
    }
}

/// A borrowed source (a reader that opens a view over the file it was given).
impl<T: ByteSource + ?Sized> ByteSource for &T {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        (**self).read_at(offset, buf)
    }
}

/// Checks that `offset .. offset + len` lies inside a source of `file_len` bytes.
pub fn check_range(file: &str, offset: u64, len: u64, file_len: u64) -> Result<(), ReadError> {
    match offset.checked_add(len) {
        Some(end) if end <= file_len => Ok(()),
        _ => Err(ReadError::OutOfBounds { file: file.to_string(), offset, len, file_len }),
    }
}

/// Bytes held in memory: tests, generated fixtures and the built-in demos.
/// The bytes are shared, so a cached demo can be analysed again without a copy.
pub struct SliceSource {
    name: String,
    bytes: std::sync::Arc<Vec<u8>>,
}

impl SliceSource {
    pub fn new(name: impl Into<String>, bytes: impl Into<std::sync::Arc<Vec<u8>>>) -> Self {
        Self { name: name.into(), bytes: bytes.into() }
    }
}

impl ByteSource for SliceSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, offset, buf.len() as u64, self.len())?;
        // check_range proved offset + len <= bytes.len(), which itself fits in usize.
        let start = offset as usize;
        match self.bytes.get(start..start + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(ReadError::OutOfBounds {
                file: self.name.clone(),
                offset,
                len: buf.len() as u64,
                file_len: self.len(),
            }),
        }
    }
}

/// A file on disk, read with positioned reads (CLI and native tests).
#[cfg(not(target_arch = "wasm32"))]
pub struct FileSource {
    name: String,
    file: std::fs::File,
    len: u64,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    pub fn open(path: &std::path::Path) -> Result<Self, ReadError> {
        let name = path.display().to_string();
        let io = |e: std::io::Error| ReadError::Io { file: name.clone(), offset: 0, len: 0, message: e.to_string() };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Ok(Self { name, file, len })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ByteSource for FileSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, offset, buf.len() as u64, self.len)?;
        #[cfg(unix)]
        let result = std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset);
        #[cfg(not(unix))]
        let result = {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset)).and_then(|_| f.read_exact(buf))
        };
        result.map_err(|e| ReadError::Io {
            file: self.name.clone(),
            offset,
            len: buf.len() as u64,
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn base_names_of_paths() {
        assert_eq!(base_name("a/b/model.safetensors"), "model.safetensors");
        assert_eq!(base_name("C:\\m\\x.gguf"), "x.gguf");
        assert_eq!(base_name("plain"), "plain");
    }
}
