//! safetensors header reader.
//!
//! Written by hand rather than taken from the `safetensors` crate: its `Metadata` keeps offsets and
//! sizes in `usize`, which on wasm32 overflows for tensors of 2³² bits or more and cannot address
//! data past 4 GiB. Here every offset is `u64`, every sum is checked, and the
//! crate stays in dev-dependencies as the oracle our parser is tested against.
//!
//! Layout: 8-byte little-endian header length `n`, `n` bytes of JSON mapping tensor names to
//! `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to byte `8 + n`), then the data.

// The crate-wide `FormatError` is large (see gguf.rs); errors end a read, so size does not matter.
#![allow(clippy::result_large_err)]

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{DType, FormatError, ModelInfo, TensorInfo, MAX_HEADER_BYTES};
use crate::read::source::ByteSource;

/// Reads and validates the header of a safetensors file. Only the header bytes are read.
pub fn read_header(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    let name = source.name().to_string();
    let file_len = source.len();
    if file_len < 8 {
        return Err(FormatError::TooShort { file: name, format: "safetensors", len: file_len });
    }
    let mut len_bytes = [0u8; 8];
    source.read_at(0, &mut len_bytes)?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > MAX_HEADER_BYTES {
        return Err(FormatError::HeaderTooLarge { file: name, len: header_len, max: MAX_HEADER_BYTES });
    }
    if header_len > file_len - 8 {
        return Err(FormatError::HeaderPastEof { file: name, header_len, file_len });
    }
    // header_len <= 100 MB, so it fits in usize on every target.
    let mut header = vec![0u8; header_len as usize];
    source.read_at(8, &mut header)?;
    let data_start = 8 + header_len;
    parse_header(&name, &header, data_start, file_len, file)
}

/// Parses the JSON header bytes; `data_start` is the absolute offset of the data section.
///
/// The header is read entry by entry (no JSON tree of the whole header: a tree of a 250 000-entry
/// header took two thirds of the time to open it), each entry checked as it comes.
pub fn parse_header(
    name: &str,
    header: &[u8],
    data_start: u64,
    file_len: u64,
    file: usize,
) -> Result<ModelInfo, FormatError> {
    let invalid = |message: String| FormatError::InvalidJson { file: name.to_string(), message };
    let text = std::str::from_utf8(header).map_err(|e| invalid(format!("not UTF-8 ({e})")))?;
    let failure = Cell::new(None);
    let seed = HeaderSeed { name, data_start, file_len, file, failure: &failure };
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = seed.deserialize(&mut de).and_then(|t| de.end().map(|()| t));
    if let Some(error) = failure.take() {
        return Err(error);
    }
    let mut tensors = parsed.map_err(|e| invalid(e.to_string()))?;
    // File order is the natural order to list tensors in, and the order the tiling is checked in.
    tensors.sort_by_key(|t| t.byte_range);
    check_tiling(name, &tensors, data_start, file_len)?;
    Ok(ModelInfo { format: "safetensors".to_string(), tensors, ..ModelInfo::default() })
}

/// The format requires the tensors' data to tile the data section exactly: sorted by start, each
/// begins where the previous ended, the first at 0 and the last at the end of the file (the
/// reference implementation refuses anything else). An overlap lets one tensor's bytes be read as
/// another's; a gap hides bytes no tensor accounts for. `tensors` are sorted by byte range, so the
/// check is one pass. Offsets in messages are the header's own (relative to the data section).
fn check_tiling(name: &str, tensors: &[TensorInfo], data_start: u64, file_len: u64) -> Result<(), FormatError> {
    let rel = |t: &TensorInfo| (t.byte_range.0 - data_start, t.byte_range.1 - data_start);
    let mut previous: Option<&TensorInfo> = None;
    let mut expected = 0u64;
    for t in tensors {
        let (start, end) = rel(t);
        if start < expected {
            if let Some(p) = previous {
                return Err(FormatError::OffsetsOverlap {
                    file: name.to_string(),
                    first: p.name.clone(),
                    first_offsets: rel(p),
                    second: t.name.clone(),
                    second_offsets: (start, end),
                });
            }
        }
        if start > expected {
            let between = match previous {
                Some(p) => format!("between '{}' {:?} and '{}' {:?}", p.name, rel(p), t.name, (start, end)),
                None => format!("before the first tensor '{}' {:?}", t.name, (start, end)),
            };
            return Err(FormatError::OffsetsGap { file: name.to_string(), start: expected, end: start, between });
        }
        expected = end;
        previous = Some(t);
    }
    let data_len = file_len.saturating_sub(data_start);
    if expected != data_len {
        let between = match previous {
            Some(p) => format!("after the last tensor '{}' {:?}, up to the end of the file", p.name, rel(p)),
            None => "with no tensor at all".to_string(),
        };
        return Err(FormatError::OffsetsGap { file: name.to_string(), start: expected, end: data_len, between });
    }
    Ok(())
}

/// Reads the header object, one tensor entry at a time; the first [`FormatError`] is kept aside in
/// `failure` (serde's own error only carries text).
struct HeaderSeed<'a> {
    name: &'a str,
    data_start: u64,
    file_len: u64,
    file: usize,
    failure: &'a Cell<Option<FormatError>>,
}

impl<'de> DeserializeSeed<'de> for HeaderSeed<'_> {
    type Value = Vec<TensorInfo>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HeaderSeed<'_> {
    type Value = Vec<TensorInfo>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the header must be a JSON object of tensors")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut tensors: Vec<TensorInfo> = Vec::new();
        while let Some(tensor) = map.next_key::<String>()? {
            if tensor == "__metadata__" {
                // The format (and the safetensors crate, which refuses the file) says a string to
                // string map: a number or an object here is a broken writer, or a hostile file.
                let metadata = map.next_value::<std::collections::BTreeMap<String, serde_json::Value>>()?;
                if let Some((key, value)) = metadata.iter().find(|(_, v)| !v.is_string()) {
                    let found = match value {
                        serde_json::Value::Null => "null",
                        serde_json::Value::Bool(_) => "a boolean",
                        serde_json::Value::Number(_) => "a number",
                        serde_json::Value::Array(_) => "an array",
                        serde_json::Value::Object(_) => "an object",
                        serde_json::Value::String(_) => "a string",
                    };
                    self.failure.set(Some(FormatError::MetadataNotString {
                        file: self.name.to_string(),
                        key: key.clone(),
                        found,
                    }));
                    return Err(de::Error::custom("header refused"));
                }
                continue;
            }
            let entry = map.next_value::<Entry>()?;
            match parse_entry(self.name, &tensor, &entry, self.data_start, self.file_len, self.file) {
                Ok(info) => tensors.push(info),
                Err(e) => {
                    self.failure.set(Some(e));
                    return Err(de::Error::custom("header refused"));
                }
            }
        }
        // A name listed twice: found by sorting references, not by a set of cloned names (a
        // hashed copy of every name was a fifth of the time to open a 250 000-entry header).
        let mut names: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|w| w.first() == w.get(1)) {
            let tensor = pair.first().map_or_else(String::new, |n| n.to_string());
            self.failure.set(Some(FormatError::InvalidEntry {
                file: self.name.to_string(),
                tensor,
                reason: "listed twice in the header".to_string(),
            }));
            return Err(de::Error::custom("header refused"));
        }
        Ok(tensors)
    }
}

/// One tensor entry's fields, each kept as JSON so that a field of the wrong type gets its own
/// message; anything that is not an object reads as an entry with no fields.
#[derive(Default)]
struct Entry {
    dtype: Option<Value>,
    shape: Option<Value>,
    data_offsets: Option<Value>,
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

/// A key of a tensor entry, recognised without allocating a string for it (three per tensor).
enum Field {
    Dtype,
    Shape,
    DataOffsets,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                Ok(match key {
                    "dtype" => Field::Dtype,
                    "shape" => Field::Shape,
                    "data_offsets" => Field::DataOffsets,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tensor entry")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut entry = Entry::default();
        while let Some(key) = map.next_key::<Field>()? {
            let slot = match key {
                Field::Dtype => &mut entry.dtype,
                Field::Shape => &mut entry.shape,
                Field::DataOffsets => &mut entry.data_offsets,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Value>()?);
        }
        Ok(entry)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Entry::default())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Entry, E> {
        Ok(Entry::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Entry, E> {
        Ok(Entry::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Entry, E> {
        Ok(Entry::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Entry, E> {
        Ok(Entry::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Entry, E> {
        Ok(Entry::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Entry, E> {
        Ok(Entry::default())
    }
}

fn parse_entry(
    name: &str,
    tensor: &str,
    entry: &Entry,
    data_start: u64,
    file_len: u64,
    file: usize,
) -> Result<TensorInfo, FormatError> {
    let bad = |reason: &str| FormatError::InvalidEntry {
        file: name.to_string(),
        tensor: tensor.to_string(),
        reason: reason.to_string(),
    };
    let dtype = entry.dtype.as_ref().and_then(Value::as_str).ok_or_else(|| bad("missing or non-string \"dtype\""))?;
    let shape = entry
        .shape
        .as_ref()
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing or non-array \"shape\""))?
        .iter()
        .map(|v| v.as_u64().ok_or_else(|| bad("\"shape\" must hold non-negative integers")))
        .collect::<Result<Vec<u64>, _>>()?;
    let offsets = entry
        .data_offsets
        .as_ref()
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing or non-array \"data_offsets\""))?;
    let (start, end) = match offsets.as_slice() {
        [a, b] => (
            a.as_u64().ok_or_else(|| bad("\"data_offsets\" must be two non-negative integers"))?,
            b.as_u64().ok_or_else(|| bad("\"data_offsets\" must be two non-negative integers"))?,
        ),
        _ => return Err(bad("\"data_offsets\" must have exactly two entries")),
    };
    if start > end {
        return Err(FormatError::BadOffsets { file: name.to_string(), tensor: tensor.to_string(), start, end });
    }
    let dtype = DType::from_safetensors(dtype);
    let actual = end - start;
    // An unknown dtype cannot be size-checked; it is listed and refused only if someone analyses it.
    if dtype.block().is_some() {
        let elems = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        let expected = elems.and_then(|n| dtype.bytes_for(n));
        if expected != Some(actual) {
            return Err(FormatError::SizeMismatch {
                file: name.to_string(),
                tensor: tensor.to_string(),
                shape,
                dtype: dtype.name().to_string(),
                expected: expected.map_or("more than 2^64".to_string(), |e| e.to_string()),
                actual,
            });
        }
    }
    let (abs_start, abs_end) = match (data_start.checked_add(start), data_start.checked_add(end)) {
        (Some(s), Some(e)) => (s, e),
        _ => {
            return Err(FormatError::PastEof {
                file: name.to_string(),
                tensor: tensor.to_string(),
                end: u64::MAX,
                file_len,
            })
        }
    };
    if abs_end > file_len {
        return Err(FormatError::PastEof {
            file: name.to_string(),
            tensor: tensor.to_string(),
            end: abs_end,
            file_len,
        });
    }
    Ok(TensorInfo {
        name: tensor.to_string(),
        dtype,
        shape,
        byte_range: (abs_start, abs_end),
        file,
        layout: Default::default(),
    })
}
