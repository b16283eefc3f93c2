//! The one result struct: what the views show, what the CLI prints, what `data-report` carries.
//! Views never recompute numbers; every figure on screen is a field here.

use serde::{Deserialize, Serialize};

use crate::read::dictionary::Dictionary;
use crate::read::locate::TensorRole;

use crate::explain::alignment::TokenAlignment;
use crate::explain::centred::Centred;
use crate::explain::geometry::Geometry;
use crate::pass::analysis::Summary;
use crate::pass::capacity::{self, CapacityProven};
use crate::pass::estimate::{self, Capacities, Class, Z_95};
use crate::pass::gpu::GpuInfo;
// Where the views and the Report JSON find it; it lives with the histogram it reports.
use crate::pass::stats::SampledHistogram;
use crate::pass::stats::{PairSample, TopPair};
use crate::result::trained::TrainedReport;

/// Version of the JSON layout below.
pub const SCHEMA_VERSION: u32 = 1;

/// The paper's caveat, shown wherever a capacity is (`docs/method.md` §2, §7).
pub const CAPACITY_CAVEAT: &str = "Capacities extrapolate fits made for k ≤ 32,000 and d ≤ 4096 and are exponentially sensitive to ε²: use them to compare models, not as absolute counts.";

/// Everything one analysis found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: u32,
    /// File the tensor was read from.
    pub file: String,
    pub format: String,
    pub tensor: String,
    /// Why this tensor was analysed ("chosen by you", "known embedding name", …).
    pub tensor_reason: String,
    /// What the tensor is. Only an `input_embedding` has the paper's ε; for any other the class
    /// and the capacities are not comparable with the paper's Table 1.
    #[serde(default)]
    pub tensor_role: TensorRole,
    pub dtype: String,
    /// Whether `dtype` is a quantised type (ggml's blocks, MLX's affine groups, ONNX's
    /// DequantizeLinear): ε is then that of the quantised weights, not of the model as trained.
    #[serde(default)]
    pub quantised: bool,
    /// V, rows of the tensor.
    pub rows: u64,
    /// d, columns of the tensor (d_model).
    pub dim: u64,
    /// Rows read by the pass (all of them when exact).
    pub rows_seen: u64,
    /// Rows the statistics are over (seen minus dropped).
    pub rows_used: u64,
    /// Rows dropped for zero norm or non-finite values (`docs/method.md` §1).
    pub rows_dropped: u64,
    pub rows_dropped_zero: u64,
    pub rows_dropped_nonfinite: u64,
    /// Pairs i < j the statistics are over: rows_used·(rows_used−1)/2.
    pub pairs: u64,
    /// True when every row was visited: the statistics are the paper's definition over all pairs.
    pub exact: bool,
    pub mu: f64,
    pub sigma: f64,
    /// ε = μ + 2σ.
    pub epsilon: f64,
    /// μ + 3σ.
    pub epsilon_3sigma: f64,
    /// 95 % interval for ε when the pass stopped early (absent when exact).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub epsilon_ci: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub epsilon_se: Option<f64>,
    pub seed: u64,
    /// log10 of k under each formula of `docs/method.md` §2.
    pub log10_capacity: Capacities,
    /// False when ε ≥ 0.1: the paper prints "indeterminate".
    pub capacity_determinate: bool,
    /// What is proven for this ε, d and `rows_used` (`docs/method.md` §2): the floor on max |cos|
    /// for that many rows, and the directions that provably exist and the most that can. None
    /// only in reports stored before it existed.
    #[serde(default)]
    pub capacity_proven: Option<CapacityProven>,
    pub class: Class,
    pub histogram: SampledHistogram,
    pub histogram_zoom: SampledHistogram,
    /// Wall time of the analysis, measured by the caller.
    pub timing_ms: f64,
    /// How many workers (browser) or threads (CLI) shared the pass (`pass`); 1 in reports made
    /// before there were several, and in permalinks.
    #[serde(default = "one_worker")]
    pub workers: u32,
    /// Which Gram kernel ran and in what precision: "relaxed-simd f32", "simd128 f32", "simd128 f64",
    /// "portable f32", "portable f64" (older reports: "wasm-simd128" or "portable").
    pub kernel: String,
    /// "f32" or "f64": the Gram pass's arithmetic (`kernel::Precision`). Empty in reports made before
    /// the f32 kernel (they were f64).
    #[serde(default)]
    pub precision: String,
    /// Why the pass ran in f64: asked for, or σ inside the f32 noise (`kernel::f32_suffices`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub precision_reason: String,
    /// The Gram kernel's speed in this run, GFLOP/s (k·d² flops per k-row call over the calls' time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gram_gflops: Option<f64>,
    /// Bytes of the Gram accumulator.
    pub accumulator_bytes: u64,
    /// The GPU adapter the Gram pass ran on (`pass::gpu`); None when it ran on the CPU.
    #[serde(default)]
    pub gpu: Option<GpuInfo>,
    /// Why the GPU was asked for but the CPU gave the result (the sample needed f64, no adapter, a
    /// lost device, …); None when no GPU was asked for or it ran the pass.
    #[serde(default)]
    pub gpu_fallback: Option<String>,
    /// Size of wasm memory at the end (browser only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_wasm_bytes: Option<u64>,
    /// Statistics of the output matrix (`lm_head.weight`, `output.weight`) when the model has a
    /// separate one: *not* the paper's ε.
    #[serde(default)]
    pub unembedding: Option<UnembeddingReport>,
    /// Whether input and output embeddings are tied (None: cannot tell), and why.
    #[serde(default)]
    pub tied: Option<bool>,
    #[serde(default)]
    pub tied_evidence: String,
    pub caveat: String,
    /// The address the model was read from, when it was opened by URL (`?url=`, `?hf=`): a
    /// permalink carries it so a reader can run the analysis again.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source_url: Option<String>,
    /// Bytes pulled over the network for a model opened by URL (header reads and the rows).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes_fetched: Option<u64>,
    /// The spectrum of G/V and the coordinates that carry μ. Only for an exact pass over
    /// the whole matrix: the G of a prefix is an estimate. Absent for early-stopped runs, for
    /// d > [`crate::explain::geometry::MAX_GEOMETRY_DIM`], and in a permalink.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub geometry: Option<Geometry>,
    /// The [`crate::pass::stats::TOP_PAIRS`] most similar pairs of the histogram sample, most similar
    /// first (the tail explorer, paper Fig. 3). Not carried in a permalink (token strings can be long).
    #[serde(default)]
    pub top_pairs: Vec<TopPair>,
    /// The [`crate::pass::stats::ANTIPODAL_PAIRS`] most opposed pairs of the same sample, most
    /// opposed (lowest cosine) first: the other tail, where antipodal features (cos ≈ −1) show. Not
    /// carried in a permalink, like the top pairs.
    #[serde(default)]
    pub antipodal_pairs: Vec<TopPair>,
    /// μ, σ, ε of the mean-centred, re-normalised rows, on request (`?centred=1`, a button, the
    /// CLI's `--centred`): not the paper's ε. Not carried in a permalink.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub centred: Option<Centred>,
    /// The statistics without the rows the model never trained (`read::untrained`), beside the
    /// paper's ε above, which counts every row: null when no rule named a row.
    #[serde(default)]
    pub trained: Option<TrainedReport>,
    /// The model's name when the files give one (a dropped `config.json`'s `_name_or_path`):
    /// shown in place of a generic file name ([`Report::model_name`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model: Option<String>,
    /// The sparse-autoencoder dictionary whose decoder was analysed (`tensor_role` is then
    /// `sae_decoder`, and ε is that of its feature directions); null for any other tensor.
    #[serde(default)]
    pub dictionary: Option<DictionaryReport>,
}

/// `Report::dictionary`: what the files say of the dictionary, and how much of the capacity its
/// own ε allows it uses (docs/method.md §10).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DictionaryReport {
    #[serde(flatten)]
    pub dictionary: Dictionary,
    /// log10(d_sae) − log10 k(d, ε) under Eq. 7 (`log10_capacity.adjusted_full`, the card's
    /// headline) for d the decoder's width: "this dictionary uses 10^x of the capacity its own ε
    /// allows". None when the capacity is not finite.
    pub log10_capacity_used: Option<f64>,
}

impl DictionaryReport {
    /// The dictionary of `report`, whose ε and capacities are its decoder's.
    pub fn new(dictionary: Dictionary, report: &Report) -> DictionaryReport {
        let capacity = report.log10_capacity.adjusted_full;
        let used = (dictionary.d_sae as f64).log10() - capacity;
        DictionaryReport { dictionary, log10_capacity_used: (capacity.is_finite() && used.is_finite()).then_some(used) }
    }
}
impl Report {
    /// The report of what one pass has found (`Analysis::summary`), with nothing yet about the
    /// unembedding, the tied check, the source, the geometry or the centred statistics (the job and
    /// the worker add those).
    pub fn from_pass(p: Summary<'_>, timing_ms: f64) -> Report {
        let m = p.moments;
        let eps = estimate::epsilon(m.mu, m.sigma);
        let se = if p.exact { None } else { p.epsilon_se };
        let empty = PairSample::new(Vec::new());
        let sample = p.sample.unwrap_or(&empty);
        let hist_rows = sample.rows() as u64;
        let dtype = p.tensor.dtype.name();
        let dim = p.dim as u64;
        Report {
            schema: SCHEMA_VERSION,
            file: p.origin.file.clone(),
            format: p.origin.format.clone(),
            tensor: p.tensor.name.clone(),
            tensor_reason: p.origin.tensor_reason.clone(),
            tensor_role: p.origin.tensor_role,
            dtype: dtype.to_string(),
            quantised: crate::read::format::quantised_name(dtype),
            rows: p.rows,
            dim,
            rows_seen: p.counts.seen,
            rows_used: p.counts.kept,
            rows_dropped: p.counts.dropped(),
            rows_dropped_zero: p.counts.dropped_zero,
            rows_dropped_nonfinite: p.counts.dropped_nonfinite,
            pairs: m.pairs,
            exact: p.exact,
            mu: m.mu,
            sigma: m.sigma,
            epsilon: eps,
            epsilon_3sigma: estimate::epsilon_3sigma(m.mu, m.sigma),
            epsilon_ci: se.map(|s| [eps - Z_95 * s, eps + Z_95 * s]),
            epsilon_se: se,
            seed: p.seed,
            log10_capacity: estimate::capacities(dim, eps),
            capacity_determinate: estimate::capacity_determinate(eps),
            capacity_proven: Some(capacity::proven(eps, dim, p.counts.kept)),
            class: estimate::class(eps),
            histogram: SampledHistogram::new(&sample.full, sample.pairs, hist_rows),
            histogram_zoom: SampledHistogram::new(&sample.zoom, sample.pairs, hist_rows),
            timing_ms,
            workers: p.workers,
            kernel: p.kernel,
            precision: p.precision.name().to_string(),
            precision_reason: p.precision_reason.to_string(),
            gram_gflops: p.gram_gflops,
            accumulator_bytes: p.accumulator_bytes,
            gpu: p.gpu.cloned(),
            gpu_fallback: p.gpu_fallback.map(str::to_string),
            peak_wasm_bytes: None,
            unembedding: None,
            tied: None,
            tied_evidence: String::new(),
            caveat: CAPACITY_CAVEAT.to_string(),
            source_url: None,
            bytes_fetched: None,
            geometry: None,
            top_pairs: sample.top_pairs(),
            antipodal_pairs: sample.antipodal_pairs(),
            centred: None,
            trained: None,
            model: None,
            dictionary: None,
        }
    }
}

/// The unembedding's cosine statistics, shown beside the paper's ε but never as it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnembeddingReport {
    pub tensor: String,
    pub dtype: String,
    pub rows: u64,
    pub dim: u64,
    pub rows_seen: u64,
    pub rows_dropped: u64,
    pub pairs: u64,
    pub exact: bool,
    pub mu: f64,
    pub sigma: f64,
    /// μ + 2σ of the output matrix: not the paper's ε (which uses the input embedding).
    pub mu_plus_2sigma: f64,
    pub mu_plus_3sigma: f64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mu_plus_2sigma_ci: Option<[f64; 2]>,
    pub note: String,
    /// Pairwise cosines among the unembedding's sampled rows (paper Fig. 10): not the paper's ε.
    /// Not carried in a permalink.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub histogram: Option<SampledHistogram>,
    /// Cosine of each token's embedding and unembedding rows (paper Fig. 9), over every token,
    /// when both matrices have the same shape and the pass was exact. Not carried in a permalink.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub alignment: Option<TokenAlignment>,
    /// Its statistics without the rows never trained (the same rules as the embedding's).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub trained: Option<TrainedReport>,
}

impl UnembeddingReport {
    pub fn from_report(r: &Report) -> Self {
        Self {
            tensor: r.tensor.clone(),
            dtype: r.dtype.clone(),
            rows: r.rows,
            dim: r.dim,
            rows_seen: r.rows_seen,
            rows_dropped: r.rows_dropped,
            pairs: r.pairs,
            exact: r.exact,
            mu: r.mu,
            sigma: r.sigma,
            mu_plus_2sigma: r.epsilon,
            mu_plus_3sigma: r.epsilon_3sigma,
            mu_plus_2sigma_ci: r.epsilon_ci,
            note: UNEMBEDDING_NOTE.to_string(),
            histogram: Some(r.histogram.clone()),
            alignment: None,
            trained: r.trained.clone(),
        }
    }
}

/// Why the unembedding's numbers are not ε.
pub const UNEMBEDDING_NOTE: &str = "Output (unembedding) matrix: not the paper's ε, which uses the input token embedding. Estimated from a uniform row sample unless small.";

/// "3.99 × 10⁷" for a capacity given as log10 (plain digits below 10⁴).
pub fn scientific_from_log10(log10: f64) -> String {
    if !log10.is_finite() {
        return "∞".to_string();
    }
    if log10 < 4.0 {
        return format!("{:.0}", 10f64.powf(log10));
    }
    let mut exponent = log10.floor();
    let mut mantissa = 10f64.powf(log10 - exponent);
    // 9.996 would print as "10.00 × 10ⁿ".
    if (mantissa * 100.0).round() >= 1000.0 {
        mantissa /= 10.0;
        exponent += 1.0;
    }
    format!("{mantissa:.2} × 10{}", superscript(exponent as i64))
}

fn superscript(n: i64) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s: String =
        n.unsigned_abs().to_string().chars().filter_map(|c| c.to_digit(10).map(|d| DIGITS[d as usize])).collect();
    if n < 0 {
        s.insert(0, '⁻');
    }
    s
}

/// A statistic to `digits` significant digits (the paper's ε is reliable to about 4).
pub fn significant(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// An integer with thousands separators: 134209536 → "134,209,536".
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count for people: "512 B", "3.4 MB", "1.20 GB" (SI units, as browsers show downloads).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n} B"),
        _ if value < 10.0 => format!("{value:.2} {}", UNITS[unit]),
        _ if value < 100.0 => format!("{value:.1} {}", UNITS[unit]),
        _ => format!("{value:.0} {}", UNITS[unit]),
    }
}

impl Report {
    /// The model's name for titles, legends and file names: the repository of a URL it was opened
    /// from, else the name its config gives, else the file's (or, for a generic file name such as
    /// `model.safetensors`, its folder's when the name has one).
    pub fn model_name(&self) -> String {
        match (self.source_url.as_deref().and_then(repository_of_url), &self.model) {
            (Some(repo), _) => repo,
            (None, Some(name)) => name.clone(),
            (None, None) => model_name(&self.file, self.source_url.as_deref()),
        }
    }
}

/// File stems that name no model: their folder does.
const GENERIC_STEMS: [&str; 6] = ["model", "pytorch_model", "consolidated", "weights", "params", "checkpoint"];

/// A name for the model behind a report, for titles and file names: the repository when it was
/// opened from a Hugging Face style URL (`…/org/name/resolve/rev/file`, or `hf:org/name@rev`), else
/// the file name without its extension and shard suffix ("model-00001-of-00004.safetensors" → "model").
pub fn model_name(file: &str, source_url: Option<&str>) -> String {
    if let Some(repo) = source_url.and_then(repository_of_url) {
        return repo;
    }
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem =
        [".safetensors.index.json", ".safetensors", ".gguf", ".npy", ".npz", ".onnx", ".bin", ".pth", ".pt", ".ckpt"]
            .iter()
            .find_map(|ext| base.strip_suffix(ext))
            .unwrap_or(base);
    // "-00001-of-00004": the shard suffix says nothing about the model.
    let stem = match stem.rsplit_once("-of-") {
        Some((head, tail)) if tail.chars().all(|c| c.is_ascii_digit()) => {
            head.rsplit_once('-').map_or(head, |(s, _)| s)
        }
        _ => stem,
    };
    let folder = || {
        let mut parts = file.rsplit(['/', '\\']).skip(1);
        parts.next().filter(|f| !f.is_empty() && *f != "." && *f != "..")
    };
    if GENERIC_STEMS.contains(&stem) {
        if let Some(folder) = folder() {
            return folder.to_string();
        }
    }
    if stem.is_empty() {
        "model".to_string()
    } else {
        stem.to_string()
    }
}

fn repository_of_url(url: &str) -> Option<String> {
    if let Some(id) = url.strip_prefix("hf:") {
        return id.split('@').next().filter(|s| !s.is_empty()).map(str::to_string);
    }
    let path = url.split(['?', '#']).next()?;
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let resolve = parts.iter().rposition(|p| *p == "resolve")?;
    let org = parts.get(resolve.checked_sub(2)?)?;
    let name = parts.get(resolve.checked_sub(1)?)?;
    Some(format!("{org}/{name}"))
}

/// A file name piece made of safe characters only.
pub fn file_safe(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    out.truncate(80);
    out
}

/// Base of every export's file name: the model's file name and the tensor
/// ("orthoscope-Llama-2-7b-model.embed_tokens.weight").
pub fn export_stem(r: &Report) -> String {
    format!("orthoscope-{}-{}", file_safe(&r.model_name()), file_safe(&r.tensor))
}

/// Both histograms as CSV: one line per bin, with its range, its count and its share of the pairs.
pub fn histogram_csv(r: &Report) -> String {
    // With rows set aside (the default rules), the full histogram's pairs split into those among
    // trained rows and those with a set-aside row: two more columns, empty for the zoom.
    let split = r.trained.as_ref().and_then(|t| t.without.overlay(&r.histogram));
    let mut out = String::from("histogram,bin_lo,bin_hi,count,percent_of_pairs");
    if split.is_some() {
        out.push_str(",count_trained_rows,count_with_set_aside_row");
    }
    out.push('\n');
    for (name, h) in [("full", &r.histogram), ("zoom", &r.histogram_zoom)] {
        let total = h.pairs_in_histogram.max(1) as f64;
        for (i, &count) in h.counts.iter().enumerate() {
            let (Some(lo), Some(hi)) = (h.edges.get(i), h.edges.get(i + 1)) else { continue };
            out.push_str(&format!("{name},{lo},{hi},{count},{}", 100.0 * count as f64 / total));
            match (&split, name) {
                (Some((kept, aside)), "full") => {
                    let (k, a) = (kept.counts.get(i).copied().unwrap_or(0), aside.counts.get(i).copied().unwrap_or(0));
                    out.push_str(&format!(",{k},{a}"));
                }
                (Some(_), _) => out.push_str(",,"),
                _ => {}
            }
            out.push('\n');
        }
    }
    out
}

/// `Report::workers` of reports made before there were several.
fn one_worker() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_carry_thousands_separators() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(134209536), "134,209,536");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3_400_000), "3.40 MB");
        assert_eq!(human_bytes(262_144_000), "262 MB");
    }

    #[test]
    fn model_names_come_from_the_repository_or_the_file() {
        assert_eq!(model_name("model-00001-of-00004.safetensors", None), "model");
        assert_eq!(model_name("TinyLlama-1.1B.Q8_0.gguf", None), "TinyLlama-1.1B.Q8_0");
        assert_eq!(model_name("model.safetensors.index.json", None), "model");
        assert_eq!(model_name("emb.npy", None), "emb");
        assert_eq!(model_name("runs/all-MiniLM-L6-v2/model.safetensors", None), "all-MiniLM-L6-v2");
        assert_eq!(model_name("ckpt/pytorch_model.bin", None), "ckpt");
        assert_eq!(model_name("model.safetensors", None), "model");
        assert_eq!(
            model_name("model.safetensors", Some("https://huggingface.co/org/name/resolve/main/model.safetensors")),
            "org/name"
        );
        assert_eq!(model_name("model.safetensors", Some("hf:org/name@v2")), "org/name");
        assert_eq!(model_name("x.safetensors", Some("http://127.0.0.1:9/files/x.safetensors")), "x");
        assert_eq!(file_safe("org/name model.embed"), "org_name_model.embed");
    }

    #[test]
    fn capacities_print_like_the_paper() {
        assert_eq!(scientific_from_log10(7.0_f64 + 3.99f64.log10()), "3.99 × 10⁷");
        assert_eq!(scientific_from_log10(20.0 + 9.999f64.log10()), "1.00 × 10²¹");
        assert_eq!(scientific_from_log10(277f64.log10()), "277");
        assert_eq!(significant(0.064501, 4), "0.06450");
        assert_eq!(significant(-0.00123456, 3), "-0.00123");
    }
}
