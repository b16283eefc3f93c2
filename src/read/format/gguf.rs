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

// Every reader returns the crate-wide `FormatError` (128 bytes, as the safetensors reader does);
// errors end a file read, so their size never matters for speed.
#![allow(clippy::result_large_err)]

use std::collections::HashSet;

use super::{show_magic, DType, FormatError, ModelInfo, TensorInfo};
use crate::read::source::{ByteSource, ReadError};

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

/// GGUF metadata value types (`gguf_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgufType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    Str,
    Array,
    U64,
    I64,
    F64,
}

impl GgufType {
    /// The type for a file's type id, or `None` for an id GGUF does not define.
    pub fn from_id(id: u32) -> Option<GgufType> {
        use GgufType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => Str,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The id written in files.
    pub fn id(self) -> u32 {
        use GgufType::*;
        match self {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            Str => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    /// Name for messages, as the spec spells it.
    pub fn name(self) -> &'static str {
        use GgufType::*;
        match self {
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            U32 => "uint32",
            I32 => "int32",
            F32 => "float32",
            Bool => "bool",
            Str => "string",
            Array => "array",
            U64 => "uint64",
            I64 => "int64",
            F64 => "float64",
        }
    }

    /// Bytes of one value of a fixed-size type; `None` for strings and arrays.
    fn fixed_size(self) -> Option<u64> {
        use GgufType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            Str | Array => None,
        }
    }

    /// Fewest bytes one value can take (an empty string is its 8-byte length; an empty array its
    /// 4-byte type and 8-byte count).
    fn min_size(self) -> u64 {
        match self {
            GgufType::Str => 8,
            GgufType::Array => 12,
            t => t.fixed_size().unwrap_or(1),
        }
    }
}

/// A metadata value as kept by the reader (and as written by `format::fixtures::gguf_bytes`).
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    /// An array of `elem` values (every item has that type; nested arrays are `Array` items).
    Array {
        elem: GgufType,
        items: Vec<GgufValue>,
    },
    U64(u64),
    I64(i64),
    F64(f64),
    /// An array that was read past without keeping its items: longer than [`MAX_KEPT_ARRAY`]
    /// (merges, scores, token types) or the vocabulary itself, which is in [`GgufExtra::tokens`].
    SkippedArray {
        elem: GgufType,
        len: u64,
    },
}

impl GgufValue {
    /// The value's GGUF type (`Array` for both array variants).
    pub fn value_type(&self) -> GgufType {
        match self {
            GgufValue::U8(_) => GgufType::U8,
            GgufValue::I8(_) => GgufType::I8,
            GgufValue::U16(_) => GgufType::U16,
            GgufValue::I16(_) => GgufType::I16,
            GgufValue::U32(_) => GgufType::U32,
            GgufValue::I32(_) => GgufType::I32,
            GgufValue::F32(_) => GgufType::F32,
            GgufValue::Bool(_) => GgufType::Bool,
            GgufValue::Str(_) => GgufType::Str,
            GgufValue::Array { .. } | GgufValue::SkippedArray { .. } => GgufType::Array,
            GgufValue::U64(_) => GgufType::U64,
            GgufValue::I64(_) => GgufType::I64,
            GgufValue::F64(_) => GgufType::F64,
        }
    }

    /// A non-negative integer of any integer type, as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The string, for a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// What a GGUF header holds beyond the tensor list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GgufExtra {
    /// 2 or 3.
    pub version: u32,
    /// `general.alignment`, or [`DEFAULT_ALIGNMENT`].
    pub alignment: u64,
    /// Absolute offset of the data section (the aligned end of the header).
    pub data_start: u64,
    /// `tokenizer.ggml.tokens`, in token-id order (empty when absent). Invalid UTF-8 is replaced.
    pub tokens: Vec<String>,
    /// `split.no`: this file's index in a split model (0-based), when split.
    pub split_no: Option<u64>,
    /// `split.count`: number of files of a split model.
    pub split_count: Option<u64>,
    /// `split.tensors.count`: tensors across all files of a split model.
    pub split_tensors_count: Option<u64>,
    /// Metadata entries in file order, up to [`METADATA_BUDGET`] bytes.
    pub metadata: Vec<(String, GgufValue)>,
    /// False when the budget ran out and later entries were read past without being recorded.
    pub metadata_complete: bool,
}

impl GgufExtra {
    /// The recorded value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

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

/// A tensor info as written, before its range is placed in the file.
struct RawTensor {
    name: String,
    ne: Vec<u64>,
    ggml_type: u32,
    offset: u64,
}

/// Why a cursor read failed, before the caller names what it was reading.
enum Short {
    Eof { offset: u64 },
    Read(ReadError),
}

/// A forward reader over a [`ByteSource`] that fetches `window` bytes at a time.
struct Cursor<'a> {
    src: &'a dyn ByteSource,
    len: u64,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
    window: usize,
}

impl Cursor<'_> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn read(&mut self, out: &mut [u8]) -> Result<(), Short> {
        if out.len() as u64 > self.remaining() {
            return Err(Short::Eof { offset: self.pos });
        }
        // Large pieces (long strings) go straight from the source rather than through the window.
        if out.len() >= self.window {
            self.src.read_at(self.pos, out).map_err(Short::Read)?;
            self.pos += out.len() as u64;
            return Ok(());
        }
        let mut done = 0;
        while done < out.len() {
            let offset_in_buf = self.pos.checked_sub(self.buf_start).filter(|&o| o < self.buf.len() as u64);
            let start = match offset_in_buf {
                Some(o) => o as usize,
                None => {
                    // remaining() > 0 here, since out.len() - done bytes are known to be left.
                    let n = (self.window as u64).min(self.remaining()) as usize;
                    self.buf.resize(n, 0);
                    self.src.read_at(self.pos, &mut self.buf).map_err(Short::Read)?;
                    self.buf_start = self.pos;
                    0
                }
            };
            let avail = self.buf.get(start..).unwrap_or(&[]);
            let want = out.get_mut(done..).unwrap_or(&mut []);
            let n = avail.len().min(want.len());
            if n == 0 {
                return Err(Short::Eof { offset: self.pos });
            }
            want[..n].copy_from_slice(&avail[..n]);
            done += n;
            self.pos += n as u64;
        }
        Ok(())
    }

    fn skip(&mut self, n: u64) -> Result<(), Short> {
        if n > self.remaining() {
            return Err(Short::Eof { offset: self.pos });
        }
        self.pos += n;
        Ok(())
    }
}

struct Parser<'a> {
    cur: Cursor<'a>,
    name: String,
}

impl Parser<'_> {
    fn short(&self, s: Short, what: String) -> FormatError {
        match s {
            Short::Eof { offset } => {
                FormatError::GgufTruncated { file: self.name.clone(), offset, what, file_len: self.cur.len }
            }
            Short::Read(e) => FormatError::Read(e),
        }
    }

    fn bytes<const N: usize>(&mut self, what: impl FnOnce() -> String) -> Result<[u8; N], FormatError> {
        let mut b = [0u8; N];
        match self.cur.read(&mut b) {
            Ok(()) => Ok(b),
            Err(s) => Err(self.short(s, what())),
        }
    }

    fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, FormatError> {
        self.bytes::<4>(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: impl FnOnce() -> String) -> Result<u64, FormatError> {
        self.bytes::<8>(what).map(u64::from_le_bytes)
    }

    fn skip(&mut self, n: u64, what: impl FnOnce() -> String) -> Result<(), FormatError> {
        self.cur.skip(n).map_err(|s| self.short(s, what()))
    }

    /// Fails unless `count` items of at least `min_bytes` each fit in the rest of the file.
    /// (`what` is only formatted on failure: this runs once per token.)
    fn check_count(
        &self,
        at: u64,
        count: u64,
        min_bytes: u64,
        what: impl FnOnce() -> String,
        unit: &'static str,
    ) -> Result<(), FormatError> {
        let needed = count.checked_mul(min_bytes);
        let available = self.cur.remaining();
        match needed {
            Some(n) if n <= available => Ok(()),
            _ => Err(FormatError::GgufTooLarge {
                file: self.name.clone(),
                offset: at,
                what: what(),
                claimed: count,
                unit,
                needed: needed.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
                available,
            }),
        }
    }

    fn check_limit(&self, at: u64, value: u64, limit: u64, what: impl FnOnce() -> String) -> Result<(), FormatError> {
        if value > limit {
            return Err(FormatError::GgufOverLimit { file: self.name.clone(), offset: at, what: what(), value, limit });
        }
        Ok(())
    }

    /// Reads a string's length and checks it; returns the length.
    fn string_len(&mut self, what: &dyn Fn() -> String) -> Result<u64, FormatError> {
        let at = self.cur.pos;
        let len = self.u64(|| format!("length of {}", what()))?;
        self.check_count(self.cur.pos, len, 1, || format!("length of {}", what()), "bytes")
            .map_err(|e| with_offset(e, at))?;
        self.check_limit(at, len, MAX_STRING_BYTES, || format!("length of {}", what()))?;
        Ok(len)
    }

    /// Reads a string (lossily decoded: ggml does not require UTF-8, and a stray byte in one token
    /// should not make the whole model unreadable).
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String, FormatError> {
        let len = self.string_len(what)?;
        // string_len bounded len by the bytes left in the file and by MAX_STRING_BYTES.
        let mut b = vec![0u8; len as usize];
        self.cur.read(&mut b).map_err(|s| self.short(s, what()))?;
        Ok(match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn skip_string(&mut self, what: &dyn Fn() -> String) -> Result<(), FormatError> {
        let len = self.string_len(what)?;
        self.skip(len, what)
    }

    fn value_type(&mut self, key: &str, what: &dyn Fn() -> String) -> Result<GgufType, FormatError> {
        let at = self.cur.pos;
        let id = self.u32(what)?;
        GgufType::from_id(id).ok_or_else(|| FormatError::GgufBadValueType {
            file: self.name.clone(),
            offset: at,
            key: key.to_string(),
            value_type: id,
        })
    }

    /// Reads one value of type `ty`. Scalars are always returned; strings and arrays only when
    /// `keep` and the metadata budget allow (`None` otherwise, having read past them).
    fn value(
        &mut self,
        key: &str,
        ty: GgufType,
        depth: u64,
        keep: bool,
        budget: &mut usize,
    ) -> Result<Option<GgufValue>, FormatError> {
        let what = || format!("value of key '{key}'");
        Ok(Some(match ty {
            GgufType::U8 => GgufValue::U8(u8::from_le_bytes(self.bytes::<1>(what)?)),
            GgufType::I8 => GgufValue::I8(i8::from_le_bytes(self.bytes::<1>(what)?)),
            GgufType::U16 => GgufValue::U16(u16::from_le_bytes(self.bytes::<2>(what)?)),
            GgufType::I16 => GgufValue::I16(i16::from_le_bytes(self.bytes::<2>(what)?)),
            GgufType::U32 => GgufValue::U32(u32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::I32 => GgufValue::I32(i32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::F32 => GgufValue::F32(f32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::Bool => GgufValue::Bool(self.bytes::<1>(what)?[0] != 0),
            GgufType::U64 => GgufValue::U64(u64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::I64 => GgufValue::I64(i64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::F64 => GgufValue::F64(f64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::Str => {
                let len = self.string_len(&what)?;
                let cost = (len as usize).saturating_add(32);
                if !keep || cost > *budget {
                    self.skip(len, what)?;
                    return Ok(None);
                }
                *budget -= cost;
                let mut b = vec![0u8; len as usize];
                self.cur.read(&mut b).map_err(|s| self.short(s, what()))?;
                GgufValue::Str(String::from_utf8_lossy(&b).into_owned())
            }
            GgufType::Array => return self.array(key, depth, keep, budget),
        }))
    }

    fn array(
        &mut self,
        key: &str,
        depth: u64,
        keep: bool,
        budget: &mut usize,
    ) -> Result<Option<GgufValue>, FormatError> {
        let at = self.cur.pos;
        self.check_limit(at, depth + 1, MAX_DEPTH, || format!("array nesting depth of key '{key}'"))?;
        let elem = self.value_type(key, &|| format!("element type of array '{key}'"))?;
        let count_at = self.cur.pos;
        let len = self.u64(|| format!("element count of array '{key}'"))?;
        self.check_count(self.cur.pos, len, elem.min_size(), || format!("array '{key}'"), "elements")
            .map_err(|e| with_offset(e, count_at))?;
        let what = || format!("elements of array '{key}'");
        let kept = keep && len <= MAX_KEPT_ARRAY && *budget >= 64;
        if !kept {
            match elem.fixed_size() {
                // check_count proved len · size fits in the file, so this cannot overflow.
                Some(size) => self.skip(len.saturating_mul(size), what)?,
                None => {
                    for _ in 0..len {
                        match elem {
                            GgufType::Str => self.skip_string(&what)?,
                            _ => {
                                self.array(key, depth + 1, false, budget)?;
                            }
                        }
                    }
                }
            }
            return Ok(keep.then_some(GgufValue::SkippedArray { elem, len }));
        }
        *budget = budget.saturating_sub(64);
        // len <= MAX_KEPT_ARRAY, so the allocation is small.
        let mut items = Vec::with_capacity(len as usize);
        // Once an item cannot be kept (budget spent), the rest are read past and the array dropped.
        let mut complete = true;
        for _ in 0..len {
            let v = self.value(key, elem, depth + 1, complete, budget)?;
            match v {
                Some(v) if complete && *budget >= 16 => {
                    *budget -= 16;
                    items.push(v);
                }
                _ => complete = false,
            }
        }
        Ok(complete.then_some(GgufValue::Array { elem, items }))
    }

    fn read_kv(&mut self, index: u64, extra: &mut GgufExtra, budget: &mut usize) -> Result<(), FormatError> {
        let key = self.string(&|| format!("key of metadata entry {index}"))?;
        let type_at = self.cur.pos;
        let ty = self.value_type(&key, &|| format!("value type of key '{key}'"))?;
        let wrong = |p: &Self, expected: &'static str, found: String| FormatError::GgufWrongType {
            file: p.name.clone(),
            offset: type_at,
            key: key.clone(),
            expected,
            found,
        };
        let value = match key.as_str() {
            "tokenizer.ggml.tokens" => {
                if ty != GgufType::Array {
                    return Err(wrong(self, "an array of strings", ty.name().to_string()));
                }
                extra.tokens = self.tokens(&key)?;
                Some(GgufValue::SkippedArray { elem: GgufType::Str, len: extra.tokens.len() as u64 })
            }
            _ => {
                let keep = extra.metadata_complete || key == "general.architecture";
                self.value(&key, ty, 0, keep, budget)?
            }
        };
        match key.as_str() {
            "general.alignment" => {
                let a = value
                    .as_ref()
                    .and_then(GgufValue::as_u64)
                    .ok_or_else(|| wrong(self, "an unsigned integer", ty.name().to_string()))?;
                if a == 0 || !a.is_power_of_two() {
                    return Err(FormatError::GgufBadAlignment { file: self.name.clone(), alignment: a });
                }
                extra.alignment = a;
            }
            "split.no" | "split.count" | "split.tensors.count" => {
                let n = value
                    .as_ref()
                    .and_then(GgufValue::as_u64)
                    .ok_or_else(|| wrong(self, "a non-negative integer", ty.name().to_string()))?;
                match key.as_str() {
                    "split.no" => extra.split_no = Some(n),
                    "split.count" => extra.split_count = Some(n),
                    _ => extra.split_tensors_count = Some(n),
                }
            }
            _ => {}
        }
        if extra.metadata_complete {
            match value {
                Some(v) if *budget >= key.len() + 32 => {
                    *budget -= key.len() + 32;
                    extra.metadata.push((key, v));
                }
                _ => extra.metadata_complete = false,
            }
        }
        Ok(())
    }

    /// Reads the `tokenizer.ggml.tokens` array (after its value type) into strings.
    fn tokens(&mut self, key: &str) -> Result<Vec<String>, FormatError> {
        let elem_at = self.cur.pos;
        let elem = self.value_type(key, &|| format!("element type of array '{key}'"))?;
        if elem != GgufType::Str {
            return Err(FormatError::GgufWrongType {
                file: self.name.clone(),
                offset: elem_at,
                key: key.to_string(),
                expected: "an array of strings",
                found: format!("an array of {}", elem.name()),
            });
        }
        let count_at = self.cur.pos;
        let len = self.u64(|| format!("element count of array '{key}'"))?;
        self.check_count(self.cur.pos, len, 8, || format!("array '{key}'"), "strings")
            .map_err(|e| with_offset(e, count_at))?;
        self.check_limit(count_at, len, MAX_TOKENS, || format!("element count of array '{key}'"))?;
        let mut tokens = Vec::with_capacity(len as usize);
        for i in 0..len {
            tokens.push(self.string(&|| format!("token {i} of '{key}'"))?);
        }
        Ok(tokens)
    }

    fn read_tensor_info(&mut self, index: u64) -> Result<RawTensor, FormatError> {
        let name = self.string(&|| format!("name of tensor info {index}"))?;
        let dims_at = self.cur.pos;
        let n_dims = self.u32(|| format!("n_dims of tensor '{name}'"))?;
        self.check_limit(dims_at, n_dims.into(), MAX_DIMS, || format!("n_dims of tensor '{name}'"))?;
        let mut ne = Vec::with_capacity(n_dims as usize);
        for d in 0..n_dims {
            ne.push(self.u64(|| format!("ne[{d}] of tensor '{name}'"))?);
        }
        let ggml_type = self.u32(|| format!("type of tensor '{name}'"))?;
        let offset = self.u64(|| format!("data offset of tensor '{name}'"))?;
        Ok(RawTensor { name, ne, ggml_type, offset })
    }

    /// Turns tensor infos into [`TensorInfo`]s with absolute, checked byte ranges.
    fn place_tensors(
        &self,
        raw: Vec<RawTensor>,
        data_start: u64,
        alignment: u64,
        file: usize,
    ) -> Result<Vec<TensorInfo>, FormatError> {
        let file_len = self.cur.len;
        // Starts of all tensors, sorted: a tensor of unknown type ends where the next one starts.
        let mut starts: Vec<u64> = raw.iter().filter_map(|t| data_start.checked_add(t.offset)).collect();
        starts.sort_unstable();
        let mut out = Vec::with_capacity(raw.len());
        for t in raw {
            let dtype = dtype_from_ggml(t.ggml_type);
            let bad_shape = |reason: String| FormatError::GgufBadShape {
                file: self.name.clone(),
                tensor: t.name.clone(),
                ne: t.ne.clone(),
                dtype: dtype.name().to_string(),
                reason,
            };
            let past_eof =
                |end: u64| FormatError::PastEof { file: self.name.clone(), tensor: t.name.clone(), end, file_len };
            // ggml places every tensor at a multiple of the alignment and refuses files that do not.
            if !t.offset.is_multiple_of(alignment) {
                return Err(FormatError::GgufMisalignedTensor {
                    file: self.name.clone(),
                    tensor: t.name.clone(),
                    offset: t.offset,
                    alignment,
                });
            }
            let start = data_start.checked_add(t.offset).ok_or_else(|| past_eof(u64::MAX))?;
            let end = match dtype.block() {
                Some((per_block, _)) => {
                    // ggml requires each row (ne[0]) to be whole blocks; rows are decoded alone.
                    let row = t.ne.first().copied().unwrap_or(1);
                    if row % per_block != 0 {
                        return Err(bad_shape(format!(
                            "ne[0] = {row} is not a multiple of the {per_block}-element block"
                        )));
                    }
                    let elems =
                        t.ne.iter()
                            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                            .ok_or_else(|| bad_shape("the element count overflows 64 bits".to_string()))?;
                    let bytes = dtype
                        .bytes_for(elems)
                        .ok_or_else(|| bad_shape("the byte count overflows 64 bits".to_string()))?;
                    start.checked_add(bytes).ok_or_else(|| past_eof(u64::MAX))?
                }
                // Unknown layout: listed (and refused if analysed), spanning up to the next tensor.
                None => starts.iter().copied().find(|&s| s > start).unwrap_or(file_len).max(start),
            };
            if end > file_len {
                return Err(past_eof(end));
            }
            // ggml lists ne innermost first; TensorInfo is row-major, outermost first.
            let shape: Vec<u64> = t.ne.iter().rev().copied().collect();
            out.push(TensorInfo {
                name: t.name,
                dtype,
                shape,
                byte_range: (start, end),
                file,
                layout: Default::default(),
            });
        }
        Ok(out)
    }
}

/// Sets the offset reported by a [`FormatError::GgufTooLarge`] to where the count field starts.
fn with_offset(e: FormatError, at: u64) -> FormatError {
    match e {
        FormatError::GgufTooLarge { file, what, claimed, unit, needed, available, .. } => {
            FormatError::GgufTooLarge { file, offset: at, what, claimed, unit, needed, available }
        }
        other => other,
    }
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
