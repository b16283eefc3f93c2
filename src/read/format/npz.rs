//! NumPy `.npz` archives (`np.savez`, `np.savez_compressed`): a zip whose `NAME.npy` members are
//! arrays, each listed as a tensor `NAME`. A stored member's rows are read where they lie; a
//! deflated one's through [`crate::read::inflate::InflatedSource`] ([`Layout::Deflate`]). Opening
//! reads the zip directory and each member's `.npy` header only (for a deflated member, its first
//! few KiB of compressed bytes).
//!
//! The members' CRC-32s are not checked: that would mean reading every member whole.

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use super::zip::{self, ZipEntry};
use super::{npy, FormatError, Layout, ModelInfo};
use crate::read::inflate::InflatedSource;
use crate::read::source::{ByteSource, ReadError};

/// Whether a zip's entries make an `.npz`: at least one `.npy` member, and no PyTorch pickle
/// (`torch.save` archives may hold `.npy`-named storages beside their `data.pkl`).
pub fn is_npz(entries: &[ZipEntry]) -> bool {
    entries.iter().any(|e| e.name.ends_with(".npy"))
        && !entries.iter().any(|e| e.name == "data.pkl" || e.name.ends_with("/data.pkl"))
}

/// Bytes `[base, base + len)` of `inner` as a source of their own, named for messages after the
/// archive and the member (so the `.npy` reader's errors say which member).
struct Member<'a> {
    inner: &'a dyn ByteSource,
    base: u64,
    len: u64,
    name: String,
}

impl ByteSource for Member<'_> {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        crate::read::source::check_range(&self.name, offset, buf.len() as u64, self.len)?;
        // check_range proved offset + len <= self.len, and base + self.len lies in the file.
        self.inner.read_at(self.base + offset, buf)
    }
}

/// The tensors of an `.npz` whose zip directory is `entries`. Members not named `*.npy` are
/// ignored; an array of a dtype Orthoscope does not decode is listed (as `DType::Other`), not
/// refused, so that it does not hide the others.
pub fn read_npz(source: &dyn ByteSource, file: usize, entries: &[ZipEntry]) -> Result<ModelInfo, FormatError> {
    let archive = source.name().to_string();
    // An array's name is its member's: two members of one name would be two answers.
    zip::check_unique_names(source, entries)?;
    let mut tensors = Vec::new();
    for entry in entries {
        let Some(stem) = entry.name.strip_suffix(".npy") else {
            continue;
        };
        let view_name = format!("{archive} (member '{}')", entry.name);
        let start = zip::data_start(source, entry)?;
        let mut info = match entry.method {
            zip::STORED => {
                if entry.compressed_size != entry.uncompressed_size {
                    return Err(FormatError::NpzStoredSizes {
                        file: archive,
                        member: entry.name.clone(),
                        compressed: entry.compressed_size,
                        uncompressed: entry.uncompressed_size,
                    });
                }
                let view = Member { inner: source, base: start, len: entry.compressed_size, name: view_name };
                let mut info = npy::read_header_listing_any_dtype(&view, file)?;
                for t in &mut info.tensors {
                    // data_start proved start + compressed_size <= the file's length.
                    t.byte_range = (start + t.byte_range.0, start + t.byte_range.1);
                }
                info
            }
            zip::DEFLATED => {
                // data_start proved start + compressed_size <= the file's length.
                let end = start + entry.compressed_size;
                let inflated =
                    InflatedSource::new(source, start, end, entry.uncompressed_size)?.with_member_name(&entry.name);
                let view = Member { inner: &inflated, base: 0, len: entry.uncompressed_size, name: view_name };
                let mut info = npy::read_header_listing_any_dtype(&view, file)?;
                for t in &mut info.tensors {
                    t.layout = Layout::Deflate { start, end, inflated_len: entry.uncompressed_size };
                }
                info
            }
            method => {
                return Err(FormatError::NpzUnsupportedMethod { file: archive, member: entry.name.clone(), method })
            }
        };
        for t in &mut info.tensors {
            t.name = stem.to_string();
        }
        tensors.append(&mut info.tensors);
    }
    Ok(ModelInfo { format: "npz".to_string(), tensors, ..ModelInfo::default() })
}
