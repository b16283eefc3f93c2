//! Which tensor is the token embedding, which the unembedding (`shared/design.md`, "locate").
//!
//! First a table of names used by common architectures, then a shape heuristic. The user can always
//! override the choice; [`Located::reason`] says why this one was picked.

use serde::{Deserialize, Serialize};

use crate::format::{ModelInfo, TensorInfo};

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

/// Output (unembedding) names; the paper does not use these for ε (`shared/paper.md` §1).
pub const UNEMBEDDING_NAMES: &[&str] =
    &["lm_head.weight", "language_model.lm_head.weight", "output.weight", "embed_out.weight", "cls.predictions.decoder.weight"];

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
    let find = |names: &[&str]| {
        names.iter().find_map(|n| candidates.iter().copied().find(|&i| model.tensors[i].name == *n))
    };
    let unembedding = find(UNEMBEDDING_NAMES);
    if let Some(i) = find(EMBEDDING_NAMES) {
        return Located { embedding: Some(i), reason: "known embedding name".into(), unembedding, candidates };
    }
    // Names with a prefix we do not know (e.g. "foo.model.embed_tokens.weight").
    if let Some(&i) = candidates.iter().find(|&&i| EMBEDDING_SUFFIXES.iter().any(|s| model.tensors[i].name.ends_with(s))) {
        return Located { embedding: Some(i), reason: "embedding-like name".into(), unembedding, candidates };
    }
    // Shape: a matrix whose row count is the vocabulary, when the file tells it.
    let rows = |i: usize| model.tensors[i].matrix().map_or(0, |(r, _)| r);
    let size = |i: usize| model.tensors[i].matrix().map_or(0, |(r, c)| r.saturating_mul(c));
    if let Some(v) = model.vocab_size {
        if let Some(i) = candidates.iter().copied().filter(|&i| rows(i) == v && Some(i) != unembedding).max_by_key(|&i| size(i)) {
            return Located { embedding: Some(i), reason: format!("rows equal the vocabulary size {v}"), unembedding, candidates };
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
        return Located { embedding: Some(i), reason: "largest matrix with more rows than columns".into(), unembedding, candidates };
    }
    let any = candidates.iter().copied().max_by_key(|&i| size(i));
    Located {
        embedding: any,
        reason: if any.is_some() { "largest matrix (no better guess)".into() } else { "no 2-D floating-point tensor".into() },
        unembedding,
        candidates,
    }
}

/// The tensor to analyse: the one named by the user, else the located embedding.
/// Returns it with the reason it was chosen.
pub fn choose(model: &ModelInfo, name: Option<&str>, file: &str) -> Result<(TensorInfo, String), crate::Error> {
    if let Some(name) = name {
        return model
            .tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| (t.clone(), "chosen by user".to_string()))
            .ok_or_else(|| crate::Error::TensorNotFound { name: name.to_string(), file: file.to_string() });
    }
    let located = locate(model);
    located
        .embedding
        .and_then(|i| model.tensors.get(i))
        .map(|t| (t.clone(), located.reason.clone()))
        .ok_or_else(|| {
            // A file whose only matrix-like tensor is broken should say so, not "no embedding".
            match model.tensors.iter().find(|t| EMBEDDING_NAMES.contains(&t.name.as_str())) {
                Some(t) => match t.matrix() {
                    None => crate::Error::NotAMatrix { tensor: t.name.clone(), shape: t.shape.clone() },
                    Some((rows, dim)) if rows == 0 || dim == 0 => {
                        crate::Error::Empty { tensor: t.name.clone(), shape: t.shape.clone() }
                    }
                    Some(_) => crate::Error::Decode {
                        tensor: t.name.clone(),
                        source: crate::format::decode::DecodeError::Unsupported(t.dtype.name().to_string()),
                    },
                },
                None => crate::Error::NoEmbedding { file: file.to_string() },
            }
        })
}
