//! PyTorch checkpoints in the zip layout `torch.save` writes since 1.6: `<archive>/data.pkl` (the
//! pickled object: a state dict, or a dict of them), `<archive>/data/<key>` (each storage's raw
//! little-endian bytes, stored uncompressed), `<archive>/byteorder`, `<archive>/version`.
//!
//! The pickle is parsed, never run ([`super::pickle`]). Its containers are walked and every tensor
//! becomes a [`TensorInfo`] over its storage member's bytes, read in place. Tensors that cannot be
//! read that way (a non-contiguous view, a compressed storage, an object of a class Orthoscope
//! does not rebuild) are listed in [`ModelInfo::skipped`] with the reason.

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, HashSet};

use super::pickle::{self, Tensor, Value, MAX_PICKLE_BYTES};
use super::zip::{self, ZipEntry, DEFLATED, STORED};
use super::{FormatError, ModelInfo, SkippedTensor, TensorInfo};
use crate::read::source::ByteSource;

/// Leading name components dropped from a tensor's path: a Lightning checkpoint's `state_dict`,
/// DistributedDataParallel's `module`, `torch.compile`'s `_orig_mod`.
const WRAPPERS: &[&str] = &["state_dict", "module", "_orig_mod"];

/// The `data.pkl` entry of a torch checkpoint among a zip's entries: `<archive>/data.pkl`, where
/// `<archive>` is the first (and only) folder of its path.
pub fn pickle_entry(entries: &[ZipEntry]) -> Option<&ZipEntry> {
    entries.iter().find(|e| e.name.strip_suffix("/data.pkl").is_some_and(|a| !a.is_empty() && !a.contains('/')))
}

/// Reads a torch checkpoint whose zip entries are `entries` and whose pickle is `pkl`.
pub fn read_checkpoint(
    source: &dyn ByteSource,
    file: usize,
    entries: &[ZipEntry],
    pkl: &ZipEntry,
) -> Result<ModelInfo, FormatError> {
    let name = source.name();
    // Each member looked up by name must be one member.
    zip::check_unique_names(source, entries)?;
    let archive = pkl.name.strip_suffix("/data.pkl").unwrap_or("archive");
    let by_name: HashMap<&str, &ZipEntry> = entries.iter().map(|e| (e.name.as_str(), e)).collect();
    if let Some(order) = by_name.get(format!("{archive}/byteorder").as_str()) {
        if order.method == STORED && order.compressed_size <= 16 {
            let start = zip::data_start(source, order)?;
            let mut buf = vec![0u8; order.compressed_size as usize];
            source.read_at(start, &mut buf)?;
            if buf.trim_ascii() == b"big" {
                return Err(FormatError::TorchBigEndian { file: name.to_string(), entry: order.name.clone() });
            }
        }
    }
    let bytes = read_pickle(source, pkl)?;
    let value = pickle::parse(&format!("{name}: {}", pkl.name), &bytes)?;
    drop(bytes);
    if let Value::Unreadable { global } = &value {
        return Err(FormatError::TorchUnreadable { file: name.to_string(), global: global.clone() });
    }
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    walk(value, &mut Vec::new(), &mut found, &mut skipped);
    let names = tensor_names(found.iter().map(|(path, _)| path.as_slice()).collect());

    let mut starts: HashMap<String, Result<(u64, u64), String>> = HashMap::new();
    let mut tensors = Vec::new();
    for ((_, tensor), tensor_name) in found.into_iter().zip(names) {
        let key = tensor.storage.key.clone();
        let storage = match starts.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = storage_range(source, &by_name, archive, &key)?;
                starts.insert(key, s.clone());
                s
            }
        };
        match storage.and_then(|range| place(&tensor, range)) {
            Ok(byte_range) => tensors.push(TensorInfo {
                name: tensor_name,
                dtype: tensor.storage.dtype.clone(),
                shape: tensor.size.clone(),
                byte_range,
                file,
                layout: Default::default(),
            }),
            Err(reason) => skipped.push(SkippedTensor { name: tensor_name, reason }),
        }
    }
    Ok(ModelInfo { format: "pytorch".to_string(), tensors, skipped, ..ModelInfo::default() })
}

/// `data.pkl`'s bytes: stored, or deflated (a re-zipped checkpoint), within [`MAX_PICKLE_BYTES`].
fn read_pickle(source: &dyn ByteSource, pkl: &ZipEntry) -> Result<Vec<u8>, FormatError> {
    let bad = |reason: String| FormatError::TorchBadPickleEntry {
        file: source.name().to_string(),
        entry: pkl.name.clone(),
        reason,
    };
    if pkl.compressed_size > MAX_PICKLE_BYTES || pkl.uncompressed_size > MAX_PICKLE_BYTES {
        return Err(FormatError::PickleOverLimit {
            file: format!("{}: {}", source.name(), pkl.name),
            what: "pickle stream length".to_string(),
            offset: 0,
            value: pkl.compressed_size.max(pkl.uncompressed_size),
            limit: MAX_PICKLE_BYTES,
        });
    }
    let start = zip::data_start(source, pkl)?;
    let mut raw = vec![0u8; pkl.compressed_size as usize];
    source.read_at(start, &mut raw)?;
    match pkl.method {
        STORED => Ok(raw),
        DEFLATED => miniz_oxide::inflate::decompress_to_vec_with_limit(&raw, MAX_PICKLE_BYTES as usize)
            .map_err(|e| bad(format!("its deflate stream does not inflate ({:?}); the archive is corrupt", e.status))),
        method => Err(bad(format!(
            "compressed with zip method {method}, which Orthoscope does not read; re-save the checkpoint with torch.save"
        ))),
    }
}

/// Where the storage `key`'s bytes are (`[start, end)` of the file), or why they cannot be read
/// in place.
fn storage_range(
    source: &dyn ByteSource,
    by_name: &HashMap<&str, &ZipEntry>,
    archive: &str,
    key: &str,
) -> Result<Result<(u64, u64), String>, FormatError> {
    let entry_name = format!("{archive}/data/{key}");
    let Some(entry) = by_name.get(entry_name.as_str()) else {
        return Ok(Err(format!("its storage {entry_name} is not in the archive (corrupt or incomplete checkpoint)")));
    };
    if entry.method != STORED {
        return Ok(Err(format!(
            "its storage {entry_name} is compressed (zip method {}); torch.save stores storages uncompressed: \
             load and save the checkpoint again with torch.save (do not re-zip it)",
            entry.method
        )));
    }
    let start = zip::data_start(source, entry)?;
    Ok(Ok((start, start + entry.compressed_size)))
}

/// The byte range of a tensor in its storage's bytes `[start, end)`, or why it has none.
fn place(t: &Tensor, (start, end): (u64, u64)) -> Result<(u64, u64), String> {
    let dtype = &t.storage.dtype;
    let elem = dtype
        .bytes_for(1)
        .ok_or_else(|| format!("storage type {} is not one Orthoscope knows", t.storage.storage_type))?;
    // Row-major strides; a dimension of size 1 may carry any stride (torch does not normalise it).
    let mut expected = 1u64;
    let mut contiguous = true;
    for (&size, &stride) in t.size.iter().zip(&t.stride).rev() {
        if size != 1 && stride != expected {
            contiguous = false;
        }
        expected = expected.checked_mul(size).ok_or_else(|| format!("shape {:?} overflows", t.size))?;
    }
    let numel = expected;
    if !contiguous {
        return Err(format!(
            "it is a non-contiguous view of its storage (shape {:?} with strides {:?}, e.g. a transposed matrix), \
             so its rows are not stored one after another; save it contiguous: \
             torch.save({{k: v.contiguous() for k, v in state_dict.items()}}, path)",
            t.size, t.stride
        ));
    }
    let range = t
        .storage_offset
        .checked_mul(elem)
        .and_then(|off| start.checked_add(off))
        .and_then(|s| Some((s, s.checked_add(numel.checked_mul(elem)?)?)));
    match range {
        Some((s, e)) if e <= end => Ok((s, e)),
        _ => Err(format!(
            "{numel} {dtype} elements from element {} run past the end of its storage ({} bytes; corrupt checkpoint)",
            t.storage_offset,
            end - start
        )),
    }
}

/// Collects the tensors of `value` with their paths, and what could not be read.
fn walk(
    value: Value,
    path: &mut Vec<String>,
    found: &mut Vec<(Vec<String>, Tensor)>,
    skipped: &mut Vec<SkippedTensor>,
) {
    match value {
        Value::Tensor(t) => found.push((path.clone(), t)),
        Value::Dict(items) => {
            for (k, v) in items {
                let key = match k {
                    Value::Str(s) => s.to_string(),
                    Value::Int(i) => i.to_string(),
                    other => other.kind(),
                };
                path.push(key);
                walk(v, path, found, skipped);
                path.pop();
            }
        }
        Value::List(items) | Value::Tuple(items) => {
            for (i, v) in items.into_iter().enumerate() {
                path.push(i.to_string());
                walk(v, path, found, skipped);
                path.pop();
            }
        }
        Value::Unreadable { global } => skipped.push(SkippedTensor {
            name: path.join("."),
            reason: format!(
                "it is {}, which Orthoscope does not rebuild (it never runs code from a pickle)",
                Value::Unreadable { global }.kind()
            ),
        }),
        _ => {}
    }
}

/// Tensor names: each path joined by `.` with leading [`WRAPPERS`] components dropped, unless
/// that would give two tensors one name (then those keep their full paths); a name still taken
/// gets ` (2)`, ` (3)`, ….
fn tensor_names(paths: Vec<&[String]>) -> Vec<String> {
    let full: Vec<String> = paths.iter().map(|p| p.join(".")).collect();
    let short: Vec<String> = full
        .iter()
        .map(|f| {
            let all: Vec<&str> = f.split('.').collect();
            let mut parts: &[&str] = &all;
            while let [first, rest @ ..] = parts {
                if rest.is_empty() || !WRAPPERS.contains(first) {
                    break;
                }
                parts = rest;
            }
            parts.join(".")
        })
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for s in &short {
        *count.entry(s.as_str()).or_default() += 1;
    }
    let mut taken = HashSet::new();
    short
        .iter()
        .zip(&full)
        .map(|(s, f)| {
            let base = if count.get(s.as_str()) == Some(&1) { s.clone() } else { f.clone() };
            let mut name = base.clone();
            let mut n = 1;
            while !taken.insert(name.clone()) {
                n += 1;
                name = format!("{base} ({n})");
            }
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::writers::{torch_zip_bytes, TorchWrap};
    use crate::read::format::{read_model, DType};
    use crate::read::source::SliceSource;

    #[test]
    fn a_written_checkpoint_lists_its_tensors_in_place() {
        let a: Vec<u8> = (0..24u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let b: Vec<u8> = (0..8u16).flat_map(|i| i.to_le_bytes()).collect();
        for (wrap, prefix) in [(TorchWrap::StateDict, ""), (TorchWrap::Model, "model."), (TorchWrap::Lightning, "")] {
            let bytes = torch_zip_bytes(
                &[("embed_tokens.weight", DType::F32, &[6, 4], &a), ("norm.weight", DType::BF16, &[8], &b)],
                wrap,
            );
            let source = SliceSource::new("m.pt", bytes.clone());
            let info = read_model(&source, 0).unwrap();
            assert_eq!(info.format, "pytorch");
            assert_eq!(info.tensors.len(), 2, "{info:?}");
            let t = &info.tensors[0];
            assert_eq!(t.name, format!("{prefix}embed_tokens.weight"));
            assert_eq!((t.dtype.clone(), t.shape.clone()), (DType::F32, vec![6, 4]));
            assert_eq!(&bytes[t.byte_range.0 as usize..t.byte_range.1 as usize], &a[..]);
            assert_eq!(t.byte_range.0 % 64, 0);
            let t = &info.tensors[1];
            assert_eq!((t.dtype.clone(), t.shape.clone()), (DType::BF16, vec![8]));
            assert_eq!(&bytes[t.byte_range.0 as usize..t.byte_range.1 as usize], &b[..]);
        }
    }

    #[test]
    fn wrapper_prefixes_are_dropped_unless_names_collide() {
        let p = |s: &str| s.split('.').map(str::to_string).collect::<Vec<_>>();
        let paths = [p("module.a.w"), p("state_dict._orig_mod.b"), p("x.y")];
        assert_eq!(tensor_names(paths.iter().map(Vec::as_slice).collect()), ["a.w", "b", "x.y"]);
        let paths = [p("module.a"), p("a")];
        assert_eq!(tensor_names(paths.iter().map(Vec::as_slice).collect()), ["module.a", "a"]);
        let paths = [p("a.b"), p("a.b")];
        assert_eq!(tensor_names(paths.iter().map(Vec::as_slice).collect()), ["a.b", "a.b (2)"]);
    }
}
