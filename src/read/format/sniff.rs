//! What a file is when it is not a model file Orthoscope reads.
//!
//! Users drop whatever they have under a model's name: a PyTorch `pytorch_model.bin`, an ONNX or
//! Keras export, a zip or tarball of the folder, a saved error page, or — after a `git clone`
//! without Git LFS — a 130-byte pointer file in place of the weights. A safetensors file has no
//! magic of its own (its first 8 bytes are a length), so without this look at the first bytes such
//! files were read as a safetensors length and refused as "header claims 85966670672 bytes".
//!
//! [`sniff`] is pure: it looks at a short prefix only, before any parser trusts a length. It is
//! called only after the real formats were ruled out (GGUF/.npy magic, or a plausible safetensors
//! length followed by `{`), so a valid model file can never be taken for a foreign one.

// The crate-wide `FormatError` is large (see gguf.rs); errors end a read, so size does not matter.
#![allow(clippy::result_large_err)]

use std::fmt;

use super::FormatError;
use crate::read::source::{base_name, ByteSource};

/// Bytes of a file's start that [`sniff`] looks at: enough for a zip's first entry names, a tar
/// header's `ustar` mark at offset 257, and a Git LFS pointer (about 130 bytes) whole.
pub const SNIFF_BYTES: usize = 512;

/// The magic of the pickle stream PyTorch's legacy (pre-1.6) `torch.save` writes first: protocol
/// 2, then the long integer 0x1950a86a20f9469cfc6c (`torch/serialization.py`, `MAGIC_NUMBER`).
const TORCH_LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

/// The first line of every Git LFS pointer file (<https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md>).
const LFS_POINTER: &[u8] = b"version https://git-lfs.github.com/spec/v1";

/// Fewer bytes of text than this are not called a text file (the reader's "too short" is truer).
const MIN_TEXT_BYTES: usize = 16;

/// A kind of file that is not a model file Orthoscope reads, recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForeignKind {
    /// A file of 0 bytes: an interrupted download or copy.
    Empty,
    /// A Git LFS pointer standing in for the real file; `size` is the real file's size when the
    /// pointer says.
    GitLfsPointer { size: Option<u64> },
    /// A PyTorch checkpoint in the zip layout of `torch.save` since 1.6 (`archive/data.pkl`).
    PyTorchZip,
    /// A PyTorch checkpoint in the legacy pickle layout (before 1.6).
    PyTorchLegacy,
    /// Some other Python pickle (protocol 2–5): joblib, a pickled state dict, …
    Pickle,
    /// A Keras 3 `.keras` archive (zip with `metadata.json`, `config.json`, `model.weights.h5`).
    Keras,
    /// A NumPy `.npz` archive (zip of `.npy` files).
    Npz,
    /// Any other zip archive.
    Zip,
    /// A gzip stream (often a `.tar.gz`).
    Gzip,
    /// A Zstandard stream.
    Zstd,
    /// An xz stream.
    Xz,
    /// A tar archive (POSIX `ustar`).
    Tar,
    /// An HDF5 file: Keras `.h5` or TensorFlow weights.
    Hdf5,
    /// Probably an ONNX model: a protobuf starting with `ir_version` then another `ModelProto` field,
    /// under a name other than `.onnx` (a `.onnx` file is read by [`super::onnx`]).
    Onnx,
    /// Probably a TensorFlow SavedModel `saved_model.pb` (`saved_model_schema_version` 1, then a
    /// `MetaGraphDef`).
    TfSavedModel,
    /// An image (PNG, JPEG, GIF, WebP) or a PDF document.
    Image { format: &'static str },
    /// An HTML page: a page saved instead of the file, or a server's error page.
    Html,
    /// An XML document, typically a storage server's error response (`<Error><Code>AccessDenied…`).
    Xml,
    /// JSON where weights were expected, typically an API error (`{"error": "Entry not found"}`).
    Json,
    /// Some other text file.
    Text,
}

impl ForeignKind {
    /// Whether this is a model in another framework's format (as opposed to an archive, a page or
    /// some text): among several files given, such a file is named rather than silently ignored
    /// when nothing else is a model.
    pub fn is_model_format(&self) -> bool {
        matches!(
            self,
            ForeignKind::GitLfsPointer { .. }
                | ForeignKind::PyTorchZip
                | ForeignKind::PyTorchLegacy
                | ForeignKind::Pickle
                | ForeignKind::Keras
                | ForeignKind::Npz
                | ForeignKind::Hdf5
                | ForeignKind::Onnx
                | ForeignKind::TfSavedModel
        )
    }

    /// What to do about a file of this kind named `file` (its base name, used in commands).
    pub fn advice(&self, file: &str) -> String {
        const GET_SAFETENSORS: &str = "or download the model's .safetensors files (most Hugging Face models have them)";
        let convert_torch = format!(
            "convert it to safetensors, e.g. `python -c \"import torch; from safetensors.torch import save_file; \
             sd = torch.load('{file}', map_location='cpu', weights_only=True); \
             save_file({{k: v.contiguous() for k, v in sd.items()}}, 'model.safetensors')\"`, {GET_SAFETENSORS}"
        );
        let extract = "extract it and give the model files inside (.safetensors, .gguf or .npy)";
        let download_again = format!("download {file} again (from the file's download link, e.g. huggingface.co/ORG/MODEL/resolve/main/{file}, not the page that shows it)");
        match self {
            ForeignKind::Empty => format!("the download or copy did not finish; download {file} again"),
            ForeignKind::GitLfsPointer { .. } => format!(
                "the repository was cloned without Git LFS; run `git lfs install && git lfs pull` in the clone, \
                 or download {file} directly"
            ),
            // Readable torch.save zips never get here (format::zip_model reads them): this one's
            // central directory could not be read.
            ForeignKind::PyTorchZip => format!(
                "Orthoscope reads torch.save checkpoints in place, but this one's zip central directory could not \
                 be read (an interrupted download or copy?); download {file} again, or {convert_torch}"
            ),
            ForeignKind::PyTorchLegacy => format!(
                "Orthoscope reads only the zip checkpoints torch.save writes since PyTorch 1.6, and never unpickles \
                 files (loading a pickle can run code); re-save it with a current torch.save, or {convert_torch}"
            ),
            ForeignKind::Pickle => format!(
                "Orthoscope never unpickles files (loading a pickle can run code); if it holds PyTorch tensors, \
                 {convert_torch}"
            ),
            ForeignKind::Keras => "load it in Keras and save the embedding matrix with \
                 `np.save('embedding.npy', model.get_layer(NAME).get_weights()[0])`, then give the .npy"
                .to_string(),
            ForeignKind::Npz => "extract it (`unzip`, or `np.load(path)[KEY]`) and give the .npy of the embedding \
                 matrix"
                .to_string(),
            ForeignKind::Zip => extract.to_string(),
            ForeignKind::Gzip => format!("decompress it (`gunzip`, or `tar xzf` for a .tar.gz) and {extract}"),
            ForeignKind::Zstd => format!("decompress it (`zstd -d`, or `tar --zstd -xf` for a .tar.zst) and {extract}"),
            ForeignKind::Xz => format!("decompress it (`xz -d`, or `tar xJf` for a .tar.xz) and {extract}"),
            ForeignKind::Tar => format!("unpack it (`tar xf`) and {extract}"),
            ForeignKind::Hdf5 => format!(
                "load it with h5py or Keras and save the embedding matrix with `np.save('embedding.npy', …)`, \
                 then give the .npy; {GET_SAFETENSORS}"
            ),
            ForeignKind::Onnx => format!(
                "Orthoscope reads ONNX exports under a .onnx name: rename it (e.g. model.onnx) and give it \
                 again, with its external data file if it has one, {GET_SAFETENSORS}"
            ),
            ForeignKind::TfSavedModel => format!(
                "its weights live in the variables/ folder; load it in TensorFlow and save the embedding \
                 matrix with `np.save`, {GET_SAFETENSORS}"
            ),
            ForeignKind::Image { .. } => "give the model's .safetensors, .gguf or .npy file".to_string(),
            ForeignKind::Html | ForeignKind::Xml | ForeignKind::Json => download_again,
            ForeignKind::Text => "give the model's .safetensors, .gguf or .npy file".to_string(),
        }
    }
}

impl fmt::Display for ForeignKind {
    /// The kind as the error message names it: "{file} is {kind}: {advice}".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForeignKind::Empty => f.write_str("empty (0 bytes)"),
            ForeignKind::GitLfsPointer { size: Some(size) } => write!(
                f,
                "a Git LFS pointer, not the weights (a small text file standing in for the real {size}-byte file)"
            ),
            ForeignKind::GitLfsPointer { size: None } => {
                f.write_str("a Git LFS pointer, not the weights (a small text file standing in for the real file)")
            }
            ForeignKind::PyTorchZip => f.write_str("a PyTorch checkpoint (zip archive with data.pkl)"),
            ForeignKind::PyTorchLegacy => f.write_str("a PyTorch checkpoint (legacy pickle format)"),
            ForeignKind::Pickle => f.write_str("a Python pickle (perhaps an older PyTorch checkpoint)"),
            ForeignKind::Keras => f.write_str("a Keras model archive (.keras)"),
            ForeignKind::Npz => f.write_str("a NumPy .npz archive (a zip of .npy files)"),
            ForeignKind::Zip => f.write_str("a zip archive"),
            ForeignKind::Gzip => f.write_str("gzip-compressed"),
            ForeignKind::Zstd => f.write_str("Zstandard-compressed"),
            ForeignKind::Xz => f.write_str("xz-compressed"),
            ForeignKind::Tar => f.write_str("a tar archive"),
            ForeignKind::Hdf5 => f.write_str("an HDF5 file (Keras .h5 or TensorFlow weights)"),
            ForeignKind::Onnx => f.write_str("probably an ONNX model (protobuf)"),
            ForeignKind::TfSavedModel => f.write_str("probably a TensorFlow SavedModel graph (saved_model.pb)"),
            ForeignKind::Image { format } => write!(f, "a {format}, not model weights"),
            ForeignKind::Html => f.write_str(
                "an HTML page (a page saved instead of the file, or a server's error page), not the weights",
            ),
            ForeignKind::Xml => {
                f.write_str("an XML document (often a storage server's error response), not the weights")
            }
            ForeignKind::Json => f.write_str("JSON text (often a server's error response), not the weights"),
            ForeignKind::Text => f.write_str("a text file, not model weights"),
        }
    }
}

/// What `prefix` (the first up to [`SNIFF_BYTES`] bytes of a file of `file_len` bytes) is, when it
/// is one of the foreign kinds; `None` when it is none of them (the caller's parser then reports
/// its own error).
pub fn sniff(prefix: &[u8], file_len: u64) -> Option<ForeignKind> {
    if file_len == 0 {
        return Some(ForeignKind::Empty);
    }
    if prefix.starts_with(b"PK\x03\x04") {
        return Some(zip_kind(prefix));
    }
    if prefix.starts_with(TORCH_LEGACY_MAGIC) {
        return Some(ForeignKind::PyTorchLegacy);
    }
    if let [0x80, 2..=5, ..] = prefix {
        return Some(ForeignKind::Pickle);
    }
    let magics: &[(&[u8], ForeignKind)] = &[
        (b"\x1f\x8b", ForeignKind::Gzip),
        (b"\x28\xb5\x2f\xfd", ForeignKind::Zstd),
        (b"\xfd7zXZ\x00", ForeignKind::Xz),
        (b"\x89HDF\r\n\x1a\n", ForeignKind::Hdf5),
        (b"\x89PNG\r\n\x1a\n", ForeignKind::Image { format: "PNG image" }),
        (b"\xff\xd8\xff", ForeignKind::Image { format: "JPEG image" }),
        (b"GIF87a", ForeignKind::Image { format: "GIF image" }),
        (b"GIF89a", ForeignKind::Image { format: "GIF image" }),
        (b"%PDF-", ForeignKind::Image { format: "PDF document" }),
    ];
    if let Some((_, kind)) = magics.iter().find(|(magic, _)| prefix.starts_with(magic)) {
        return Some(*kind);
    }
    if prefix.starts_with(b"RIFF") && prefix.get(8..12) == Some(b"WEBP") {
        return Some(ForeignKind::Image { format: "WebP image" });
    }
    if prefix.get(257..262) == Some(b"ustar") {
        return Some(ForeignKind::Tar);
    }
    if let Some(kind) = protobuf_kind(prefix) {
        return Some(kind);
    }
    text_kind(prefix)
}

/// Reads the first bytes of `source` and returns the [`FormatError::Foreign`] for them, if any.
pub fn check(source: &dyn ByteSource) -> Result<(), FormatError> {
    match sniff_source(source)? {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The [`FormatError::Foreign`] for the first bytes of `source` (one read of at most
/// [`SNIFF_BYTES`]), or `None` when [`sniff`] recognises none of its kinds.
pub fn sniff_source(source: &dyn ByteSource) -> Result<Option<FormatError>, FormatError> {
    let len = source.len();
    let mut buf = [0u8; SNIFF_BYTES];
    let n = len.min(SNIFF_BYTES as u64) as usize;
    let prefix = buf.get_mut(..n).unwrap_or(&mut []);
    source.read_at(0, prefix)?;
    Ok(sniff(prefix, len).map(|kind| foreign(source.name(), kind, prefix)))
}

/// The error for a file `name` (a path or a base name) of a foreign kind that starts with `prefix`.
pub fn foreign(name: &str, kind: ForeignKind, prefix: &[u8]) -> FormatError {
    let mut advice = kind.advice(base_name(name));
    // What a text says is often the best clue ("Entry not found", "Invalid username or password").
    if matches!(kind, ForeignKind::Json | ForeignKind::Text) {
        let text = String::from_utf8_lossy(prefix);
        advice = format!("it starts {}; {advice}", quote_start(text.trim_start_matches('\u{feff}').trim_start()));
    }
    FormatError::Foreign { file: name.to_string(), kind, advice }
}

/// A zip archive, told apart by the entry names in its first bytes: `torch.save` writes
/// `archive/data.pkl` (or `NAME/data.pkl`) first, Keras 3 `metadata.json` / `config.json` /
/// `model.weights.h5`, `np.savez` `NAME.npy` entries.
fn zip_kind(prefix: &[u8]) -> ForeignKind {
    // The first local file header: name length at offset 26, extra length at 28, name at 30.
    let first_name = match (prefix.get(26..28), prefix.get(30..)) {
        (Some(&[lo, hi]), Some(rest)) => rest.get(..usize::from(u16::from_le_bytes([lo, hi])).min(rest.len())),
        _ => None,
    }
    .unwrap_or(&[]);
    let has = |needle: &[u8]| prefix.windows(needle.len()).any(|w| w == needle);
    if has(b"data.pkl") || first_name.ends_with(b"/version") || first_name.starts_with(b"archive/") {
        ForeignKind::PyTorchZip
    } else if has(b"model.weights.h5") || first_name == b"metadata.json" || first_name == b"config.json" {
        ForeignKind::Keras
    } else if first_name.ends_with(b".npy") {
        ForeignKind::Npz
    } else {
        ForeignKind::Zip
    }
}

/// Reads a protobuf varint at the start of `bytes`: (value, bytes used).
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// ONNX and TensorFlow SavedModel files are protobufs with no magic; both start with field 1 as a
/// varint (tag `0x08`). Detected conservatively, from the value and the tag that follows:
/// - SavedModel: `saved_model_schema_version` = 1, then field 2 `meta_graphs` (tag `0x12`) whose
///   message starts with field 1 `meta_info_def` (tag `0x0a`);
/// - ONNX: `ir_version` 3–20 (ONNX 1.0 wrote 3; 1.17 writes 10), then another `ModelProto` field:
///   2 `producer_name`, 3 `producer_version`, 4 `domain` (strings), 5 `model_version` (varint),
///   6 `doc_string`, 7 `graph`, 8 `opset_import`.
fn protobuf_kind(prefix: &[u8]) -> Option<ForeignKind> {
    let rest = prefix.strip_prefix(b"\x08")?;
    let (value, used) = varint(rest)?;
    let rest = rest.get(used..)?;
    if value == 1 {
        let after = rest.strip_prefix(b"\x12")?;
        let (_, used) = varint(after)?;
        return (after.get(used) == Some(&0x0a)).then_some(ForeignKind::TfSavedModel);
    }
    let next = *rest.first()?;
    ((3..=20).contains(&value) && matches!(next, 0x12 | 0x1a | 0x22 | 0x28 | 0x32 | 0x3a | 0x42))
        .then_some(ForeignKind::Onnx)
}

/// Text kinds: a Git LFS pointer, HTML, XML, JSON, other text. Text means valid UTF-8 (a character
/// cut by the end of the prefix allowed) with no control characters other than tab, CR and LF,
/// after an optional byte order mark.
fn text_kind(prefix: &[u8]) -> Option<ForeignKind> {
    let body = prefix.strip_prefix(b"\xef\xbb\xbf").unwrap_or(prefix);
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        // Only a character cut at the very end of the prefix is allowed.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(body.get(..e.valid_up_to())?).ok()?,
        Err(_) => return None,
    };
    if text.is_empty() || text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
        return None;
    }
    if text.as_bytes().starts_with(LFS_POINTER) {
        let size = text.lines().find_map(|l| l.strip_prefix("size ")).and_then(|s| s.trim().parse().ok());
        return Some(ForeignKind::GitLfsPointer { size });
    }
    let trimmed = text.trim_start();
    let lower: String = trimmed.chars().take(16).collect::<String>().to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") || lower.starts_with("<head") {
        return Some(ForeignKind::Html);
    }
    if lower.starts_with("<?xml") {
        return Some(ForeignKind::Xml);
    }
    // A few printable bytes say little (a truncated file can start "GGU"): the generic text kinds
    // need a line's worth.
    if text.len() < MIN_TEXT_BYTES {
        return None;
    }
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return Some(ForeignKind::Json);
    }
    Some(ForeignKind::Text)
}

/// The first line of a text, at most 80 characters, quoted, for the message.
fn quote_start(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim_end();
    let mut shown: String = line.chars().take(80).collect();
    if shown.len() < line.len() {
        shown.push('…');
    }
    format!("\"{shown}\"")
}
