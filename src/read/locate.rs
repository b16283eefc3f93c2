//! Which tensor is the token embedding, which the unembedding (ARCHITECTURE.md, "read").
//!
//! First a table of names used by common architectures, then a shape heuristic. The user can always
//! override the choice; [`Located::reason`] says why this one was picked.

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
    /// Nothing in the file looks like a token-embedding matrix.
    #[error("{file}: no 2-D floating-point tensor found, so no token embedding to analyse")]
    NoEmbedding { file: String },
    /// The tensor is not a matrix.
    #[error("tensor '{tensor}' has shape {shape:?}; a token embedding must be 2-D (vocabulary × d_model)")]
    NotAMatrix { tensor: String, shape: Vec<u64> },
    /// The matrix has no rows or no columns.
    #[error("tensor '{tensor}' has shape {shape:?}: nothing to analyse")]
    Empty { tensor: String, shape: Vec<u64> },
    /// The located embedding's element type cannot be decoded.
    #[error("tensor '{tensor}': {source}")]
    Decode { tensor: String, source: DecodeError },
}

/// Input token-embedding names, most specific first.
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
    "token_embd.weight",
    "model.decoder.embed_tokens.weight",
    "transformer.embedding.word_embeddings.weight",
    "backbone.embeddings.weight",
    "embed_tokens.weight",
];

/// Name endings of embeddings under a prefix the table does not know
/// (e.g. "foo.model.embed_tokens.weight").
pub const EMBEDDING_SUFFIXES: &[&str] =
    &["embed_tokens.weight", "wte.weight", "word_embeddings.weight", "tok_embeddings.weight", "embed_in.weight"];

/// Output (unembedding) names; the paper does not use these for ε (`docs/method.md` §1).
pub const UNEMBEDDING_NAMES: &[&str] = &[
    "lm_head.weight",
    "language_model.lm_head.weight",
    "output.weight",
    "embed_out.weight",
    "cls.predictions.decoder.weight",
];

/// The outcome of locating.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Located {
    /// Index into `ModelInfo::tensors` of the chosen embedding.
    pub embedding: Option<usize>,
    /// Why it was chosen, for the UI and the report.
    pub reason: String,
    /// Index of the unembedding, if a separate one exists.
    pub unembedding: Option<usize>,
    /// Indices of every 2-D floating-point tensor, the choices offered to the user.
    pub candidates: Vec<usize>,
}

fn is_candidate(t: &TensorInfo) -> bool {
    t.matrix().is_some_and(|(r, c)| r > 0 && c > 0) && t.dtype.is_float()
}

/// Picks the token embedding of a model.
pub fn locate(model: &ModelInfo) -> Located {
    let candidates: Vec<usize> = (0..model.tensors.len()).filter(|&i| is_candidate(&model.tensors[i])).collect();
    let find =
        |names: &[&str]| names.iter().find_map(|n| candidates.iter().copied().find(|&i| model.tensors[i].name == *n));
    let unembedding = find(UNEMBEDDING_NAMES);
    if let Some(i) = find(EMBEDDING_NAMES) {
        return Located { embedding: Some(i), reason: "known embedding name".into(), unembedding, candidates };
    }
    // Names with a prefix we do not know (e.g. "foo.model.embed_tokens.weight").
    if let Some(&i) =
        candidates.iter().find(|&&i| EMBEDDING_SUFFIXES.iter().any(|s| model.tensors[i].name.ends_with(s)))
    {
        return Located { embedding: Some(i), reason: "embedding-like name".into(), unembedding, candidates };
    }
    // Shape: a matrix whose row count is the vocabulary, when the file tells it.
    let rows = |i: usize| model.tensors[i].matrix().map_or(0, |(r, _)| r);
    let size = |i: usize| model.tensors[i].matrix().map_or(0, |(r, c)| r.saturating_mul(c));
    if let Some(v) = model.vocab_size {
        if let Some(i) =
            candidates.iter().copied().filter(|&i| rows(i) == v && Some(i) != unembedding).max_by_key(|&i| size(i))
        {
            return Located {
                embedding: Some(i),
                reason: format!("rows equal the vocabulary size {v}"),
                unembedding,
                candidates,
            };
        }
    }
    // Otherwise the largest matrix with more rows than columns (vocabulary × d_model).
    let tall = candidates
        .iter()
        .copied()
        .filter(|&i| Some(i) != unembedding)
        .filter(|&i| model.tensors[i].matrix().is_some_and(|(r, c)| r > c))
        .max_by_key(|&i| size(i));
    if let Some(i) = tall {
        return Located {
            embedding: Some(i),
            reason: "largest matrix with more rows than columns".into(),
            unembedding,
            candidates,
        };
    }
    let any = candidates.iter().copied().max_by_key(|&i| size(i));
    Located {
        embedding: any,
        reason: if any.is_some() {
            "largest matrix (no better guess)".into()
        } else {
            "no 2-D floating-point tensor".into()
        },
        unembedding,
        candidates,
    }
}

/// The tensor to analyse: the one named by the user, else the located embedding.
/// Returns it with the reason it was chosen.
pub fn choose(model: &ModelInfo, name: Option<&str>, file: &str) -> Result<(TensorInfo, String), LocateError> {
    if let Some(name) = name {
        return model
            .tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| (t.clone(), "chosen by user".to_string()))
            .ok_or_else(|| LocateError::TensorNotFound { name: name.to_string(), file: file.to_string() });
    }
    let located = locate(model);
    located.embedding.and_then(|i| model.tensors.get(i)).map(|t| (t.clone(), located.reason.clone())).ok_or_else(|| {
        // A file whose only matrix-like tensor is broken should say so, not "no embedding".
        match model.tensors.iter().find(|t| EMBEDDING_NAMES.contains(&t.name.as_str())) {
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
            None => LocateError::NoEmbedding { file: file.to_string() },
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
    if let Some((tensor, shard, missing_rank)) = missing_embedding(set) {
        // Only a better-named embedding among the given shards overrides the missing one.
        let located = locate(&info);
        let found_rank = located.embedding.and_then(|i| info.tensors.get(i)).and_then(|t| embedding_rank(&t.name));
        if found_rank.is_none_or(|r| missing_rank < r) {
            return Err(LocateError::MissingShard { tensor: tensor.to_string(), shard: shard.to_string() });
        }
    }
    choose(&info, None, &what)
}
