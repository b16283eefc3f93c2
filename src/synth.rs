//! Test fixtures and hostile inputs (cargo feature `fixtures`: the tests, the e2e fixture CLI and
//! the fuzz targets enable it; the app, the worker and the release CLI do not). Built on the demo
//! generators ([`crate::demo`], re-exported here so the tests keep one path).
//! Nothing is ever downloaded; every file the tests use is made here from a seed.

use crate::demo::header_for;
pub use crate::demo::{
    class1_like, demo, encode, random_init, safetensors_bytes, trained_like, Normal, TensorSpec, DEFAULT_DEMO, DEMOS,
};
use crate::format::DType;

/// Name of the `U8` tensor [`safetensors_header`] lists for its `gap`.
pub const GAP_TENSOR: &str = "model.padding";

/// The header bytes (length prefix included) for tensors laid out back to back, the first at
/// `gap` bytes into the data section. A gap is listed as a 1-D `U8` tensor [`GAP_TENSOR`] of
/// `gap` bytes, since the format requires the tensors to tile the data section.
pub fn safetensors_header(tensors: &[TensorSpec], gap: u64) -> Vec<u8> {
    let u8t = DType::U8;
    let gap_shape = [gap];
    let mut entries: Vec<(&str, &DType, &[u64], u64)> = Vec::with_capacity(tensors.len() + 1);
    if gap > 0 {
        entries.push((GAP_TENSOR, &u8t, &gap_shape, gap));
    }
    entries.extend(tensors.iter().map(|t| (t.name.as_str(), &t.dtype, t.shape.as_slice(), t.data.len() as u64)));
    header_for(&entries, 0)
}

/// Where [`write_sparse_safetensors`] put things (absolute byte offsets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseLayout {
    /// Total file length.
    pub file_len: u64,
    /// The embedding's bytes, `start .. end` (`end == file_len`).
    pub embedding: (u64, u64),
    /// The padding tensors before it (name, start, end): never written, left as a hole.
    pub padding: Vec<(String, u64, u64)>,
}

/// Writes a **sparse** safetensors file of exactly `file_len` bytes whose last tensor is `embedding`,
/// ending at the end of the file — for a multi-GiB shard, past the 4 GiB mark.
///
/// Why sparse: the point is a file too large for 32-bit offsets (the browser's wasm32 `usize`,
/// `shared/design.md`), 5–10 GiB, generated in a test on any machine. Before the embedding the header
/// lists an MLP-like bf16 matrix `model.layers.0.mlp.up_proj.weight` `[n, 8192]` (plus a 1-D `U8`
/// `model.layers.0.mlp.padding` for the bytes left over, when any) whose sizes match their byte
/// spans exactly, as the reader checks; those bytes are never written: `set_len` extends the file
/// and only the header (at 0) and the embedding (seek + write) touch the disk. On a filesystem with
/// holes (ext4, xfs, btrfs, tmpfs) the file costs its header and embedding on disk, and reading the
/// hole gives zeros — valid bf16 — should anything read it (nothing should: the reader takes the
/// header and then only the embedding's bytes).
#[cfg(not(target_arch = "wasm32"))]
pub fn write_sparse_safetensors(
    path: &std::path::Path,
    file_len: u64,
    embedding: &TensorSpec,
) -> std::io::Result<SparseLayout> {
    use std::io::{Seek, SeekFrom, Write};
    // JSON bytes reserved for the header, so its length does not depend on the padding's size (a
    // few hundred are used; the rest are the spaces the format allows).
    const SPARSE_HEADER_JSON: usize = 4096 - 8;
    // Columns of the padding tensor (bf16): a realistic MLP-sized row of 16 KiB.
    const PADDING_COLS: u64 = 8192;
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    let data_start = 8 + SPARSE_HEADER_JSON as u64;
    let embed_len = embedding.data.len() as u64;
    let padding = file_len.checked_sub(data_start).and_then(|n| n.checked_sub(embed_len)).ok_or_else(|| {
        invalid(format!("{file_len} bytes cannot hold a {data_start}-byte header and a {embed_len}-byte embedding"))
    })?;
    let row_bytes = PADDING_COLS * 2;
    let (pad_rows, rest) = (padding / row_bytes, padding % row_bytes);
    let bf16 = DType::BF16;
    let u8t = DType::U8;
    let main_shape = [pad_rows, PADDING_COLS];
    let rest_shape = [rest];
    let mut entries: Vec<(&str, &DType, &[u64], u64)> = Vec::new();
    if pad_rows > 0 {
        entries.push(("model.layers.0.mlp.up_proj.weight", &bf16, &main_shape, pad_rows * row_bytes));
    }
    if rest > 0 {
        entries.push(("model.layers.0.mlp.padding", &u8t, &rest_shape, rest));
    }
    let mut layout = SparseLayout { file_len, embedding: (file_len - embed_len, file_len), padding: Vec::new() };
    let mut at = data_start;
    for &(name, _, _, len) in &entries {
        layout.padding.push((name.to_string(), at, at + len));
        at += len;
    }
    entries.push((embedding.name.as_str(), &embedding.dtype, embedding.shape.as_slice(), embed_len));
    let header = header_for(&entries, SPARSE_HEADER_JSON);
    if header.len() as u64 != data_start {
        return Err(invalid(format!("the header needs {} bytes, more than the {data_start} reserved", header.len())));
    }
    let mut file = std::fs::File::create(path)?;
    file.set_len(file_len)?;
    file.write_all(&header)?;
    file.seek(SeekFrom::Start(layout.embedding.0))?;
    file.write_all(&embedding.data)?;
    file.flush()?;
    Ok(layout)
}

/// Hostile and broken files, one per failure the reader must name: (case, bytes).
pub fn hostile_safetensors() -> Vec<(&'static str, Vec<u8>)> {
    let good = || TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 4, 8, &[0.5; 32]);
    // A header and `data` zero bytes (as many as the offsets cover, so that each case fails for
    // its own reason and not for a gap at the end).
    let with_data = |json: &str, data: usize| {
        let mut v = (json.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(json.as_bytes());
        v.resize(v.len() + data, 0);
        v
    };
    let with_header = |json: &str| with_data(json, 128);
    let full = safetensors_bytes(&[good()]);
    let mut cases = vec![
        ("not-safetensors", b"PK\x03\x04 this is a zip file, not a model".to_vec()),
        ("truncated-header", full[..5].to_vec()),
        ("header-past-eof", {
            let mut v = 5000u64.to_le_bytes().to_vec();
            v.extend_from_slice(b"{\"a\":1}");
            v
        }),
        ("header-too-large", {
            let mut v = 200_000_000u64.to_le_bytes().to_vec();
            v.extend_from_slice(&[b' '; 64]);
            v
        }),
        ("invalid-json", with_header("{\"model.embed_tokens.weight\": {\"dtype\": \"F32\", ")),
        (
            "unknown-dtype",
            with_data("{\"model.embed_tokens.weight\":{\"dtype\":\"Q7\",\"shape\":[4,8],\"data_offsets\":[0,16]}}", 16),
        ),
        (
            "size-mismatch",
            with_header("{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,100]}}"),
        ),
        (
            "offsets-past-eof",
            with_header(
                "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[40,8],\"data_offsets\":[0,1280]}}",
            ),
        ),
        (
            "not-2d",
            with_header(
                "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[2,4,4],\"data_offsets\":[0,128]}}",
            ),
        ),
        (
            "zero-rows",
            with_data("{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[0,8],\"data_offsets\":[0,0]}}", 0),
        ),
    ];
    cases.push((
        "offsets-overlap",
        with_data(
            "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,128]},\
             \"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[64,192]}}",
            192,
        ),
    ));
    cases.push((
        "offsets-gap",
        with_data(
            "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,128]},\
             \"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[160,288]}}",
            288,
        ),
    ));
    cases.push((
        "all-rows-zero",
        safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 16, 8, &[0.0; 128])]),
    ));
    cases.extend(foreign_files());
    cases
}

/// A zip archive's first local file header (no compression, sizes of `data`) and `data`, as the
/// start of a zip whose first entry is `name`.
fn zip_start(name: &str, data: &[u8]) -> Vec<u8> {
    let mut v = b"PK\x03\x04".to_vec();
    // version needed 2.0, no flags, stored, time and date 0, crc 0 (not checked by a sniffer).
    v.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(&(name.len() as u16).to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(name.as_bytes());
    v.extend_from_slice(data);
    v
}

/// Files of other kinds under a model's name (issue 9, item 3), one per kind `format::sniff`
/// recognises: tiny byte strings with the right magic, laid out as the real tools write them.
/// Case names start with `foreign-`.
pub fn foreign_files() -> Vec<(&'static str, Vec<u8>)> {
    let pickle = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01s.".to_vec();
    let mut tar = vec![0u8; 1024];
    tar[..17].copy_from_slice(b"model.safetensors");
    tar[257..265].copy_from_slice(b"ustar\x0000");
    let mut webp = b"RIFF".to_vec();
    webp.extend_from_slice(&26u32.to_le_bytes());
    webp.extend_from_slice(b"WEBPVP8 \x00\x00\x00\x00");
    vec![
        ("foreign-empty", Vec::new()),
        (
            "foreign-git-lfs-pointer",
            b"version https://git-lfs.github.com/spec/v1\n\
              oid sha256:4d7a2144a7bb0ef8fb5e8e25e5c0ec2b4f8e2f7d3a5e3c2b1a0f9e8d7c6b5a49\n\
              size 4965799096\n"
                .to_vec(),
        ),
        ("foreign-pytorch-zip", zip_start("archive/data.pkl", &pickle)),
        (
            "foreign-pytorch-legacy",
            b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.".to_vec(),
        ),
        ("foreign-pickle", b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.".to_vec()),
        ("foreign-keras", zip_start("metadata.json", b"{\"keras_version\": \"3.5.0\"}")),
        ("foreign-npz", zip_start("embedding.npy", b"\x93NUMPY\x01\x00")),
        ("foreign-zip", zip_start("my-model/model.safetensors", &[0u8; 32])),
        ("foreign-gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec()),
        ("foreign-zstd", b"\x28\xb5\x2f\xfd\x24\x00\x01\x00\x00".to_vec()),
        ("foreign-xz", b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46".to_vec()),
        ("foreign-tar", tar),
        ("foreign-hdf5", b"\x89HDF\r\n\x1a\n\x00\x00\x00\x00\x00\x08\x08\x00\x04\x00\x10\x00".to_vec()),
        // ir_version 8, producer_name "pytorch", producer_version "2.1.0", then graph (field 7).
        ("foreign-onnx", b"\x08\x08\x12\x07pytorch\x1a\x052.1.0:\x02\x0a\x00".to_vec()),
        // saved_model_schema_version 1, meta_graphs (length 6) starting with meta_info_def.
        ("foreign-tf-saved-model", b"\x08\x01\x12\x06\x0a\x04\x12\x02\x08\x01".to_vec()),
        ("foreign-png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01".to_vec()),
        ("foreign-jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01".to_vec()),
        ("foreign-gif", b"GIF89a\x01\x00\x01\x00\x80\x00\x00".to_vec()),
        ("foreign-webp", webp),
        ("foreign-pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec()),
        (
            "foreign-html",
            b"\xef\xbb\xbf\n  <!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body></body></html>\n"
                .to_vec(),
        ),
        (
            "foreign-xml",
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code></Error>\n".to_vec(),
        ),
        ("foreign-json", b"{\"error\":\"Entry not found\"}".to_vec()),
        ("foreign-text", b"Invalid username or password.\n".to_vec()),
    ]
}

/// Name of the `k`-th (1-based) of `n` shards, as Hugging Face and llama.cpp write them.
pub fn shard_name(prefix: &str, k: usize, n: usize, ext: &str) -> String {
    format!("{prefix}-{k:05}-of-{n:05}.{ext}")
}

/// A sharded safetensors model as Hugging Face lays it out, as (file name, bytes): `shards` files
/// `model-0000k-of-0000N.safetensors`, then `model.safetensors.index.json` (when `index`), then a
/// `config.json` with `vocab_size`. The embedding (`embedding`, `rows` × `dim`) is
/// `model.embed_tokens.weight` in the first shard; one `model.layers.{i}.weight` (2-D) and
/// `model.layers.{i}.norm.weight` (1-D) per shard and `lm_head.weight` (not tied) in the last one
/// are spread over the others, so every shard holds something and locate has decoys.
pub fn sharded_safetensors(
    embedding: &[f32],
    rows: usize,
    dim: usize,
    dtype: &DType,
    shards: usize,
    seed: u64,
    index: bool,
) -> Vec<(String, Vec<u8>)> {
    let shards = shards.max(1);
    let layer_rows = dim.clamp(1, 64);
    let mut per_shard: Vec<Vec<TensorSpec>> = (0..shards).map(|_| Vec::new()).collect();
    let mut put = |k: usize, t: TensorSpec| {
        if let Some(list) = per_shard.get_mut(k % shards) {
            list.push(t);
        }
    };
    put(0, TensorSpec::matrix("model.embed_tokens.weight", dtype.clone(), rows, dim, embedding));
    for i in 0..shards {
        let w = random_init(layer_rows, dim, seed.wrapping_add(100 + i as u64));
        put(i + 1, TensorSpec::matrix(&format!("model.layers.{i}.weight"), dtype.clone(), layer_rows, dim, &w));
        let norm = vec![1.0f32; dim];
        put(
            i + 1,
            TensorSpec {
                name: format!("model.layers.{i}.norm.weight"),
                data: encode(&norm, dtype),
                dtype: dtype.clone(),
                shape: vec![dim as u64],
            },
        );
    }
    let head = random_init(rows, dim, seed.wrapping_add(1));
    put(shards - 1, TensorSpec::matrix("lm_head.weight", dtype.clone(), rows, dim, &head));

    let mut files = Vec::with_capacity(shards + 2);
    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for (k, tensors) in per_shard.iter().enumerate() {
        let name = shard_name("model", k + 1, shards, "safetensors");
        for t in tensors {
            weight_map.insert(t.name.clone(), serde_json::Value::String(name.clone()));
            total += t.data.len() as u64;
        }
        files.push((name, safetensors_bytes(tensors)));
    }
    if index {
        let json = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
        files.push(("model.safetensors.index.json".to_string(), serde_json::to_vec_pretty(&json).unwrap_or_default()));
    }
    let config = serde_json::json!({"model_type": "orthoscope-synthetic", "vocab_size": rows, "hidden_size": dim});
    files.push(("config.json".to_string(), serde_json::to_vec_pretty(&config).unwrap_or_default()));
    files
}
