//! safetensors header reader.
//!
//! Written by hand rather than taken from the `safetensors` crate: its `Metadata` keeps offsets and
//! sizes in `usize`, which on wasm32 overflows for tensors of 2³² bits or more and cannot address
//! data past 4 GiB (upstream issue 817). Here every offset is `u64`, every sum is checked, and the
//! crate stays in dev-dependencies as the oracle our parser is tested against.
//!
//! Layout: 8-byte little-endian header length `n`, `n` bytes of JSON mapping tensor names to
//! `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to byte `8 + n`), then the data.

use serde_json::Value;

use super::{DType, FormatError, ModelInfo, TensorInfo, MAX_HEADER_BYTES};
use crate::source::ByteSource;

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
pub fn parse_header(
    name: &str,
    header: &[u8],
    data_start: u64,
    file_len: u64,
    file: usize,
) -> Result<ModelInfo, FormatError> {
    let invalid = |message: String| FormatError::InvalidJson { file: name.to_string(), message };
    let text = std::str::from_utf8(header).map_err(|e| invalid(format!("not UTF-8 ({e})")))?;
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(invalid("the header must be a JSON object of tensors".to_string()));
    };
    let mut tensors = Vec::with_capacity(map.len());
    for (tensor, entry) in &map {
        if tensor == "__metadata__" {
            continue;
        }
        tensors.push(parse_entry(name, tensor, entry, data_start, file_len, file)?);
    }
    // File order is the natural order to list tensors in.
    tensors.sort_by_key(|t| t.byte_range.0);
    Ok(ModelInfo { format: "safetensors".to_string(), tensors, vocab_size: None, vocab: Vec::new() })
}

fn parse_entry(
    name: &str,
    tensor: &str,
    entry: &Value,
    data_start: u64,
    file_len: u64,
    file: usize,
) -> Result<TensorInfo, FormatError> {
    let bad = |reason: &str| FormatError::InvalidEntry {
        file: name.to_string(),
        tensor: tensor.to_string(),
        reason: reason.to_string(),
    };
    let dtype = entry.get("dtype").and_then(Value::as_str).ok_or_else(|| bad("missing or non-string \"dtype\""))?;
    let shape = entry
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing or non-array \"shape\""))?
        .iter()
        .map(|v| v.as_u64().ok_or_else(|| bad("\"shape\" must hold non-negative integers")))
        .collect::<Result<Vec<u64>, _>>()?;
    let offsets = entry
        .get("data_offsets")
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
    Ok(TensorInfo { name: tensor.to_string(), dtype, shape, byte_range: (abs_start, abs_end), file })
}
