//! Which tensor is the input token embedding, which the output matrix (docs/method.md §1: the
//! paper's ε is a property of the input embedding only).
//!
//! The input embedding is chosen only when the files make it certain, in this order: a name of
//! real architectures' checkpoints (with or without a prefix); an unnamed matrix whose rows equal a
//! vocabulary size the files state (GGUF metadata, config.json), and whose columns equal its
//! hidden size when stated; the output matrix of a model whose config.json says it is tied; the
//! rows of a dropped tokenizer.json, within its padding; the file's only matrix; the only matrix
//! outside the transformer blocks that is clearly V×d. A block weight, a position embedding or an
//! output matrix is never taken for it otherwise. When nothing is certain, nothing is chosen and
//! [`Located::reason`] says why; the user can still name any 2-D tensor, labelled as such
//! ([`TensorRole`]). The files of a sparse autoencoder (`read::dictionary`) have no embedding:
//! their decoder is chosen instead, as [`TensorRole::SaeDecoder`], and never their encoder.

use serde::{Deserialize, Serialize};

use thiserror::Error;

use crate::read::format::decode::DecodeError;
use crate::read::format::set::ModelSet;
use crate::read::format::{ModelInfo, TensorInfo};

/// Why no tensor can be analysed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LocateError {
    /// No tensor of that name in the file(s).
    #[error("no tensor named '{name}' in {file}")]
    TensorNotFound { name: String, file: String },
    /// The tensor asked for (or the located embedding) lives in a shard the index names but that
    /// was not among the files given.
    #[error("tensor '{tensor}' is in {shard}, which was not among the files given — add it")]
    MissingShard { tensor: String, shard: String },
    /// The files hold no tensor that is certainly the input token embedding: nothing is analysed
    /// unless the user names one. `why` says what the files hold, `hint` what to give instead.
    #[error("{files}: no input token embedding to analyse: {why}.{hint}")]
    NoInputEmbedding { files: String, why: String, hint: String, candidates: Vec<String> },
    /// The tensor is not a matrix.
    #[error("tensor '{tensor}' has shape {shape:?}; a token embedding must be 2-D (vocabulary × d_model)")]
    NotAMatrix { tensor: String, shape: Vec<u64> },
    /// The matrix has no rows or no columns.
    #[error("tensor '{tensor}' has shape {shape:?}: nothing to analyse")]
    Empty { tensor: String, shape: Vec<u64> },
    /// The tensor asked for (or the one named like the input embedding) is in the file but cannot
    /// be read in place ([`ModelInfo::skipped`]): `reason` says why and what to do.
    #[error("tensor '{tensor}' in {file} cannot be read: {reason}")]
    Unreadable { tensor: String, file: String, reason: String },
    /// The located embedding's element type cannot be decoded.
    #[error("tensor '{tensor}': {source}")]
    Decode { tensor: String, source: DecodeError },
}

/// `tensor_reason` of a tensor the user named.
pub const CHOSEN_BY_YOU: &str = "chosen by you";

/// Input token-embedding names of published checkpoints, most specific first.
pub const EMBEDDING_NAMES: &[&str] = &[
    "model.embed_tokens.weight",
    "language_model.model.embed_tokens.weight",
    "model.language_model.embed_tokens.weight",
    "transformer.wte.weight",
    "wte.weight",
    "gpt_neox.embed_in.weight",
    "embeddings.word_embeddings.weight",
    "bert.embeddings.word_embeddings.weight",
    "transformer.word_embeddings.weight",
    "word_embeddings.weight",
    "shared.weight",
    "encoder.embed_tokens.weight",
    "tok_embeddings.weight",
    "model.tok_embeddings.weight",
    "token_embd.weight",
    "model.decoder.embed_tokens.weight",
    "transformer.embedding.word_embeddings.weight",
    "transformer.embd.wte.weight",
    "backbone.embeddings.weight",
    "backbone.embedding.weight",
    "emb.weight",
    "embed_tokens.weight",
];

/// Name endings of input embeddings under a prefix the table does not know
/// (e.g. "foo.model.embed_tokens.weight").
pub const EMBEDDING_SUFFIXES: &[&str] =
    &["embed_tokens.weight", "wte.weight", "word_embeddings.weight", "tok_embeddings.weight", "embed_in.weight"];

/// Output (unembedding) matrices: never the input embedding, and not what the paper measures
/// (docs/method.md §1), even when they have its shape.
pub const UNEMBEDDING_NAMES: &[&str] = &[
    "lm_head.weight",
    "language_model.lm_head.weight",
    "model.language_model.lm_head.weight",
    "output.weight",
    "embed_out.weight",
    "gpt_neox.embed_out.weight",
    "cls.predictions.decoder.weight",
    "lm_head.decoder.weight",
    "transformer.output_layer.weight",
    "output_layer.weight",
    "head.weight",
    "lm_head.linear.weight",
];

/// Name endings of output matrices under a prefix the table does not know.
const UNEMBEDDING_SUFFIXES: &[&str] =
    &["lm_head.weight", "embed_out.weight", "output_layer.weight", "lm_head.decoder.weight"];

/// Words of a name's parts that mark a weight inside the transformer blocks (attention, MLP/FFN,
/// norms, convolutions, experts) or a projection: never an input embedding.
const BLOCK_WORDS: &[&str] = &[
    "attn",
    "attention",
    "mlp",
    "ffn",
    "feed_forward",
    "norm",
    "ln_",
    "conv",
    "proj",
    "dense",
    "fc1",
    "fc2",
    "c_fc",
    "query",
    "key",
    "value",
    "expert",
    "router",
    "gate",
    "layer",
    "block",
    "blk",
];

/// Words that mark an embedding of positions or segments, not of tokens.
const POSITION_WORDS: &[&str] = &["position", "wpe", "pos_emb", "token_type", "segment", "rotary", "relative"];

/// With several matrices and no name or vocabulary size to go by, a matrix is taken for V×d by its
/// shape alone only when it is the one outside the blocks and much taller than wide: real
/// vocabularies hold ≥ 3.9 rows per column (Llama 2 70B: 32000 × 8192) and thousands of rows.
const SHAPE_ONLY_MIN_ROWS: u64 = 1000;
const SHAPE_ONLY_MIN_ASPECT: u64 = 3;

/// Rows a checkpoint may add to its tokenizer's vocabulary: padded to a multiple of 64 or 128, or
/// with reserved ids (Phi-2: 50295 tokens, 51200 rows).
const TOKENIZER_PADDING: u64 = 1024;

/// What a tensor is, by its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorRole {
    /// The input token embedding: what the paper's ε is about.
    #[default]
    InputEmbedding,
    /// The output matrix (unembedding, `lm_head`): not the paper's ε.
    OutputMatrix,
    /// Anything else: a block weight, a position embedding, a projection, or an unnamed matrix.
    Other,
    /// A sparse autoencoder's decoder, read as its feature directions (`read::dictionary`): ε of
    /// features, not of an embedding.
    SaeDecoder,
}

/// What a name says a tensor is: block weights and position embeddings are [`TensorRole::Other`]
/// even when a part of their name looks like an embedding's.
pub fn role_by_name(name: &str) -> TensorRole {
    if UNEMBEDDING_NAMES.contains(&name) || UNEMBEDDING_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return TensorRole::OutputMatrix;
    }
    if is_block_or_position(name) {
        return TensorRole::Other;
    }
    if EMBEDDING_NAMES.contains(&name) || EMBEDDING_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return TensorRole::InputEmbedding;
    }
    TensorRole::Other
}

/// A weight of a transformer block (a numbered layer, or a part named like attention, MLP, norm,
/// convolution) or an embedding of positions or segments.
fn is_block_or_position(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split(['.', '/']).collect();
    // The last part is "weight"/"bias" or the tensor's own name; its words count too.
    parts.iter().any(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        || parts.iter().any(|p| {
            let p = p.trim_end_matches(".weight");
            BLOCK_WORDS.iter().chain(POSITION_WORDS).any(|w| p.contains(w))
        })
}

/// The outcome of locating.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Located {
    /// Index into `ModelInfo::tensors` of the input embedding, when the files make it certain.
    pub embedding: Option<usize>,
    /// How it was chosen, for the UI and the report; when none was, why not.
    pub reason: String,
    /// Index of the output matrix, if a separate one exists.
    pub unembedding: Option<usize>,
    /// Indices of every 2-D floating-point tensor, the choices offered to the user.
    pub candidates: Vec<usize>,
}

fn is_candidate(t: &TensorInfo) -> bool {
    t.matrix().is_some_and(|(r, c)| r > 0 && c > 0) && t.dtype.is_float()
}

/// Picks the input token embedding of a model, only when the files make it certain: by name, by
/// the vocabulary size they state, or by shape when exactly one matrix can be V×d. A block weight
/// or an output matrix is never picked.
pub fn locate(model: &ModelInfo) -> Located {
    let candidates: Vec<usize> = (0..model.tensors.len()).filter(|&i| is_candidate(&model.tensors[i])).collect();
    let name = |i: usize| model.tensors[i].name.as_str();
    let role = |i: usize| role_by_name(name(i));
    let find = |names: &[&str]| names.iter().find_map(|n| candidates.iter().copied().find(|&i| name(i) == *n));
    let unembedding =
        find(UNEMBEDDING_NAMES).or_else(|| candidates.iter().copied().find(|&i| role(i) == TensorRole::OutputMatrix));
    let located = |embedding: usize, reason: String| Located {
        embedding: Some(embedding),
        reason,
        unembedding,
        candidates: candidates.clone(),
    };
    // A sparse autoencoder's files: its decoder's feature directions, never its encoder.
    if let Some(d) = &model.dictionary {
        if let Some(&i) = candidates.iter().find(|&&i| name(i) == d.decoder) {
            return Located {
                embedding: Some(i),
                reason: d.reason(),
                unembedding: None,
                candidates: candidates.clone(),
            };
        }
    }
    // The model's graph says which tensor the token ids index (ONNX): surer than any name.
    if let Some(hint) = &model.embedding_hint {
        if let Some(&i) = candidates.iter().find(|&&i| name(i) == hint.tensor) {
            return located(i, hint.reason.clone());
        }
    }
    if let Some(i) = find(EMBEDDING_NAMES).filter(|&i| role(i) == TensorRole::InputEmbedding) {
        return located(i, "known embedding name".into());
    }
    // Names with a prefix we do not know (e.g. "foo.model.embed_tokens.weight").
    if let Some(&i) = candidates.iter().find(|&&i| role(i) == TensorRole::InputEmbedding) {
        return located(i, "embedding-like name".into());
    }
    // Neither a block weight, an output matrix nor a position embedding.
    let unnamed: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&i| role(i) == TensorRole::Other && !is_block_or_position(name(i)))
        .collect();
    let rows = |i: usize| model.tensors[i].matrix().map_or(0, |(r, _)| r);
    let cols = |i: usize| model.tensors[i].matrix().map_or(0, |(_, c)| c);
    let hints = model.hints;
    let fits_hidden = |i: usize| hints.hidden_size.is_none_or(|h| cols(i) == h);
    let hidden_note = hints.hidden_size.map_or(String::new(), |h| format!(" and columns the hidden size {h}"));
    if let Some(v) = model.vocab_size {
        let with_v: Vec<usize> = unnamed.iter().copied().filter(|&i| rows(i) == v && fits_hidden(i)).collect();
        if let [i] = with_v.as_slice() {
            return located(*i, format!("rows equal the vocabulary size {v}{hidden_note}"));
        }
    }
    // A tied model may keep its one token matrix under the output's name: config.json says so.
    if hints.tied == Some(true) {
        let fits = |u: usize| model.vocab_size.is_none_or(|v| rows(u) == v) && fits_hidden(u);
        if let Some(u) = unembedding.filter(|&u| fits(u)) {
            return Located {
                embedding: Some(u),
                reason: format!("{} is tied to the input embedding (config.json: tie_word_embeddings)", name(u)),
                unembedding: None,
                candidates: candidates.clone(),
            };
        }
    }
    if let Some(n) = hints.tokenizer_tokens {
        let fit: Vec<usize> = unnamed
            .iter()
            .copied()
            .filter(|&i| rows(i) >= n && rows(i) < n.saturating_add(TOKENIZER_PADDING) && fits_hidden(i))
            .collect();
        if let [i] = fit.as_slice() {
            return located(*i, format!("rows match the tokenizer's {n} tokens{hidden_note}"));
        }
    }
    // The file's only matrix (a `.npy`, a bare tensor file) is what the user means.
    if let ([only], [i]) = (candidates.as_slice(), unnamed.as_slice()) {
        if only == i {
            return located(*i, "the only matrix in the file".into());
        }
    }
    if let [i] = unnamed.as_slice() {
        if fits_hidden(*i)
            && rows(*i) >= SHAPE_ONLY_MIN_ROWS
            && rows(*i) >= SHAPE_ONLY_MIN_ASPECT.saturating_mul(cols(*i))
        {
            return located(*i, "the only vocabulary-shaped matrix outside the transformer blocks".into());
        }
    }
    let reason = why_none(model, &candidates, &unnamed, unembedding);
    Located { embedding: None, reason, unembedding, candidates }
}

/// Why [`locate`] chose nothing, in words a user can act on.
fn why_none(model: &ModelInfo, candidates: &[usize], unnamed: &[usize], unembedding: Option<usize>) -> String {
    let name = |i: usize| model.tensors[i].name.as_str();
    if candidates.is_empty() {
        return "no 2-D floating-point tensor".to_string();
    }
    let output = unembedding.map(|i| format!("the output matrix {} (not the paper's ε)", name(i)));
    match (unnamed.len(), output) {
        (0, Some(out)) if candidates.len() == 1 => format!("it holds only {out}"),
        (0, Some(out)) => format!("it holds transformer-block weights and {out}, but no input token embedding"),
        (0, None) => {
            "it holds only transformer-block weights (attention, MLP, norms), no input token embedding".to_string()
        }
        _ => {
            let names: Vec<&str> = unnamed.iter().take(4).map(|&i| name(i)).collect();
            format!(
                "no tensor is named like an input embedding, and neither a stated vocabulary size nor the shape tells which of {} is one",
                names.join(", ")
            )
        }
    }
}

/// The role of the tensor a user or [`locate`] chose: the located embedding is the input
/// embedding; any other tensor is what its name says, never the input embedding by default.
pub fn role_of_choice(model: &ModelInfo, name: &str) -> TensorRole {
    if model.dictionary.as_ref().is_some_and(|d| d.decoder == name) {
        return TensorRole::SaeDecoder;
    }
    let located = locate(model);
    if located.embedding.and_then(|i| model.tensors.get(i)).is_some_and(|t| t.name == name) {
        return TensorRole::InputEmbedding;
    }
    role_by_name(name)
}

/// The tensor to analyse: the one named by the user, else the located embedding.
/// Returns it with the reason it was chosen.
pub fn choose(model: &ModelInfo, name: Option<&str>, file: &str) -> Result<(TensorInfo, String), LocateError> {
    if let Some(name) = name {
        return model
            .tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| (t.clone(), CHOSEN_BY_YOU.to_string()))
            .ok_or_else(|| match model.skipped.iter().find(|s| s.name == name) {
                Some(s) => {
                    LocateError::Unreadable { tensor: s.name.clone(), file: file.to_string(), reason: s.reason.clone() }
                }
                None => LocateError::TensorNotFound { name: name.to_string(), file: file.to_string() },
            });
    }
    let located = locate(model);
    located.embedding.and_then(|i| model.tensors.get(i)).map(|t| (t.clone(), located.reason.clone())).ok_or_else(|| {
        // An embedding that is there but cannot be read says why, not "no embedding".
        if let Some(s) =
            model.skipped.iter().filter(|s| embedding_rank(&s.name).is_some()).min_by_key(|s| embedding_rank(&s.name))
        {
            return LocateError::Unreadable {
                tensor: s.name.clone(),
                file: file.to_string(),
                reason: s.reason.clone(),
            };
        }
        // A file whose only matrix-like tensor is broken should say so, not "no embedding".
        let hinted = model.embedding_hint.as_ref().and_then(|h| model.tensors.iter().find(|t| t.name == h.tensor));
        match hinted.or_else(|| model.tensors.iter().find(|t| EMBEDDING_NAMES.contains(&t.name.as_str()))) {
            Some(t) => match t.matrix() {
                None => LocateError::NotAMatrix { tensor: t.name.clone(), shape: t.shape.clone() },
                Some((rows, dim)) if rows == 0 || dim == 0 => {
                    LocateError::Empty { tensor: t.name.clone(), shape: t.shape.clone() }
                }
                Some(_) => LocateError::Decode {
                    tensor: t.name.clone(),
                    source: DecodeError::Unsupported(t.dtype.name().to_string()),
                },
            },
            None => LocateError::NoInputEmbedding {
                files: file.to_string(),
                why: located.reason.clone(),
                hint: if located.candidates.is_empty() {
                    String::new()
                } else {
                    " Choose a tensor to analyse it anyway; its ε is then not the paper's.".to_string()
                },
                candidates: located
                    .candidates
                    .iter()
                    .filter_map(|&i| model.tensors.get(i))
                    .map(|t| t.name.clone())
                    .collect(),
            },
        }
    })
}

/// How strongly a name says "token embedding": its place in [`EMBEDDING_NAMES`], after those the
/// suffix matches, `None` for other names. Mirrors the order [`locate`] tries.
fn embedding_rank(name: &str) -> Option<usize> {
    EMBEDDING_NAMES
        .iter()
        .position(|n| *n == name)
        .or_else(|| EMBEDDING_SUFFIXES.iter().any(|s| name.ends_with(s)).then_some(EMBEDDING_NAMES.len()))
}

/// The most likely embedding among tensors the index puts in missing shards, with its shard and
/// its rank (see [`embedding_rank`]).
fn missing_embedding(set: &ModelSet) -> Option<(&str, &str, usize)> {
    set.weight_map
        .keys()
        .filter_map(|tensor| {
            let shard = set.missing_shard_for(tensor)?;
            Some((tensor.as_str(), shard, embedding_rank(tensor)?))
        })
        .min_by_key(|&(_, _, rank)| rank)
}

/// The tensor to analyse in a set: as [`choose`], but a tensor (or the embedding) that lives in a
/// shard the index names and the user did not give is reported as [`LocateError::MissingShard`] instead
/// of "not found" or a guess among the shards that were given.
pub fn choose_in_set(set: &ModelSet, name: Option<&str>) -> Result<(TensorInfo, String), LocateError> {
    let info = set.model_info();
    let what = set.describe();
    if let Some(name) = name {
        if !set.tensors.iter().any(|t| t.name == name) {
            if let Some(shard) = set.missing_shard_for(name) {
                return Err(LocateError::MissingShard { tensor: name.to_string(), shard: shard.to_string() });
            }
        }
        return choose(&info, Some(name), &what);
    }
    // The tensor the graph names (ONNX) outranks every name.
    if let Some(hint) = &set.embedding_hint {
        if let Some(shard) = set.missing_shard_for(&hint.tensor) {
            return Err(LocateError::MissingShard { tensor: hint.tensor.clone(), shard: shard.to_string() });
        }
    }
    if let Some((tensor, shard, missing_rank)) = missing_embedding(set) {
        // Only a better-named embedding among the given shards overrides the missing one.
        let located = locate(&info);
        let found_rank = located.embedding.and_then(|i| info.tensors.get(i)).and_then(|t| embedding_rank(&t.name));
        if found_rank.is_none_or(|r| missing_rank < r) {
            return Err(LocateError::MissingShard { tensor: tensor.to_string(), shard: shard.to_string() });
        }
    }
    choose(&info, None, &what).map_err(|e| match e {
        LocateError::NoInputEmbedding { files, why, hint, candidates } => {
            LocateError::NoInputEmbedding { files, why, hint: missing_part_hint(set).unwrap_or(hint), candidates }
        }
        other => other,
    })
}

/// What to drop instead when parts of a set are missing: a model's first part holds its input
/// embedding in the converters' own order (Hugging Face shards, llama.cpp's split GGUF).
fn missing_part_hint(set: &ModelSet) -> Option<String> {
    let anyway = "or choose a tensor of these files to analyse it anyway (its ε is then not the paper's)";
    match set.missing.iter().find(|m| m.contains("-00001-of-")) {
        Some(first) => Some(format!(
            " The input embedding is in the model's first part, {first}, which was not given: drop it too, {anyway}."
        )),
        None if !set.missing.is_empty() => Some(format!(
            " Parts of this model were not given ({}); the input embedding is in one of them: drop them too, {anyway}.",
            set.missing.join(", ")
        )),
        None => None,
    }
}
