//! Zip archives: the end of central directory record (and its ZIP64 form), the central directory's
//! entries, and where an entry's data starts. Enough to read stored members in place (PyTorch's
//! `torch.save` zips, `.npz`); nothing here decompresses.
//!
//! One name, one member: readers disagree on which of two central-directory entries of one name
//! a name means (Python's `zipfile` takes the last, a first-match lookup the first), so
//! [`check_unique_names`] refuses such an archive; and a member whose local header names another
//! file than its directory entry is refused as Python's `zipfile` refuses it ([`data_start`]).
//!
//! Layout (PKWARE APPNOTE 6.3.10): members, each a local header (30 bytes, its name and extra
//! field) and its data; then the central directory (46 bytes per entry plus name, extra field and
//! comment); then, for ZIP64, the ZIP64 end record and its locator; then the end record (22 bytes
//! plus a comment of at most 65 535 bytes). Only the last 64 KiB + 22 bytes are searched for the
//! end record, and the central directory is read whole only within [`MAX_CENTRAL_DIRECTORY`].

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use super::FormatError;
use crate::read::source::ByteSource;

/// Compression method: stored as is.
pub const STORED: u16 = 0;
/// Compression method: deflate.
pub const DEFLATED: u16 = 8;

/// Most entries accepted in one archive: a torch checkpoint has one per storage (a few thousand
/// for the largest models), an `.npz` one per array.
pub const MAX_ENTRIES: u64 = 1 << 20;
/// Longest entry name accepted (real names are short paths).
pub const MAX_NAME_LEN: u64 = 4096;
/// Largest central directory read whole (46 bytes plus a short name per entry: 1 Mi entries fit).
pub const MAX_CENTRAL_DIRECTORY: u64 = 128 << 20;

const EOCD_SIG: &[u8; 4] = b"PK\x05\x06";
const ZIP64_EOCD_SIG: &[u8; 4] = b"PK\x06\x06";
const ZIP64_LOCATOR_SIG: &[u8; 4] = b"PK\x06\x07";
const CENTRAL_SIG: &[u8; 4] = b"PK\x01\x02";
const LOCAL_SIG: &[u8; 4] = b"PK\x03\x04";
const EOCD_LEN: u64 = 22;
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_EOCD_LEN: u64 = 56;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: u64 = 30;
/// The end record's comment is at most this long, so the record starts within this many bytes
/// plus its own 22 of the end.
const MAX_COMMENT: u64 = 0xFFFF;

/// One member of a zip archive, as its central directory entry describes it (sizes and offset
/// already taken from the ZIP64 extra field where the 32-bit fields are saturated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZipEntry {
    pub name: String,
    /// Compression method ([`STORED`], [`DEFLATED`], …).
    pub method: u16,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    pub crc32: u32,
    /// Absolute offset of the member's local header.
    pub local_header_offset: u64,
}

/// Whether a file's first bytes are a zip's first local header.
pub fn is_zip(head: &[u8]) -> bool {
    head.starts_with(LOCAL_SIG)
}

fn le16(b: &[u8], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(&[a, c]) => u16::from_le_bytes([a, c]),
        _ => 0,
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

/// Where the central directory is, from the end records.
struct Directory {
    entries: u64,
    size: u64,
    offset: u64,
    /// Where the records after the directory start (the ZIP64 end record, else the end record):
    /// the directory must end at or before it.
    end: u64,
}

fn truncated(source: &dyn ByteSource, what: &str, offset: u64) -> FormatError {
    FormatError::ZipTruncated {
        file: source.name().to_string(),
        what: what.to_string(),
        offset,
        file_len: source.len(),
    }
}

fn over_limit(source: &dyn ByteSource, what: &str, offset: u64, value: u64, limit: u64) -> FormatError {
    FormatError::ZipOverLimit { file: source.name().to_string(), what: what.to_string(), offset, value, limit }
}

/// Reads `len` bytes at `offset`, or the [`FormatError::ZipTruncated`] naming `what`.
fn read_exact(source: &dyn ByteSource, offset: u64, len: u64, what: &str) -> Result<Vec<u8>, FormatError> {
    match offset.checked_add(len) {
        Some(end) if end <= source.len() => {}
        _ => return Err(truncated(source, what, offset)),
    }
    let n = usize::try_from(len).map_err(|_| truncated(source, what, offset))?;
    let mut buf = vec![0u8; n];
    source.read_at(offset, &mut buf)?;
    Ok(buf)
}

fn find_directory(source: &dyn ByteSource) -> Result<Directory, FormatError> {
    let file_len = source.len();
    let file = || source.name().to_string();
    if file_len < EOCD_LEN {
        return Err(FormatError::ZipNoEndRecord { file: file(), file_len });
    }
    let tail_len = file_len.min(MAX_COMMENT + EOCD_LEN);
    let tail_start = file_len - tail_len;
    let tail = read_exact(source, tail_start, tail_len, "end of central directory")?;
    // The last signature whose comment fits in the file: a comment may itself contain the bytes.
    let pos = (0..=tail.len().saturating_sub(EOCD_LEN as usize))
        .rev()
        .find(|&p| {
            tail.get(p..p + 4) == Some(EOCD_SIG)
                && p + EOCD_LEN as usize + usize::from(le16(&tail, p + 20)) <= tail.len()
        })
        .ok_or_else(|| FormatError::ZipNoEndRecord { file: file(), file_len })?;
    let eocd_offset = tail_start + pos as u64;
    let rec = tail.get(pos..).unwrap_or(&[]);
    let (disk, cd_disk) = (le16(rec, 4), le16(rec, 6));
    let mut dir = Directory {
        entries: u64::from(le16(rec, 10)),
        size: u64::from(le32(rec, 12)),
        offset: u64::from(le32(rec, 16)),
        end: eocd_offset,
    };
    if disk != 0 || cd_disk != 0 {
        return Err(FormatError::ZipMultiDisk { file: file(), offset: eocd_offset });
    }
    // A ZIP64 locator right before the end record points at the ZIP64 end record, whose 64-bit
    // fields replace the saturated 32-bit ones.
    if let Some(loc_offset) = eocd_offset.checked_sub(ZIP64_LOCATOR_LEN) {
        let loc = read_exact(source, loc_offset, ZIP64_LOCATOR_LEN, "ZIP64 end of central directory locator")?;
        if loc.starts_with(ZIP64_LOCATOR_SIG) {
            let z_offset = le64(&loc, 8);
            if z_offset.checked_add(ZIP64_EOCD_LEN).is_none_or(|end| end > loc_offset) {
                return Err(truncated(source, "ZIP64 end of central directory record", z_offset));
            }
            let z = read_exact(source, z_offset, ZIP64_EOCD_LEN, "ZIP64 end of central directory record")?;
            if !z.starts_with(ZIP64_EOCD_SIG) {
                return Err(FormatError::ZipBadSignature {
                    file: file(),
                    what: "ZIP64 end of central directory record".to_string(),
                    offset: z_offset,
                });
            }
            if le32(&z, 16) != 0 || le32(&z, 20) != 0 {
                return Err(FormatError::ZipMultiDisk { file: file(), offset: z_offset });
            }
            dir = Directory { entries: le64(&z, 32), size: le64(&z, 40), offset: le64(&z, 48), end: z_offset };
        }
    }
    if dir.entries > MAX_ENTRIES {
        return Err(over_limit(source, "entry count", eocd_offset, dir.entries, MAX_ENTRIES));
    }
    if dir.size > MAX_CENTRAL_DIRECTORY {
        return Err(over_limit(source, "central directory size", eocd_offset, dir.size, MAX_CENTRAL_DIRECTORY));
    }
    if dir.offset.checked_add(dir.size).is_none_or(|end| end > dir.end) {
        return Err(FormatError::ZipDirectoryOutOfBounds {
            file: file(),
            offset: dir.offset,
            size: dir.size,
            end: dir.end,
        });
    }
    // Each entry takes at least 46 bytes, so a count the directory cannot hold is a lie.
    if dir.entries.saturating_mul(CENTRAL_LEN as u64) > dir.size {
        return Err(over_limit(
            source,
            "entry count (for the central directory's size)",
            eocd_offset,
            dir.entries,
            dir.size / CENTRAL_LEN as u64,
        ));
    }
    Ok(dir)
}

/// Reads the central directory: every entry's name, method, sizes, CRC and local header offset.
/// Each entry's local header offset and compressed size are checked to lie inside the file.
pub fn read_entries(source: &dyn ByteSource) -> Result<Vec<ZipEntry>, FormatError> {
    let dir = find_directory(source)?;
    let file_len = source.len();
    let cd = read_exact(source, dir.offset, dir.size, "central directory")?;
    let mut entries = Vec::with_capacity(usize::try_from(dir.entries).unwrap_or(0));
    let mut at = 0usize;
    for _ in 0..dir.entries {
        let offset = dir.offset + at as u64;
        let head = cd.get(at..at + CENTRAL_LEN).ok_or_else(|| truncated(source, "central directory entry", offset))?;
        if !head.starts_with(CENTRAL_SIG) {
            return Err(FormatError::ZipBadSignature {
                file: source.name().to_string(),
                what: "central directory entry".to_string(),
                offset,
            });
        }
        let flags = le16(head, 8);
        let method = le16(head, 10);
        let crc32 = le32(head, 16);
        let mut compressed_size = u64::from(le32(head, 20));
        let mut uncompressed_size = u64::from(le32(head, 24));
        let name_len = usize::from(le16(head, 28));
        let extra_len = usize::from(le16(head, 30));
        let comment_len = usize::from(le16(head, 32));
        let mut local_header_offset = u64::from(le32(head, 42));
        if name_len as u64 > MAX_NAME_LEN {
            return Err(over_limit(source, "entry name length", offset, name_len as u64, MAX_NAME_LEN));
        }
        let name_at = at + CENTRAL_LEN;
        let raw_name = cd.get(name_at..name_at + name_len).ok_or_else(|| truncated(source, "entry name", offset))?;
        let name = String::from_utf8_lossy(raw_name).into_owned();
        let extra_at = name_at + name_len;
        let extra =
            cd.get(extra_at..extra_at + extra_len).ok_or_else(|| truncated(source, "entry extra field", offset))?;
        // ZIP64 extended information (0x0001): the 64-bit values of exactly the saturated fields,
        // in this order.
        let mut x = 0usize;
        while let (Some(id), Some(size)) = (extra.get(x..x + 2), extra.get(x + 2..x + 4)) {
            let id = u16::from_le_bytes([id[0], id[1]]);
            let size = usize::from(u16::from_le_bytes([size[0], size[1]]));
            let body = extra.get(x + 4..x + 4 + size).ok_or_else(|| truncated(source, "entry extra field", offset))?;
            if id == 0x0001 {
                let mut fields = body.chunks_exact(8).map(|c| le64(c, 0));
                let mut take = |value: &mut u64, what: &str| -> Result<(), FormatError> {
                    if *value == 0xFFFF_FFFF {
                        *value = fields.next().ok_or_else(|| truncated(source, what, offset))?;
                    }
                    Ok(())
                };
                take(&mut uncompressed_size, "ZIP64 uncompressed size")?;
                take(&mut compressed_size, "ZIP64 compressed size")?;
                take(&mut local_header_offset, "ZIP64 local header offset")?;
            }
            x += 4 + size;
        }
        let entry = ZipEntry { name, method, compressed_size, uncompressed_size, crc32, local_header_offset };
        if flags & 1 != 0 {
            return Err(FormatError::ZipEncrypted { file: source.name().to_string(), entry: entry.name });
        }
        let end = local_header_offset.checked_add(LOCAL_LEN).and_then(|e| e.checked_add(compressed_size));
        if end.is_none_or(|end| end > file_len) {
            return Err(FormatError::ZipEntryPastEof {
                file: source.name().to_string(),
                entry: entry.name,
                offset: local_header_offset,
                size: compressed_size,
                file_len,
            });
        }
        entries.push(entry);
        at = extra_at + extra_len + comment_len;
    }
    Ok(entries)
}

/// Refuses an archive in which two central-directory entries carry one name: which member that
/// name means depends on the reader (Python's `zipfile` keeps the last, a first-match lookup such
/// as `torch.load`'s takes another), so the archive has no one answer. Linear in the entries.
pub fn check_unique_names(source: &dyn ByteSource, entries: &[ZipEntry]) -> Result<(), FormatError> {
    let mut seen: HashMap<&str, u64> = HashMap::with_capacity(entries.len());
    for e in entries {
        if let Some(&first_offset) = seen.get(e.name.as_str()) {
            return Err(FormatError::ZipDuplicateEntry {
                file: source.name().to_string(),
                entry: e.name.clone(),
                first_offset,
                second_offset: e.local_header_offset,
            });
        }
        seen.insert(e.name.as_str(), e.local_header_offset);
    }
    Ok(())
}

/// Absolute offset of the entry's data: from its *local* header (its own name and extra lengths,
/// which may differ from the central directory's, e.g. alignment padding), checked so that
/// `compressed_size` bytes from there lie inside the file. The local header must name the entry's
/// file (Python's `zipfile` refuses a member whose names differ: "File name in directory … and
/// header … differ"); the header and that name are read in one read.
pub fn data_start(source: &dyn ByteSource, entry: &ZipEntry) -> Result<u64, FormatError> {
    let offset = entry.local_header_offset;
    let file_len = source.len();
    let with_name = LOCAL_LEN.saturating_add(entry.name.len() as u64);
    let head_len = if file_len.saturating_sub(offset) >= with_name { with_name } else { LOCAL_LEN };
    let head = read_exact(source, offset, head_len, "local file header")?;
    if !head.starts_with(LOCAL_SIG) {
        return Err(FormatError::ZipBadSignature {
            file: source.name().to_string(),
            what: format!("local file header of '{}'", entry.name),
            offset,
        });
    }
    let name_len = u64::from(le16(&head, 26));
    let extra_len = u64::from(le16(&head, 28));
    let name_at = LOCAL_LEN as usize;
    let local_name = match head.get(name_at..name_at + name_len as usize) {
        Some(name) => name.to_vec(),
        None => read_exact(source, offset + LOCAL_LEN, name_len, "local file header name")?,
    };
    if String::from_utf8_lossy(&local_name) != entry.name.as_str() {
        return Err(FormatError::ZipLocalNameMismatch {
            file: source.name().to_string(),
            entry: entry.name.clone(),
            local: String::from_utf8_lossy(&local_name).into_owned(),
            offset,
        });
    }
    let start = offset + LOCAL_LEN + name_len + extra_len;
    if start.checked_add(entry.compressed_size).is_none_or(|end| end > file_len) {
        return Err(FormatError::ZipEntryPastEof {
            file: source.name().to_string(),
            entry: entry.name.clone(),
            offset: start,
            size: entry.compressed_size,
            file_len,
        });
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::writers::{zip_bytes, ZipMember};
    use crate::read::source::SliceSource;

    fn member(name: &str, data: &[u8]) -> ZipMember {
        ZipMember { name: name.to_string(), data: data.to_vec(), deflate: false }
    }

    fn read(bytes: Vec<u8>) -> (SliceSource, Result<Vec<ZipEntry>, FormatError>) {
        let source = SliceSource::new("a.zip", bytes);
        let entries = read_entries(&source);
        (source, entries)
    }

    #[test]
    fn entries_and_data_of_stored_members() {
        for zip64 in [false, true] {
            for align in [1, 64] {
                let members = [member("archive/data.pkl", b"pickle"), member("archive/data/0", &[7u8; 100])];
                let (source, entries) = read(zip_bytes(&members, zip64, align));
                let entries = entries.unwrap();
                assert_eq!(entries.len(), 2);
                for (e, m) in entries.iter().zip(&members) {
                    assert_eq!(e.name, m.name);
                    assert_eq!(e.method, STORED);
                    assert_eq!(e.compressed_size, m.data.len() as u64);
                    assert_eq!(e.uncompressed_size, m.data.len() as u64);
                    let start = data_start(&source, e).unwrap();
                    assert_eq!(start % align as u64, 0, "{e:?}");
                    let mut buf = vec![0u8; m.data.len()];
                    source.read_at(start, &mut buf).unwrap();
                    assert_eq!(buf, m.data);
                }
            }
        }
    }

    #[test]
    fn a_comment_after_the_end_record_is_skipped() {
        let mut bytes = zip_bytes(&[member("x", b"abc")], false, 1);
        let n = bytes.len();
        bytes[n - 2..].copy_from_slice(&5u16.to_le_bytes());
        bytes.extend_from_slice(b"PK\x05\x06");
        bytes.push(0);
        let (_, entries) = read(bytes);
        assert_eq!(entries.unwrap()[0].name, "x");
    }

    #[test]
    fn no_end_record_is_refused() {
        let bytes = zip_bytes(&[member("x", b"abc")], false, 1);
        for cut in [0, 10, bytes.len() - 1] {
            let (_, entries) = read(bytes[..cut].to_vec());
            assert!(matches!(entries, Err(FormatError::ZipNoEndRecord { .. })), "{cut}: {entries:?}");
        }
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_in_bounds() {
        let bytes = zip_bytes(&[member("archive/data.pkl", b"pickle"), member("archive/data/0", &[1; 40])], true, 64);
        for cut in 0..bytes.len() {
            let _ = read(bytes[..cut].to_vec());
        }
        for i in 0..bytes.len() {
            for v in [0u8, 0xff, 0x7f] {
                let mut b = bytes.clone();
                b[i] = v;
                let (source, entries) = read(b);
                if let Ok(entries) = entries {
                    for e in &entries {
                        if let Ok(start) = data_start(&source, e) {
                            assert!(start + e.compressed_size <= source.len());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn lying_counts_and_offsets_are_refused() {
        let bytes = zip_bytes(&[member("x", b"abc")], false, 1);
        let eocd = bytes.len() - 22;
        let mut b = bytes.clone();
        b[eocd + 10..eocd + 12].copy_from_slice(&0xfffeu16.to_le_bytes());
        assert!(matches!(read(b).1, Err(FormatError::ZipOverLimit { .. })));
        let mut b = bytes.clone();
        b[eocd + 16..eocd + 20].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        assert!(matches!(read(b).1, Err(FormatError::ZipDirectoryOutOfBounds { .. })));
        // The local header offset of the only entry points past the file.
        let cd = u32::from_le_bytes(bytes[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
        let mut b = bytes.clone();
        b[cd + 42..cd + 46].copy_from_slice(&1000u32.to_le_bytes());
        let err = read(b).1.unwrap_err();
        assert!(matches!(err, FormatError::ZipEntryPastEof { .. }), "{err:?}");
        assert!(err.to_string().contains("'x'"), "{err}");
    }
}
