//! Why a file cannot be read as a model: one variant per failure, each naming the file, the
//! tensor or entry and the offset, with what the user can do.

use thiserror::Error;

use super::sniff;
use crate::read::source::ReadError;

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
    /// Two central-directory entries carry one name: readers disagree on which member it means
    /// (Python's `zipfile` takes the last, a first-match lookup the first), so neither is read.
    #[error("{file}: zip member '{entry}' is listed twice in the central directory (local headers at offsets {first_offset} and {second_offset}); readers disagree on which of the two the name means (Python's zipfile takes the last, others the first), so Orthoscope reads neither: rebuild the archive with one member of each name")]
    ZipDuplicateEntry { file: String, entry: String, first_offset: u64, second_offset: u64 },
    /// A member's local file header names another file than its central-directory entry (Python's
    /// `zipfile` refuses it: "File name in directory … and header … differ").
    #[error("{file}: zip member '{entry}': its local file header at offset {offset} names '{local}' instead, so the archive says two things about which file this is (Python's zipfile refuses it too); the archive is corrupt or was tampered with: rebuild or download it again")]
    ZipLocalNameMismatch { file: String, entry: String, local: String, offset: u64 },
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
