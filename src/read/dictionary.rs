//! Sparse-autoencoder dictionaries (docs/method.md §10): which of an SAE's tensors holds its
//! feature directions, and what its files say of it. The paper's capacity is one resource shared
//! by embeddings and features; a dictionary's decoder rows are features written into the residual
//! stream, so their ε is measured as an embedding's is — over the unit decoder rows, never the
//! encoder's (its rows are detectors, not directions the model writes).
//!
//! The layouts read, as their loaders define them (the feature axis is the one that is not the
//! input width):
//! - SAELens: `cfg.json` (`d_in`, `d_sae`, `architecture`, the hook in `hook_name`,
//!   `metadata.hook_name` or the older `hook_point`) and `W_dec [d_sae, d_in]`;
//! - EleutherAI sparsify: `cfg.json` (`d_in`, `num_latents`, `k`) and `W_dec [num_latents, d_in]`
//!   in a folder named after its hookpoint (`layers.N`);
//! - Gemma Scope: `W_enc [d_in, d_sae]`, `W_dec [d_sae, d_in]`, `threshold` (`params.npz`; Gemma
//!   Scope 2's `params.safetensors` with lower-case names), the layer from the path (`layer_N`);
//! - Llama Scope: `hyperparams.json` (`d_model`, `d_sae`, `hook_point_in`) and
//!   `decoder.weight [d_model, d_sae]`: columns are features;
//! - OpenAI's GPT-2 autoencoders: a state dict with `encoder.weight [n_latents, n_inputs]`,
//!   `decoder.weight [n_inputs, n_latents]` (columns are features), `pre_bias`, `latent_bias`.
//!
//! Transcoders (`W_dec [d_sae, d_out]`) read an input and write another place: their features are
//! directions of the output side, and are labelled so.
//!
//! SAELens's optional `sparsity.safetensors` (`sparsity`: log10 of each feature's firing density)
//! names the latents that never fired ([`dead_latents`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::read::format::decode::decode_rows;
use crate::read::format::{DType, Layout, TensorInfo};
use crate::read::source::{ByteSource, ReadError};
use crate::read::untrained::RowRanges;

/// A dictionary as its files describe it: what `Report.dictionary` carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dictionary {
    /// Features (latents): the decoder's rows as analysed.
    pub d_sae: u64,
    /// Width of the activations the encoder reads (the residual stream, for most).
    pub d_in: u64,
    /// The transformer layer the dictionary reads, from its config, hook or path; None when unknown.
    pub layer: Option<u64>,
    /// The hook point, as its config names it (`blocks.6.hook_resid_pre`, `layers.6`); None when unknown.
    pub hook: Option<String>,
    /// `standard`, `gated`, `jumprelu`, `topk`, … as the config says; None when it does not.
    pub architecture: Option<String>,
    /// Which published layout it was read as: `saelens`, `sparsify`, `gemma_scope`,
    /// `gemma_scope_2`, `llama_scope`, `openai`, or `w_dec_w_enc` (a decoder and encoder by name alone).
    pub source_layout: String,
    /// The decoder tensor analysed.
    pub decoder: String,
    /// Whether the stored decoder keeps features in its columns (read as a transposed view).
    pub columns_are_features: bool,
    /// A transcoder: its features are directions of the output side (`W_dec [d_sae, d_out]`).
    #[serde(default)]
    pub transcoder: bool,
    /// Width of the decoder's rows when it is not `d_in` (a transcoder's output side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_out: Option<u64>,
}

impl Dictionary {
    /// How the decoder was chosen, for `Report.tensor_reason`.
    pub fn reason(&self) -> String {
        let axis = if self.columns_are_features { "its columns" } else { "its rows" };
        let side = if self.transcoder { " of the output side (a transcoder)" } else { "" };
        format!(
            "the decoder of a sparse autoencoder ({} layout): {axis} are its {} feature directions{side}",
            self.source_layout, self.d_sae
        )
    }
}

/// Longest hook or architecture name kept from an SAE config (real ones are under 60 characters).
const MAX_CONFIG_TEXT_CHARS: usize = 120;

/// What an SAE's own config file (`cfg.json`, `hyperparams.json`) says, kept from the JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DictionaryConfig {
    /// The file's name (`cfg.json`, `hyperparams.json`).
    pub file: String,
    pub d_in: Option<u64>,
    pub d_sae: Option<u64>,
    pub d_out: Option<u64>,
    /// sparsify's latents (0 there means `expansion_factor · d_in`).
    pub num_latents: Option<u64>,
    /// sparsify's TopK.
    pub k: Option<u64>,
    pub architecture: Option<String>,
    pub hook: Option<String>,
    pub layer: Option<u64>,
    /// sparsify's `transcode`, or an architecture named a transcoder.
    pub transcoder: bool,
}

impl DictionaryConfig {
    /// The keys of an SAE config among the JSON `value` of `file`; None when it has none of them
    /// (then it is some other JSON).
    pub fn from_json(file: &str, value: &Value) -> Option<DictionaryConfig> {
        let meta = value.get("metadata");
        let get = |key: &str| value.get(key).or_else(|| meta.and_then(|m| m.get(key)));
        let int = |keys: &[&str]| keys.iter().find_map(|k| get(k).and_then(Value::as_u64));
        // A name shown on the card: short and printable, whatever the file holds (else unknown).
        let shown = |t: &&str| {
            !t.trim().is_empty() && t.chars().count() <= MAX_CONFIG_TEXT_CHARS && !t.chars().any(char::is_control)
        };
        let text =
            |keys: &[&str]| keys.iter().find_map(|k| get(k).and_then(Value::as_str).filter(shown)).map(str::to_string);
        let d_sae = int(&["d_sae"]);
        // A width of 0 is no width (no decoder has empty rows).
        let d_in = int(&["d_in", "d_model"]).filter(|&n| n > 0);
        let num_latents = int(&["num_latents"]);
        let k = int(&["k", "top_k"]);
        if d_sae.is_none() && num_latents.is_none() && get("expansion_factor").is_none() {
            return None;
        }
        let architecture =
            text(&["architecture", "act_fn"]).or_else(|| k.filter(|_| d_sae.is_none()).map(|_| "topk".into()));
        let hook = text(&["hook_name", "hook_point", "hook_point_in"]);
        let transcoder = get("transcode").and_then(Value::as_bool).unwrap_or(false)
            || architecture.as_deref().is_some_and(|a| a.contains("transcoder"));
        Some(DictionaryConfig {
            file: file.to_string(),
            d_in,
            d_sae,
            d_out: int(&["d_out"]),
            num_latents,
            k,
            architecture,
            layer: int(&["hook_layer"]).or_else(|| hook.as_deref().and_then(layer_in)),
            hook,
            transcoder,
        })
    }
}

/// The layer a name or path gives: `layer_20`, `layers.6`, `blocks.6.hook_resid_pre`,
/// `model.layers.3.mlp`, `layer-4`; None when none does.
pub fn layer_in(text: &str) -> Option<u64> {
    const MARKS: [&str; 4] = ["layers", "layer", "blocks", "block"];
    let lower = text.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split(['/', '\\']).collect();
    // The innermost part that names a layer wins (a folder `layers.6` inside `runs/layer_2/`).
    for part in parts.iter().rev() {
        for (at, _) in part.match_indices(|c: char| c.is_ascii_alphabetic()) {
            let rest = part.get(at..).unwrap_or("");
            let before_ok = at == 0 || !part.as_bytes().get(at - 1).is_some_and(|b| b.is_ascii_alphanumeric());
            if !before_ok {
                continue;
            }
            for mark in MARKS {
                let Some(tail) = rest.strip_prefix(mark) else { continue };
                let Some(tail) = tail.strip_prefix(['_', '.', '-']) else { continue };
                let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
                if !digits.is_empty() && tail.get(digits.len()..).is_none_or(|t| !t.starts_with(char::is_alphanumeric))
                {
                    return digits.parse().ok();
                }
            }
        }
    }
    None
}

/// The folder a file lies in (the last part of `path` but one), as the browser or the CLI names it.
fn folder_of(path: &str) -> Option<&str> {
    let mut parts = path.rsplit(['/', '\\']);
    parts.next()?;
    parts.next().filter(|p| !p.is_empty())
}

/// The dictionary the files hold, if they are one of the published layouts (module docs); the
/// decoder is named by its stored tensor, whose shape says which axis holds the features.
/// `paths` are the files as given (full paths where known), for the layer and hook.
pub fn recognise(tensors: &[TensorInfo], config: Option<&DictionaryConfig>, paths: &[String]) -> Option<Dictionary> {
    let matrix = |name: &str| tensors.iter().find(|t| t.name == name).and_then(|t| Some((t, t.matrix()?)));
    let has = |name: &str| tensors.iter().any(|t| t.name == name);
    let path_of = |t: &TensorInfo| paths.get(t.file).map(String::as_str).unwrap_or("");
    let path_layer = |t: &TensorInfo| layer_in(path_of(t));
    let base = |decoder: &TensorInfo, d_sae: u64, d_in: u64, columns: bool, layout: &str| Dictionary {
        d_sae,
        d_in,
        layer: path_layer(decoder),
        hook: None,
        architecture: None,
        source_layout: layout.to_string(),
        decoder: decoder.name.clone(),
        columns_are_features: columns,
        transcoder: false,
        d_out: None,
    };

    if let Some(c) = config {
        // Llama Scope: `decoder.weight [d_model, d_sae]`, features in the columns.
        if let Some((t, (r, cols))) = matrix("decoder.weight") {
            let (d_sae, d_in) = (c.d_sae?, c.d_in?);
            let columns = r == d_in && cols == d_sae;
            let rows = r == d_sae && cols == d_in;
            if !(columns || rows) {
                return None;
            }
            let mut d = base(t, d_sae, d_in, columns, "llama_scope");
            d.architecture.clone_from(&c.architecture);
            d.hook.clone_from(&c.hook);
            d.layer = c.layer.or(d.layer);
            return Some(d);
        }
        let (t, (rows, cols)) = matrix("W_dec").or_else(|| matrix("w_dec"))?;
        let d_in = c.d_in?;
        // The feature axis is the one that is not the input width (a transcoder's output width
        // differs from it; then the rows are the features, as every loader stores them).
        let (d_sae, width, columns) = match c.d_sae.or(c.num_latents.filter(|&n| n > 0)) {
            Some(n) if rows == n => (n, cols, false),
            Some(n) if cols == n && rows != n => (n, rows, true),
            Some(_) => return None,
            None => (rows, cols, false),
        };
        // An output width the decoder does not have: the config is not this decoder's.
        if c.d_out.is_some_and(|o| o != width) {
            return None;
        }
        let sparsify = c.d_sae.is_none();
        let mut d = base(t, d_sae, d_in, columns, if sparsify { "sparsify" } else { "saelens" });
        d.architecture.clone_from(&c.architecture);
        d.transcoder = c.transcoder || width != d_in || c.d_out.is_some_and(|o| o != d_in);
        d.d_out = (width != d_in).then_some(width);
        if sparsify {
            // sparsify names a dictionary by its folder, the hookpoint (`layers.6`, `layers.6.mlp`).
            d.hook = folder_of(path_of(t)).map(str::to_string);
        } else {
            d.hook.clone_from(&c.hook);
            d.layer = c.layer.or(d.layer);
        }
        return Some(d);
    }

    // Gemma Scope (and any file with a decoder and its encoder so named): W_dec [d_sae, d_in]
    // beside W_enc [d_in, d_sae].
    for (dec, enc, layout) in [("W_dec", "W_enc", "gemma_scope"), ("w_dec", "w_enc", "gemma_scope_2")] {
        let (Some((t, (d_sae, d_in))), Some((_, enc_shape))) = (matrix(dec), matrix(enc)) else { continue };
        if enc_shape != (d_in, d_sae) {
            continue;
        }
        let gemma = has("threshold");
        let mut d = base(t, d_sae, d_in, false, if gemma { layout } else { "w_dec_w_enc" });
        if gemma {
            d.architecture = Some("jumprelu".into());
        }
        d.transcoder = path_of(t).to_ascii_lowercase().contains("transcoder");
        return Some(d);
    }

    // OpenAI's autoencoders: nn.Linear weights, so the decoder's columns are the latents.
    if let (Some((t, (n_inputs, n_latents))), Some((_, enc_shape))) =
        (matrix("decoder.weight"), matrix("encoder.weight"))
    {
        if enc_shape == (n_latents, n_inputs) && (has("pre_bias") || has("latent_bias")) {
            let mut d = base(t, n_latents, n_inputs, true, "openai");
            // Their files are named by the layer alone (`autoencoders/6.pt`).
            let stem = path_of(t).rsplit(['/', '\\']).next().and_then(|f| f.split('.').next()).unwrap_or("");
            if d.layer.is_none() && !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) {
                d.layer = stem.parse().ok();
            }
            return Some(d);
        }
    }
    None
}

/// The transposed view of a decoder stored with features in its columns ([`Layout::Transposed`]):
/// shape `[d_sae, d_in]`, byte range in the view's coordinates. None when its type is not one
/// value per element (a block-quantised type has no column to read).
pub fn features_view(stored: &TensorInfo) -> Option<TensorInfo> {
    let (rows, cols) = stored.matrix()?;
    let (1, elem_bytes) = stored.dtype.block()? else { return None };
    let len = rows.checked_mul(cols)?.checked_mul(elem_bytes)?;
    Some(TensorInfo {
        name: stored.name.clone(),
        dtype: stored.dtype.clone(),
        shape: vec![cols, rows],
        byte_range: (0, len),
        file: stored.file,
        layout: Layout::Transposed {
            start: stored.byte_range.0,
            stored_rows: rows,
            stored_cols: cols,
            elem_bytes,
            inner: Box::new(stored.layout.clone()),
        },
    })
}

/// The tensor of SAELens's `sparsity.safetensors`: log10 of each feature's firing density.
pub const SPARSITY_TENSOR: &str = "sparsity";

/// log10 density below which a latent counts as never fired, by default. SAELens stores
/// log10(density + 10⁻¹⁰), so a latent that never fired reads −10; one that fired once in the
/// ~10⁸–10⁹ tokens it counts over reads −9.4 or more. The floor sits between.
pub const NEVER_FIRED_LOG10: f64 = -9.5;

/// The dead-latent thresholds a user may set (log10 firing density): a density cannot exceed 1
/// (log10 0), and SAELens's floor of 10⁻¹⁰ leaves nothing to tell apart far below −10.
pub const DEAD_BELOW_RANGE: std::ops::RangeInclusive<f64> = -12.0..=0.0;

/// Why a dead-latent threshold the user typed was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeadBelowError {
    #[error("dead_below “{given}” is not a number: give the log10 of a firing density, between −12 and 0 (−9.5, the default, sets aside the latents that never fired)")]
    NotANumber { given: String },
    #[error("dead_below {value} is outside −12 … 0: a firing density is at most 1 (log10 0), and SAELens's floor is 10⁻¹⁰ (log10 −10)")]
    OutOfRange { value: f64 },
}

/// The dead-latent threshold in `text` (log10 firing density), refused unless finite and within
/// [`DEAD_BELOW_RANGE`]. A true minus sign (−) is read as a hyphen.
pub fn parse_dead_below(text: &str) -> Result<f64, DeadBelowError> {
    let trimmed = text.trim().replace('\u{2212}', "-");
    let value: f64 = trimmed.parse().map_err(|_| DeadBelowError::NotANumber { given: text.trim().to_string() })?;
    if !value.is_finite() {
        return Err(DeadBelowError::NotANumber { given: text.trim().to_string() });
    }
    if !DEAD_BELOW_RANGE.contains(&value) {
        return Err(DeadBelowError::OutOfRange { value });
    }
    Ok(value)
}

/// Why the dead latents could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SparsityError {
    /// The sparsity tensor does not hold one value per latent.
    #[error(
        "{tensor} has shape {shape:?}, but the dictionary has {d_sae} latents: is it this dictionary's sparsity file?"
    )]
    Shape { tensor: String, shape: Vec<u64>, d_sae: u64 },
    /// Its type is not a float Orthoscope decodes.
    #[error("{tensor} is {dtype}: the sparsity file should hold floats (log10 densities)")]
    DType { tensor: String, dtype: String },
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Values of the sparsity tensor read per chunk: its memory stays one chunk.
const SPARSITY_CHUNK: u64 = 1 << 16;

/// The latents whose log10 density (SAELens's `sparsity`) is below `below` (NaN never is), read
/// chunk by chunk from `source` (the tensor's own, [`crate::read::layout::tensor_source`]).
pub fn dead_latents(
    source: &dyn ByteSource,
    tensor: &TensorInfo,
    d_sae: u64,
    below: f64,
) -> Result<RowRanges, SparsityError> {
    let n: u64 = tensor.shape.iter().product();
    if n != d_sae || tensor.shape.iter().filter(|&&s| s != 1).count() > 1 {
        return Err(SparsityError::Shape { tensor: tensor.name.clone(), shape: tensor.shape.clone(), d_sae });
    }
    let elem = match (&tensor.dtype, tensor.dtype.block()) {
        (DType::F32 | DType::F16 | DType::BF16 | DType::F64, Some((1, e))) => e,
        _ => return Err(SparsityError::DType { tensor: tensor.name.clone(), dtype: tensor.dtype.name().to_string() }),
    };
    // Runs of adjacent dead latents, built as they come (the ids ascend).
    let mut dead: Vec<std::ops::Range<u64>> = Vec::new();
    let mut raw = Vec::new();
    let mut values = Vec::new();
    let mut at = 0u64;
    while at < n {
        let count = SPARSITY_CHUNK.min(n - at);
        // count ≤ 2¹⁶ values of ≤ 8 bytes.
        raw.resize((count * elem) as usize, 0);
        source.read_at(tensor.byte_range.0 + at * elem, &mut raw)?;
        values.resize(count as usize, 0.0f32);
        decode_rows(&raw, &tensor.dtype, count as usize, &mut values).map_err(|_| SparsityError::DType {
            tensor: tensor.name.clone(),
            dtype: tensor.dtype.name().to_string(),
        })?;
        for (i, &v) in values.iter().enumerate() {
            if (v as f64) < below {
                let id = at + i as u64;
                match dead.last_mut() {
                    Some(run) if run.end == id => run.end = id + 1,
                    _ => dead.push(id..id + 1),
                }
            }
        }
        at += count;
    }
    Ok(RowRanges::from_ranges(dead))
}

/// The files each published layout saves a dictionary with, one per dictionary (lower case): a
/// folder holding one of them is one dictionary (SAELens's and sparsify's `cfg.json`, Llama Scope's
/// `hyperparams.json`, their weights, Gemma Scope's `params.npz` and `params.safetensors`).
const DICTIONARY_FILES: [&str; 6] =
    ["cfg.json", "hyperparams.json", "sae.safetensors", "sae_weights.safetensors", "params.npz", "params.safetensors"];

/// One dictionary among the files of a folder: the files of its own folder, as the CLI's
/// `analyze --each` reads a folder given to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderDictionary {
    /// Its folder, as the paths name it (`sae/layers.3`).
    pub folder: String,
    /// The layer its folder names, if any (`layers.3`, `layer_20/width_16k/…`); the Report's own
    /// `dictionary.layer` (which may come from its config) is what a chart plots.
    pub layer: Option<u64>,
    /// Indices into the paths given, in the order given.
    pub files: Vec<usize>,
}

/// The dictionaries among the relative paths of a folder's files (a browser's folder picker or
/// drop: `top/layers.3/cfg.json`), each its own model, in layer order (then by folder), as
/// `analyze --each` would read them given each folder. A folder is one dictionary when it holds
/// one of the files a layout saves a dictionary with; its files are those directly in it, and for
/// Llama Scope `checkpoints/final.safetensors` beside its `hyperparams.json`. Files outside these
/// folders are no dictionary's (a trainer's optimizer state, its run config). Fewer than two
/// dictionaries: the folder is read as one model, as any folder is, and the answer is empty.
pub fn dictionaries_in_folder(paths: &[String]) -> Vec<FolderDictionary> {
    let split = |p: &str| -> (String, String) {
        let p = p.replace('\\', "/");
        match p.rsplit_once('/') {
            Some((folder, name)) => (folder.to_string(), name.to_ascii_lowercase()),
            None => (String::new(), p.to_ascii_lowercase()),
        }
    };
    let parts: Vec<(String, String)> = paths.iter().map(|p| split(p)).collect();
    let mut folders: Vec<&str> = parts
        .iter()
        .filter(|(_, name)| DICTIONARY_FILES.contains(&name.as_str()))
        .map(|(folder, _)| folder.as_str())
        .collect();
    folders.sort_unstable();
    folders.dedup();
    // Llama Scope's weights lie one folder down: that folder is part of its parent's dictionary,
    // not one of its own.
    let has = |folder: &str, file: &str| parts.iter().any(|(f, n)| f == folder && n == file);
    fn parent_of_checkpoints(folder: &str) -> Option<&str> {
        folder.strip_suffix("/checkpoints").or((folder == "checkpoints").then_some(""))
    }
    let llama_weights = |folder: &str| parent_of_checkpoints(folder).filter(|up| has(up, "hyperparams.json")).is_some();
    let llama_weights_of = |folder: &str, up: &str| parent_of_checkpoints(folder) == Some(up) && llama_weights(folder);
    folders.retain(|f| !llama_weights(f));
    if folders.len() < 2 {
        return Vec::new();
    }
    let mut dictionaries: Vec<FolderDictionary> = folders
        .into_iter()
        .map(|folder| {
            let files = (0..parts.len())
                .filter(|&i| {
                    parts.get(i).is_some_and(|(f, name)| {
                        f == folder || (name == "final.safetensors" && llama_weights_of(f, folder))
                    })
                })
                .collect();
            FolderDictionary { folder: folder.to_string(), layer: layer_in(folder), files }
        })
        .collect();
    // Layer by layer; a folder that names no layer after those that do.
    dictionaries.sort_by(|a, b| (a.layer.is_none(), a.layer, &a.folder).cmp(&(b.layer.is_none(), b.layer, &b.folder)));
    dictionaries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_come_from_hooks_folders_and_paths() {
        assert_eq!(layer_in("blocks.6.hook_resid_pre"), Some(6));
        assert_eq!(layer_in("runs/layers.12/sae.safetensors"), Some(12));
        assert_eq!(layer_in("layers.3.mlp"), Some(3));
        assert_eq!(layer_in("gemma-scope-2b-pt-res/layer_20/width_16k/average_l0_71/params.npz"), Some(20));
        assert_eq!(layer_in("model.layers.7.self_attn"), Some(7));
        assert_eq!(layer_in("runs/layer_2/layers.5/x"), Some(5));
        assert_eq!(layer_in("params.npz"), None);
        assert_eq!(layer_in("multilayer_4"), None);
        assert_eq!(layer_in("layer_4x"), None);
    }

    fn folders(paths: &[&str]) -> Vec<(String, Option<u64>, Vec<usize>)> {
        let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        dictionaries_in_folder(&paths).into_iter().map(|d| (d.folder, d.layer, d.files)).collect()
    }

    #[test]
    fn a_folder_of_layers_splits_into_one_dictionary_per_layer_in_layer_order() {
        // sparsify's checkpoint: a run config and optimizer state beside `layers.N/`, N past 9.
        let got = folders(&[
            "run/config.json",
            "run/optimizer_0.pt",
            "run/layers.10/cfg.json",
            "run/layers.10/sae.safetensors",
            "run/layers.2/sae.safetensors",
            "run/layers.2/cfg.json",
            "run/layers.9/cfg.json",
            "run/layers.9/sae.safetensors",
        ]);
        assert_eq!(
            got,
            vec![
                ("run/layers.2".to_string(), Some(2), vec![4, 5]),
                ("run/layers.9".to_string(), Some(9), vec![6, 7]),
                ("run/layers.10".to_string(), Some(10), vec![2, 3]),
            ]
        );
        // Gemma Scope: the layer is two folders up; a folder without one comes last.
        let got = folders(&[
            "gs/layer_20/width_16k/average_l0_71/params.npz",
            "gs/layer_5/width_16k/average_l0_40/params.npz",
            "gs/extra/params.npz",
        ]);
        let layers: Vec<Option<u64>> = got.iter().map(|g| g.1).collect();
        assert_eq!(layers, [Some(5), Some(20), None]);
        // Llama Scope's weights one folder down belong to the folder of their hyperparams.json.
        let got = folders(&[
            "ls/L3R/hyperparams.json",
            "ls/L3R/checkpoints/final.safetensors",
            "ls/L7R/hyperparams.json",
            "ls/L7R/checkpoints/final.safetensors",
        ]);
        assert_eq!(got, vec![("ls/L3R".to_string(), None, vec![0, 1]), ("ls/L7R".to_string(), None, vec![2, 3])]);
    }

    #[test]
    fn a_dead_latent_threshold_is_a_finite_log10_density_within_its_range() {
        assert_eq!(parse_dead_below("-2.5"), Ok(-2.5));
        assert_eq!(parse_dead_below(" −6 "), Ok(-6.0));
        assert_eq!(parse_dead_below("0"), Ok(0.0));
        assert_eq!(parse_dead_below("-12"), Ok(-12.0));
        assert_eq!(parse_dead_below("-1e1"), Ok(-10.0));
        for bad in ["", "abc", "NaN", "inf", "-inf", "1e400"] {
            assert!(matches!(parse_dead_below(bad), Err(DeadBelowError::NotANumber { .. })), "{bad}");
        }
        assert_eq!(parse_dead_below("0.5"), Err(DeadBelowError::OutOfRange { value: 0.5 }));
        assert_eq!(parse_dead_below("-12.01"), Err(DeadBelowError::OutOfRange { value: -12.01 }));
        assert!(parse_dead_below("abc").is_err_and(|e| e.to_string().contains("between −12 and 0")));
    }

    #[test]
    fn one_dictionary_or_a_model_folder_is_not_split() {
        assert!(folders(&["sae/cfg.json", "sae/sae_weights.safetensors", "sae/sparsity.safetensors"]).is_empty());
        assert!(folders(&["m/config.json", "m/model.safetensors", "m/tokenizer.json"]).is_empty());
        assert!(folders(&["ls/hyperparams.json", "ls/checkpoints/final.safetensors"]).is_empty());
        assert!(folders(&[]).is_empty());
        // Files given by name alone (no folders) are one folder: one dictionary at most.
        assert!(folders(&["cfg.json", "sae.safetensors"]).is_empty());
    }
}
