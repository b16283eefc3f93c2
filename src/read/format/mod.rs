//! Model file formats: each turns a header into the same [`TensorInfo`] list, and [`decode`] turns
//! raw row bytes of any supported [`DType`] into `f32`.

pub mod decode;
mod dtype;
mod error;
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

pub use dtype::{quantised_name, DType};
pub use error::{DecodeError, FormatError};

use crate::read::source::ByteSource;

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

/// The safetensors header may not exceed this many bytes (the reference implementation's limit).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

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
