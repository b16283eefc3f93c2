//! URL parameters (ARCHITECTURE.md, "The testing contract"): `?exact=1`, `?seed=N`, `?demo=NAME`,
//! `?embed=1`, `?rows=N` (stop after N rows with an estimate), and `?url=URL` / `?hf=org/name[@rev]`
//! (with `?hf_endpoint=URL` for a mirror) to open a model over HTTP Range reads. `?precision=f64`
//! forces the f64 Gram kernel; `?kernel=simd128` (read by `worker::client::worker_url`) forces the
//! plain SIMD worker build; `?workers=N` sets the worker pool's size; `?gpu=0` keeps the pass on the
//! CPU pool and `?gpu=1` lets it use any GPU adapter, software ones included (default: a GPU that is
//! not a fallback adapter, if the browser offers one); `?split=rows|columns` forces how the pool
//! shares the pass (default: by rows, by columns from d = 8192 or where whole Gram matrices do not
//! fit the memory budget); `?dead_below=X` sets aside a dictionary's latents below log10 firing
//! density X (−12 … 0; default: those that never fired); `?crash_after_rows=N` (with `?crash=oom` for
//! an out-of-memory instead of a panic, `?crash=gpu-lost` for a lost GPU device, `?crash=slow-band`
//! for a helper that lags behind) is a test hook of the end-to-end tests' build only (cargo feature
//! `test-hooks`).

use web_sys::UrlSearchParams;

use crate::pass::gpu::GpuChoice;
use crate::pass::kernel::Precision;
use crate::pass::plan::DEFAULT_SEED;
use crate::pass::shares::Split;
use crate::read::demo::DEFAULT_DEMO;
use crate::read::dictionary::{parse_dead_below, DeadBelowError};
#[cfg(feature = "test-hooks")]
use crate::worker::protocol::CrashKind;
use crate::worker::protocol::{SourceSpec, TestCrash};

#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Force the exact full pass (no early stop).
    pub exact: bool,
    pub seed: u64,
    /// Demo to open with (the default demo when no parameter is given).
    pub demo: String,
    pub embed: bool,
    pub rows: Option<u64>,
    /// A model file or shard index to open by URL instead of the demo.
    pub url: Option<String>,
    /// A Hugging Face repo id to open instead of the demo.
    pub hf: Option<String>,
    /// Where `hf` ids resolve (default huggingface.co), like huggingface_hub's `HF_ENDPOINT`.
    pub hf_endpoint: Option<String>,
    /// The Gram pass's arithmetic (`?precision=f64`; anything else is the default f32).
    pub precision: Precision,
    /// Compute the centred statistics after an exact result (`?centred=1`).
    pub centred: bool,
    /// `?workers=N`: the size of the worker pool (default: the logical cores, at most 16).
    pub workers: Option<u32>,
    /// `?split=rows|columns`: how the pool shares the pass (anything else: by the width).
    pub split: Split,
    /// `?gpu=0` / `?gpu=1`: where the Gram sums run (see the module's comment).
    pub gpu: GpuChoice,
    /// `?dead_below=X`: a dictionary's latents below log10 firing density X are set aside as dead
    /// (None: those that never fired). A value that is not a number in −12 … 0 is refused: the page
    /// says why instead of analysing with a threshold the link did not mean.
    pub dead_below: Result<Option<f64>, DeadBelowError>,
    /// `?crash_after_rows=N` (`&crash=oom`), a test hook: a worker of the first analysis panics
    /// (or runs out of memory) after N rows, to show the page recovers (`worker::pool`). Harmless:
    /// it only ends that run with a message.
    pub crash: Option<TestCrash>,
}

impl Params {
    pub fn from_location() -> Params {
        let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
        let q = UrlSearchParams::new_with_str(&search).ok();
        let get = |k: &str| q.as_ref().and_then(|q| q.get(k));
        let flag = |k: &str| get(k).is_some_and(|v| v == "1" || v == "true");
        let exact = flag("exact");
        Params {
            exact,
            seed: get("seed").and_then(|s| s.trim().parse().ok()).unwrap_or(DEFAULT_SEED),
            demo: get("demo").filter(|d| !d.is_empty()).unwrap_or_else(|| DEFAULT_DEMO.to_string()),
            embed: flag("embed"),
            rows: if exact { None } else { get("rows").and_then(|s| s.trim().parse().ok()) },
            url: get("url").filter(|u| !u.trim().is_empty()),
            hf: get("hf").filter(|h| !h.trim().is_empty()),
            hf_endpoint: get("hf_endpoint").filter(|e| !e.trim().is_empty()),
            precision: if get("precision").is_some_and(|p| p.trim() == "f64") {
                Precision::F64
            } else {
                Precision::F32
            },
            centred: flag("centred"),
            workers: get("workers").and_then(|s| s.trim().parse().ok()).filter(|&n| n >= 1),
            gpu: match get("gpu").as_deref().map(str::trim) {
                Some("0" | "false") => GpuChoice::Off,
                Some("1" | "true") => GpuChoice::Any,
                _ => GpuChoice::Auto,
            },
            split: match get("split").as_deref().map(str::trim) {
                Some("rows") => Split::Rows,
                Some("columns") => Split::Columns,
                _ => Split::Auto,
            },
            dead_below: get("dead_below").filter(|s| !s.trim().is_empty()).map(|s| parse_dead_below(&s)).transpose(),
            crash: test_crash(&get),
        }
    }

    /// What the page opens with when the link carries no stored result: `?url=`, else `?hf=`,
    /// else the demo.
    pub fn source(&self) -> SourceSpec {
        match (&self.url, &self.hf) {
            (Some(url), _) => SourceSpec::Url { url: url.clone() },
            (None, Some(id)) => SourceSpec::Hf { id: id.clone(), endpoint: self.hf_endpoint.clone() },
            (None, None) => SourceSpec::Demo(self.demo.clone()),
        }
    }
}

/// `?crash_after_rows=N` (`&crash=oom`): only in the end-to-end tests' build (cargo feature
/// `test-hooks`); a release page ignores both, so a shared link cannot crash a reader's tab.
#[cfg(feature = "test-hooks")]
fn test_crash(get: &dyn Fn(&str) -> Option<String>) -> Option<TestCrash> {
    get("crash_after_rows").and_then(|s| s.trim().parse().ok()).map(|after_rows| TestCrash {
        after_rows,
        kind: match get("crash").as_deref().map(str::trim) {
            Some("oom") => CrashKind::OutOfMemory,
            Some("gpu-lost") => CrashKind::GpuLost,
            Some("slow-band") => CrashKind::SlowBand,
            _ => CrashKind::Panic,
        },
    })
}

#[cfg(not(feature = "test-hooks"))]
fn test_crash(_get: &dyn Fn(&str) -> Option<String>) -> Option<TestCrash> {
    None
}
