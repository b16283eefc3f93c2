//! Several files as one model (ARCHITECTURE.md, "read": sharded safetensors with
//! `*.safetensors.index.json`, split GGUF `*-0000k-of-0000N.gguf`).
//!
//! Users drop a whole model folder: shards, the index, `config.json`, tokenizer files, a README,
//! sometimes a stray shard of another revision or the pickled `.bin` copies. The rules:
//! - With an index, the index alone decides which files are shards and which shard holds which
//!   tensor. Files it does not name are listed in [`ModelSet::ignored`] and never read; shards it
//!   names that were not given are listed in [`ModelSet::missing`], and their tensors are left out
//!   of [`ModelSet::tensors`] (they cannot be read) but stay in [`ModelSet::weight_map`], so a
//!   caller can say which file to add.
//! - Without an index, every model file given is read and their tensors are united; a tensor name
//!   held by two files is an error, since a stray duplicate shard must not be mixed in silently.
//! - Only headers are read from model files, so opening a set of 100 GB costs a few reads.
//! - `config.json` is optional and only supplies the vocabulary size for locate's shape heuristic.
//!   Other non-model files are ignored, but a file that looks like a model and fails to parse fails
//!   with its own error.

// The crate-wide `FormatError` is large (see gguf.rs); errors end a read, so size does not matter.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::de::IgnoredAny;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod config;
mod index;
mod split;

use super::{
    gguf, mlx, npy, read_model, sniff, zip, EmbeddingHint, FormatError, ModelInfo, ShapeHints, SkippedTensor,
    TensorInfo,
};
use crate::read::dictionary::{features_view, recognise, Dictionary, DictionaryConfig};
use crate::read::source::{base_name, ByteSource, MAX_JSON_BYTES};
use crate::read::vocab;
use config::{read_config, ConfigHints};
use index::parse_index;
use split::{check_split_metadata, display_format, split_name, split_parts};

/// Most entries a shard index's `weight_map` may hold. The largest public checkpoints list about
/// 10⁵ tensors; this leaves room for ten times more than any, and bounds the memory an index costs.
pub const MAX_INDEX_ENTRIES: u64 = 2_000_000;

/// Most distinct shard files a shard index may name (the largest public models use a few hundred).
pub const MAX_INDEX_SHARDS: u64 = 100_000;

/// JSON files of a model folder that are never a shard index, so they are not even opened
/// (tokenizer.json alone can be tens of MB).
const NOT_INDEX_JSON: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "preprocessor_config.json",
    "added_tokens.json",
    "vocab.json",
    "chat_template.json",
    "params.json",
];

/// The config files sparse autoencoders are saved with: SAELens's and sparsify's `cfg.json`,
/// Llama Scope's `hyperparams.json`.
const DICTIONARY_CONFIGS: &[&str] = &["cfg.json", "hyperparams.json"];

/// Extensions that mark a file as a model even if its first bytes are wrong, so a broken model
/// file reports its own error instead of being ignored.
const MODEL_EXTENSIONS: &[&str] = &[".safetensors", ".gguf", ".npy", ".npz", ".onnx", ".bin", ".pt", ".pth", ".ckpt"];

/// Extensions of PyTorch checkpoints. Among several files these are read only when nothing else is
/// a model file (a Hugging Face folder's `pytorch_model.bin` is the pickled copy of its
/// safetensors) and only when they are zips (`training_args.bin` and `optimizer.pt` sit beside
/// real checkpoints).
const TORCH_EXTENSIONS: &[&str] = &[".bin", ".pt", ".pth", ".ckpt"];

fn is_torch_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    TORCH_EXTENSIONS.iter().any(|e| lower.ends_with(e))
}

/// Split names with more parts than this are not expanded into a list of missing files (a hostile
/// name like `x-00001-of-99999.gguf` would otherwise list 99998 of them).
const MAX_LISTED_PARTS: u64 = 4096;

/// Several files read as one model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSet {
    /// For display: "safetensors" for one file, "safetensors (4 shards)", "gguf (2 of 3 shards)".
    pub format: String,
    /// Tensors that can be read; `TensorInfo::file` is an index into the sources given.
    pub tensors: Vec<TensorInfo>,
    /// From a model file that records it (GGUF), else from a `config.json` among the sources.
    pub vocab_size: Option<u64>,
    /// Tokens, from a GGUF file that carries them.
    pub vocab: Vec<String>,
    /// What config.json and tokenizer.json say of the embedding's shape.
    pub hints: ShapeHints,
    /// Which source was the shard index.
    pub index: Option<usize>,
    /// Shard file names the index (or a `-0000k-of-0000N` name) calls for but that were not given.
    pub missing: Vec<String>,
    /// Given files that are not part of the model (not named by the index, or not model files).
    pub ignored: Vec<String>,
    /// Base name of every source, by source index.
    pub files: Vec<String>,
    /// Sources whose model header was read, in source order.
    pub shards: Vec<usize>,
    /// Tensor name → shard base name, as the index gives it; without an index, the ONNX tensors
    /// whose external-data file was not given, with that file.
    pub weight_map: BTreeMap<String, String>,
    /// The input embedding as the model's graph names it (ONNX), for [`crate::read::locate`].
    #[serde(default)]
    pub embedding_hint: Option<EmbeddingHint>,
    /// Given files that hold an ONNX model's external data (read as tensors' bytes, never as models).
    #[serde(default)]
    pub external_data: Vec<String>,
    /// What the model files hold but cannot be read in place ([`ModelInfo::skipped`]).
    #[serde(default)]
    pub skipped: Vec<SkippedTensor>,
    /// The model's name as its `config.json` gives it (`_name_or_path`: a Hub id, or the last part
    /// of a local path), for display in place of a generic file name such as `model.safetensors`.
    #[serde(default)]
    pub name: Option<String>,
    /// Every source's name as given (a full path natively, a relative path or a file name in a
    /// browser), by source index: a dictionary's layer and hook are in its folders' names.
    #[serde(default)]
    pub paths: Vec<String>,
    /// The sparse-autoencoder dictionary the files are, when they are one (`read::dictionary`);
    /// its decoder, when stored with features in columns, is listed as its transposed view.
    #[serde(default)]
    pub dictionary: Option<Dictionary>,
}

impl ModelSet {
    /// The shard a tensor lives in when the index puts it in a file that was not given.
    pub fn missing_shard_for(&self, tensor: &str) -> Option<&str> {
        self.weight_map.get(tensor).map(String::as_str).filter(|shard| self.missing.iter().any(|m| m == shard))
    }

    /// The set as one [`ModelInfo`], for [`locate`].
    pub fn model_info(&self) -> ModelInfo {
        ModelInfo {
            format: self.format.clone(),
            tensors: self.tensors.clone(),
            vocab_size: self.vocab_size,
            vocab: self.vocab.clone(),
            hints: self.hints,
            embedding_hint: self.embedding_hint.clone(),
            skipped: self.skipped.clone(),
            dictionary: self.dictionary.clone(),
            external: Vec::new(),
            ..ModelInfo::default()
        }
    }

    /// The files read, for messages: the file name for a single file (so single-file messages stay
    /// as they were), else a list.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.shards.iter().filter_map(|&i| self.files.get(i).map(String::as_str)).collect();
        match names.as_slice() {
            [] => "the files given".to_string(),
            [one] => one.to_string(),
            many if many.len() <= 4 => many.join(", "),
            many => {
                format!("{}, … ({} files)", many.iter().take(3).copied().collect::<Vec<_>>().join(", "), many.len())
            }
        }
    }
}

/// What a source is, decided before any model header is read.
enum Role {
    /// A shard index, with its weight map (tensor → shard base name).
    Index(BTreeMap<String, String>),
    /// A `config.json`.
    Config,
    /// A sparse autoencoder's own config (`cfg.json`, `hyperparams.json`).
    DictionaryConfig,
    /// A JSON file that is neither: tokenizer, generation config, an unusable index …
    OtherJson,
    /// Anything else: a model file or a non-model file, told apart later by name and first bytes.
    Candidate,
}

/// Reads the headers of several files as one model. See the module documentation for the rules.
pub fn read_model_set(sources: &[&dyn ByteSource]) -> Result<ModelSet, FormatError> {
    let files: Vec<String> = sources.iter().map(|s| base_name(s.name()).to_string()).collect();
    let mut roles = Vec::with_capacity(sources.len());
    for (&source, name) in sources.iter().zip(&files) {
        roles.push(role_of(source, name)?);
    }

    // More than one index: a folder holding both model.safetensors.index.json and the index of
    // another layout. Prefer the safetensors one; the rest are ignored.
    let indexes: Vec<usize> = (0..roles.len()).filter(|&i| matches!(roles.get(i), Some(Role::Index(_)))).collect();
    let index = match indexes.as_slice() {
        [] => None,
        [one] => Some(*one),
        several => {
            let preferred: Vec<usize> = several
                .iter()
                .copied()
                .filter(|&i| files.get(i).is_some_and(|n| n.to_ascii_lowercase().ends_with(".safetensors.index.json")))
                .collect();
            match preferred.as_slice() {
                [one] => Some(*one),
                _ => {
                    let names: Vec<&str> = several.iter().filter_map(|&i| files.get(i).map(String::as_str)).collect();
                    return Err(FormatError::SeveralIndexes { files: names.join(", ") });
                }
            }
        }
    };

    let mut set = ModelSet { files: files.clone(), index, ..ModelSet::default() };
    let mut config = ConfigHints::default();
    let mut have_config = false;
    let mut dictionary_config = None;
    for (i, role) in roles.iter().enumerate() {
        let (Some(&source), Some(name)) = (sources.get(i), files.get(i)) else {
            continue;
        };
        match role {
            // One config.json is used; a second (from another folder) is ignored, not guessed at.
            Role::Config if !have_config => {
                have_config = true;
                config = read_config(source, name)?;
            }
            Role::Index(_) if Some(i) == index => {}
            Role::DictionaryConfig if dictionary_config.is_none() => {
                let bytes = read_json(source, name)?;
                let value: Value = serde_json::from_slice(&bytes).map_err(|e| FormatError::InvalidConfig {
                    file: name.clone(),
                    reason: format!("invalid JSON: {e}"),
                })?;
                dictionary_config = DictionaryConfig::from_json(name, &value);
                set.ignored.push(name.clone());
            }
            Role::OtherJson if name.eq_ignore_ascii_case(vocab::TOKENIZER_FILE) => {
                // Only its size is taken here, and a tokenizer that does not parse is no hint.
                set.hints.tokenizer_tokens =
                    vocab::read_tokenizer_json(source).ok().map(|tokens| tokens.len() as u64).filter(|&n| n > 0);
                set.ignored.push(name.clone());
            }
            Role::Config | Role::DictionaryConfig | Role::Index(_) | Role::OtherJson => set.ignored.push(name.clone()),
            Role::Candidate => {}
        }
    }

    // Taken, not cloned: a weight map can hold 10⁶ entries.
    let weight_map = index.and_then(|i| match roles.get_mut(i) {
        Some(Role::Index(map)) => Some(std::mem::take(map)),
        _ => None,
    });
    let infos = match (index, weight_map) {
        (Some(index), Some(weight_map)) => read_indexed(sources, &roles, index, weight_map, &mut set)?,
        _ => read_unindexed(sources, &roles, &mut set)?,
    };

    // MLX's quantised matrices: three stored tensors become one view (`mlx`). One whose shapes
    // fit no quantisation keeps its U32 type, which then says why it cannot be analysed.
    for refusal in mlx::combine(&mut set.tensors, config.quantization.as_ref(), config.hidden_size) {
        if let Some(t) = set.tensors.iter_mut().find(|t| t.name == refusal.tensor) {
            t.dtype = super::DType::Other(format!("U32 (MLX-quantised, but {})", refusal.reason));
        }
    }

    // `ignored` lists files in the order given.
    set.ignored.sort_by_key(|n| files.iter().position(|f| f == n));
    set.vocab_size = infos.iter().find_map(|(_, info)| info.vocab_size).or(config.vocab_size);
    set.hints.hidden_size = config.hidden_size;
    set.hints.tied = config.tied;
    set.name = config.name.clone();
    set.vocab = infos.iter().map(|(_, info)| &info.vocab).find(|v| !v.is_empty()).cloned().unwrap_or_default();
    set.shards = infos.iter().map(|(i, _)| *i).collect();
    // Missing external-data files are not missing shards of the format's count.
    let missing_shards = match index {
        Some(_) => set.missing.len(),
        None => set.missing.iter().filter(|m| !set.weight_map.values().any(|v| v == *m)).count(),
    };
    set.format = display_format(&infos, &files, missing_shards)?;
    set.paths = sources.iter().map(|s| s.name().to_string()).collect();
    set.dictionary = recognise(&set.tensors, dictionary_config.as_ref(), &set.paths);
    // A decoder that keeps its features in columns is read by columns (`Layout::Transposed`).
    // One whose values are not one per element (block-quantised) has no columns to read: it is
    // then not offered as a dictionary at all, rather than measured along the wrong axis.
    if let Some(decoder) = set.dictionary.as_ref().filter(|d| d.columns_are_features).map(|d| d.decoder.clone()) {
        let stored = set.tensors.iter_mut().find(|t| t.name == decoder);
        match stored.and_then(|t| Some((features_view(t)?, t))) {
            Some((view, t)) => *t = view,
            None => set.dictionary = None,
        }
    }
    Ok(set)
}

/// Classifies one source by its name (and, for JSON files of unknown purpose, its content).
fn role_of(source: &dyn ByteSource, name: &str) -> Result<Role, FormatError> {
    let lower = name.to_ascii_lowercase();
    if !lower.ends_with(".json") {
        return Ok(Role::Candidate);
    }
    if lower == "config.json" {
        return Ok(Role::Config);
    }
    if DICTIONARY_CONFIGS.contains(&lower.as_str()) {
        return Ok(Role::DictionaryConfig);
    }
    if lower.ends_with(".index.json") {
        // Named as an index, so it must parse as one. Indexes of pickled `.bin` shards
        // (pytorch_model.bin.index.json) point at files Orthoscope cannot read: not our index.
        let map = parse_index(name, &read_json(source, name)?)?;
        return Ok(if is_pickle_index(&map) { Role::OtherJson } else { Role::Index(map) });
    }
    if NOT_INDEX_JSON.contains(&lower.as_str()) || source.len() > MAX_JSON_BYTES {
        return Ok(Role::OtherJson);
    }
    // An index under another name: recognised by its `weight_map`, otherwise just some JSON.
    let bytes = read_json(source, name)?;
    // Only whether the key is there: nothing of the document is kept.
    #[derive(Deserialize)]
    struct Probe {
        weight_map: Option<IgnoredAny>,
    }
    let has_weight_map = serde_json::from_slice::<Probe>(&bytes).is_ok_and(|p| p.weight_map.is_some());
    if !has_weight_map {
        return Ok(Role::OtherJson);
    }
    let map = parse_index(name, &bytes)?;
    Ok(if is_pickle_index(&map) { Role::OtherJson } else { Role::Index(map) })
}

/// Whether every shard an index names is a pickled PyTorch file (`.bin`, `.pt`, `.pth`).
fn is_pickle_index(map: &BTreeMap<String, String>) -> bool {
    !map.is_empty()
        && map.values().all(|f| {
            let f = f.to_ascii_lowercase();
            f.ends_with(".bin") || f.ends_with(".pt") || f.ends_with(".pth")
        })
}

/// The whole of a JSON side file, refusing sizes no real index or config reaches.
fn read_json(source: &dyn ByteSource, name: &str) -> Result<Vec<u8>, FormatError> {
    let len = source.len();
    if len > MAX_JSON_BYTES {
        return Err(FormatError::JsonTooLarge { file: name.to_string(), len, max: MAX_JSON_BYTES });
    }
    // len <= 64 MB, so it fits in usize on every target.
    let mut bytes = vec![0u8; len as usize];
    source.read_at(0, &mut bytes)?;
    Ok(bytes)
}

/// The index case: read exactly the shards the index names, and take from each exactly the
/// tensors the index puts there.
fn read_indexed(
    sources: &[&dyn ByteSource],
    roles: &[Role],
    index: usize,
    weight_map: BTreeMap<String, String>,
    set: &mut ModelSet,
) -> Result<Vec<(usize, ModelInfo)>, FormatError> {
    let index_name = set.files.get(index).cloned().unwrap_or_default();
    // BTreeMap iteration is in name order, so each shard's list comes out sorted.
    let mut by_shard: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (tensor, shard) in &weight_map {
        by_shard.entry(shard.as_str()).or_default().push(tensor.as_str());
    }

    // Which source is which shard; two sources with one shard's name cannot both be it.
    let mut present: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, role) in roles.iter().enumerate() {
        let (Role::Candidate, Some(name)) = (role, set.files.get(i)) else {
            continue;
        };
        if !by_shard.contains_key(name.as_str()) {
            set.ignored.push(name.clone());
            continue;
        }
        if let Some(&first) = present.get(name.as_str()) {
            let full = |j: usize| sources.get(j).map_or_else(String::new, |s| s.name().to_string());
            return Err(FormatError::DuplicateFile { name: name.clone(), first: full(first), second: full(i) });
        }
        present.insert(name.as_str(), i);
    }
    let shard_names: BTreeSet<&str> = by_shard.keys().copied().collect();
    set.missing = shard_names.iter().filter(|s| !present.contains_key(*s)).map(|s| s.to_string()).collect();

    let mut shards: Vec<(&str, usize)> = present.into_iter().collect();
    shards.sort_by_key(|&(_, i)| i);
    let mut infos = Vec::with_capacity(shards.len());
    for (shard, i) in shards {
        let Some(&source) = sources.get(i) else {
            continue;
        };
        let mut info = read_model(source, i)?;
        // Sorted by name (the weight map is a BTreeMap), so both checks below are binary searches:
        // a scan of the shard's list per wanted tensor was O(n²) (100 000 entries took
        // 10.7 s), and hashed sets of 10⁶ names cost more than sorting references.
        let wanted = by_shard.get(shard).map(Vec::as_slice).unwrap_or(&[]);
        let mut listed: Vec<&str> = info.tensors.iter().map(|t| t.name.as_str()).collect();
        listed.sort_unstable();
        if let Some(tensor) = wanted.iter().find(|t| listed.binary_search(t).is_err()) {
            return Err(FormatError::ShardLacksTensor {
                index: index_name.clone(),
                tensor: tensor.to_string(),
                shard: shard.to_string(),
            });
        }
        drop(listed);
        // Tensors the index puts elsewhere (or nowhere) are not this shard's to give. Moved, not
        // cloned: only the shard's format and vocabulary are needed from `info` later.
        set.skipped.extend(info.skipped.iter().filter(|t| wanted.binary_search(&t.name.as_str()).is_ok()).cloned());
        set.tensors.extend(
            std::mem::take(&mut info.tensors).into_iter().filter(|t| wanted.binary_search(&t.name.as_str()).is_ok()),
        );
        infos.push((i, info));
    }
    set.weight_map = weight_map;
    Ok(infos)
}

/// The case without an index: every model file given, united, no tensor name twice.
fn read_unindexed(
    sources: &[&dyn ByteSource],
    roles: &[Role],
    set: &mut ModelSet,
) -> Result<Vec<(usize, ModelInfo)>, FormatError> {
    let mut infos = Vec::new();
    let mut owner: HashMap<String, usize> = HashMap::new();
    let several = sources.len() > 1;
    // A PyTorch checkpoint among several files is read only when no other file is a model file
    // (see TORCH_EXTENSIONS).
    let mut native = false;
    if several {
        for (i, role) in roles.iter().enumerate() {
            if let (Role::Candidate, Some(&source), Some(name)) = (role, sources.get(i), set.files.get(i)) {
                if !is_torch_name(name) && looks_like_model(source, name)? {
                    native = true;
                    break;
                }
            }
        }
    }
    // ONNX models first: the files their external data names are the tensors' bytes, never
    // models or ignored files, wherever they come in the list.
    let mut onnx: BTreeMap<usize, ModelInfo> = BTreeMap::new();
    let mut data_files: BTreeSet<usize> = BTreeSet::new();
    for (i, role) in roles.iter().enumerate() {
        let (Role::Candidate, Some(&source), Some(name)) = (role, sources.get(i), set.files.get(i)) else {
            continue;
        };
        if name.to_ascii_lowercase().ends_with(".onnx") {
            let mut info = read_model(source, i)?;
            place_external(&mut info, sources, roles, set, &mut data_files)?;
            onnx.insert(i, info);
        }
    }
    for (i, role) in roles.iter().enumerate() {
        let (Role::Candidate, Some(&source), Some(name)) = (role, sources.get(i), set.files.get(i)) else {
            continue;
        };
        if data_files.contains(&i) && !onnx.contains_key(&i) {
            continue;
        }
        let info = match onnx.remove(&i) {
            Some(info) => info,
            None => {
                // A lone file is always read as a model, so it reports the reader's own error as before.
                let torch = is_torch_name(name);
                if several
                    && ((torch && (native || !starts_as_zip(source)?)) || (!torch && !looks_like_model(source, name)?))
                {
                    set.ignored.push(name.clone());
                    continue;
                }
                match read_model(source, i) {
                    // A pickled object that is not a state dict (`training_args.bin`) beside a checkpoint.
                    Err(FormatError::TorchUnreadable { .. }) if several && torch => {
                        set.ignored.push(name.clone());
                        continue;
                    }
                    other => other?,
                }
            }
        };
        if set.embedding_hint.is_none() {
            set.embedding_hint = info.embedding_hint.clone();
        }
        for t in &info.tensors {
            if let Some(&first) = owner.get(&t.name) {
                return Err(FormatError::DuplicateTensor {
                    tensor: t.name.clone(),
                    first: set.files.get(first).cloned().unwrap_or_default(),
                    second: name.clone(),
                });
            }
            owner.insert(t.name.clone(), i);
        }
        set.tensors.extend(info.tensors.iter().cloned());
        set.skipped.extend(info.skipped.iter().cloned());
        infos.push((i, info));
    }
    if infos.is_empty() {
        // Nothing to read: if one of the files is a model in another format (a PyTorch .bin, an
        // ONNX export, a Git LFS pointer …), say so rather than just listing what was ignored.
        for (i, role) in roles.iter().enumerate() {
            let (Role::Candidate, Some(&source)) = (role, sources.get(i)) else {
                continue;
            };
            if let Some(error @ FormatError::Foreign { kind, .. }) = sniff::sniff_source(source)? {
                if kind.is_model_format() {
                    return Err(error);
                }
            }
        }
        return Err(FormatError::NoModelFiles { ignored: set.ignored.join(", ") });
    }
    // Parts of one split must agree on how many parts there are.
    let mut counts: BTreeMap<(String, String), (u64, &str)> = BTreeMap::new();
    for (i, _) in &infos {
        let Some(name) = set.files.get(*i) else { continue };
        let Some((prefix, ext, count)) = split_name(name) else { continue };
        match counts.get(&(prefix.to_string(), ext.to_string())) {
            Some(&(first_count, first)) if first_count != count => {
                return Err(FormatError::SplitCountsDisagree {
                    first: first.to_string(),
                    first_count,
                    second: name.clone(),
                    second_count: count,
                });
            }
            Some(_) => {}
            None => {
                counts.insert((prefix.to_string(), ext.to_string()), (count, name.as_str()));
            }
        }
    }
    check_split_metadata(&infos, &set.files)?;
    // Without an index, the only hint of a missing part is a `-0000k-of-0000N` name.
    let given: BTreeSet<&str> = set.files.iter().map(String::as_str).collect();
    let mut missing = BTreeSet::new();
    for (i, _) in &infos {
        if let Some(parts) = set.files.get(*i).and_then(|n| split_parts(n)) {
            missing.extend(parts.into_iter().filter(|p| !given.contains(p.as_str())));
        }
    }
    set.missing.extend(missing.into_iter().filter(|m| !set.missing.contains(m)).collect::<Vec<_>>());
    Ok(infos)
}

/// Places an ONNX model's external-data tensors in the files given: `TensorInfo::file` becomes the
/// source whose base name is the location's. A tensor whose file was not given is left out of
/// `info.tensors` and recorded in `set.missing` and `set.weight_map`, as a missing shard's are.
fn place_external(
    info: &mut ModelInfo,
    sources: &[&dyn ByteSource],
    roles: &[Role],
    set: &mut ModelSet,
    data_files: &mut BTreeSet<usize>,
) -> Result<(), FormatError> {
    for ext in std::mem::take(&mut info.external) {
        let wanted = base_name(&ext.location);
        let found: Vec<usize> = (0..sources.len())
            .filter(|&j| matches!(roles.get(j), Some(Role::Candidate)) && set.files.get(j).is_some_and(|f| f == wanted))
            .collect();
        let full = |j: usize| sources.get(j).map_or_else(String::new, |s| s.name().to_string());
        match found.as_slice() {
            [] => {
                if !set.missing.iter().any(|m| m == wanted) {
                    set.missing.push(wanted.to_string());
                }
                set.weight_map.insert(ext.tensor.clone(), wanted.to_string());
                info.tensors.retain(|t| t.name != ext.tensor);
            }
            [j] => {
                let file_len = sources.get(*j).map_or(0, |s| s.len());
                if let Some(t) = info.tensors.iter_mut().find(|t| t.name == ext.tensor) {
                    if t.byte_range.1 > file_len {
                        return Err(FormatError::PastEof {
                            file: full(*j),
                            tensor: t.name.clone(),
                            end: t.byte_range.1,
                            file_len,
                        });
                    }
                    t.file = *j;
                }
                if data_files.insert(*j) {
                    set.external_data.push(wanted.to_string());
                }
            }
            [first, second, ..] => {
                return Err(FormatError::DuplicateFile {
                    name: wanted.to_string(),
                    first: full(*first),
                    second: full(*second),
                })
            }
        }
    }
    Ok(())
}

/// Whether a source starts with a zip's local header (reads 4 bytes).
fn starts_as_zip(source: &dyn ByteSource) -> Result<bool, FormatError> {
    if source.len() < 4 {
        return Ok(false);
    }
    let mut head = [0u8; 4];
    source.read_at(0, &mut head)?;
    Ok(zip::is_zip(&head))
}

/// Whether a file not named by an index is a model file: by extension, or by its first bytes
/// (GGUF and .npy magic, or a safetensors length prefix followed by `{`). Reads at most 9 bytes.
fn looks_like_model(source: &dyn ByteSource, name: &str) -> Result<bool, FormatError> {
    let lower = name.to_ascii_lowercase();
    if MODEL_EXTENSIONS.iter().any(|e| lower.ends_with(e)) {
        return Ok(true);
    }
    let len = source.len();
    let mut head = [0u8; 9];
    let n = len.min(head.len() as u64) as usize;
    let head = head.get_mut(..n).unwrap_or(&mut []);
    source.read_at(0, head)?;
    Ok(head.starts_with(gguf::MAGIC) || head.starts_with(npy::MAGIC) || super::plausible_safetensors(head, len))
}

#[cfg(test)]
mod tests {
    use super::config::display_name;
    use super::*;

    #[test]
    fn a_config_names_the_model_by_its_hub_id_or_the_last_part_of_its_path() {
        assert_eq!(
            display_name("sentence-transformers/all-MiniLM-L6-v2").as_deref(),
            Some("sentence-transformers/all-MiniLM-L6-v2")
        );
        assert_eq!(display_name("gpt2").as_deref(), Some("gpt2"));
        assert_eq!(display_name("/home/me/runs/ckpt-3000/").as_deref(), Some("ckpt-3000"));
        assert_eq!(display_name("C:\\models\\tiny").as_deref(), Some("tiny"));
        assert_eq!(display_name("./out").as_deref(), Some("out"));
        assert_eq!(display_name("  ").as_deref(), None);
        assert_eq!(display_name(&"x".repeat(500)).as_deref(), None);
        assert_eq!(display_name("a\u{7}b").as_deref(), None);
    }

    #[test]
    fn split_names_expand_to_all_parts() {
        assert_eq!(
            split_parts("m-00002-of-00003.gguf"),
            Some(vec!["m-00001-of-00003.gguf".into(), "m-00002-of-00003.gguf".into(), "m-00003-of-00003.gguf".into()])
        );
        assert_eq!(split_parts("model.safetensors"), None);
        assert_eq!(split_parts("m-1-of-2.gguf"), None);
        assert_eq!(split_parts("m-00001-of-99999.gguf"), None);
    }
}
