//! What a model's `config.json` says of its input embedding: the vocabulary and width, whether
//! the embedding is tied, MLX's quantisation, and the model's name to show.

use serde_json::Value;

use super::read_json;
use crate::read::format::{mlx, FormatError};
use crate::read::source::ByteSource;

/// What a config.json says of the input embedding (each key also under `text_config`, where
/// multimodal configs nest the language model's).
#[derive(Default)]
pub(super) struct ConfigHints {
    pub(super) vocab_size: Option<u64>,
    pub(super) hidden_size: Option<u64>,
    pub(super) tied: Option<bool>,
    /// MLX's `quantization` (bits and group size, per layer too).
    pub(super) quantization: Option<mlx::QuantConfig>,
    /// `_name_or_path`, made a display name ([`display_name`]).
    pub(super) name: Option<String>,
}

/// Longest model name kept from a config.json (Hub ids are at most 96 characters).
const MAX_NAME_CHARS: usize = 120;

/// A config's `_name_or_path` as a name to show: a Hub id ("org/model") as it is, a local
/// directory (absolute, relative, or with backslashes) by its last part; nothing when empty or odd.
pub(super) fn display_name(raw: &str) -> Option<String> {
    let raw = raw.trim().trim_end_matches(['/', '\\']);
    let local =
        raw.starts_with(['/', '.', '~']) || raw.contains('\\') || raw.matches('/').count() > 1 || raw.contains(':');
    let name = if local { raw.rsplit(['/', '\\']).next().unwrap_or(raw) } else { raw };
    let ok = !name.is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.chars().any(char::is_control);
    ok.then(|| name.to_string())
}

pub(super) fn read_config(source: &dyn ByteSource, name: &str) -> Result<ConfigHints, FormatError> {
    let bytes = read_json(source, name)?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| FormatError::InvalidConfig { file: name.to_string(), reason: format!("invalid JSON: {e}") })?;
    let get = |keys: &[&str]| {
        [Some(&value), value.get("text_config")]
            .into_iter()
            .flatten()
            .find_map(|v| keys.iter().find_map(|k| v.get(*k)).cloned())
    };
    Ok(ConfigHints {
        vocab_size: get(&["vocab_size"]).and_then(|v| v.as_u64()),
        hidden_size: get(&["hidden_size", "n_embd", "d_model"]).and_then(|v| v.as_u64()),
        tied: get(&["tie_word_embeddings"]).and_then(|v| v.as_bool()),
        quantization: mlx::QuantConfig::from_config(&value),
        name: value.get("_name_or_path").and_then(|v| v.as_str()).and_then(display_name),
    })
}
