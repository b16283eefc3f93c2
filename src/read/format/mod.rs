//! Model file formats: each turns a header into the same [`TensorInfo`] list, and [`decode`] turns
//! raw row bytes of any supported [`DType`] into `f32`.

pub mod decode;
pub mod ggml;
#[rustfmt::skip]
pub mod ggml_grids;
pub mod ggml_iq;
pub mod gguf;
pub mod mlx;
pub mod npy;
pub mod npz;
pub mod onnx;
pub mod pickle;
pub mod safetensors;
pub mod set;
pub mod sniff;
pub mod torch;
pub mod zip;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::read::source::{ByteSource, ReadError};

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
    /// ggml's lattice (IQ), ternary (TQ) and microscaling (MXFP4) block types.
    IQ2XXS,
    IQ2XS,
    IQ3XXS,
    IQ1S,
    IQ4NL,
    IQ3S,
    IQ2S,
    IQ4XS,
    IQ1M,
    TQ1_0,
    TQ2_0,
    MXFP4,
    /// MLX's affine quantisation (`mlx`): packed values with a scale and bias a group, read as
    /// one [`Layout::Interleave`] view of the three stored tensors.
    MlxAffine(mlx::Affine),
    /// Signed bytes q read as `(q − zero_point) · scale` (an ONNX int8 initializer dequantised by
    /// `DequantizeLinear` with a per-tensor scale). The f32 scale is kept as its bits so the type
    /// stays `Eq`.
    I8Affine {
        scale_bits: u32,
        zero_point: i32,
    },
    /// Unsigned bytes q read as `(q − zero_point) · scale` (ONNX uint8 with `DequantizeLinear`).
    U8Affine {
        scale_bits: u32,
        zero_point: i32,
    },
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
            DType::IQ2XXS => "IQ2_XXS",
            DType::IQ2XS => "IQ2_XS",
            DType::IQ3XXS => "IQ3_XXS",
            DType::IQ1S => "IQ1_S",
            DType::IQ4NL => "IQ4_NL",
            DType::IQ3S => "IQ3_S",
            DType::IQ2S => "IQ2_S",
            DType::IQ4XS => "IQ4_XS",
            DType::IQ1M => "IQ1_M",
            DType::TQ1_0 => "TQ1_0",
            DType::TQ2_0 => "TQ2_0",
            DType::MXFP4 => "MXFP4",
            DType::MlxAffine(a) => a.name(),
            DType::I8Affine { .. } => "int8 (DequantizeLinear)",
            DType::U8Affine { .. } => "uint8 (DequantizeLinear)",
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
            DType::F8E4M3
            | DType::F8E5M2
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I8Affine { .. }
            | DType::U8Affine { .. } => (1, 1),
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
            // gguf-py's GGML_QUANT_SIZES; QK4_NL = QK_MXFP4 = 32.
            DType::IQ2XXS => (256, 66),
            DType::IQ2XS => (256, 74),
            DType::IQ3XXS => (256, 98),
            DType::IQ1S => (256, 50),
            DType::IQ4NL => (32, 18),
            DType::IQ3S => (256, 110),
            DType::IQ2S => (256, 82),
            DType::IQ4XS => (256, 136),
            DType::IQ1M => (256, 56),
            DType::TQ1_0 => (256, 54),
            DType::TQ2_0 => (256, 66),
            DType::MXFP4 => (32, 17),
            DType::MlxAffine(a) => a.block(),
            DType::Other(_) => return None,
        })
    }

    /// Bytes taken by `elems` elements, or `None` when the count is not a whole number of blocks
    /// or overflows.
    pub fn bytes_for(&self, elems: u64) -> Option<u64> {
        let (per_block, block_bytes) = self.block()?;
        if !elems.is_multiple_of(per_block) {
            return None;
        }
        (elems / per_block).checked_mul(block_bytes)
    }

    /// Whether the stored values are quantised (ggml's block types, MLX's affine groups, ONNX's
    /// DequantizeLinear): ε is then that of the quantised weights, not of the model as trained.
    pub fn is_quantised(&self) -> bool {
        ggml::is_quantised(self)
            || matches!(self, DType::MlxAffine(_) | DType::I8Affine { .. } | DType::U8Affine { .. })
    }

    /// Whether bytes that are all zero decode to a zero row ([`decode::all_zero`] lets the pass
    /// skip them): true of every type but an affine one with a zero point other than 0.
    pub fn zero_bytes_are_zero(&self) -> bool {
        !matches!(self, DType::I8Affine { zero_point, .. } | DType::U8Affine { zero_point, .. } if *zero_point != 0)
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

/// Whether a type's name, as [`DType::name`] spells it, is a quantised type's: a report (and a
/// permalink, which carries the name only) says so beside ε.
pub fn quantised_name(name: &str) -> bool {
    let ggml = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q8_K", "MXFP4"];
    ggml.contains(&name)
        || (name.starts_with('Q') && name.ends_with("_K"))
        || name.starts_with("IQ")
        || name.starts_with("TQ")
        || name.starts_with("mlx-")
        || name.contains("DequantizeLinear")
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
    /// How the tensor's bytes are laid out in `file`: one contiguous range (every format's plain
    /// case), or a view that [`crate::read::layout::tensor_source`] opens over the files, in whose
    /// coordinates `byte_range` then is.
    #[serde(default)]
    pub layout: Layout,
}

/// Where a tensor's bytes are, when they are not `byte_range` of `file` as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// `byte_range` of `file`, as stored.
    #[default]
    Contiguous,
    /// A deflate stream (a zip member of method 8) at `[start, end)` of `file`, which inflates to
    /// `inflated_len` bytes; `byte_range` is in the inflated member's coordinates.
    Deflate { start: u64, end: u64, inflated_len: u64 },
    /// Rows assembled from several stored tensors, block by block: row r of the view is, for each
    /// block j of the row in turn, `chunk_bytes` bytes of every part's row r (bytes
    /// `[j·chunk_bytes, (j+1)·chunk_bytes)` of the part's row, which starts at
    /// `start + r·row_bytes` of the part's file). `byte_range` is `(0, rows · Σ row_bytes)`.
    /// MLX's quantised weights: packed values, scales and biases of one group side by side.
    Interleave { parts: Vec<InterleavePart> },
    /// A stored `[stored_rows, stored_cols]` matrix of one value per element read by its columns:
    /// row f of the view is column f of the stored matrix (a sparse autoencoder's decoder that keeps
    /// its features in columns, `read::dictionary`). The stored matrix starts at `start` of `file`
    /// as `inner` lays it out; `byte_range` is `(0, stored_rows · stored_cols · elem_bytes)`.
    Transposed { start: u64, stored_rows: u64, stored_cols: u64, elem_bytes: u64, inner: Box<Layout> },
}

/// One stored tensor of a [`Layout::Interleave`] view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterleavePart {
    /// Its name, for messages.
    pub tensor: String,
    pub file: usize,
    /// Absolute offset of its first row.
    pub start: u64,
    pub row_bytes: u64,
    /// Bytes of one block of a row (`row_bytes` is a whole number of them; every part of a view has
    /// the same number of blocks per row).
    pub chunk_bytes: u64,
}

impl Layout {
    pub fn is_contiguous(&self) -> bool {
        matches!(self, Layout::Contiguous)
    }
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

/// What side files say of the input embedding's shape: how [`crate::read::locate`] recognises an
/// unnamed matrix, never a reason to read more bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeHints {
    /// d_model, from config.json (`hidden_size`, `n_embd` or `d_model`).
    pub hidden_size: Option<u64>,
    /// config.json's `tie_word_embeddings`: the output matrix is the input embedding.
    pub tied: Option<bool>,
    /// Tokens of a dropped tokenizer.json. Checkpoints pad the embedding to a multiple of 64 or
    /// 128 rows, so it has at least this many rows, and up to ~1000 more.
    pub tokenizer_tokens: Option<u64>,
}

/// The input embedding as a model's graph names it (ONNX: the data input of the `Gather` that
/// reads `input_ids`), which [`crate::read::locate`] takes before any name rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingHint {
    /// The tensor's name, as in `ModelInfo::tensors`.
    pub tensor: String,
    /// Why it is the embedding, in words for the report.
    pub reason: String,
}

/// A tensor whose bytes are in another file (ONNX external data): its `TensorInfo::byte_range`
/// is in that file, and [`set`] finds the file among those given by `location`'s base name and
/// sets `TensorInfo::file`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalData {
    pub tensor: String,
    /// The file as the model names it, relative to the model's folder.
    pub location: String,
}

/// What a format reader found in one or more files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The format, as shown to the user ("safetensors", "gguf", "npy").
    pub format: String,
    pub tensors: Vec<TensorInfo>,
    /// Vocabulary size when the file says so (GGUF tokenizer, config.json).
    pub vocab_size: Option<u64>,
    /// What a dropped config.json or tokenizer.json says of the embedding's shape.
    #[serde(default)]
    pub hints: ShapeHints,
    /// The tokens themselves when the file carries them (GGUF `tokenizer.ggml.tokens`), kept for
    /// views that name tokens; never sent with the tensor list.
    #[serde(default, skip_serializing)]
    pub vocab: Vec<String>,
    /// GGUF `split.no` (0-based) and `split.count` when the file says so: checked against each other
    /// and the file names when parts of a split are read together.
    #[serde(default, skip_serializing)]
    pub split_no: Option<u64>,
    #[serde(default, skip_serializing)]
    pub split_count: Option<u64>,
    /// The input embedding as the model's graph names it (ONNX), consulted before names.
    #[serde(default)]
    pub embedding_hint: Option<EmbeddingHint>,
    /// The sparse-autoencoder dictionary the files are, when they are one (`read::dictionary`):
    /// its decoder is analysed instead of an input embedding.
    #[serde(default)]
    pub dictionary: Option<crate::read::dictionary::Dictionary>,
    /// Tensors whose bytes are in another file, still to be placed by [`set`] (ONNX external
    /// data); empty once a set is read.
    #[serde(default)]
    pub external: Vec<ExternalData>,
    /// Entries that may hold tensors but cannot be read in place (a PyTorch checkpoint's
    /// non-contiguous view, an object of a class Orthoscope does not rebuild), with the reason:
    /// named when the user or the embedding's name asks for one of them.
    #[serde(default)]
    pub skipped: Vec<SkippedTensor>,
}

/// A tensor (or an entry that may hold tensors) a format reader found but cannot read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedTensor {
    /// Its name, as it would be listed.
    pub name: String,
    /// Why it cannot be read, and what to do.
    pub reason: String,
}

/// Why rows could not be decoded.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DecodeError {
    /// The element type is not a floating-point type Orthoscope decodes.
    #[error("dtype {0} cannot be analysed: Orthoscope reads F32, F16, BF16, F64, F8_E4M3, F8_E5M2 (and ggml quantised types in GGUF, ONNX int8/uint8 with a per-tensor DequantizeLinear)")]
    Unsupported(String),
    /// The byte count does not match the row count (a bug in the caller, reported rather than panicking).
    #[error("internal: {got} bytes given for {rows} rows of {dim} {dtype} elements")]
    Length { got: usize, rows: usize, dim: usize, dtype: String },
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
    #[error("{file}: not a model file Orthoscope can read (starts with bytes {magic}); expected .safetensors, .gguf, .npy or .onnx")]
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
    #[error(
        "{file}: tensor '{tensor}': shape {shape:?} of {dtype} needs {expected} bytes but its offsets span {actual}"
    )]
    SizeMismatch { file: String, tensor: String, shape: Vec<u64>, dtype: String, expected: String, actual: u64 },
    /// A tensor's data ends past the end of the file.
    #[error("{file}: tensor '{tensor}' ends at byte {end}, past the end of the file ({file_len} bytes)")]
    PastEof { file: String, tensor: String, end: u64, file_len: u64 },
    /// Start offset after end offset.
    #[error("{file}: tensor '{tensor}' has data_offsets [{start}, {end}], start after end")]
    BadOffsets { file: String, tensor: String, start: u64, end: u64 },
    /// A safetensors `__metadata__` value that is not a string (the format allows only a map of
    /// strings to strings, and the reference reader refuses anything else).
    #[error("{file}: __metadata__ entry '{key}' is {found}, but safetensors metadata maps strings to strings only (the safetensors library refuses this file too; rewrite it with string values)")]
    MetadataNotString { file: String, key: String, found: &'static str },
    /// Two safetensors tensors share bytes (the format requires each to start where the previous ends).
    #[error("{file}: tensors '{first}' (data_offsets [{}, {}]) and '{second}' (data_offsets [{}, {}]) overlap; in a safetensors file each tensor's bytes start where the previous one's end (corrupt or hostile file)", .first_offsets.0, .first_offsets.1, .second_offsets.0, .second_offsets.1)]
    OffsetsOverlap {
        file: String,
        first: String,
        first_offsets: (u64, u64),
        second: String,
        second_offsets: (u64, u64),
    },
    /// Bytes of a safetensors data section that no tensor covers (the format requires the tensors
    /// to tile it exactly, up to the end of the file).
    #[error("{file}: bytes [{start}, {end}) of the data section belong to no tensor ({between}); a safetensors file's tensors must cover its data section exactly (a truncated rewrite, or a corrupt or hostile file)")]
    OffsetsGap { file: String, start: u64, end: u64, between: String },
    /// The file does not start with the GGUF magic (only when the GGUF reader is called directly).
    #[error("{file}: not a GGUF file (starts with bytes {magic}, expected \"GGUF\")")]
    GgufBadMagic { file: String, magic: String },
    /// A GGUF version other than 2 or 3 (1 is the 2023 pre-release layout with 32-bit counts).
    #[error("{file}: GGUF version {version} is not supported; Orthoscope reads versions 2 and 3{}", gguf_version_hint(*.version))]
    GgufUnsupportedVersion { file: String, version: u32 },
    /// The GGUF header ends inside a field: the file is shorter than its header.
    #[error(
        "{file}: GGUF header truncated: {what} at offset {offset} runs past the end of the file ({file_len} bytes)"
    )]
    GgufTruncated { file: String, offset: u64, what: String, file_len: u64 },
    /// A metadata value type id that GGUF does not define (valid ids are 0–12).
    #[error("{file}: metadata key '{key}' at offset {offset} has unknown GGUF value type {value_type} (valid: 0–12)")]
    GgufBadValueType { file: String, offset: u64, key: String, value_type: u32 },
    /// A string length or element count that cannot fit in what remains of the file.
    #[error("{file}: {what} at offset {offset} declares {claimed} {unit}, needing at least {needed} bytes, but only {available} bytes remain in the file (corrupt or hostile file)")]
    GgufTooLarge {
        file: String,
        offset: u64,
        what: String,
        claimed: u64,
        unit: &'static str,
        needed: String,
        available: u64,
    },
    /// A count, length or nesting depth beyond a fixed sanity limit of the GGUF reader.
    #[error(
        "{file}: {what} at offset {offset} is {value}, over this reader's limit of {limit} (corrupt or hostile file)"
    )]
    GgufOverLimit { file: String, offset: u64, what: String, value: u64, limit: u64 },
    /// A metadata key Orthoscope interprets holds a value of the wrong type.
    #[error("{file}: metadata key '{key}' at offset {offset} should be {expected} but is {found}")]
    GgufWrongType { file: String, offset: u64, key: String, expected: &'static str, found: String },
    /// `general.alignment` is zero or not a power of two.
    #[error("{file}: general.alignment is {alignment}; it must be a non-zero power of two")]
    GgufBadAlignment { file: String, alignment: u64 },
    /// A tensor's ggml shape does not fit its type: a row that is not a whole number of blocks, or
    /// an element count that overflows.
    #[error("{file}: tensor '{tensor}': ggml shape ne={ne:?} of type {dtype}: {reason}")]
    GgufBadShape { file: String, tensor: String, ne: Vec<u64>, dtype: String, reason: String },
    /// A tensor's data offset is not a multiple of `general.alignment` (ggml's `gguf_init_from_file`
    /// refuses such a file: "tensor '%s' has offset %llu, expected a multiple of %zu").
    #[error("{file}: tensor '{tensor}' has offset {offset}, expected a multiple of general.alignment = {alignment} (a corrupt or hand-edited GGUF header; ggml refuses it too)")]
    GgufMisalignedTensor { file: String, tensor: String, offset: u64, alignment: u64 },
    /// Two GGUF tensor infos share a name, so the embedding could not be told apart.
    #[error("{file}: tensor '{tensor}' is listed twice in the GGUF header")]
    GgufDuplicateTensor { file: String, tensor: String },
    /// The file does not start with the .npy magic (only when the npy reader is called directly).
    #[error("{file}: not a .npy file (starts with bytes {magic}, expected \\x93NUMPY)")]
    NpyBadMagic { file: String, magic: String },
    /// A .npy format version other than 1.0, 2.0 or 3.0.
    #[error("{file}: .npy format version {major}.{minor} is not supported; Orthoscope reads 1.0, 2.0 and 3.0")]
    NpyUnsupportedVersion { file: String, major: u8, minor: u8 },
    /// The .npy preamble or header runs past the end of the file.
    #[error(
        "{file}: .npy header truncated: {what} at offset {offset} runs past the end of the file ({file_len} bytes)"
    )]
    NpyTruncated { file: String, offset: u64, what: String, file_len: u64 },
    /// The .npy header is not the Python dict literal numpy writes.
    #[error("{file}: .npy header is not a valid numpy header dict: {reason}")]
    NpyBadHeader { file: String, reason: String },
    /// The array is stored in Fortran (column-major) order, so a token's row is not contiguous.
    #[error("{file}: the array is stored in Fortran order (fortran_order: True); save it in C order, e.g. np.save(path, np.ascontiguousarray(arr))")]
    NpyFortranOrder { file: String },
    /// The .npy element type is not one Orthoscope decodes.
    #[error("{file}: .npy dtype '{descr}' is not supported; Orthoscope reads little-endian floats '<f4', '<f2', '<f8' (convert with arr.astype('<f4'))")]
    NpyUnsupportedDtype { file: String, descr: String },
    /// A JSON side file (shard index, config.json) is larger than [`crate::read::source::MAX_JSON_BYTES`].
    #[error("{file}: {len} bytes, more than the {max}-byte limit for a JSON index or config file (corrupt or not what its name says)")]
    JsonTooLarge { file: String, len: u64, max: u64 },
    /// A `*.safetensors.index.json` is not valid JSON or lacks a `weight_map` of tensor → file names.
    #[error("{file}: not a valid shard index: {reason}")]
    InvalidIndex { file: String, reason: String },
    /// A shard index names more tensors or shard files than [`set::MAX_INDEX_ENTRIES`] /
    /// [`set::MAX_INDEX_SHARDS`] allow.
    #[error(
        "{file}: the shard index names more than {limit} {what}, over this reader's limit (corrupt or hostile file)"
    )]
    IndexOverLimit { file: String, what: &'static str, limit: u64 },
    /// A `config.json` among the files is not valid JSON.
    #[error("{file}: not a valid config.json: {reason}")]
    InvalidConfig { file: String, reason: String },
    /// More than one shard index among the files, so it is unclear which model they describe.
    #[error("several shard indexes among the files given ({files}); give the files of one model")]
    SeveralIndexes { files: String },
    /// Two parts of one split model state different numbers of parts in their names.
    #[error("{first} says the model has {first_count} parts but {second} says {second_count}: these parts come from different splits of the model; give the parts of one")]
    SplitCountsDisagree { first: String, first_count: u64, second: String, second_count: u64 },
    /// Two parts of one split GGUF model carry different `split.count` metadata.
    #[error("{first} has split.count = {first_count} but {second} has split.count = {second_count}: these parts come from different splits of the model; give the parts of one")]
    SplitCountMetadataDisagree { first: String, first_count: u64, second: String, second_count: u64 },
    /// A split GGUF part's `split.count` metadata differs from the N of its `-0000k-of-0000N` name.
    #[error("{file}: split.count = {count} in its metadata, but its name says {name_count} parts (a renamed part, or a part of another split); rename it to what its metadata says or give the right part")]
    SplitCountMismatchesName { file: String, count: u64, name_count: u64 },
    /// A split GGUF part's `split.no` metadata (0-based) is not its name's k − 1 (llama.cpp refuses
    /// it: "invalid split file idx").
    #[error("{file}: split.no = {no} in its metadata makes it part {} of the split, but its name says part {name_no} (a renamed part); rename it to what its metadata says", .no.saturating_add(1))]
    SplitNoMismatchesName { file: String, no: u64, name_no: u64 },
    /// Two files given share the base name of a shard the index names, so either could be meant.
    #[error("two files named {name} were given ({first} and {second}); the index names one shard of that name, give only one")]
    DuplicateFile { name: String, first: String, second: String },
    /// The index assigns a tensor to a shard whose header does not list it (a shard of another
    /// model or another revision).
    #[error("{index} puts tensor '{tensor}' in {shard}, but the header of {shard} has no such tensor (is that shard from another model or revision?)")]
    ShardLacksTensor { index: String, tensor: String, shard: String },
    /// Without an index, two files hold a tensor of the same name: a stray duplicate shard, or
    /// files of two different models.
    #[error("tensor '{tensor}' is in both {first} and {second}; give the files of one model only (or add its *.safetensors.index.json)")]
    DuplicateTensor { tensor: String, first: String, second: String },
    /// Without an index, the model files are of different formats (e.g. a .gguf and a .safetensors).
    #[error("the files given are of different formats ({files}); give the files of one model only")]
    MixedFormats { files: String },
    /// Several files were given and none of them is a model file.
    #[error(
        "none of the files given is a model file Orthoscope reads (.safetensors, .gguf, .npy, .onnx); ignored: {ignored}"
    )]
    NoModelFiles { ignored: String },
    /// The file is of a kind Orthoscope does not read (a PyTorch checkpoint, an archive, a web page,
    /// a Git LFS pointer, …), recognised by its first bytes; `advice` says what to do instead.
    #[error("{file} is {kind}: {advice}")]
    Foreign { file: String, kind: sniff::ForeignKind, advice: String },
    /// An ONNX file ends inside a field: it is shorter than its protobuf says.
    #[error("{file}: ONNX file truncated: {what} at offset {offset} runs past the end of the file ({file_len} bytes); download it again")]
    OnnxTruncated { file: String, offset: u64, what: String, file_len: u64 },
    /// An ONNX file is not a valid protobuf `ModelProto` at some offset.
    #[error("{file}: not a valid ONNX model: {what} at offset {offset}: {reason} (corrupt, or not an ONNX file)")]
    OnnxMalformed { file: String, offset: u64, what: String, reason: String },
    /// A count or length beyond a fixed sanity limit of the ONNX reader.
    #[error(
        "{file}: {what} at offset {offset} is {value}, over this reader's limit of {limit} (corrupt or hostile file)"
    )]
    OnnxOverLimit { file: String, offset: u64, what: String, value: u64, limit: u64 },
    /// An ONNX model without a graph: nothing holds tensors.
    #[error("{file}: an ONNX model with no graph, so no initializers to read (is it an ONNX file?)")]
    OnnxNoGraph { file: String },
    /// An ONNX initializer whose fields contradict each other (its data does not fit its dims, an
    /// external-data entry that is not a number, a name listed twice).
    #[error("{file}: ONNX initializer '{tensor}' (at offset {offset}) {reason}")]
    OnnxBadTensor { file: String, tensor: String, offset: u64, reason: String },
    /// An ONNX external-data location that does not name a file beside the model.
    #[error("{file}: ONNX initializer '{tensor}' keeps its data in '{location}', which Orthoscope does not open: {why}; external data must be a file in the model's folder")]
    OnnxExternalPath { file: String, tensor: String, location: String, why: String },
    /// An `.npz` member compressed other than stored or deflated (`np.savez` writes only these).
    #[error("{file}: member '{member}' uses zip compression method {method}; Orthoscope reads stored (0) and deflated (8) members: re-save with np.savez or np.savez_compressed")]
    NpzUnsupportedMethod { file: String, member: String, method: u16 },
    /// A stored `.npz` member whose compressed and uncompressed sizes differ.
    #[error("{file}: member '{member}' is stored (not compressed) but its zip entry gives {compressed} compressed and {uncompressed} uncompressed bytes; the archive is damaged: save it again")]
    NpzStoredSizes { file: String, member: String, compressed: u64, uncompressed: u64 },
    /// No zip end of central directory record in the file's last 64 KiB + 22 bytes.
    #[error("{file}: no zip end of central directory record in the last 65 557 bytes of its {file_len}; the archive is truncated (download it again) or not a zip")]
    ZipNoEndRecord { file: String, file_len: u64 },
    /// A zip record runs past the end of the file.
    #[error("{file}: zip {what} at offset {offset} runs past the end of the file ({file_len} bytes); the archive is truncated or corrupt, download it again")]
    ZipTruncated { file: String, what: String, offset: u64, file_len: u64 },
    /// A zip record does not start with its signature.
    #[error("{file}: no zip {what} signature at offset {offset} (corrupt archive, or data prepended to it)")]
    ZipBadSignature { file: String, what: String, offset: u64 },
    /// A count or length of the zip's records beyond a fixed sanity limit of the zip reader.
    #[error("{file}: zip {what} (record at offset {offset}) is {value}, over this reader's limit of {limit} (corrupt or hostile archive)")]
    ZipOverLimit { file: String, what: String, offset: u64, value: u64, limit: u64 },
    /// The central directory's place, as the end record gives it, is not inside the file.
    #[error("{file}: the zip central directory ({size} bytes at offset {offset}) does not end before its end record at {end} (corrupt archive)")]
    ZipDirectoryOutOfBounds { file: String, offset: u64, size: u64, end: u64 },
    /// An archive split over several disks.
    #[error("{file}: the zip end record at offset {offset} says the archive spans several disks; join the parts into one zip")]
    ZipMultiDisk { file: String, offset: u64 },
    /// An encrypted zip member.
    #[error("{file}: zip entry '{entry}' is encrypted; extract it with its password and give the files inside")]
    ZipEncrypted { file: String, entry: String },
    /// A zip member's data runs past the end of the file.
    #[error("{file}: zip entry '{entry}': {size} bytes of data from offset {offset} run past the end of the file ({file_len} bytes); the archive is truncated, download it again")]
    ZipEntryPastEof { file: String, entry: String, offset: u64, size: u64, file_len: u64 },
    /// A pickle stream (a torch checkpoint's `data.pkl`) ends inside an opcode or before `STOP`.
    #[error("{file}: the pickle ends inside {what} at offset {offset} ({len} bytes in all); the checkpoint is truncated or corrupt, save or download it again")]
    PickleTruncated { file: String, what: String, offset: u64, len: u64 },
    /// A count, length or depth of a pickle beyond a fixed sanity limit of the pickle parser.
    #[error("{file}: pickle {what} at offset {offset} is {value}, over this reader's limit of {limit} (corrupt or hostile file; nothing in it was run)")]
    PickleOverLimit { file: String, what: String, offset: u64, value: u64, limit: u64 },
    /// An opcode the pickle parser does not read (protocol 0/1 text opcodes, or not a pickle opcode).
    #[error("{file}: pickle opcode 0x{opcode:02x} at offset {offset} is not one torch.save writes (protocols 2–5); re-save the checkpoint with a current torch.save")]
    PickleBadOpcode { file: String, offset: u64, opcode: u8 },
    /// A pickle whose opcodes do not fit together (a stack underflow, a SETITEM on a list, a memo
    /// key never stored, …).
    #[error("{file}: malformed pickle at offset {offset}: {reason} (corrupt or hostile file; nothing in it was run)")]
    PickleMalformed { file: String, offset: u64, reason: String },
    /// A torch checkpoint saved on a big-endian machine (`<archive>/byteorder` says `big`).
    #[error("{file}: the checkpoint was saved big-endian ({entry} says \"big\"); Orthoscope reads little-endian data: load it with torch and save it again on a little-endian machine (x86, ARM)")]
    TorchBigEndian { file: String, entry: String },
    /// A torch checkpoint's `data.pkl` is compressed with a method other than deflate, or larger
    /// than [`pickle::MAX_PICKLE_BYTES`] once inflated.
    #[error("{file}: {entry}: {reason}")]
    TorchBadPickleEntry { file: String, entry: String, reason: String },
    /// The checkpoint's top-level object is built by a class Orthoscope does not rebuild (nothing
    /// of it was run), so no tensor can be found in it.
    #[error("{file}: the checkpoint holds {global}, which Orthoscope does not rebuild (it never runs code from a pickle); save a state dict instead: torch.save(model.state_dict(), path)")]
    TorchUnreadable { file: String, global: String },
    /// Bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Extra words for [`FormatError::GgufUnsupportedVersion`]: why a version is refused.
fn gguf_version_hint(version: u32) -> &'static str {
    if version == 1 {
        " (version 1 is the 2023 pre-release layout; re-convert the model with a current llama.cpp)"
    } else if matches!(version.swap_bytes(), 2 | 3) {
        " (this is a big-endian GGUF, which Orthoscope does not read)"
    } else {
        ""
    }
}

/// Reads the header of a single model file, choosing the format by its first bytes: a zip →
/// [`zip_model`] (a PyTorch checkpoint), `GGUF` →
/// [`gguf`], `\x93NUMPY` → [`npy`], a plausible safetensors length followed by `{` →
/// [`safetensors`], and by its name: a `.onnx` that sniff does not call foreign → [`onnx`].
/// Anything else is first looked at by [`sniff`], so that a PyTorch checkpoint, an
/// archive, a web page or a Git LFS pointer is named as such instead of being read as a
/// safetensors length; what sniff does not recognise goes to [`safetensors`], whose own errors
/// stand.
pub fn read_model(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    let len = source.len();
    // Enough for the magics and a safetensors length plus `{`; sniff reads its own longer prefix
    // only for files that are none of these.
    let mut buf = [0u8; 9];
    let n = len.min(buf.len() as u64) as usize;
    let head = buf.get_mut(..n).unwrap_or(&mut []);
    source.read_at(0, head)?;
    let onnx_name = source.name().to_ascii_lowercase().ends_with(".onnx");
    if zip::is_zip(head) {
        if let Some(info) = zip_model(source, file)? {
            return Ok(info);
        }
    }
    if head.starts_with(gguf::MAGIC) {
        gguf::read_gguf(source, file).map(|(info, _)| info)
    } else if head.starts_with(npy::MAGIC) {
        npy::read_header(source, file)
    } else if plausible_safetensors(head, len) {
        safetensors::read_header(source, file)
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        read_zip(source, file)
    } else {
        // A protobuf has no magic: only a `.onnx` name makes it one (sniff's ONNX pattern under
        // another name is refused with that advice). A `.onnx` that is an LFS pointer or a web
        // page still gets sniff's word for it.
        match sniff::sniff_source(source)? {
            None | Some(FormatError::Foreign { kind: sniff::ForeignKind::Onnx, .. }) if onnx_name => {
                return onnx::read_onnx(source, file)
            }
            Some(error) => return Err(error),
            None => {}
        }
        // A name that says GGUF or .npy is believed over the safetensors fallback: a damaged magic
        // then reads "not a GGUF file", not "header claims 14165034823 bytes" (found by the corpus).
        let name = source.name().to_ascii_lowercase();
        if name.ends_with(".gguf") {
            Err(FormatError::GgufBadMagic { file: source.name().to_string(), magic: show_magic(head) })
        } else if name.ends_with(".npy") {
            Err(FormatError::NpyBadMagic { file: source.name().to_string(), magic: show_magic(head) })
        } else {
            safetensors::read_header(source, file)
        }
    }
}

/// A zip archive that [`zip_model`] does not read: named by [`sniff`], with why an `.npz` whose
/// directory cannot be read was not read.
fn read_zip(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    match zip::read_entries(source) {
        Ok(_) => {
            sniff::check(source)?;
            safetensors::read_header(source, file)
        }
        Err(error) => match sniff::sniff_source(source)? {
            Some(FormatError::Foreign { file, kind: kind @ sniff::ForeignKind::Npz, advice }) => {
                Err(FormatError::Foreign { file, kind, advice: format!("it cannot be read ({error}); {advice}") })
            }
            Some(foreign) => Err(foreign),
            None => Err(error),
        },
    }
}

/// A zip archive read as the model format its entries say: a PyTorch checkpoint when it has an
/// `<archive>/data.pkl`, an `.npz` when its members are `.npy` files. `None` when it is neither,
/// or its central directory cannot be read (then [`read_zip`] and [`sniff`] name what it is).
pub fn zip_model(source: &dyn ByteSource, file: usize) -> Result<Option<ModelInfo>, FormatError> {
    let Ok(entries) = zip::read_entries(source) else {
        return Ok(None);
    };
    if let Some(pkl) = torch::pickle_entry(&entries) {
        return torch::read_checkpoint(source, file, &entries, pkl).map(Some);
    }
    if npz::is_npz(&entries) {
        return npz::read_npz(source, file, &entries).map(Some);
    }
    Ok(None)
}

/// Whether `head` (a file's first bytes) starts like a safetensors file of `file_len` bytes: a
/// header length within the limit and the file, followed by the JSON object's `{`.
pub(crate) fn plausible_safetensors(head: &[u8], file_len: u64) -> bool {
    let (Some(prefix), Some(&brace)) = (head.get(..8), head.get(8)) else {
        return false;
    };
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(prefix);
    let header_len = u64::from_le_bytes(len_bytes);
    brace == b'{' && (2..=MAX_HEADER_BYTES).contains(&header_len) && header_len <= file_len.saturating_sub(8)
}

/// The first bytes of a file, for error messages: printable ASCII as is, anything else as `\xNN`.
pub(crate) fn show_magic(bytes: &[u8]) -> String {
    let mut s = String::new();
    for &b in bytes {
        if b.is_ascii_graphic() || b == b' ' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    format!("\"{s}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A permalink carries the type's name only, so the name must tell a quantised type apart.
    #[test]
    fn a_name_says_quantised_exactly_when_the_type_is() {
        let affine = mlx::Affine { bits: 4, group: 64, scale: mlx::ScaleType::BF16, inferred: false };
        let mut all = vec![
            DType::F64,
            DType::F32,
            DType::F16,
            DType::BF16,
            DType::F8E4M3,
            DType::F8E5M2,
            DType::U8,
            DType::I8,
            DType::U32,
            DType::MlxAffine(affine),
            DType::I8Affine { scale_bits: 1.0f32.to_bits(), zero_point: 3 },
            DType::U8Affine { scale_bits: 1.0f32.to_bits(), zero_point: 3 },
            DType::Other("F4".into()),
        ];
        all.extend(gguf::GGML_TYPES.iter().map(|(_, d)| d.clone()));
        for d in all {
            assert_eq!(quantised_name(d.name()), d.is_quantised(), "{}", d.name());
        }
    }
}
