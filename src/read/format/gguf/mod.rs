//! GGUF (v2, v3) header reader.
//!
//! Layout (ggml `docs/gguf.md`, little-endian throughout):
//! `"GGUF"`, version u32, tensor_count u64, kv_count u64, then kv_count metadata entries
//! (key: string, value type u32, value), then tensor_count tensor infos (name: string, n_dims u32,
//! ne[n_dims] u64, ggml type u32, offset u64), then padding to `general.alignment` (default 32),
//! then the data section; a tensor's data starts at data_start + offset. Strings are a u64 length
//! and that many bytes (no terminator). Version 1 used u32 counts and lengths and is refused;
//! version 3 only added big-endian files, which announce themselves by a byte-swapped version.
//!
//! The header is untrusted: it is read lazily through a small window over the [`ByteSource`]
//! (never the whole file), every count and length is checked against the bytes left in the file
//! before anything is allocated, and nesting, string sizes and counts have fixed limits.
//!
//! The parts: `value` is the value model (metadata types, values, the extras kept), `cursor` the
//! windowed forward reader over the source, `parser` the header grammar; this file holds the limits,
//! the one ggml tensor-type table and the entry points.

// Every reader returns the crate-wide `FormatError` (128 bytes, as the safetensors reader does);
// errors end a file read, so their size never matters for speed.
#![allow(clippy::result_large_err)]

use std::collections::HashSet;

use super::{show_magic, DType, FormatError, ModelInfo};
use crate::read::source::ByteSource;
use cursor::Cursor;
use parser::Parser;

mod cursor;
mod parser;
mod value;

pub use value::{GgufExtra, GgufType, GgufValue};

/// The first four bytes of every GGUF file.
pub const MAGIC: &[u8; 4] = b"GGUF";
/// Data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Dimensions a ggml tensor may have (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u64 = 4;
/// Deepest nesting of arrays accepted (real files never nest; the spec allows it).
pub const MAX_DEPTH: u64 = 8;
/// Longest single string accepted. Real strings are tokens, names and chat templates; the largest
/// (an embedded tokenizer.json) stays well below this.
pub const MAX_STRING_BYTES: u64 = 64 << 20;
/// Most vocabulary entries accepted (real vocabularies are below 300k).
pub const MAX_TOKENS: u64 = 1 << 24;
/// Most tensors accepted in one file (real files hold at most a few thousand).
pub const MAX_TENSORS: u64 = 1 << 20;
/// Arrays longer than this are read past and recorded as [`GgufValue::SkippedArray`].
pub const MAX_KEPT_ARRAY: u64 = 4096;
/// Approximate bytes of metadata kept in [`GgufExtra::metadata`]; later entries are not recorded.
pub const METADATA_BUDGET: usize = 16 << 20;
/// Bytes fetched from the source per read while parsing the header.
const WINDOW: usize = 1 << 20;
/// Smallest possible encodings, used to bound counts by the bytes left in the file.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 4 + 8;

/// ggml tensor type ids (`enum ggml_type` in ggml.h, `GGMLQuantizationType` in gguf-py) of the
/// types Orthoscope knows, both ways: [`dtype_from_ggml`] and [`ggml_type_of`] read this one table.
pub const GGML_TYPES: [(u32, DType); 31] = [
    (0, DType::F32),
    (1, DType::F16),
    (2, DType::Q4_0),
    (3, DType::Q4_1),
    (6, DType::Q5_0),
    (7, DType::Q5_1),
    (8, DType::Q8_0),
    (10, DType::Q2K),
    (11, DType::Q3K),
    (12, DType::Q4K),
    (13, DType::Q5K),
    (14, DType::Q6K),
    (15, DType::Q8K),
    (16, DType::IQ2XXS),
    (17, DType::IQ2XS),
    (18, DType::IQ3XXS),
    (19, DType::IQ1S),
    (20, DType::IQ4NL),
    (21, DType::IQ3S),
    (22, DType::IQ2S),
    (23, DType::IQ4XS),
    (24, DType::I8),
    (25, DType::I16),
    (26, DType::I32),
    (27, DType::I64),
    (28, DType::F64),
    (29, DType::IQ1M),
    (30, DType::BF16),
    (34, DType::TQ1_0),
    (35, DType::TQ2_0),
    (39, DType::MXFP4),
];

/// The [`DType`] of a ggml tensor type id. Types without a decoder become [`DType::Other`], named
/// so the refusal says which type it was.
pub fn dtype_from_ggml(id: u32) -> DType {
    if let Some((_, dtype)) = GGML_TYPES.iter().find(|(i, _)| *i == id) {
        return dtype.clone();
    }
    let known = match id {
        4 => " (Q4_2, removed from ggml)",
        5 => " (Q4_3, removed from ggml)",
        9 => " (Q8_1)",
        31..=33 => " (Q4_0_N_M, removed from ggml)",
        36..=38 => " (IQ4_NL_N_M, removed from ggml)",
        40 => " (NVFP4)",
        41 => " (Q1_0)",
        _ => "",
    };
    DType::Other(format!("ggml type {id}{known}"))
}

/// The ggml type id of a [`DType`], for the types GGUF can store and Orthoscope writes.
pub fn ggml_type_of(dtype: &DType) -> Option<u32> {
    GGML_TYPES.iter().find(|(_, d)| d == dtype).map(|(id, _)| *id)
}

/// Reads a GGUF header: the tensor list (shapes in row-major order, absolute byte ranges) and the
/// vocabulary size, plus the vocabulary and layout details in [`GgufExtra`].
pub fn read_gguf(source: &dyn ByteSource, file: usize) -> Result<(ModelInfo, GgufExtra), FormatError> {
    read_gguf_windowed(source, file, WINDOW)
}

/// [`read_gguf`] without the extras.
pub fn read_header(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    read_gguf(source, file).map(|(info, _)| info)
}

/// [`read_gguf`] with a chosen read window (tests use tiny windows to cross every boundary).
pub fn read_gguf_windowed(
    source: &dyn ByteSource,
    file: usize,
    window: usize,
) -> Result<(ModelInfo, GgufExtra), FormatError> {
    let mut p = Parser {
        cur: Cursor { src: source, len: source.len(), pos: 0, buf: Vec::new(), buf_start: 0, window: window.max(1) },
        name: source.name().to_string(),
    };

    let mut magic = [0u8; 4];
    let head_len = p.cur.len.min(4) as usize;
    source.read_at(0, magic.get_mut(..head_len).unwrap_or(&mut []))?;
    if &magic != MAGIC {
        return Err(FormatError::GgufBadMagic {
            file: p.name,
            magic: show_magic(magic.get(..head_len).unwrap_or(&[])),
        });
    }
    p.cur.pos = 4;
    let version = p.u32(|| "version".into())?;
    if version != 2 && version != 3 {
        return Err(FormatError::GgufUnsupportedVersion { file: p.name, version });
    }
    let at = p.cur.pos;
    let tensor_count = p.u64(|| "tensor count".into())?;
    let kv_count = p.u64(|| "metadata key/value count".into())?;
    // Both lists follow the counts, so each must fit in what is left (a loose but sound bound).
    p.check_count(at, tensor_count, MIN_TENSOR_INFO_BYTES, || "tensor count".into(), "tensor infos")?;
    p.check_limit(at, tensor_count, MAX_TENSORS, || "tensor count".into())?;
    p.check_count(at + 8, kv_count, MIN_KV_BYTES, || "metadata key/value count".into(), "entries")?;

    let mut extra = GgufExtra { version, alignment: DEFAULT_ALIGNMENT, metadata_complete: true, ..Default::default() };
    let mut budget = METADATA_BUDGET;
    for i in 0..kv_count {
        p.read_kv(i, &mut extra, &mut budget)?;
    }

    let mut raw_tensors = Vec::with_capacity(tensor_count.min(4096) as usize);
    let mut seen = HashSet::new();
    for i in 0..tensor_count {
        let t = p.read_tensor_info(i)?;
        if !seen.insert(t.name.clone()) {
            return Err(FormatError::GgufDuplicateTensor { file: p.name, tensor: t.name });
        }
        raw_tensors.push(t);
    }

    let header_end = p.cur.pos;
    let data_start = header_end
        .checked_next_multiple_of(extra.alignment)
        .ok_or_else(|| FormatError::GgufBadAlignment { file: p.name.clone(), alignment: extra.alignment })?;
    extra.data_start = data_start;

    let tensors = p.place_tensors(raw_tensors, data_start, extra.alignment, file)?;
    let vocab_size = if !extra.tokens.is_empty() {
        Some(extra.tokens.len() as u64)
    } else {
        // Some converters record the vocabulary size under `<architecture>.vocab_size` only.
        extra
            .get("general.architecture")
            .and_then(GgufValue::as_str)
            .and_then(|arch| extra.get(&format!("{arch}.vocab_size")))
            .and_then(GgufValue::as_u64)
    };
    Ok((
        ModelInfo {
            format: "gguf".to_string(),
            tensors,
            vocab_size,
            vocab: extra.tokens.clone(),
            split_no: extra.split_no,
            split_count: extra.split_count,
            ..ModelInfo::default()
        },
        extra,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::writers::{gguf_bytes, GgufTensor};
    use crate::read::source::SliceSource;

    #[test]
    fn tiny_windows_parse_the_same_as_large_ones() {
        let data: Vec<u8> = (0..64u32).flat_map(|x| (x as f32).to_le_bytes()).collect();
        let tokens = GgufValue::Array {
            elem: GgufType::Str,
            items: (0..8).map(|i| GgufValue::Str(format!("tok{i}"))).collect(),
        };
        let bytes = gguf_bytes(
            3,
            &[GgufTensor::new("token_embd.weight", DType::F32, &[8, 8], data)],
            &[("general.architecture", GgufValue::Str("llama".into())), ("tokenizer.ggml.tokens", tokens)],
        );
        let src = SliceSource::new("t.gguf", bytes);
        let big = read_gguf(&src, 0).unwrap();
        for w in [1, 2, 3, 7, 13, 64] {
            assert_eq!(read_gguf_windowed(&src, 0, w).unwrap(), big, "window {w}");
        }
        assert_eq!(big.0.vocab_size, Some(8));
    }
}
