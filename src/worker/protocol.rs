//! Messages between the page and the worker, sent as JSON text (u64 counts survive intact, unlike
//! a structured-clone of numbers) next to the `File` handles when there are some.

use serde::{Deserialize, Serialize};

use crate::explain::centred::Centred;
use crate::explain::geometry::Geometry;
use crate::explain::neighbours::Neighbours;
use crate::pass::gpu::GpuChoice;
use crate::pass::kernel::Precision;
use crate::read::matrix::Query;

use crate::pass::analysis::{AnalysisConfig, Progress, SampleVerdict};
use crate::pass::shares::{Share, Split};
use crate::result::report::Report;
use crate::run::job::Opened;

/// What to read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SourceSpec {
    /// The `File`s attached to the message (one model file, or shards with their index).
    Files,
    /// A built-in demo, generated in the worker (`demo::demo`).
    Demo(String),
    /// A model file (`.safetensors`, `.gguf`, `.npy`) or a shard index (`*.json`, its shards next to
    /// it) on a server that allows CORS, read with HTTP Range requests (`?url=`).
    Url { url: String },
    /// A Hugging Face repo `org/name[@revision]`: its `model.safetensors.index.json`, else its
    /// `model.safetensors`, under `endpoint` (default `https://huggingface.co`; `?hf=`,
    /// `?hf_endpoint=`). The report's `source_url` is the resolved address that was read.
    Hf { id: String, endpoint: Option<String> },
}

/// How a run reads its rows, the same for the lead and every helper of a split pass (so their
/// partials merge).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub seed: u64,
    /// Stop after this many rows with an estimate (None: exact).
    pub stop_after_rows: Option<u64>,
    /// `?precision=f64` forces the f64 Gram kernel (default f32, see `kernel::Precision`).
    #[serde(default)]
    pub precision: Precision,
    /// Where the exact pass's Gram sums run: `?gpu=0` the CPU pool, `?gpu=1` any GPU adapter (software
    /// ones included), else a GPU that is not a fallback adapter when the browser has one.
    #[serde(default)]
    pub gpu: GpuChoice,
    /// Test hook (`?crash_after_rows=N`, `?crash=oom`): fail this way once this many rows were seen.
    #[serde(default)]
    pub crash: Option<TestCrash>,
    /// How the pool splits the pass (`?split=rows|columns`; default by the width, `shares::choose_split`).
    #[serde(default)]
    pub split: Split,
    /// A dictionary's latents below this log10 firing density are set aside as dead (`?dead_below=`,
    /// the card's control; None: those that never fired).
    #[serde(default)]
    pub dead_below_log10: Option<f64>,
}

/// A deliberate failure inside a worker, to show the page recovers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCrash {
    pub after_rows: u64,
    pub kind: CrashKind,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CrashKind {
    /// A Rust panic (the panic hook still runs and tells the page).
    #[default]
    Panic,
    /// Memory exhausted: allocations until the wasm memory cannot grow, then Rust's allocation
    /// failure path, which aborts without a panic hook (a bare trap).
    OutOfMemory,
    /// The GPU device is destroyed mid-pass (`?crash=gpu-lost`), as a driver reset would lose it:
    /// the pass must finish on the CPU, exact, with a message.
    GpuLost,
    /// Not a failure: a straggler (`?crash=slow-band`). The helper pauses after each step
    /// (`crash::helper_pause_ms`), so that the lead of a split by columns ends its own band first
    /// and waits for it.
    SlowBand,
}

impl RunSettings {
    /// The analysis these settings ask for.
    pub fn config(&self) -> AnalysisConfig {
        let RunSettings { seed, stop_after_rows, precision, dead_below_log10, .. } = *self;
        AnalysisConfig { seed, stop_after_rows, precision, dead_below_log10, ..AnalysisConfig::default() }
    }
}

/// Page → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Read the header, locate the embedding (or take `tensor`), and analyse it.
    Analyze {
        /// Echoed in every response about this run, so late messages of an older run are ignored.
        run: u64,
        source: SourceSpec,
        tensor: Option<String>,
        #[serde(flatten)]
        settings: RunSettings,
        /// Workers the page can give this run (`pass`): the lead answers with
        /// [`Response::Split`] when it splits the pass. 1 (the default) keeps it whole.
        #[serde(default = "one")]
        workers: u32,
        /// Why this run is on the CPU although a GPU was asked for: set when the page reruns a pass
        /// whose GPU failed ([`Response::GpuFailed`]), and carried into `Report::gpu_fallback`.
        #[serde(default)]
        gpu_fallback: Option<String>,
    },
    /// Measure this worker's kernels (`scripts/bench.sh`): answered with [`Response::Benchmark`].
    Benchmark {
        /// Iterations of the peak loop (each is `kernel::bench::PEAK_FLOPS_PER_ITERATION` flops).
        peak_iterations: u64,
        /// Shape of the Gram benchmark: rows of `dim` dimensions.
        dim: u64,
        rows: u64,
    },
    /// A helper worker's part of a split pass: open the same source, take `tensor` (the lead's
    /// choice), run `share` of its pass and post [`Response::Partial`].
    Share {
        run: u64,
        source: SourceSpec,
        tensor: String,
        share: Share,
        /// The lead's settings: the helpers' seed, stopping point and kernel must agree with the
        /// lead's for the partials to merge.
        #[serde(flatten)]
        settings: RunSettings,
    },
    /// To a helper of run `run`: what the lead's histogram sample decided ([`Response::Verdict`]);
    /// the helper starts its share's pass with it.
    Verdict { run: u64, verdict: SampleVerdict },
    /// To the lead of run `run`: a helper's `blocks` of the histogram sample's pairs
    /// ([`Response::SampleDots`]), as the `bytes` next to this message.
    SampleDots { run: u64, blocks: Vec<u32> },
    /// To the lead: the partial of share `share` of run `run`, as the `bytes` next to this message.
    Absorb { run: u64, share: u32 },
    /// To the lead of a pass split by columns: band `share`'s part of ‖G‖²_F at checkpoint `step`
    /// ([`Response::BandPart`]), for the running estimate.
    BandPart { run: u64, share: u32, step: u64, frobenius: f64 },
    /// Finish the current step and report the estimate so far (a helper split by rows posts its
    /// partial so far; a pass split by columns stops at its bands' last common checkpoint, so the
    /// page sends this to the lead alone).
    StopEarly,
    /// Stop run `run` at its next step and post nothing more about it; the worker acknowledges at
    /// once with [`Response::Cancelled`] (the page replaces a worker that does not, e.g. one stuck
    /// in a network read).
    Cancel { run: u64 },
    /// The exact nearest neighbours of one row of run `run`'s embedding (the tail explorer), by
    /// row id or token string; answered with [`Response::Neighbours`]. Goes to the worker that
    /// produced the result: it keeps the matrix's source and vocabulary.
    Neighbours { run: u64, query: Query, k: u32 },
    /// μ, σ, ε of run `run`'s mean-centred rows (a second exact pass, with progress): answered with
    /// [`Response::CentredProgress`] and [`Response::Centred`]. A new run cancels it.
    Centred { run: u64 },
}

/// Worker → page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    /// The worker's message handler is installed; requests sent before this are lost.
    Ready,
    /// The headers were read: the tensors on offer and the one being analysed.
    Opened(Opened),
    /// The files hold no input embedding: nothing runs. The picker offers `opened`'s tensors and
    /// `message` says why and what to drop instead.
    Choose {
        opened: Opened,
        message: String,
    },
    Progress(Progress),
    /// Boxed: a Report is far larger than every other message.
    Done(Box<Report>),
    /// The spectrum of G/V and the dimensions that carry μ, for the report just posted: the eigen
    /// step runs after the result is shown (tens of seconds at d = 4096 in a tab).
    Geometry(Geometry),
    /// The eigen step failed; the result stands without its geometry.
    GeometryFailed {
        message: String,
    },
    Failed {
        message: String,
    },
    /// The GPU failed during the pass (lost device, out of memory, validation): the page runs the
    /// pass again on the CPU pool, and the Report says why (`gpu_fallback`).
    GpuFailed {
        message: String,
    },
    /// The lead split the pass over `of` workers, by columns or by rows: the page sends shares
    /// 1..of of `tensor` to the others.
    Split {
        tensor: String,
        of: u32,
        #[serde(default)]
        columns: bool,
    },
    /// The lead of a split pass has taken in its histogram sample's pairs: what they decided
    /// (precision, centre), which the page sends on to the helpers ([`Request::Verdict`]), which
    /// start their shares with it. `blocks_from_helpers` of the `blocks` of the sample's pairs came
    /// from the helpers ([`Response::SampleDots`]), the rest the lead computed: the tests read it.
    Verdict {
        verdict: SampleVerdict,
        #[serde(default)]
        blocks: u32,
        #[serde(default)]
        blocks_from_helpers: u32,
    },
    /// A helper of a split pass computed `blocks` of the lead's histogram sample pairs (those
    /// `Share::pairs_sample_block` deals it): their f32 dot products, block after block, are the
    /// `bytes` next to this message, which the page forwards to the lead ([`Request::SampleDots`]).
    SampleDots {
        blocks: Vec<u32>,
    },
    /// A helper of a pass split by columns reached checkpoint `step` with `frobenius` as its
    /// band's part of ‖G‖²_F (`pass::bands`): the page forwards it to the lead.
    BandPart {
        step: u64,
        frobenius: f64,
    },
    /// A helper's share is done (or stopped early): its `PassPartial` is the `bytes` next to this
    /// message, for the lead.
    Partial,
    /// A Rust panic in the worker: its wasm instance is unusable, so the page replaces the pool.
    Crashed {
        message: String,
    },
    /// A Cancel was received (the envelope carries the cancelled run).
    Cancelled,
    /// Speeds measured by [`Request::Benchmark`], GFLOP/s (None where not measurable: no relaxed
    /// SIMD in this build, no clock).
    Benchmark {
        /// Which f32 kernel this worker runs ("relaxed-simd", "simd128", "portable").
        kernel: String,
        /// Register-only f32x4 multiply + add loop.
        peak_gflops: Option<f64>,
        /// The same loop with `f32x4.relaxed_madd` (relaxed build only).
        peak_relaxed_gflops: Option<f64>,
        /// The f32 and f64 Gram updates at the requested shape, in 64-row calls.
        kernel_gflops: Option<f64>,
        kernel_f64_gflops: Option<f64>,
    },
    Neighbours(Neighbours),
    /// The neighbours could not be found (unknown token, unusable row, read failure …).
    NeighboursFailed {
        message: String,
    },
    /// Share of the centred pass done, 0…1.
    CentredProgress {
        fraction: f64,
    },
    Centred(Centred),
    CentredFailed {
        message: String,
    },
}

/// A response tagged with the run it belongs to (0 for `Ready`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub run: u64,
    pub response: Response,
}

fn one() -> u32 {
    1
}
