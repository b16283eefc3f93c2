//! Zip archives (PKWARE APPNOTE 6.3): the central directory's entries and where each member's
//! data starts. Only the end of the file (the end record, ZIP64's locator and record, the central
//! directory) and a member's local header are read; never a member's data.

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use super::FormatError;
use crate::read::source::ByteSource;

/// Compression method: stored as is.
pub const STORED: u16 = 0;
/// Compression method: raw deflate.
pub const DEFLATED: u16 = 8;

/// Largest central directory read (it is read whole): ~100 bytes an entry, so about 600 000
/// entries; `np.savez` archives hold a handful, PyTorch's a few thousand.
pub const MAX_CENTRAL_DIRECTORY_BYTES: u64 = 64 << 20;
/// Most entries listed.
pub const MAX_ENTRIES: u64 = 1 << 20;

const END_RECORD: &[u8; 4] = b"PK\x05\x06";
const END_RECORD_LEN: u64 = 22;
/// The end record's comment is at most this long, so the record lies in the file's last
/// `END_RECORD_LEN + MAX_COMMENT` bytes.
const MAX_COMMENT: u64 = 0xFFFF;
const ZIP64_LOCATOR: &[u8; 4] = b"PK\x06\x07";
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_END_RECORD: &[u8; 4] = b"PK\x06\x06";
const ZIP64_END_RECORD_LEN: u64 = 56;
const CENTRAL_HEADER: &[u8; 4] = b"PK\x01\x02";
const CENTRAL_HEADER_LEN: usize = 46;
const LOCAL_HEADER: &[u8; 4] = b"PK\x03\x04";
const LOCAL_HEADER_LEN: u64 = 30;
const ZIP64_EXTRA: u16 = 0x0001;

/// One member of the archive, as its central directory entry describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZipEntry {
    pub name: String,
    /// [`STORED`], [`DEFLATED`] or another method (not read).
    pub method: u16,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    pub crc32: u32,
    /// File offset of the member's local header.
    pub local_header_offset: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(&[x, y]) => u16::from_le_bytes([x, y]),
        _ => 0,
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        x.copy_from_slice(s);
    }
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        x.copy_from_slice(s);
    }
    u64::from_le_bytes(x)
}

/// Reads `len` bytes at `offset`, or says which record runs past the end of the file.
fn read_record(source: &dyn ByteSource, offset: u64, len: u64, what: &str) -> Result<Vec<u8>, FormatError> {
    let file_len = source.len();
    match offset.checked_add(len) {
        Some(end) if end <= file_len => {}
        _ => {
            return Err(FormatError::ZipPastEof {
                file: source.name().to_string(),
                what: what.to_string(),
                offset,
                len,
                file_len,
            })
        }
    }
    // Every caller's `len` is below a hard limit (at most MAX_CENTRAL_DIRECTORY_BYTES).
    let mut buf = vec![0u8; len as usize];
    source.read_at(offset, &mut buf)?;
    Ok(buf)
}

/// The entries of the central directory, in its order.
pub fn read_entries(source: &dyn ByteSource) -> Result<Vec<ZipEntry>, FormatError> {
    let file = source.name().to_string();
    let file_len = source.len();
    let bad = |offset: u64, what: String| FormatError::ZipBadRecord { file: file.clone(), offset, what };

    // The end record: the last signature in the tail whose comment fits before the file's end.
    let tail_len = file_len.min(END_RECORD_LEN + MAX_COMMENT);
    let tail_at = file_len - tail_len;
    let tail = read_record(source, tail_at, tail_len, "the end of the archive")?;
    let found = (0..tail.len().saturating_sub(END_RECORD_LEN as usize - 1)).rev().find(|&i| {
        tail.get(i..i + 4) == Some(END_RECORD)
            && i + END_RECORD_LEN as usize + usize::from(u16_at(&tail, i + 20)) <= tail.len()
    });
    let Some(i) = found else {
        return Err(FormatError::ZipNoEndRecord { file });
    };
    let end_at = tail_at + i as u64;
    let end = tail.get(i..i + END_RECORD_LEN as usize).unwrap_or(&[]);
    let (disk, cd_disk) = (u16_at(end, 4), u16_at(end, 6));
    let mut count = u64::from(u16_at(end, 10));
    let mut cd_size = u64::from(u32_at(end, 12));
    let mut cd_offset = u64::from(u32_at(end, 16));

    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        let locator_at = end_at
            .checked_sub(ZIP64_LOCATOR_LEN)
            .ok_or_else(|| bad(end_at, "ZIP64 sizes without a ZIP64 locator before the end record".into()))?;
        let locator = read_record(source, locator_at, ZIP64_LOCATOR_LEN, "the ZIP64 locator")?;
        if locator.get(..4) != Some(ZIP64_LOCATOR) {
            return Err(bad(locator_at, "ZIP64 sizes without a ZIP64 locator before the end record".into()));
        }
        let record_at = u64_at(&locator, 8);
        let record = read_record(source, record_at, ZIP64_END_RECORD_LEN, "the ZIP64 end record")?;
        if record.get(..4) != Some(ZIP64_END_RECORD) {
            return Err(bad(record_at, "the ZIP64 locator points at no ZIP64 end record".into()));
        }
        if u32_at(&record, 16) != 0 || u32_at(&record, 20) != 0 {
            return Err(FormatError::ZipUnsupported { file, what: "a multi-volume (split) archive".into() });
        }
        count = u64_at(&record, 32);
        cd_size = u64_at(&record, 40);
        cd_offset = u64_at(&record, 48);
    } else if disk != 0 || cd_disk != 0 {
        return Err(FormatError::ZipUnsupported { file, what: "a multi-volume (split) archive".into() });
    }
    if count > MAX_ENTRIES {
        return Err(FormatError::ZipOverLimit { file, what: "entries".into(), value: count, limit: MAX_ENTRIES });
    }
    if cd_size > MAX_CENTRAL_DIRECTORY_BYTES {
        return Err(FormatError::ZipOverLimit {
            file,
            what: "central directory bytes".into(),
            value: cd_size,
            limit: MAX_CENTRAL_DIRECTORY_BYTES,
        });
    }
    let cd = read_record(source, cd_offset, cd_size, "the central directory")?;

    let mut entries = Vec::new();
    let mut at = 0usize;
    for _ in 0..count {
        let here = cd_offset + at as u64;
        let fixed = cd.get(at..at + CENTRAL_HEADER_LEN).ok_or_else(|| {
            bad(here, format!("the central directory ends inside entry {} of {count}", entries.len() + 1))
        })?;
        if fixed.get(..4) != Some(CENTRAL_HEADER) {
            return Err(bad(
                here,
                format!("entry {} of {count} of the central directory has a wrong signature", entries.len() + 1),
            ));
        }
        let flags = u16_at(fixed, 8);
        let method = u16_at(fixed, 10);
        let crc32 = u32_at(fixed, 16);
        let mut compressed_size = u64::from(u32_at(fixed, 20));
        let mut uncompressed_size = u64::from(u32_at(fixed, 24));
        let (name_len, extra_len, comment_len) =
            (usize::from(u16_at(fixed, 28)), usize::from(u16_at(fixed, 30)), usize::from(u16_at(fixed, 32)));
        let mut local_header_offset = u64::from(u32_at(fixed, 42));
        let total = CENTRAL_HEADER_LEN + name_len + extra_len + comment_len;
        let record = cd
            .get(at..at + total)
            .ok_or_else(|| bad(here, "a central directory entry runs past the directory's end".into()))?;
        let name =
            String::from_utf8_lossy(record.get(CENTRAL_HEADER_LEN..CENTRAL_HEADER_LEN + name_len).unwrap_or(&[]))
                .into_owned();
        if flags & 1 != 0 {
            return Err(FormatError::ZipUnsupported { file, what: format!("an encrypted member ('{name}')") });
        }
        // ZIP64 extra field: the 64-bit values of the fields set to all ones, in this order.
        let mut extra =
            record.get(CENTRAL_HEADER_LEN + name_len..CENTRAL_HEADER_LEN + name_len + extra_len).unwrap_or(&[]);
        while extra.len() >= 4 {
            let (id, size) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
            let body = extra.get(4..4 + size).unwrap_or(&[]);
            if id == ZIP64_EXTRA {
                let mut k = 0usize;
                let mut take = |field: &mut u64| {
                    if *field == 0xFFFF_FFFF {
                        if let Some(v) = body.get(k..k + 8) {
                            *field = u64_at(v, 0);
                            k += 8;
                        }
                    }
                };
                take(&mut uncompressed_size);
                take(&mut compressed_size);
                take(&mut local_header_offset);
            }
            extra = extra.get(4 + size..).unwrap_or(&[]);
        }
        entries.push(ZipEntry { name, method, compressed_size, uncompressed_size, crc32, local_header_offset });
        at += total;
    }
    Ok(entries)
}

/// File offset of `entry`'s data (after its local header), checked to leave room for its
/// compressed bytes in the file.
pub fn data_start(source: &dyn ByteSource, entry: &ZipEntry) -> Result<u64, FormatError> {
    let file = source.name().to_string();
    let what = format!("the local header of member '{}'", entry.name);
    let header = read_record(source, entry.local_header_offset, LOCAL_HEADER_LEN, &what)?;
    if header.get(..4) != Some(LOCAL_HEADER) {
        return Err(FormatError::ZipBadRecord {
            file,
            offset: entry.local_header_offset,
            what: format!("{what} has a wrong signature (the central directory points elsewhere)"),
        });
    }
    let skip = LOCAL_HEADER_LEN + u64::from(u16_at(&header, 26)) + u64::from(u16_at(&header, 28));
    let start = entry.local_header_offset.checked_add(skip);
    let end = start.and_then(|s| s.checked_add(entry.compressed_size));
    match (start, end) {
        (Some(start), Some(end)) if end <= source.len() => Ok(start),
        _ => Err(FormatError::ZipPastEof {
            file,
            what: format!("the data of member '{}'", entry.name),
            offset: entry.local_header_offset.saturating_add(skip),
            len: entry.compressed_size,
            file_len: source.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::writers::{npy_bytes, npz_bytes};
    use crate::read::source::SliceSource;

    #[test]
    fn lists_members_and_their_data() {
        let a = npy_bytes(1, "<f4", false, &[2, 2], &[1; 16]);
        for compressed in [false, true] {
            let bytes = npz_bytes(&[("a.npy", a.clone()), ("dir/b.npy", a.clone())], compressed);
            let source = SliceSource::new("x.npz", bytes.clone());
            let entries = read_entries(&source).unwrap();
            assert_eq!(entries.len(), 2);
            assert_eq!(entries[1].name, "dir/b.npy");
            assert_eq!(entries[0].uncompressed_size, a.len() as u64);
            assert_eq!(entries[0].method, if compressed { DEFLATED } else { STORED });
            let start = data_start(&source, &entries[0]).unwrap() as usize;
            if !compressed {
                assert_eq!(&bytes[start..start + a.len()], &a[..]);
            }
        }
    }

    #[test]
    fn damaged_archives_are_errors() {
        let a = npy_bytes(1, "<f4", false, &[2, 2], &[1; 16]);
        let bytes = npz_bytes(&[("a.npy", a)], false);
        for cut in [0, 10, bytes.len() - 23, bytes.len() - 1] {
            let e = read_entries(&SliceSource::new("x.npz", bytes[..cut].to_vec())).unwrap_err();
            assert!(e.to_string().starts_with("x.npz"), "{e}");
        }
        // Every single flipped byte: an error or entries, never a panic.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xFF;
            let source = SliceSource::new("x.npz", b);
            if let Ok(entries) = read_entries(&source) {
                for e in &entries {
                    let _ = data_start(&source, e);
                }
            }
        }
    }
}
