//! Result permalinks: a [`Report`] packed into the URL fragment, so that opening the link renders
//! the whole result card and its charts with no file and no network (the fragment never leaves the
//! browser).
//!
//! A permalink's fragment is `#r=<version>.<payload>`, where the payload is
//! base64url (no padding) of zlib(postcard([`Compact`])). Only what cannot be recomputed is stored;
//! everything derived is recomputed on decode with the crate's own functions, so a decoded report
//! cannot disagree with itself:
//!
//! - stored exactly: file, format, tensor, tensor_reason, dtype, kernel, tied_evidence (text is cut
//!   to [`MAX_TEXT_CHARS`]); rows, dim, rows_seen, rows_used, rows_dropped_zero/_nonfinite, pairs,
//!   exact, seed; μ and σ (f64), epsilon_ci, epsilon_se; accumulator_bytes, peak_wasm_bytes, tied,
//!   source_url, bytes_fetched; the unembedding's tensor, dtype, rows, dim, rows_seen,
//!   rows_dropped, pairs, exact, μ, σ and interval; each histogram's lo, hi, bin count, below,
//!   above, pairs and rows in the histogram, and its largest count;
//! - recomputed: `schema` = [`SCHEMA_VERSION`]; `tensor_role` from `tensor_reason` and the name; `rows_dropped` = zero + non-finite; ε, μ + 3σ,
//!   `log10_capacity`, `capacity_determinate` and `class` by [`estimate`], `capacity_proven` (the
//!   trained part's too) by [`capacity::proven`]; `caveat` =
//!   [`CAPACITY_CAVEAT`]; the unembedding's μ + 2σ, μ + 3σ and `note` = [`UNEMBEDDING_NOTE`];
//!   histogram edges by [`Histogram::new`].
//! - a dictionary (`Report::dictionary`) is stored after the trained part (its
//!   `log10_capacity_used` recomputed, `tensor_role` then `sae_decoder`); a trained part of more
//!   than [`MAX_TRAINED_RANGES`] row ranges (scattered dead latents) is not carried.
//!
//! What does not survive exactly:
//! - histogram counts are quantised (see [`quantise_counts`] for the bound);
//! - `timing_ms` is kept as f32 (about 7 significant digits);
//! - a text field longer than [`MAX_TEXT_CHARS`] characters is cut and ends in "…";
//! - a `source_url` longer than [`MAX_URL_CHARS`] is dropped (a cut address could not be re-run);
//! - `precision` is read back from the kernel's last word ("simd128 f32" → "f32"; empty for
//!   older kernels' names); `precision_reason` and `gram_gflops` are not carried (empty / None);
//! - `workers` is not carried: it is 1 after decoding;
//! - `geometry` is not carried: it is None after decoding (its d eigenvalues alone
//!   would break the 2 KB budget at d ≥ 256);
//! - histogram edges are rebuilt equal-width from lo, hi and the bin count, as [`Histogram::new`]
//!   builds them, so they are identical for reports made by this crate.
//!
//! Why zlib rather than raw deflate: its 6 bytes of header and Adler-32 make a damaged link fail
//! loudly instead of opening a different result. Why postcard: serde with varint integers, so
//! small counts take one byte, and the layout is defined by [`Compact`] alone.

use crate::read::locate::{role_by_name, TensorRole, CHOSEN_BY_YOU};

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde::{Deserialize, Serialize};

mod extras;
mod histogram;

pub use extras::MAX_TRAINED_RANGES;

pub use histogram::{dequantise_counts, quantise_counts, top_level, CompactHistogram};

use crate::pass::capacity;
use crate::pass::estimate;
use crate::read::dictionary::Dictionary;
use crate::read::untrained::UntrainedRule;
use crate::result::report::{
    DictionaryReport, Report, UnembeddingReport, CAPACITY_CAVEAT, SCHEMA_VERSION, UNEMBEDDING_NOTE,
};
use crate::result::trained::{RuleRows, TrainedReport, Without};

/// Fragment key: a permalink's fragment is "#r=<version>.<base64url payload>".
pub const FRAGMENT_KEY: &str = "r";
/// Version of the payload layout ([`Compact`]); bumped whenever it changes.
pub const FORMAT_VERSION: u32 = 1;
/// Longest fragment decoded (characters after the `#`). A typical link is ~1 KB; this leaves room
/// for long URLs and names while refusing to base64-decode megabytes.
pub const MAX_FRAGMENT_CHARS: usize = 32 * 1024;
/// Largest inflated payload: guards against decompression bombs (a few KB of zlib can inflate to
/// gigabytes). A real payload is under 2 KB.
pub const MAX_INFLATED_BYTES: usize = 256 * 1024;
/// Most histogram bins accepted (the crate's histograms have [`crate::pass::stats::HISTOGRAM_BINS`]).
pub const MAX_HISTOGRAM_BINS: u32 = 4096;
/// Text fields are cut to this many characters (names and reasons, never numbers).
pub const MAX_TEXT_CHARS: usize = 160;
/// Longest `source_url` carried; a longer one is dropped.
pub const MAX_URL_CHARS: usize = 2048;
/// Quantisation levels of a histogram count: at most 16 bits ([`quantise_counts`]).
pub const COUNT_LEVELS: u64 = u16::MAX as u64;

/// Why a fragment could not be opened as a result. Each message ends with what the reader can do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PermalinkError {
    /// The fragment is not `r=<version>.…`: some other page's anchor, or empty.
    #[error("this link's #… part is not an Orthoscope result: open the page without it to analyse a model")]
    NotOrthoscope,
    /// A layout version this build does not read (made by a newer, or unknown, Orthoscope).
    #[error(
        "this result link uses permalink format {0}, which this Orthoscope cannot read (it was probably made by a \
         newer version): open it on the site that made it, or run the analysis yourself"
    )]
    UnsupportedVersion(u32),
    /// The link ends early: cut off when it was copied or sent.
    #[error("this result link is incomplete (it was probably cut off when copied): copy the whole link again")]
    Truncated,
    /// Characters outside base64url in the payload.
    #[error(
        "this result link contains characters that cannot be part of a result ({0}): copy the whole link again, or \
         run the analysis yourself"
    )]
    BadEncoding(String),
    /// The payload does not inflate, or its checksum does not match: the link was damaged.
    #[error(
        "this result link is damaged (its data does not unpack: {0}): ask for the link again, or run the analysis \
         yourself"
    )]
    BadCompression(String),
    /// The fragment or its inflated payload is larger than any result: refused unread.
    #[error(
        "this result link holds more data than an Orthoscope result ever does (over {limit} bytes): ask for the link \
         again, or run the analysis yourself"
    )]
    TooLarge { limit: usize },
    /// The payload unpacks but is not a result's layout.
    #[error(
        "this result link's data is not laid out as an Orthoscope result ({0}): ask for the link again, or run the \
         analysis yourself"
    )]
    Malformed(String),
    /// A value no analysis can produce (NaN, fewer than two rows, counts that do not add up…).
    #[error(
        "this result link holds an impossible value ({field} = {value}), so it was damaged or made by hand: ask for \
         the link again, or run the analysis yourself"
    )]
    Implausible { field: &'static str, value: String },
}

/// The payload: a [`Report`] without its derived fields (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compact {
    pub file: String,
    pub format: String,
    pub tensor: String,
    pub tensor_reason: String,
    pub dtype: String,
    pub rows: u64,
    pub dim: u64,
    pub rows_seen: u64,
    pub rows_used: u64,
    pub rows_dropped_zero: u64,
    pub rows_dropped_nonfinite: u64,
    pub pairs: u64,
    pub exact: bool,
    pub mu: f64,
    pub sigma: f64,
    pub epsilon_ci: Option<[f64; 2]>,
    pub epsilon_se: Option<f64>,
    pub seed: u64,
    pub timing_ms: f32,
    pub kernel: String,
    pub accumulator_bytes: u64,
    pub peak_wasm_bytes: Option<u64>,
    pub tied: Option<bool>,
    pub tied_evidence: String,
    pub unembedding: Option<CompactUnembedding>,
    pub source_url: Option<String>,
    pub bytes_fetched: Option<u64>,
    pub histogram: CompactHistogram,
    pub histogram_zoom: CompactHistogram,
}

/// The unembedding's statistics without their derived fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactUnembedding {
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
    pub ci: Option<[f64; 2]>,
}

/// `Report::trained` without its derived fields: the payload's second part, after the [`Compact`]
/// (links made before it, or of a model with no row set aside, end after the first). Its other
/// choices of rules, pairs and overlay are not carried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactTrained {
    /// Each rule's name, its rows, whether it is set aside.
    pub rules: Vec<(String, u64, bool)>,
    pub excluded: Vec<[u64; 2]>,
    pub rows_used: u64,
    pub pairs: u64,
    pub exact: bool,
    pub mu: f64,
    pub sigma: f64,
}

/// What a payload may carry after the [`Compact`] (links made before it, or of a report with
/// neither, end after the first part).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactExtras {
    pub trained: Option<CompactTrained>,
    /// `Report::model`.
    pub model: Option<String>,
}

/// `Report::dictionary` without its derived `log10_capacity_used`: the payload's third part, after
/// the [`CompactExtras`] (links of anything but a dictionary end before it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactDictionary {
    pub d_sae: u64,
    pub d_in: u64,
    pub layer: Option<u64>,
    pub hook: Option<String>,
    pub architecture: Option<String>,
    pub source_layout: String,
    pub decoder: String,
    pub columns_are_features: bool,
    pub transcoder: bool,
    pub d_out: Option<u64>,
}

/// Whether `fragment` claims to be a result permalink (starts with `r=` or `#r=`). Cheap: the
/// payload is not checked; [`decode`] says what is wrong with it.
pub fn is_permalink(fragment: &str) -> bool {
    key_value(fragment).is_some()
}

/// The fragment for `report`, without the `#`: `r=1.<payload>`.
pub fn encode(report: &Report) -> String {
    let mut bytes = postcard::to_allocvec(&Compact::from_report(report)).unwrap_or_default();
    // A dictionary's dead latents can be scattered over more ranges than a link holds: the link
    // then carries the paper's numbers without them.
    let trained = report.trained.as_ref().filter(|t| t.without.excluded.len() <= MAX_TRAINED_RANGES);
    if trained.is_some() || report.model.is_some() || report.dictionary.is_some() {
        let extras = CompactExtras {
            trained: trained.map(CompactTrained::from_report),
            model: report.model.as_deref().map(cut),
        };
        bytes.extend(postcard::to_allocvec(&extras).unwrap_or_default());
    }
    if let Some(d) = &report.dictionary {
        bytes.extend(postcard::to_allocvec(&CompactDictionary::from_report(&d.dictionary)).unwrap_or_default());
    }
    pack_bytes(&bytes)
}

/// The fragment for a payload as it stands (what [`encode`] does after [`Compact::from_report`];
/// public so tests can craft payloads no analysis makes).
pub fn pack(compact: &Compact) -> String {
    // Serialising to a growable Vec fails only for sequences of unknown length, which `Compact`
    // has none of; were it ever to fail, the empty payload decodes to a clear error, not a panic.
    pack_bytes(&postcard::to_allocvec(compact).unwrap_or_default())
}

fn pack_bytes(bytes: &[u8]) -> String {
    let packed = miniz_oxide::deflate::compress_to_vec_zlib(bytes, 10);
    format!("{FRAGMENT_KEY}={FORMAT_VERSION}.{}", BASE64URL.encode(packed))
}

/// The report a permalink fragment holds (with or without the leading `#`).
pub fn decode(fragment: &str) -> Result<Report, PermalinkError> {
    let rest = key_value(fragment).ok_or(PermalinkError::NotOrthoscope)?;
    if rest.len() > MAX_FRAGMENT_CHARS {
        return Err(PermalinkError::TooLarge { limit: MAX_FRAGMENT_CHARS });
    }
    let Some((version, payload)) = rest.split_once('.') else {
        // "r=" or "r=1": the link stops before its payload.
        return if rest.bytes().all(|b| b.is_ascii_digit()) {
            Err(PermalinkError::Truncated)
        } else {
            Err(PermalinkError::NotOrthoscope)
        };
    };
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PermalinkError::NotOrthoscope);
    }
    let version: u32 = version.parse().map_err(|_| PermalinkError::NotOrthoscope)?;
    if version != FORMAT_VERSION {
        return Err(PermalinkError::UnsupportedVersion(version));
    }
    if payload.is_empty() {
        return Err(PermalinkError::Truncated);
    }
    let packed = BASE64URL.decode(payload).map_err(|e| match e {
        // A length no base64 text has: characters are missing at the end.
        base64::DecodeError::InvalidLength(_) => PermalinkError::Truncated,
        other => PermalinkError::BadEncoding(other.to_string()),
    })?;
    let bytes = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&packed, MAX_INFLATED_BYTES).map_err(|e| {
        use miniz_oxide::inflate::TINFLStatus;
        match e.status {
            TINFLStatus::HasMoreOutput => PermalinkError::TooLarge { limit: MAX_INFLATED_BYTES },
            TINFLStatus::FailedCannotMakeProgress => PermalinkError::Truncated,
            TINFLStatus::Adler32Mismatch => PermalinkError::BadCompression("checksum mismatch".into()),
            other => PermalinkError::BadCompression(format!("{other:?}")),
        }
    })?;
    let (compact, rest): (Compact, &[u8]) =
        postcard::take_from_bytes(&bytes).map_err(|e| PermalinkError::Malformed(e.to_string()))?;
    let (rows, dim) = (compact.rows, compact.dim);
    let mut report = compact.into_report()?;
    if !rest.is_empty() {
        let (extras, rest): (CompactExtras, &[u8]) = postcard::take_from_bytes(rest).map_err(|e| {
            PermalinkError::Malformed(format!("{} bytes after the result are not its second part: {e}", rest.len()))
        })?;
        if !rest.is_empty() {
            let (dictionary, rest): (CompactDictionary, &[u8]) = postcard::take_from_bytes(rest).map_err(|e| {
                PermalinkError::Malformed(format!("{} bytes after the result are not its dictionary: {e}", rest.len()))
            })?;
            if !rest.is_empty() {
                return Err(PermalinkError::Malformed(format!("{} bytes after the result", rest.len())));
            }
            let dictionary = dictionary.into_dictionary(rows)?;
            report.tensor_role = TensorRole::SaeDecoder;
            report.dictionary = Some(DictionaryReport::new(dictionary, &report));
        }
        if let Some(m) = &extras.model {
            if m.is_empty() || m.chars().count() > MAX_TEXT_CHARS || m.chars().any(char::is_control) {
                return Err(PermalinkError::Implausible {
                    field: "model",
                    value: format!("{} characters", m.chars().count()),
                });
            }
        }
        report.model = extras.model;
        report.trained = extras.trained.map(|t| t.into_report(rows, dim)).transpose()?;
    }
    Ok(report)
}

/// What follows `r=` (after an optional `#`), if the fragment has that key.
fn key_value(fragment: &str) -> Option<&str> {
    let f = fragment.trim();
    let f = f.strip_prefix('#').unwrap_or(f);
    f.strip_prefix(FRAGMENT_KEY)?.strip_prefix('=')
}

/// base64url without padding; decoding also takes padding and ignores the unused low bits of the
/// last character (they carry nothing; the checksum guards the bytes that matter).
const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Cuts `s` to [`MAX_TEXT_CHARS`] characters, marking the cut.
fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_TEXT_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_TEXT_CHARS - 1).collect();
    out.push('…');
    out
}

impl Compact {
    pub fn from_report(r: &Report) -> Self {
        Self {
            file: cut(&r.file),
            format: cut(&r.format),
            tensor: cut(&r.tensor),
            tensor_reason: cut(&r.tensor_reason),
            dtype: cut(&r.dtype),
            rows: r.rows,
            dim: r.dim,
            rows_seen: r.rows_seen,
            rows_used: r.rows_used,
            rows_dropped_zero: r.rows_dropped_zero,
            rows_dropped_nonfinite: r.rows_dropped_nonfinite,
            pairs: r.pairs,
            exact: r.exact,
            mu: r.mu,
            sigma: r.sigma,
            epsilon_ci: r.epsilon_ci,
            epsilon_se: r.epsilon_se,
            seed: r.seed,
            timing_ms: r.timing_ms as f32,
            kernel: cut(&r.kernel),
            accumulator_bytes: r.accumulator_bytes,
            peak_wasm_bytes: r.peak_wasm_bytes,
            tied: r.tied,
            tied_evidence: cut(&r.tied_evidence),
            unembedding: r.unembedding.as_ref().map(|u| CompactUnembedding {
                tensor: cut(&u.tensor),
                dtype: cut(&u.dtype),
                rows: u.rows,
                dim: u.dim,
                rows_seen: u.rows_seen,
                rows_dropped: u.rows_dropped,
                pairs: u.pairs,
                exact: u.exact,
                mu: u.mu,
                sigma: u.sigma,
                ci: u.mu_plus_2sigma_ci,
            }),
            source_url: r.source_url.clone().filter(|u| u.chars().count() <= MAX_URL_CHARS),
            bytes_fetched: r.bytes_fetched,
            histogram: CompactHistogram::from_report(&r.histogram),
            histogram_zoom: CompactHistogram::from_report(&r.histogram_zoom),
        }
    }

    /// The report, with derived fields recomputed, after checking every value an analysis could
    /// have produced.
    pub fn into_report(self) -> Result<Report, PermalinkError> {
        let implausible = |field: &'static str, value: String| Err(PermalinkError::Implausible { field, value });
        finite("mu", self.mu)?;
        finite("sigma", self.sigma)?;
        if self.sigma < 0.0 {
            return implausible("sigma", self.sigma.to_string());
        }
        if self.rows_used < 2 {
            return implausible("rows_used", self.rows_used.to_string());
        }
        let dropped = self.rows_dropped_zero.checked_add(self.rows_dropped_nonfinite);
        if dropped.and_then(|d| d.checked_add(self.rows_used)) != Some(self.rows_seen) {
            return implausible(
                "rows_seen",
                format!(
                    "{} ≠ {} used + {} zero + {} non-finite",
                    self.rows_seen, self.rows_used, self.rows_dropped_zero, self.rows_dropped_nonfinite
                ),
            );
        }
        if self.rows_seen > self.rows || (self.exact && self.rows_seen != self.rows) {
            return implausible(
                "rows_seen",
                format!("{} of {} rows (exact: {})", self.rows_seen, self.rows, self.exact),
            );
        }
        if self.dim == 0 {
            return implausible("dim", "0".into());
        }
        let n = self.rows_used as u128;
        if n * (n - 1) / 2 != self.pairs as u128 {
            return implausible("pairs", format!("{} for {} rows", self.pairs, self.rows_used));
        }
        if self.exact && (self.epsilon_ci.is_some() || self.epsilon_se.is_some()) {
            return implausible("epsilon_ci", "an interval on an exact result".into());
        }
        if let Some(ci) = self.epsilon_ci {
            interval("epsilon_ci", ci)?;
        }
        if let Some(se) = self.epsilon_se {
            finite("epsilon_se", se)?;
            if se < 0.0 {
                return implausible("epsilon_se", se.to_string());
            }
        }
        finite("timing_ms", self.timing_ms as f64)?;
        let histogram = self.histogram.into_report("histogram")?;
        let histogram_zoom = self.histogram_zoom.into_report("histogram_zoom")?;
        let unembedding = self.unembedding.map(CompactUnembedding::into_report).transpose()?;
        let epsilon = estimate::epsilon(self.mu, self.sigma);
        // An automatic choice is always the input embedding; a tensor chosen by the user is what
        // its name says (as `locate::role_of_choice` decides for a name it did not pick itself).
        let tensor_role =
            if self.tensor_reason == CHOSEN_BY_YOU { role_by_name(&self.tensor) } else { TensorRole::InputEmbedding };
        Ok(Report {
            schema: SCHEMA_VERSION,
            file: self.file,
            format: self.format,
            tensor: self.tensor,
            tensor_reason: self.tensor_reason,
            tensor_role,
            quantised: crate::read::format::quantised_name(&self.dtype),
            dtype: self.dtype,
            rows: self.rows,
            dim: self.dim,
            rows_seen: self.rows_seen,
            rows_used: self.rows_used,
            rows_dropped: self.rows_dropped_zero + self.rows_dropped_nonfinite,
            rows_dropped_zero: self.rows_dropped_zero,
            rows_dropped_nonfinite: self.rows_dropped_nonfinite,
            pairs: self.pairs,
            exact: self.exact,
            mu: self.mu,
            sigma: self.sigma,
            epsilon,
            epsilon_3sigma: estimate::epsilon_3sigma(self.mu, self.sigma),
            epsilon_ci: self.epsilon_ci,
            epsilon_se: self.epsilon_se,
            seed: self.seed,
            log10_capacity: estimate::capacities(self.dim, epsilon),
            capacity_determinate: estimate::capacity_determinate(epsilon),
            capacity_proven: Some(capacity::proven(epsilon, self.dim, self.rows_used)),
            class: estimate::class(epsilon),
            histogram,
            histogram_zoom,
            timing_ms: self.timing_ms as f64,
            precision: precision_of_kernel(&self.kernel).to_string(),
            precision_reason: String::new(),
            gram_gflops: None,
            kernel: self.kernel,
            // Not carried (an implementation detail of the run, not of the result).
            workers: 1,
            accumulator_bytes: self.accumulator_bytes,
            // Not carried (where a run happened, not what it found).
            gpu: None,
            gpu_fallback: None,
            peak_wasm_bytes: self.peak_wasm_bytes,
            unembedding,
            tied: self.tied,
            tied_evidence: self.tied_evidence,
            caveat: CAPACITY_CAVEAT.to_string(),
            source_url: self.source_url,
            bytes_fetched: self.bytes_fetched,
            geometry: None,
            top_pairs: Vec::new(),
            // Not carried either, for the same reason as the top pairs.
            antipodal_pairs: Vec::new(),
            centred: None,
            trained: None,
            model: None,
            dictionary: None,
        })
    }
}

/// "f32" or "f64" when the kernel's name ends in it (the link layout has no precision of its own).
fn precision_of_kernel(kernel: &str) -> &str {
    kernel.rsplit(' ').next().filter(|p| matches!(*p, "f32" | "f64")).unwrap_or("")
}

impl CompactUnembedding {
    fn into_report(self) -> Result<UnembeddingReport, PermalinkError> {
        finite("unembedding.mu", self.mu)?;
        finite("unembedding.sigma", self.sigma)?;
        if self.sigma < 0.0 {
            return Err(PermalinkError::Implausible { field: "unembedding.sigma", value: self.sigma.to_string() });
        }
        if let Some(ci) = self.ci {
            interval("unembedding.ci", ci)?;
        }
        Ok(UnembeddingReport {
            tensor: self.tensor,
            dtype: self.dtype,
            rows: self.rows,
            dim: self.dim,
            rows_seen: self.rows_seen,
            rows_dropped: self.rows_dropped,
            pairs: self.pairs,
            exact: self.exact,
            mu: self.mu,
            sigma: self.sigma,
            mu_plus_2sigma: estimate::epsilon(self.mu, self.sigma),
            mu_plus_3sigma: estimate::epsilon_3sigma(self.mu, self.sigma),
            mu_plus_2sigma_ci: self.ci,
            note: UNEMBEDDING_NOTE.to_string(),
            histogram: None,
            alignment: None,
            trained: None,
        })
    }
}

fn finite(field: &'static str, x: f64) -> Result<(), PermalinkError> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(PermalinkError::Implausible { field, value: x.to_string() })
    }
}

fn interval(field: &'static str, [lo, hi]: [f64; 2]) -> Result<(), PermalinkError> {
    if lo.is_finite() && hi.is_finite() && lo <= hi {
        Ok(())
    } else {
        Err(PermalinkError::Implausible { field, value: format!("[{lo}, {hi}]") })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bound documented on [`quantise_counts`], bin by bin.
    fn within_bound(largest: u64, original: u64, decoded: u64) -> bool {
        let step = largest as f64 / top_level(largest).max(1) as f64;
        let error = (decoded as f64 - original as f64).abs();
        if original as f64 >= step / 2.0 {
            error <= step / 2.0 + 1.0
        } else {
            error <= step
        }
    }

    fn check(counts: &[u64]) -> Result<(), TestCaseError> {
        let (largest, levels) = quantise_counts(counts);
        let back = dequantise_counts(largest, &levels);
        prop_assert_eq!(back.len(), counts.len());
        prop_assert_eq!(largest, counts.iter().copied().max().unwrap_or(0));
        for (i, (&c, &d)) in counts.iter().zip(&back).enumerate() {
            prop_assert!(within_bound(largest, c, d), "bin {}: {} came back as {} (largest {})", i, c, d, largest);
            prop_assert_eq!(c == 0, d == 0, "bin {}: {} came back as {}", i, c, d);
            if largest <= COUNT_LEVELS {
                prop_assert_eq!(c, d, "bin {} not exact with largest {}", i, largest);
            }
            if c == largest {
                prop_assert_eq!(d, largest);
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn quantised_counts_stay_within_the_documented_bound(
            counts in proptest::collection::vec(prop_oneof![Just(0u64), 0u64..70_000, any::<u64>()], 0..64),
        ) {
            check(&counts)?;
        }

        #[test]
        fn quantised_small_histograms_are_exact(counts in proptest::collection::vec(0u64..=65_535, 1..64)) {
            check(&counts)?;
        }
    }

    #[test]
    fn quantisation_bound_is_tight_at_its_worst_cases() {
        // A lone count of 1 beside a huge bin is raised to level 1: it comes back as one step.
        let largest = 65_535 * 1000;
        let (l, levels) = quantise_counts(&[1, largest]);
        assert_eq!(levels, vec![1, u16::MAX]);
        assert_eq!(dequantise_counts(l, &levels), vec![1000, largest]);
        check(&[1, 499, 500, 501, 1499, 1500, largest]).unwrap();
        check(&[0, 0, 0]).unwrap();
        check(&[u64::MAX, 1, u64::MAX / 3]).unwrap();
    }

    #[test]
    fn long_text_is_cut_with_a_mark_and_short_text_kept() {
        assert_eq!(cut("model.embed_tokens.weight"), "model.embed_tokens.weight");
        let long = "é".repeat(MAX_TEXT_CHARS + 5);
        let c = cut(&long);
        assert_eq!(c.chars().count(), MAX_TEXT_CHARS);
        assert!(c.ends_with('…'));
        assert_eq!(cut(&"x".repeat(MAX_TEXT_CHARS)), "x".repeat(MAX_TEXT_CHARS));
    }

    #[test]
    fn the_key_is_recognised_with_or_without_the_hash() {
        assert!(is_permalink("#r=1.AAAA"));
        assert!(is_permalink("r=1.AAAA"));
        assert!(is_permalink("r="));
        assert!(!is_permalink("#section-2"));
        assert!(!is_permalink(""));
        assert!(!is_permalink("#rows=3"));
    }
}
