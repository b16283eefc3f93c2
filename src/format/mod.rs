//! Model file formats: each turns a header into the same [`TensorInfo`] list, and [`decode`] turns
//! raw row bytes of any supported [`DType`] into `f32`.

pub mod decode;
pub mod safetensors;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::source::{ByteSource, ReadError};

/// Element types found in model files. Names follow safetensors (`F32`, `BF16`, …) and ggml (`Q8_0`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    /// ggml block-quantised types (GGUF): elements per block and bytes per block are fixed.
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    /// A type this build does not know: listed, never decoded.
    Other(String),
}

impl DType {
    /// Parses a safetensors dtype string. Unknown names become [`DType::Other`] so that one exotic
    /// tensor elsewhere in a checkpoint does not stop the embedding from being read.
    pub fn from_safetensors(name: &str) -> DType {
        match name {
            "F64" => DType::F64,
            "F32" => DType::F32,
            "F16" => DType::F16,
            "BF16" => DType::BF16,
            "F8_E4M3" => DType::F8E4M3,
            "F8_E5M2" => DType::F8E5M2,
            "BOOL" => DType::Bool,
            "U8" => DType::U8,
            "I8" => DType::I8,
            "U16" => DType::U16,
            "I16" => DType::I16,
            "U32" => DType::U32,
            "I32" => DType::I32,
            "U64" => DType::U64,
            "I64" => DType::I64,
            other => DType::Other(other.to_string()),
        }
    }

    /// The name as files spell it.
    pub fn name(&self) -> &str {
        match self {
            DType::F64 => "F64",
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F8E4M3 => "F8_E4M3",
            DType::F8E5M2 => "F8_E5M2",
            DType::Bool => "BOOL",
            DType::U8 => "U8",
            DType::I8 => "I8",
            DType::U16 => "U16",
            DType::I16 => "I16",
            DType::U32 => "U32",
            DType::I32 => "I32",
            DType::U64 => "U64",
            DType::I64 => "I64",
            DType::Q4_0 => "Q4_0",
            DType::Q4_1 => "Q4_1",
            DType::Q5_0 => "Q5_0",
            DType::Q5_1 => "Q5_1",
            DType::Q8_0 => "Q8_0",
            DType::Q2K => "Q2_K",
            DType::Q3K => "Q3_K",
            DType::Q4K => "Q4_K",
            DType::Q5K => "Q5_K",
            DType::Q6K => "Q6_K",
            DType::Q8K => "Q8_K",
            DType::Other(s) => s,
        }
    }

    /// (elements per block, bytes per block); plain types are blocks of one element.
    /// `None` for a type whose layout is unknown.
    pub fn block(&self) -> Option<(u64, u64)> {
        Some(match self {
            DType::F64 | DType::U64 | DType::I64 => (1, 8),
            DType::F32 | DType::U32 | DType::I32 => (1, 4),
            DType::F16 | DType::BF16 | DType::U16 | DType::I16 => (1, 2),
            DType::F8E4M3 | DType::F8E5M2 | DType::Bool | DType::U8 | DType::I8 => (1, 1),
            // ggml block layouts (ggml-common.h): QK4_0 = QK8_0 = 32, QK_K = 256.
            DType::Q4_0 => (32, 18),
            DType::Q4_1 => (32, 20),
            DType::Q5_0 => (32, 22),
            DType::Q5_1 => (32, 24),
            DType::Q8_0 => (32, 34),
            DType::Q2K => (256, 84),
            DType::Q3K => (256, 110),
            DType::Q4K => (256, 144),
            DType::Q5K => (256, 176),
            DType::Q6K => (256, 210),
            DType::Q8K => (256, 292),
            DType::Other(_) => return None,
        })
    }

    /// Bytes taken by `elems` elements, or `None` when the count is not a whole number of blocks
    /// or overflows.
    pub fn bytes_for(&self, elems: u64) -> Option<u64> {
        let (per_block, block_bytes) = self.block()?;
        if elems % per_block != 0 {
            return None;
        }
        (elems / per_block).checked_mul(block_bytes)
    }

    /// Whether [`decode::decode_rows`] can turn this type into `f32`.
    pub fn is_float(&self) -> bool {
        !matches!(
            self,
            DType::Bool
                | DType::U8
                | DType::I8
                | DType::U16
                | DType::I16
                | DType::U32
                | DType::I32
                | DType::U64
                | DType::I64
                | DType::Other(_)
        )
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One tensor of a model file, in the terms every format shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    /// Row-major shape, outermost first (GGUF's `ne` order is reversed into this on reading).
    pub shape: Vec<u64>,
    /// Absolute byte range `[start, end)` in its file.
    pub byte_range: (u64, u64),
    /// Index of the file that holds it, in the list of files given.
    pub file: usize,
}

impl TensorInfo {
    /// `(rows, dim)` when the tensor is a matrix.
    pub fn matrix(&self) -> Option<(u64, u64)> {
        match self.shape.as_slice() {
            [rows, dim] => Some((*rows, *dim)),
            _ => None,
        }
    }
}

/// What a format reader found in one or more files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The format, as shown to the user ("safetensors", "gguf", "npy").
    pub format: String,
    pub tensors: Vec<TensorInfo>,
    /// Vocabulary size when the file says so (GGUF tokenizer, config.json).
    pub vocab_size: Option<u64>,
}

/// The safetensors header may not exceed this many bytes (the reference implementation's limit).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// A file that cannot be read as a model. Each variant names what, where and which tensor.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FormatError {
    /// The file is shorter than the smallest possible header.
    #[error("{file}: only {len} bytes long, too short to be a {format} file")]
    TooShort { file: String, format: &'static str, len: u64 },
    /// The file does not start like any supported format.
    #[error("{file}: not a model file Orthoscope can read (starts with bytes {magic}); expected .safetensors, .gguf or .npy")]
    UnknownFormat { file: String, magic: String },
    /// The declared safetensors header is larger than the 100 MB limit.
    #[error("{file}: header claims {len} bytes, more than the {max}-byte limit (corrupt or hostile file)")]
    HeaderTooLarge { file: String, len: u64, max: u64 },
    /// The declared header runs past the end of the file.
    #[error("{file}: header claims {header_len} bytes from offset 8, but the file is only {file_len} bytes long (truncated?)")]
    HeaderPastEof { file: String, header_len: u64, file_len: u64 },
    /// The header is not valid UTF-8 JSON of the expected shape.
    #[error("{file}: header is not valid JSON: {message}")]
    InvalidJson { file: String, message: String },
    /// A tensor entry lacks a field or has one of the wrong type.
    #[error("{file}: tensor '{tensor}': {reason}")]
    InvalidEntry { file: String, tensor: String, reason: String },
    /// The shape and dtype call for a different number of bytes than the offsets give.
    #[error("{file}: tensor '{tensor}': shape {shape:?} of {dtype} needs {expected} bytes but its offsets span {actual}")]
    SizeMismatch { file: String, tensor: String, shape: Vec<u64>, dtype: String, expected: String, actual: u64 },
    /// A tensor's data ends past the end of the file.
    #[error("{file}: tensor '{tensor}' ends at byte {end}, past the end of the file ({file_len} bytes)")]
    PastEof { file: String, tensor: String, end: u64, file_len: u64 },
    /// Start offset after end offset.
    #[error("{file}: tensor '{tensor}' has data_offsets [{start}, {end}], start after end")]
    BadOffsets { file: String, tensor: String, start: u64, end: u64 },
    /// Bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Reads the header of a single model file, choosing the format by its first bytes.
pub fn read_model(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    safetensors::read_header(source, file)
}
