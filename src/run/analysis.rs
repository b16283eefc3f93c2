//! One analysis of one tensor, as a state machine that advances a bounded amount of work per
//! [`Analysis::step`]. The browser worker calls `step` from JavaScript again and again (a wasm call
//! already running never tiers up to optimised code in V8, ARCHITECTURE.md, "Facts the code relies on"), posting progress
//! between calls; the CLI just loops.
//!
//! Phases: read the histogram's row sample → all pairs among it (histogram, uncertainty model) →
//! the Gram pass over all rows in the plan's order → done (exact).
//!
//! Given a GPU ([`Analysis::set_gpu`]), the Gram pass runs there when the sample says f32 suffices
//! (`pass::gpu`): `step` stays synchronous and only reads and submits rows; the caller awaits
//! [`Analysis::settle_gpu`] after each step, [`Analysis::refresh_gpu_estimate`] before a progress
//! message and [`Analysis::finish_gpu`] once the pass is done (or stopped). Any GPU failure is
//! [`Error::Gpu`], and the caller then reruns the whole analysis on the CPU.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::explain::geometry::{self, geometry_expected, Geometry, GeometryError, GeometryTiming};
use crate::pass::accumulate::{PairAccumulator, Route};
use crate::pass::bands::{is_checkpoint, BandTally, LeadAt};
use crate::pass::estimate;
#[cfg(feature = "gpu")]
use crate::pass::gpu::{
    gram::{block_rows_for, GpuGram, GramOptions, RawType},
    GpuError,
};
use crate::pass::gpu::{GpuContext, GpuInfo};
use crate::pass::kernel::{self, BandValues, Precision, MAX_CHUNK_ROWS};
use crate::pass::plan::{
    Plan, DEFAULT_BLOCK_ROWS, DEFAULT_HISTOGRAM_ROWS, DEFAULT_SEED, DEFLATED_RANDOM_PHASE_BLOCKS, RANDOM_PHASE_BLOCKS,
    SWEEP_MAX_DIM,
};
use crate::pass::shares::{column_band, PassError, PassPartial, Share};
use crate::pass::stats::{mean_row, within_block_sums, GramMoments, Moments, PairSample, RowCounts};
use crate::read::format::decode::{all_zero, decode_rows};
use crate::read::format::{DType, Layout, TensorInfo};
use crate::read::inflate::checkpoint_spacing;
use crate::read::locate::{LocateError, TensorRole};
use crate::read::matrix::{normalise_row, RowFate};
use crate::read::source::ByteSource;
use crate::read::untrained::SetAside;
use crate::result::report::{PassOutcome, Report};
use crate::run::error::Error;

/// Largest d_model accepted: the f64 Gram triangle is d²/2·8 bytes (537 MB at 16384).
pub const MAX_DIM: u64 = 16384;
/// Largest row count accepted (vocabularies are ~10⁵–10⁶): bounds the plan's memory whatever a
/// header claims.
pub const MAX_ROWS: u64 = 1 << 26;

/// Rows the pass of `plan` will visit: all, or the blocks holding the first `stop_after_rows`.
fn planned_rows(plan: &Plan, config: &AnalysisConfig) -> u64 {
    let blocks = match config.stop_after_rows {
        Some(limit) => plan.blocks_for_rows(limit),
        None => plan.blocks.len(),
    };
    plan.blocks.iter().take(blocks).map(|&b| plan.block_range(b)).map(|(first, stop)| stop - first).sum()
}

/// Bytes the accumulator of an analysis of `tensor` with `config` will hold, before anything is
/// allocated; `None` when the tensor would be refused (not a matrix, or beyond the limits).
pub fn planned_accumulator_bytes(tensor: &TensorInfo, config: &AnalysisConfig) -> Option<u64> {
    let (rows, dim) = tensor.matrix()?;
    if rows == 0 || dim == 0 || dim > MAX_DIM || rows > MAX_ROWS {
        return None;
    }
    let block_rows = config.block_rows.clamp(1, MAX_CHUNK_ROWS as u64);
    let plan = Plan::new(rows, config.seed, block_rows, config.histogram_rows);
    Some(crate::pass::accumulate::planned_bytes(planned_rows(&plan, config), dim as usize))
}

/// Settings of one analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    pub seed: u64,
    /// Rows per read in the pass.
    pub block_rows: u64,
    /// Rows sampled for the histogram.
    pub histogram_rows: u64,
    /// Stop the pass after this many rows and report an estimate (None: run to the exact answer).
    pub stop_after_rows: Option<u64>,
    /// The Gram pass's arithmetic. F32 falls back to f64 when the sample's σ is inside the f32
    /// noise ([`kernel::f32_suffices`]); F64 is always f64.
    #[serde(default)]
    pub precision: Precision,
    /// A dictionary's latents whose log10 firing density (SAELens's `sparsity`) is below this are
    /// set aside as dead (`read::dictionary::dead_latents`); None: those that never fired
    /// ([`crate::read::dictionary::NEVER_FIRED_LOG10`]).
    #[serde(default)]
    pub dead_below_log10: Option<f64>,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        Self {
            seed: DEFAULT_SEED,
            block_rows: DEFAULT_BLOCK_ROWS,
            histogram_rows: DEFAULT_HISTOGRAM_ROWS,
            stop_after_rows: None,
            precision: Precision::default(),
            dead_below_log10: None,
        }
    }
}

/// Where an analysis stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Sample,
    SamplePairs,
    Pass,
    Done,
}

/// What the histogram's sample decided for the pass ([`Analysis::sample_verdict`]): whether the
/// Gram kernel runs in f64 though f32 was asked for, the f32 kernel's centre (the sample's mean
/// unit row), and the reason the report gives for the precision. The page's lead sends it to its
/// helpers in a message (JSON: every f64 round-trips exactly).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleVerdict {
    /// f64 instead of the f32 asked for (σ inside the f32 noise).
    pub f64: bool,
    /// The f32 pass's centre, d_pad long.
    pub centre: Option<Vec<f64>>,
    /// `Report::precision_reason`.
    pub precision_reason: String,
}

/// A snapshot for the progress bar and the running ε.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub phase: Phase,
    /// Fraction of the whole job done, 0..1.
    pub fraction: f64,
    pub rows_seen: u64,
    pub rows: u64,
    /// Rows read so far, for the rate on screen: `rows_seen` is the rows the running ε covers,
    /// which stays put while an estimate is reposted or the pass sweeps (`plan`).
    #[serde(default)]
    pub rows_read: u64,
    /// Running ε and its standard error, once the pass has begun.
    pub epsilon: Option<f64>,
    pub epsilon_se: Option<f64>,
    /// Bytes pulled over the network so far (models opened by URL; set by the worker).
    #[serde(default)]
    pub bytes_fetched: Option<u64>,
}

/// What the caller needs to know about the file besides the tensor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    pub file: String,
    pub format: String,
    pub tensor_reason: String,
    /// What the tensor is: the paper's ε is that of the input embedding only.
    pub tensor_role: TensorRole,
}

pub struct Analysis {
    source: Box<dyn ByteSource>,
    tensor: TensorInfo,
    origin: Origin,
    config: AnalysisConfig,
    rows: u64,
    dim: usize,
    dim_padded: usize,
    row_bytes: u64,
    plan: Plan,
    phase: Phase,
    /// Unit rows of the histogram sample (kept rows only), `dim_padded` each, and their blocks.
    sample_units: Vec<f32>,
    sample_block: Vec<u32>,
    /// Row id of each kept sample row (names the tail explorer's pairs).
    sample_row_ids: Vec<u64>,
    /// Sample blocks read so far.
    sample_read: usize,
    sample_counts: RowCounts,
    /// Sample blocks with a row kept: each costs the kernel a whole chunk ([`Analysis::read_bound`]).
    sample_blocks_kept: u64,
    pair_sample: Option<PairSample>,
    pair_block: usize,
    /// s and G, or the unit rows themselves when there are few (`accumulate`).
    gram: PairAccumulator,
    /// Why the pass runs in f64 when f32 was asked for (empty otherwise).
    precision_reason: String,
    /// What the histogram's sample decided for the pass, once it has (`choose_precision`).
    verdict: Option<SampleVerdict>,
    /// Σ cos, Σ cos², pair count over pairs within the visited blocks (the running estimate's
    /// within-block stratum).
    within: (f64, f64, u64),
    /// Position in the plan's order of the next block this worker visits (steps by `share.of`).
    next_block: usize,
    /// The blocks this worker visits (`pass`): all of them unless the pass is split over workers.
    share: Share,
    /// Blocks whose rows are in `gram`: this worker's and those of the partials absorbed.
    blocks_seen: u64,
    /// Reused buffers: raw bytes, decoded rows, sample dot products, f64 unit rows of the pass.
    raw: Vec<u8>,
    decoded: Vec<f32>,
    units: Vec<f32>,
    dots: Vec<f32>,
    wide: Vec<f64>,
    /// The GPU offered for the Gram pass ([`Analysis::set_gpu`]).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    gpu: Option<Rc<GpuContext>>,
    /// The Gram pass running on it, until its sums are read back ([`Analysis::finish_gpu`]).
    #[cfg(feature = "gpu")]
    gpu_pass: Option<GpuRun>,
    /// Why the GPU offered did not run the pass (the Report's `gpu_fallback`).
    gpu_declined: Option<String>,
    /// The adapter that ran the pass, once its sums are in `gram`.
    gpu_ran: Option<GpuInfo>,
    /// Visited blocks whose within-block pairs are in `within`: every [`within_every`]-th of the
    /// plan's order, on the CPU as on the GPU.
    within_blocks: u64,
    /// A pass stopped at its last running estimate (a GPU pass's, [`Analysis::stop_gpu_at_estimate`],
    /// or a split by columns', [`Analysis::stop_at_checkpoint`]): the result is that estimate.
    stopped_at: Option<Snapshot>,
    /// Steps of the pass taken (a split by columns has its checkpoints at fixed steps).
    pass_steps: u64,
    /// A band's last part of ‖G‖²_F and the rows in G it covers: while no row enters G (zero or
    /// skipped rows) the part is unchanged, and a checkpoint need not stream the band again.
    band_part_at: Option<(u64, f64)>,
    /// The lead of a pass split by columns: the bands' checkpoints (`pass::bands`).
    bands: Option<BandTally>,
    /// What a share by rows holds over the plan's random phase alone, once it has gone on into the
    /// sweep (`Plan::sweep_tail`): the running estimate, and the result of a pass stopped early,
    /// merged with the other shares' at the lead.
    random_phase: Option<Box<PassPartial>>,
    /// The same for a whole pass, which merges with nothing: only the random phase's row counts
    /// and estimate (None with fewer than two rows kept), not a copy of G (268 MB at d = 8192).
    random_phase_estimate: Option<(RowCounts, Option<Snapshot>)>,
    /// Rows set aside as never trained ([`Analysis::set_aside`]): the sample keeps their pairs apart.
    set_aside: Option<Rc<SetAside>>,
}

/// Rows a GPU step reads and submits: the GPU does the arithmetic, so a step is mostly reads.
#[cfg(feature = "gpu")]
const GPU_STEP_ROWS: u64 = 1024;
/// Blocks the GPU may have queued before [`Analysis::settle_gpu`] waits (memory of the uploads).
#[cfg(feature = "gpu")]
const GPU_IN_FLIGHT: usize = 4;

/// The GPU Gram pass of an analysis.
#[cfg(feature = "gpu")]
struct GpuRun {
    gram: GpuGram,
    info: GpuInfo,
    /// Fates of the rows submitted, as the CPU sees them (checked against the GPU's at the end).
    counts: RowCounts,
    started_ms: Option<f64>,
    /// The last running moments read back ([`Analysis::refresh_gpu_estimate`]) and what the
    /// analysis had seen at that point.
    snapshot: Option<Snapshot>,
}

/// The running moments at some point of the pass, with what the analysis had seen there: a GPU
/// pass's last read-back, or the last checkpoint every band of a split by columns reached.
#[derive(Clone, Copy)]
struct Snapshot {
    moments: Moments,
    counts: RowCounts,
    blocks_seen: u64,
    within: (f64, f64, u64),
    within_blocks: u64,
}

/// The dot products of one block of the histogram sample's pairs ([`Analysis::sample_pair_blocks`]):
/// rows `rows` of the unit rows `units` (`d` each) against the rows from `rows.start` on, by
/// [`kernel::dots`], so every value is the one a step computes wherever it runs (a thread, a
/// helper). Empty for rows outside `units`.
pub fn sample_block_dots(units: &[f32], d: usize, rows: &std::ops::Range<usize>) -> Vec<f32> {
    let n = units.len() / d.max(1);
    let (Some(a), Some(b)) = (units.get(rows.start * d..rows.end * d), units.get(rows.start * d..n * d)) else {
        return Vec::new();
    };
    let mut out = vec![0.0f32; rows.len() * n.saturating_sub(rows.start)];
    kernel::dots(a, b, d, &mut out);
    out
}

/// The fate of a raw row read straight from the file (zero: every value ±0; non-finite: an
/// exponent of all ones), as `normalise_row` decides it for the decoded row.
#[cfg(feature = "gpu")]
fn raw_fate(row: &[u8], kind: RawType) -> RowFate {
    let (mut zero, mut finite) = (true, true);
    match kind {
        RawType::F32 => {
            for b in row.chunks_exact(4) {
                let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff;
                zero &= bits == 0;
                finite &= bits < 0x7f80_0000;
            }
        }
        RawType::Bf16 | RawType::F16 => {
            let exponent = if kind == RawType::Bf16 { 0x7f80 } else { 0x7c00 };
            for b in row.chunks_exact(2) {
                let bits = u16::from_le_bytes([b[0], b[1]]) & 0x7fff;
                zero &= bits == 0;
                finite &= bits & exponent != exponent;
            }
        }
    }
    if !finite {
        RowFate::NonFinite
    } else if zero {
        RowFate::Zero
    } else {
        RowFate::Kept
    }
}

/// The fate of a decoded row, as `normalise_row` decides it.
#[cfg(feature = "gpu")]
fn decoded_fate(row: &[f32]) -> RowFate {
    if row.iter().any(|x| !x.is_finite()) {
        RowFate::NonFinite
    } else if row.iter().all(|&x| x == 0.0) {
        RowFate::Zero
    } else {
        RowFate::Kept
    }
}

/// Within-block sums measured on `measured` of `seen` visited blocks, scaled to all `seen`: the
/// measured blocks are every k-th of the plan's seeded random order, an unbiased sample of them.
fn scaled_within(within: (f64, f64, u64), seen: u64, measured: u64) -> (f64, f64, u64) {
    if measured > 0 && measured < seen {
        let f = seen as f64 / measured as f64;
        (within.0 * f, within.1 * f, (within.2 as f64 * f).round() as u64)
    } else {
        within
    }
}

/// The running estimate's within-block stratum is measured on every this-many-th position of the
/// plan's order (⌈d/256⌉), on the CPU as for the GPU pass: a block of k rows costs k²·d
/// multiply-adds of dot products against the pass's k·d²/2, 128/d of it at k = 64, and in a tab
/// the dot products run at half the Gram kernel's rate. Measured on every block, they took
/// 0.32 s of a 6.7 s share at 32000×4096 in a tab. The positions do not depend on how the pass
/// is shared, so one worker and several measure the same blocks.
fn within_every(dim: usize) -> usize {
    dim.div_ceil(256).max(1)
}

/// Rows a CPU step of the sweep (`Plan::sweep_tail`) takes at (padded) width `d`: one kernel
/// call's 64 at d = 1024, more below, so that a step stays ~2 MFLOP of arithmetic: in a worker
/// each step is a call from JavaScript with its read-ahead check, pacing and yield around it,
/// which at d = 256 cost about as much as 64 rows' arithmetic. (The random phase keeps one call a
/// step: a split by columns counts its checkpoints in steps, and the estimate moves at each.)
fn step_rows(d: usize) -> u64 {
    let calls = (1024 * 1024 / (d * d).max(1)).clamp(1, 16);
    (MAX_CHUNK_ROWS * calls) as u64
}

impl Analysis {
    /// Checks the tensor and sets up the plan. Nothing is read yet.
    pub fn new(
        source: Box<dyn ByteSource>,
        tensor: TensorInfo,
        origin: Origin,
        config: AnalysisConfig,
    ) -> Result<Self, Error> {
        let (rows, dim) = tensor.matrix().ok_or_else(|| {
            Error::from(LocateError::NotAMatrix { tensor: tensor.name.clone(), shape: tensor.shape.clone() })
        })?;
        if rows == 0 || dim == 0 {
            return Err(LocateError::Empty { tensor: tensor.name.clone(), shape: tensor.shape.clone() }.into());
        }
        if !tensor.dtype.is_float() {
            return Err(Error::Decode {
                tensor: tensor.name.clone(),
                source: crate::read::format::decode::DecodeError::Unsupported(tensor.dtype.name().to_string()),
            });
        }
        if dim > MAX_DIM {
            return Err(Error::DimTooLarge { tensor: tensor.name.clone(), dim, max: MAX_DIM });
        }
        if rows > MAX_ROWS {
            return Err(Error::TooManyRows { tensor: tensor.name.clone(), rows, max: MAX_ROWS });
        }
        let row_bytes = tensor.dtype.bytes_for(dim).ok_or_else(|| Error::RowNotWholeBlocks {
            tensor: tensor.name.clone(),
            dim,
            dtype: tensor.dtype.name().to_string(),
        })?;
        let dim = dim as usize;
        let dim_padded = kernel::padded_dim(dim);
        let block_rows = config.block_rows.clamp(1, MAX_CHUNK_ROWS as u64);
        let plan = Plan::new(rows, config.seed, block_rows, config.histogram_rows);
        // Sized for the rows the pass will visit, which the shape check above bounds.
        let gram = PairAccumulator::with_precision(planned_rows(&plan, &config), dim, config.precision);
        let mut analysis = Self {
            source,
            origin,
            rows,
            dim,
            dim_padded,
            row_bytes,
            plan,
            phase: Phase::Sample,
            sample_units: Vec::new(),
            sample_block: Vec::new(),
            sample_row_ids: Vec::new(),
            sample_read: 0,
            sample_counts: RowCounts::default(),
            sample_blocks_kept: 0,
            pair_sample: None,
            pair_block: 0,
            verdict: None,
            gram,
            precision_reason: match config.precision {
                Precision::F64 => "asked for (precision=f64)".to_string(),
                Precision::F32 => String::new(),
            },
            within: (0.0, 0.0, 0),
            next_block: 0,
            share: Share::WHOLE,
            blocks_seen: 0,
            raw: Vec::new(),
            decoded: Vec::new(),
            units: Vec::new(),
            dots: Vec::new(),
            wide: Vec::new(),
            gpu: None,
            #[cfg(feature = "gpu")]
            gpu_pass: None,
            gpu_declined: None,
            gpu_ran: None,
            within_blocks: 0,
            stopped_at: None,
            pass_steps: 0,
            band_part_at: None,
            bands: None,
            random_phase: None,
            random_phase_estimate: None,
            set_aside: None,
            tensor,
            config,
        };
        analysis.arrange_plan();
        Ok(analysis)
    }

    /// The plan's order for this share: the seeded shuffle, whose tail is swept in file order
    /// (`Plan::sweep_tail`) where reading costs as much as the arithmetic ([`Analysis::read_bound`]):
    /// a Gram pass on the CPU with more blocks than the random phase, run to the end (a pass asked
    /// to stop after some rows is all random phase), whole, or split by rows at d ≤
    /// [`SWEEP_MAX_DIM`] (each share keeps a copy of its random phase's G for the lead's merge,
    /// small only there; a split by columns has every worker read every row, and its running
    /// estimate is the bands'). Called whenever one of these changes, before the first step of the
    /// pass (and once the sample's rows are read); the same in every worker of a pool, which all
    /// build the same plan.
    fn arrange_plan(&mut self) {
        let block_rows = self.config.block_rows.clamp(1, MAX_CHUNK_ROWS as u64);
        self.plan = Plan::new(self.rows, self.config.seed, block_rows, self.config.histogram_rows);
        let share_sweeps = self.share.of <= 1 || (!self.share.columns && self.dim <= SWEEP_MAX_DIM);
        let (read_bound, random_phase) = if self.scattered_blocks_inflate_more() {
            (true, DEFLATED_RANDOM_PHASE_BLOCKS)
        } else {
            (self.read_bound(), RANDOM_PHASE_BLOCKS)
        };
        let sweeps = read_bound
            && share_sweeps
            && self.config.stop_after_rows.is_none()
            && self.gram.route() == Route::Gram
            && self.gpu.is_none()
            && self.plan.blocks.len() > random_phase.max(self.plan.sample_blocks);
        if sweeps {
            self.plan.sweep_tail(random_phase, self.share.of);
        }
    }

    /// Whether the rows are a deflated member whose blocks are shorter than its checkpoints'
    /// spacing (`read::inflate`): each block read in random order inflates on average half the
    /// spacing before it, one read in file order only itself (narrow matrices: 64 rows of
    /// d = 256 f32 are a quarter of the 256 KiB spacing).
    fn scattered_blocks_inflate_more(&self) -> bool {
        let Layout::Deflate { inflated_len, .. } = self.tensor.layout else { return false };
        let block_bytes = self.plan.block_rows.saturating_mul(self.row_bytes);
        block_bytes < checkpoint_spacing(inflated_len, self.row_bytes)
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the pass is bound by its reads rather than its arithmetic, so that reading its tail
    /// in file order pays: at d ≤ [`SWEEP_MAX_DIM`] always (a 64-row block's arithmetic costs
    /// about what its scattered read does), and at any width once the histogram's sample shows
    /// that its blocks cost no more arithmetic per row read than that ([`Analysis::arithmetic`]).
    /// A tensor of zero rows, or a vocabulary padded with many, is; a trained matrix wider than
    /// 1024, or one with a row kept in every other block, is not.
    pub fn read_bound(&self) -> bool {
        self.dim <= SWEEP_MAX_DIM || self.arithmetic().is_some_and(|a| a <= 1.0)
    }

    /// Whether this pass is best read by one worker alone, however many there are: the sample
    /// shows its arithmetic is at most an eighth of a read-bound pass's ([`Analysis::arithmetic`]),
    /// and it is too wide for shares by rows to sweep their tails (each would keep a copy of its
    /// G: [`Analysis::arrange_plan`]). One reader sweeping the file in order then beats workers
    /// reading scattered blocks: 10 GiB of zero rows at d = 8192 were refused in a tab in
    /// 16–18 s by one worker, against 34–40 s by two split by columns (each reads every row) and
    /// 17–22 s by two split by rows (each reads half, scattered; 2-core machine). The eighth
    /// leaves one worker's arithmetic well under its reads even where 16 could share it.
    pub fn reads_whole(&self) -> bool {
        self.dim > SWEEP_MAX_DIM && self.arithmetic().is_some_and(|a| a <= 0.125)
    }

    /// The pass's arithmetic per row read, as the histogram's sample shows it, against that of a
    /// matrix of d = [`SWEEP_MAX_DIM`] with every row kept; None until the sample's rows are read.
    /// A block with no row kept (zero or non-finite rows) costs a read and no arithmetic; one with
    /// any row kept costs the kernel a whole chunk of [`MAX_CHUNK_ROWS`] rows, d²/2 multiply-adds
    /// each (a call pads its rows to a chunk). So k·64·d² / (n·b·1024²), k of the n sample blocks
    /// with a row kept, b rows a block.
    fn arithmetic(&self) -> Option<f64> {
        let blocks = self.plan.sample_blocks as f64;
        if self.phase == Phase::Sample || blocks == 0.0 {
            return None;
        }
        let (d, narrow) = (self.dim as f64, SWEEP_MAX_DIM as f64);
        let kept = self.sample_blocks_kept as f64 * MAX_CHUNK_ROWS as f64 * d * d;
        Some(kept / (blocks * self.plan.block_rows as f64 * narrow * narrow))
    }

    /// Whether the histogram's sample has been read (its pairs may still be to compute): from
    /// then on [`Analysis::read_bound`] is known.
    pub fn sample_is_read(&self) -> bool {
        self.phase != Phase::Sample
    }

    /// Runs only `share` of the pass (`pass::shares`); a helper's [`Analysis::into_partial`] is
    /// absorbed by the lead. Call before the pass's first step (the sample's may have run). Every
    /// share reads the histogram's sample (the same rows, by the seed): the f32 kernel's choice
    /// and its centre come from that sample (`choose_precision`), and partials with the same
    /// precision and centre add exactly.
    /// A share by columns reads every block and keeps only its band of G
    /// ([`crate::pass::shares::column_band`]); on the row route (few rows) it stays whole.
    pub fn set_share(&mut self, share: Share) {
        self.share = share;
        self.arrange_plan();
        self.next_block = share.first();
        if share.columns {
            self.gram.set_band(column_band(self.dim, share.index, share.of));
            if share.index == 0 && share.of > 1 && self.gram.is_band() {
                self.bands = Some(BandTally::new(share.of));
            }
        }
    }

    /// After a step of a pass split by columns that ends at a checkpoint (`bands::is_checkpoint`):
    /// the step and this band's part of ‖G‖²_F, for the lead's running estimate. Streams the band
    /// once, unless no row entered G since the last checkpoint (then the part is the same number:
    /// a file of zero rows costs no streaming). None at other steps, and for a pass not split by
    /// columns.
    pub fn band_part(&mut self) -> Option<(u64, f64)> {
        if !self.share.columns || self.share.of < 2 || self.phase != Phase::Pass || !is_checkpoint(self.pass_steps) {
            return None;
        }
        let PairAccumulator::Gram(g) = &self.gram else { return None };
        let rows = self.gram.rows_in_sums();
        let part = match self.band_part_at {
            Some((at, part)) if at == rows => part,
            _ => g.frobenius_so_far(),
        };
        self.band_part_at = Some((rows, part));
        Some((self.pass_steps, part))
    }

    /// The lead of a pass split by columns records its own state at a checkpoint
    /// ([`Analysis::band_part`]); call after each step.
    pub fn note_checkpoint(&mut self) {
        let Some((step, part)) = self.band_part() else { return };
        let PairAccumulator::Gram(g) = &self.gram else { return };
        let lead = LeadAt {
            scalars: g.scalars_so_far(),
            counts: g.counts,
            blocks_seen: self.blocks_seen,
            within: self.within,
            within_blocks: self.within_blocks,
        };
        if let Some(t) = self.bands.as_mut() {
            t.record_lead(step, lead, part);
        }
    }

    /// The lead of a pass split by columns takes in band `band`'s part of ‖G‖²_F at checkpoint
    /// `step` (from [`Analysis::band_part`] in that band's worker).
    pub fn take_band_part(&mut self, band: u32, step: u64, part: f64) -> Result<(), Error> {
        match self.bands.as_mut() {
            Some(t) => t.record_band(band, step, part).map_err(|e| Error::from(PassError::from(e))),
            None => Ok(()),
        }
    }

    /// The estimate of a pass split by columns while its bands run, from their last common
    /// checkpoint (None before the first, and once the bands are placed into one G).
    fn band_snapshot(&self) -> Option<Option<Snapshot>> {
        let tally = self.bands.as_ref().filter(|_| self.gram.is_band())?;
        Some(tally.latest().map(|r| Snapshot {
            moments: r.moments,
            counts: r.counts,
            blocks_seen: r.blocks_seen,
            within: r.within,
            within_blocks: r.within_blocks,
        }))
    }

    /// *Stop here* on a pass split by columns, at the lead: the estimate at the bands' last common
    /// checkpoint (what the page shows) becomes the result; the bands' partials are not waited
    /// for. True if it did or the pass is not so split (it stops where it stands); false before
    /// the first checkpoint, when the lead must step on until one is reached.
    pub fn stop_at_checkpoint(&mut self) -> bool {
        match self.band_snapshot() {
            None => true,
            Some(None) => false,
            Some(Some(snapshot)) => {
                self.stopped_at = Some(snapshot);
                self.blocks_seen = snapshot.blocks_seen;
                self.bands = None;
                true
            }
        }
    }

    /// Whether the result is the estimate at a checkpoint ([`Analysis::stop_at_checkpoint`]) or a
    /// GPU read-back, rather than the sums themselves.
    pub fn stopped_at_estimate(&self) -> bool {
        self.stopped_at.is_some()
    }

    /// The share of the pass this analysis runs.
    pub fn share(&self) -> Share {
        self.share
    }

    /// What this analysis has accumulated, to be absorbed by the lead's.
    pub fn into_partial(self) -> PassPartial {
        PassPartial {
            gram: self.gram,
            within: self.within,
            within_blocks: self.within_blocks,
            blocks_seen: self.blocks_seen,
            random_phase: self.random_phase,
        }
    }

    /// Takes in another worker's share of the same pass: the running estimate and the report then
    /// cover the union of the blocks.
    pub fn absorb(&mut self, partial: &PassPartial) -> Result<(), Error> {
        self.absorb_from(partial, None)
    }

    /// [`Analysis::absorb`], the partial's G (whole, or a band) taken from `apart` when it came
    /// apart from it ([`PassPartial::into_frame`]).
    pub fn absorb_from(&mut self, partial: &PassPartial, apart: Option<&dyn BandValues>) -> Result<(), Error> {
        let mut mine = PassPartial {
            gram: std::mem::replace(&mut self.gram, PairAccumulator::Gram(GramMoments::new(0))),
            within: self.within,
            within_blocks: self.within_blocks,
            blocks_seen: self.blocks_seen,
            random_phase: self.random_phase.take(),
        };
        let merged = mine.merge_from(partial, apart);
        self.gram = mine.gram;
        self.within = mine.within;
        self.within_blocks = mine.within_blocks;
        self.blocks_seen = mine.blocks_seen;
        self.random_phase = mine.random_phase;
        merged?;
        let total = self.plan.blocks.len() as u64;
        if self.blocks_seen > total {
            return Err(PassError::TooManyBlocks { seen: self.blocks_seen, total }.into());
        }
        Ok(())
    }

    /// Does one bounded piece of work (≤ 64 rows read, or one block of sample pairs).
    pub fn step(&mut self) -> Result<Phase, Error> {
        match self.phase {
            Phase::Sample => self.step_sample()?,
            Phase::SamplePairs => {
                self.step_sample_pairs();
                if self.phase != Phase::SamplePairs {
                    self.end_sample()?;
                }
            }
            Phase::Pass if self.on_gpu() => self.step_pass_gpu()?,
            Phase::Pass => {
                self.step_pass()?;
                // The first running ε as soon as the pass has two rows, not after a whole batch of
                // the kernel (`GramMoments::flush`): only the first, short batch is cut.
                if self.gram.rows_in_sums() < 2 {
                    self.gram.flush();
                }
            }
            Phase::Done => {}
        }
        if self.phase == Phase::Done {
            // The f32 kernel's last, partial batch (`GramMoments::flush`): the report reads G next.
            self.gram.flush();
        }
        Ok(self.phase)
    }

    /// Runs to the end (CLI, tests).
    /// Natively a GPU pass is waited for on this thread (a browser awaits `settle_gpu`,
    /// `refresh_gpu_estimate` and `finish_gpu` itself).
    pub fn run(mut self) -> Result<Self, Error> {
        // No progress between steps: `progress()` reads all of G (67 MB at d = 4096), which cost a
        // helper thread about a quarter of its time when it was built after every step.
        while self.step()? != Phase::Done {
            #[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
            crate::pass::gpu::block_on(self.settle_gpu())?;
        }
        #[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
        crate::pass::gpu::block_on(self.finish_gpu())?;
        Ok(self)
    }

    /// Reads `count` rows from `first` into `self.decoded` (`count × dim` f32); returns how many
    /// were decoded: `count`, or 0 when every byte was zero. Zero bytes are zero rows in every dtype
    /// (`decode::all_zero`) but affine ones with a zero point (`DType::zero_bytes_are_zero`), which
    /// the pass drops: skipping their decode and norms lets an all-zero
    /// tensor be refused at the speed of its reads.
    fn read_rows(&mut self, first: u64, count: usize) -> Result<usize, Error> {
        let start = self.tensor.byte_range.0 + first * self.row_bytes;
        self.raw.resize(count * self.row_bytes as usize, 0);
        self.source.read_at(start, &mut self.raw)?;
        if self.tensor.dtype.zero_bytes_are_zero() && all_zero(&self.raw) {
            return Ok(0);
        }
        self.decoded.resize(count * self.dim, 0.0);
        decode_rows(&self.raw, &self.tensor.dtype, self.dim, &mut self.decoded)
            .map_err(|source| Error::Decode { tensor: self.tensor.name.clone(), source })?;
        Ok(count)
    }

    /// The byte ranges (offset in the source, length) the next steps will read, in the order they
    /// will read them, at most `n`: the rest of the histogram's sample, then this share's blocks of
    /// the pass. A worker reads them ahead (one browser read costs ~0.7 ms whatever its size); the
    /// pass itself never needs this.
    pub fn upcoming_reads(&self, n: usize) -> Vec<(u64, u64)> {
        // A view's offsets are not its file's: its source reads the files itself.
        if !self.tensor.layout.is_contiguous() {
            return Vec::new();
        }
        let sample = match self.phase {
            Phase::Sample => self.plan.sample().get(self.sample_read..).unwrap_or(&[]),
            _ => &[],
        };
        let pass = match self.phase {
            Phase::Done => 0..0,
            _ => self.next_block..self.pass_target().max(self.next_block),
        };
        let pass = pass.step_by(self.share.stride()).filter_map(|i| self.plan.blocks.get(i).copied());
        sample
            .iter()
            .copied()
            .chain(pass)
            .take(n)
            .map(|b| {
                let (first, stop) = self.plan.block_range(b);
                (self.tensor.byte_range.0 + first * self.row_bytes, (stop - first) * self.row_bytes)
            })
            .collect()
    }

    /// The index of the file this analysis reads (`TensorInfo::file`).
    pub fn file(&self) -> usize {
        self.tensor.file
    }

    fn step_sample(&mut self) -> Result<(), Error> {
        // One sample block per step: one read of adjacent rows.
        if let Some(&block) = self.plan.sample().get(self.sample_read) {
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            let decoded = self.read_rows(first, count)?;
            for _ in decoded..count {
                self.sample_counts.record(RowFate::Zero);
            }
            if self.sample_read == 0 {
                // Exactly the sample's rows: grown by doubling, the buffer would take twice their
                // 134 MB at d = 16384, and wasm memory would keep every smaller buffer it outgrew.
                let rows = usize::try_from(self.plan.sample_rows()).unwrap_or(0);
                self.sample_units.reserve_exact(rows.saturating_mul(self.dim_padded));
            }
            let kept_before = self.sample_counts.kept;
            for r in 0..decoded {
                let at = self.sample_units.len();
                self.sample_units.resize(at + self.dim_padded, 0.0);
                let fate = normalise_row(&self.decoded[r * self.dim..(r + 1) * self.dim], &mut self.sample_units[at..]);
                self.sample_counts.record(fate);
                if fate == RowFate::Kept {
                    self.sample_block.push(block);
                    self.sample_row_ids.push(first + r as u64);
                } else {
                    self.sample_units.truncate(at);
                }
            }
            if self.sample_counts.kept > kept_before {
                self.sample_blocks_kept += 1;
            }
            self.sample_read += 1;
        }
        if self.sample_read >= self.plan.sample_blocks {
            self.pair_sample = Some(
                PairSample::new(std::mem::take(&mut self.sample_block))
                    .with_row_ids(std::mem::take(&mut self.sample_row_ids)),
            );
            // Only with rows set aside: `take` must not empty the sample otherwise.
            if let Some(set) = self.set_aside.clone() {
                self.pair_sample = self.pair_sample.take().map(|s| s.with_set_aside(|row| set.mask_of(row)));
            }
            self.phase = Phase::SamplePairs;
            // What the sample shows may make the pass one that sweeps (`read_bound`).
            self.arrange_plan();
        }
        Ok(())
    }

    fn step_sample_pairs(&mut self) {
        let d = self.dim_padded;
        let n = self.sample_units.len() / d;
        if self.pair_sample.is_none() {
            self.phase = Phase::Pass;
            return;
        }
        let i0 = self.pair_block * MAX_CHUNK_ROWS;
        if i0 >= n {
            self.phase = Phase::Pass;
            return;
        }
        let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
        // Rows i0..i1 against rows i0..n.
        let a = &self.sample_units[i0 * d..i1 * d];
        let b = &self.sample_units[i0 * d..n * d];
        self.units.resize((i1 - i0) * (n - i0), 0.0);
        kernel::dots(a, b, d, &mut self.units);
        self.take_sample_pairs();
        if i1 >= n {
            self.phase = Phase::Pass;
        }
    }

    /// Takes in block `pair_block` of the sample's pairs from `self.units` (rows i0..i1 against
    /// rows i0..n), keeping pairs i < j, and moves on to the next block.
    fn take_sample_pairs(&mut self) {
        let n = self.sample_units.len() / self.dim_padded.max(1);
        // Pairs within a block are left out unless the sample is the whole matrix (see PairSample).
        let whole = self.plan.sample_blocks >= self.plan.blocks.len();
        let Some(sample) = self.pair_sample.as_mut() else { return };
        let i0 = self.pair_block * MAX_CHUNK_ROWS;
        let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
        let nb = n.saturating_sub(i0);
        for i in 0..i1.saturating_sub(i0) {
            for j in i + 1..nb {
                if whole || sample.block.get(i0 + i) != sample.block.get(i0 + j) {
                    sample.add_pair(i0 + i, i0 + j, self.units.get(i * nb + j).copied().unwrap_or(0.0));
                }
            }
        }
        self.pair_block += 1;
    }

    /// The sample's pairs are all in: the precision and the centre are chosen, the GPU offered
    /// starts, and the sample's unit rows (2048 × d f32: 134 MB at d = 16384), which have given the
    /// histogram, the precision and the centre, are freed before G is first written, so that G can
    /// take their room.
    fn end_sample(&mut self) -> Result<(), Error> {
        self.choose_precision();
        self.start_gpu()?;
        self.sample_units = Vec::new();
        Ok(())
    }

    /// Ends the sample at once where the caller has cores to spare (the CLI's threads): once the
    /// sample's rows are read (the phase is [`Phase::SamplePairs`]), `dots_of` computes the dot
    /// products of every remaining block of [`MAX_CHUNK_ROWS`] sample rows against the rows from
    /// its own on, as [`kernel::dots`] would — given the unit rows (`dim_padded` each), d_pad and
    /// the blocks' row ranges, it returns one `(i1 − i0) × (n − i0)` array per block, in order —
    /// and the pairs are then taken in exactly as the steps would have taken them, block by block:
    /// the same histogram, moments and verdict, bit for bit. Returns false (nothing done) in
    /// another phase or when `dots_of` returns arrays of the wrong sizes.
    pub fn finish_sample_pairs_with(
        &mut self,
        dots_of: impl FnOnce(&[f32], usize, &[std::ops::Range<usize>]) -> Vec<Vec<f32>>,
    ) -> Result<bool, Error> {
        if self.phase != Phase::SamplePairs {
            return Ok(false);
        }
        let d = self.dim_padded;
        let n = self.sample_units.len() / d.max(1);
        let blocks = self.sample_pair_blocks();
        let dots = dots_of(&self.sample_units, d, &blocks);
        if dots.len() != blocks.len() || blocks.iter().zip(&dots).any(|(b, v)| v.len() != b.len() * (n - b.start)) {
            return Ok(false);
        }
        for products in dots {
            self.units = products;
            self.take_sample_pairs();
        }
        self.phase = Phase::Pass;
        self.end_sample()?;
        Ok(true)
    }

    /// The blocks of the histogram sample's pairs not yet taken in, in order: rows i0..i1 (at most
    /// [`MAX_CHUNK_ROWS`]) of the sample's unit rows, each against rows i0..n. Empty outside
    /// [`Phase::SamplePairs`].
    pub fn sample_pair_blocks(&self) -> Vec<std::ops::Range<usize>> {
        if self.phase != Phase::SamplePairs {
            return Vec::new();
        }
        let n = self.sample_units.len() / self.dim_padded.max(1);
        (self.pair_block * MAX_CHUNK_ROWS..n)
            .step_by(MAX_CHUNK_ROWS)
            .map(|i0| i0..(i0 + MAX_CHUNK_ROWS).min(n))
            .collect()
    }

    /// The dot products of one block of [`Analysis::sample_pair_blocks`], as a step computes them
    /// (empty for a block outside the sample): a page's helper computes some for its lead, whose
    /// [`Analysis::finish_sample_pairs_with`] takes them in.
    pub fn sample_pair_dots(&self, rows: &std::ops::Range<usize>) -> Vec<f32> {
        sample_block_dots(&self.sample_units, self.dim_padded, rows)
    }

    /// What the sample decided for the pass (None until the sample is done): every share of a
    /// split pass must run with its lead's, since partials add only with the same precision and
    /// centre. A share given it ([`Analysis::skip_sample`]) need not read the sample itself.
    pub fn sample_verdict(&self) -> Option<&SampleVerdict> {
        self.verdict.as_ref()
    }

    /// Starts the pass of a share with its lead's [`SampleVerdict`] instead of reading and pairing
    /// the histogram's sample itself: before the first step, or once the sample is read (a page's
    /// helper reads it to pair some of it for its lead) and none of its pairs taken in. The
    /// share's partial is then the one it would have made. False (nothing done) otherwise.
    pub fn skip_sample(&mut self, verdict: &SampleVerdict) -> bool {
        let before = self.phase == Phase::Sample && self.sample_read == 0;
        let read = self.phase == Phase::SamplePairs && self.pair_block == 0;
        if !(before || read) {
            return false;
        }
        // The sample's rows are not needed any more (`end_sample`).
        self.sample_units = Vec::new();
        self.pair_sample = None;
        if verdict.f64 {
            self.gram.use_f64();
        }
        if let Some(centre) = &verdict.centre {
            self.gram.set_centre(centre);
        }
        self.precision_reason = verdict.precision_reason.clone();
        self.verdict = Some(verdict.clone());
        self.phase = Phase::Pass;
        true
    }

    /// Before the pass: keeps f32 only where the sample says it meets the exactness targets
    /// (`kernel::f32_suffices`); the accumulator is still empty, so it is simply replaced.
    fn choose_precision(&mut self) {
        let mut verdict = SampleVerdict::default();
        if self.config.precision == Precision::F32 && self.gram.counts().seen == 0 {
            if self.gram.precision() == Precision::F64 {
                // The row route (few rows, wide rows) sums pair cosines in f64 without a Gram kernel.
                self.precision_reason = "few rows: pair cosines summed directly".to_string();
            } else {
                let judged = match self.pair_sample.as_ref().and_then(PairSample::moments) {
                    Some(m) => kernel::f32_suffices(m.mu, m.sigma),
                    None => Err("no sample to judge σ by".to_string()),
                };
                match judged {
                    Err(reason) => {
                        self.gram.use_f64();
                        self.precision_reason = reason;
                        verdict.f64 = true;
                    }
                    Ok(()) => {
                        // The sample's mean unit row as the f32 pass's centre (see `GramMoments`).
                        if let Some(centre) = mean_row(&self.sample_units, self.dim_padded) {
                            self.gram.set_centre(&centre);
                            verdict.centre = Some(centre);
                        }
                    }
                }
            }
        }
        verdict.precision_reason = self.precision_reason.clone();
        self.verdict = Some(verdict);
    }

    /// The Gram pass's arithmetic (decided when the pass begins).
    pub fn precision(&self) -> Precision {
        self.gram.precision()
    }

    /// Offers a GPU for the Gram pass; call before the first step. It runs there when the sample
    /// says f32 suffices, the pass uses the Gram route and is not split over workers; otherwise on
    /// the CPU, and [`Analysis::gpu_declined`] says why.
    pub fn set_gpu(&mut self, gpu: Rc<GpuContext>) {
        self.gpu = Some(gpu);
        self.arrange_plan();
    }

    /// Why the GPU offered did not run the pass (None: none was offered, or it ran it).
    pub fn gpu_declined(&self) -> Option<&str> {
        self.gpu_declined.as_deref()
    }

    /// The adapter that ran the Gram pass, once its sums were read back.
    pub fn gpu_info(&self) -> Option<&GpuInfo> {
        self.gpu_ran.as_ref()
    }

    /// Whether the Gram pass is running on the GPU (its sums not yet read back).
    pub fn on_gpu(&self) -> bool {
        #[cfg(feature = "gpu")]
        return self.gpu_pass.is_some();
        #[cfg(not(feature = "gpu"))]
        false
    }

    /// After `choose_precision`: starts the GPU pass where it gives the CPU pass's answer (f32
    /// with the Gram route, the whole pass), or records why not. The GPU's centre is the CPU f32
    /// pass's: the sample's mean unit row.
    fn start_gpu(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        {
            let Some(ctx) = self.gpu.clone() else { return Ok(()) };
            let cpu = "the pass ran on the CPU";
            let declined = if self.share.of > 1 {
                Some(format!("the pass is split over {} workers; {cpu}", self.share.of))
            } else {
                match &self.gram {
                    PairAccumulator::Rows(_) => Some(format!("few rows: pair cosines summed directly; {cpu}")),
                    PairAccumulator::Gram(g) if g.precision() == Precision::F64 => {
                        Some(if self.config.precision == Precision::F64 {
                            "f64 was asked for (precision=f64); the exact f64 pass ran on the CPU".to_string()
                        } else {
                            format!(
                                "the sample says f32 is not enough: {}; the exact f64 pass ran on the CPU",
                                self.precision_reason
                            )
                        })
                    }
                    PairAccumulator::Gram(_) => None,
                }
            };
            if let Some(why) = declined {
                self.gpu_declined = Some(why);
                return Ok(());
            }
            let centre = mean_row(&self.sample_units, self.dim_padded);
            let options = GramOptions { block_rows: block_rows_for(self.dim), ..GramOptions::default() };
            let info = ctx.info().clone();
            let gram = GpuGram::new(ctx, self.dim, centre.as_deref(), options)?;
            // The CPU accumulator's d²/2 values are not needed until the sums come back.
            self.gram = PairAccumulator::Gram(GramMoments::with_precision(0, Precision::F32));
            self.within_blocks = 0;
            self.gpu_pass = Some(GpuRun {
                gram,
                info,
                counts: RowCounts::default(),
                started_ms: crate::pass::kernel::bench::now_ms(),
                snapshot: None,
            });
        }
        Ok(())
    }

    /// One step of the GPU pass: up to [`GPU_STEP_ROWS`] rows read in the plan's order and
    /// submitted (raw F32/BF16/F16 bytes as they are, other types decoded here); nothing waits for
    /// the GPU. The running estimate's within-block stratum is measured on the CPU for every
    /// ⌈d/256⌉-th block of the plan's seeded random order only: k²·d/2 multiply-adds for a block
    /// of k rows against the GPU's k·d²/2, so the CPU keeps up, and the blocks measured are an
    /// unbiased sample of those visited (`scaled_within`). It never touches the exact sums.
    #[cfg(feature = "gpu")]
    fn step_pass_gpu(&mut self) -> Result<(), Error> {
        let target = self.pass_target();
        let end = self.step_end();
        let Some(run) = self.gpu_pass.as_mut() else { return Ok(()) };
        if self.next_block >= target {
            self.phase = Phase::Done;
            return Ok(());
        }
        let estimating = end < self.plan.blocks.len();
        let every = within_every(self.dim);
        let kind = RawType::of(&self.tensor.dtype);
        let (dim, d, row_bytes) = (self.dim, self.dim_padded, self.row_bytes as usize);
        for bi in self.next_block..end {
            let Some(&block) = self.plan.blocks.get(bi) else { break };
            self.blocks_seen += 1;
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            self.raw.resize(count * row_bytes, 0);
            self.source.read_at(self.tensor.byte_range.0 + first * self.row_bytes, &mut self.raw)?;
            let measure = estimating && bi % every == 0;
            if kind.is_none() || measure {
                self.decoded.resize(count * dim, 0.0);
                decode_rows(&self.raw, &self.tensor.dtype, dim, &mut self.decoded)
                    .map_err(|source| Error::Decode { tensor: self.tensor.name.clone(), source })?;
            }
            match kind {
                Some(kind) => {
                    for row in self.raw.chunks_exact(row_bytes.max(1)).take(count) {
                        run.counts.record(raw_fate(row, kind));
                    }
                    run.gram.add_raw_rows(&self.raw, &self.tensor.dtype)?;
                }
                None => {
                    for row in self.decoded.chunks_exact(dim.max(1)).take(count) {
                        run.counts.record(decoded_fate(row));
                    }
                    run.gram.add_rows(&self.decoded[..count * dim])?;
                }
            }
            if measure {
                self.wide.resize(count * d, 0.0);
                let mut kept = 0;
                for r in 0..count {
                    let (Some(row), Some(out)) =
                        (self.decoded.get(r * dim..(r + 1) * dim), self.wide.get_mut(kept * d..(kept + 1) * d))
                    else {
                        break;
                    };
                    if normalise_row(row, out) == RowFate::Kept {
                        kept += 1;
                    }
                }
                // f32 dot products through the SIMD kernel: this stratum only steers an estimate.
                self.units.clear();
                self.units.extend(self.wide[..kept * d].iter().map(|&x| x as f32));
                self.dots.resize(kept * kept, 0.0);
                kernel::dots(&self.units, &self.units, d, &mut self.dots);
                let (w1, w2, wp) = within_block_sums(&self.dots, kept);
                self.within = (self.within.0 + w1, self.within.1 + w2, self.within.2 + wp);
                self.within_blocks += 1;
            }
        }
        self.next_block = end;
        if self.next_block >= target {
            self.phase = Phase::Done;
        }
        Ok(())
    }

    #[cfg(not(feature = "gpu"))]
    fn step_pass_gpu(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// Waits until the GPU has at most a few blocks queued (the memory of their uploads); the
    /// caller awaits it after each step. Nothing to do on the CPU.
    pub async fn settle_gpu(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_pass.as_mut() {
            run.gram.settle(GPU_IN_FLIGHT).await?;
        }
        Ok(())
    }

    /// Reads the GPU pass's running moments back (O(d) words) for [`Analysis::progress`]'s
    /// running ε; the caller awaits it when a progress message is due. Nothing to do on the CPU.
    pub async fn refresh_gpu_estimate(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_pass.as_mut() {
            if run.counts.kept >= 2 {
                if let Some(moments) = run.gram.running_moments().await? {
                    run.snapshot = Some(Snapshot {
                        moments,
                        counts: run.counts,
                        blocks_seen: self.blocks_seen,
                        within: self.within,
                        within_blocks: self.within_blocks,
                    });
                }
            }
        }
        Ok(())
    }

    /// *Stop here* on a GPU pass: the running estimate last read back (what the page shows)
    /// becomes the result, without waiting for the blocks still queued on the GPU or reading G
    /// back (seconds at d = 16384, more on a software adapter). True if it did; false (nothing
    /// changed) when no estimate was read back yet, and [`Analysis::finish_gpu`] must run instead.
    pub fn stop_gpu_at_estimate(&mut self) -> bool {
        #[cfg(feature = "gpu")]
        if let Some(snapshot) = self.gpu_pass.as_ref().and_then(|run| run.snapshot) {
            if let Some(run) = self.gpu_pass.take() {
                self.gpu_ran = Some(run.info);
                self.stopped_at = Some(snapshot);
                self.blocks_seen = snapshot.blocks_seen;
                return true;
            }
        }
        false
    }

    /// Reads the GPU pass's s and G back once, into the accumulator the CPU pass would have made,
    /// so that the report and the spectrum read them unchanged. Call when `step` says done, or
    /// after a stop (the estimate then covers the blocks seen, as on the CPU). Nothing to do on
    /// the CPU.
    pub async fn finish_gpu(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_pass.take() {
            let flops = run.gram.flops();
            let sums = run.gram.finish_async().await?;
            if sums.counts != run.counts {
                return Err(GpuError::Reported(format!(
                    "the GPU counted {:?} rows where the CPU counted {:?}",
                    sums.counts, run.counts
                ))
                .into());
            }
            let ms = match (run.started_ms, crate::pass::kernel::bench::now_ms()) {
                (Some(start), Some(end)) => end - start,
                _ => 0.0,
            };
            let (counts, dim, (n2, n4)) = (sums.counts, sums.dim(), sums.norm_sums());
            let sum = sums.sum().to_vec();
            let gram = sums.into_gram();
            self.gram = PairAccumulator::Gram(GramMoments::from_sums(
                counts,
                dim,
                Precision::F32,
                &sum,
                n2,
                n4,
                gram,
                (flops, ms),
            ));
            self.gpu_ran = Some(run.info);
        }
        Ok(())
    }

    /// Rows counted so far: the CPU's record of the rows sent while the GPU pass runs.
    fn counts(&self) -> RowCounts {
        #[cfg(feature = "gpu")]
        if let Some(run) = &self.gpu_pass {
            return run.counts;
        }
        self.gram.counts()
    }

    /// Blocks the pass visits: all, or the first ones holding at least `stop_after_rows` rows.
    fn pass_target(&self) -> usize {
        match self.config.stop_after_rows {
            Some(limit) => self.plan.blocks_for_rows(limit),
            None => self.plan.blocks.len(),
        }
    }

    /// The position after the last one the next pass step visits. Blocks hold at most
    /// [`MAX_CHUNK_ROWS`] rows (see `new`), so each fits one kernel call; a step of the sweep takes
    /// several ([`step_rows`]; only narrow rows sweep), and a GPU step [`GPU_STEP_ROWS`].
    fn step_end(&self) -> usize {
        let target = self.pass_target();
        #[cfg(feature = "gpu")]
        if self.on_gpu() {
            let blocks_per_step = (GPU_STEP_ROWS / self.plan.block_rows.max(1)).max(1) as usize;
            return (self.next_block + blocks_per_step).min(target);
        }
        let sweeping = self.plan.in_sweep(self.next_block);
        let rows = if sweeping { step_rows(self.dim_padded) } else { MAX_CHUNK_ROWS as u64 };
        let blocks_per_step = (rows / self.plan.block_rows).max(1) as usize;
        let end = (self.next_block + blocks_per_step * self.share.stride()).min(target);
        if sweeping {
            end
        } else {
            // A step ends where the sweep begins, so the random phase is kept apart exactly there.
            end.min(self.plan.sweep_from)
        }
    }

    /// How many of [`Analysis::upcoming_reads`] the next step takes: one block of the sample or of
    /// the random phase, several in a step of a sweep or of a GPU pass. A worker reads all of them
    /// ahead, not only the first: a step across the end of a batch read the rest one by one,
    /// ~1–2 ms each in a browser (~900 reads, ~1.8 s, of a 2,000,000×256 pass).
    pub fn step_reads(&self) -> usize {
        match self.phase {
            Phase::Pass => {
                (self.next_block..self.step_end().max(self.next_block)).step_by(self.share.stride()).count().max(1)
            }
            _ => 1,
        }
    }

    fn step_pass(&mut self) -> Result<(), Error> {
        let target = self.pass_target();
        if self.next_block >= target {
            // A share with no blocks left (or none at all: more shares than blocks).
            self.phase = Phase::Done;
            return Ok(());
        }
        if self.plan.in_sweep(self.next_block) && self.random_phase.is_none() && self.random_phase_estimate.is_none() {
            // Into the sweep: what is held now is the random phase's, kept apart for the running
            // estimate and for a pass stopped early. A share by rows keeps all of it (small: only
            // narrow shares sweep), which the lead merges; a whole pass only its estimate.
            self.gram.flush();
            if self.share.of > 1 {
                self.random_phase = Some(Box::new(PassPartial {
                    gram: self.gram.clone(),
                    within: self.within,
                    within_blocks: self.within_blocks,
                    blocks_seen: self.blocks_seen,
                    random_phase: None,
                }));
            } else {
                let counts = self.gram.counts();
                let snapshot = self.gram.moments_so_far().map(|moments| Snapshot {
                    moments,
                    counts,
                    blocks_seen: self.blocks_seen,
                    within: self.within,
                    within_blocks: self.within_blocks,
                });
                self.random_phase_estimate = Some((counts, snapshot));
            }
        }
        let sweeping = self.plan.in_sweep(self.next_block);
        let stride = self.share.stride();
        let end = self.step_end();
        let d = self.dim_padded;
        let every = within_every(self.dim);
        let mut kept = 0usize;
        // No more rows than the matrix has (two rows of d = 16384 need 256 KiB here, not 8 MiB).
        self.wide.resize(MAX_CHUNK_ROWS.min(self.rows as usize) * d, 0.0);
        // Within-block pairs feed the running estimate only, measured on every `within_every`-th
        // block of the plan's order; the final step of a whole pass skips them. A share by rows
        // cannot tell whether the others will finish, so it always keeps them; of a split by
        // columns, where every share sees every block, only the lead does. Nor does the sweep,
        // whose estimate is the random phase's.
        let estimating = if self.share.columns {
            self.share.index == 0 && end < self.plan.blocks.len()
        } else {
            (stride > 1 || end < self.plan.blocks.len()) && !sweeping
        };
        for bi in (self.next_block..end).step_by(stride) {
            let Some(&block) = self.plan.blocks.get(bi) else { break };
            self.blocks_seen += 1;
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            let decoded = self.read_rows(first, count)?;
            for _ in decoded..count {
                self.gram.record(RowFate::Zero);
            }
            if kept + count > MAX_CHUNK_ROWS {
                self.gram.add_unit_rows(&self.wide[..kept * d]);
                kept = 0;
            }
            let block_start = kept;
            for r in 0..decoded {
                let fate = normalise_row(
                    &self.decoded[r * self.dim..(r + 1) * self.dim],
                    &mut self.wide[kept * d..(kept + 1) * d],
                );
                self.gram.record(fate);
                if fate == RowFate::Kept {
                    kept += 1;
                }
            }
            if estimating && bi % every == 0 {
                // f32 dot products through the SIMD kernel: this stratum only steers an estimate.
                self.within_blocks += 1;
                let block = &self.wide[block_start * d..kept * d];
                self.units.clear();
                self.units.extend(block.iter().map(|&x| x as f32));
                let k = kept - block_start;
                self.dots.resize(k * k, 0.0);
                kernel::dots(&self.units, &self.units, d, &mut self.dots);
                let (w1, w2, wp) = within_block_sums(&self.dots, k);
                self.within = (self.within.0 + w1, self.within.1 + w2, self.within.2 + wp);
            }
        }
        if kept > 0 {
            self.gram.add_unit_rows(&self.wide[..kept * d]);
        }
        self.pass_steps += 1;
        // The next position ≡ share.first() (mod stride) at or after `end`.
        self.next_block = end + (stride - (end - self.share.first()) % stride) % stride;
        if self.next_block >= target {
            self.phase = Phase::Done;
        }
        Ok(())
    }

    /// Whether every row has been visited.
    pub fn is_exact(&self) -> bool {
        self.blocks_seen >= self.plan.blocks.len() as u64
    }

    /// Moments of all pairs: exact once every block was visited, before that
    /// [`estimate::stratified_moments`] over the blocks seen.
    /// While the GPU pass runs, they are those of its last read-back ([`Analysis::refresh_gpu_estimate`]),
    /// with what the analysis had seen then. Also returns the blocks and the counts they cover.
    fn running_moments(&self) -> Option<(Moments, u64, RowCounts)> {
        let total = self.plan.blocks.len() as u64;
        let snapshot = match (self.band_snapshot(), self.stopped_at, &self.random_phase_estimate) {
            (Some(at_checkpoint), _, _) => Some(at_checkpoint?),
            (None, Some(stopped), _) => Some(stopped),
            // A whole pass into its sweep: the random phase's estimate, until the pass is exact.
            (None, None, Some((_, random_phase))) if !self.is_exact() => Some((*random_phase)?),
            _ => None,
        };
        #[cfg(feature = "gpu")]
        let snapshot = match &self.gpu_pass {
            Some(run) => Some(run.snapshot?),
            None => snapshot,
        };
        if let Some(s) = snapshot {
            if s.blocks_seen >= total {
                return Some((s.moments, s.blocks_seen, s.counts));
            }
            let within = scaled_within(s.within, s.blocks_seen, s.within_blocks);
            let seen = estimate::BlocksSeen { within, seen: s.blocks_seen, total };
            return Some((
                estimate::stratified_moments(&s.moments, s.counts, seen, self.rows),
                s.blocks_seen,
                s.counts,
            ));
        }
        // Mid-pass, the rows already through the kernel; at Done (flushed), all of them.
        if self.is_exact() {
            return Some((self.gram.moments_so_far()?, self.blocks_seen, self.gram.counts()));
        }
        // Into the sweep, the estimate is the random phase's: swept blocks are no random sample.
        let (gram, within, blocks_seen, measured) = match self.random_phase.as_deref() {
            Some(r) => (&r.gram, r.within, r.blocks_seen, r.within_blocks),
            None => (&self.gram, self.within, self.blocks_seen, self.within_blocks),
        };
        let (all, counts) = (gram.moments_so_far()?, gram.counts());
        let within = scaled_within(within, blocks_seen, measured);
        let seen = estimate::BlocksSeen { within, seen: blocks_seen, total };
        Some((estimate::stratified_moments(&all, counts, seen, self.rows), blocks_seen, counts))
    }

    /// Running estimate: ε with its standard error.
    fn running(&self) -> Option<(Moments, f64, Option<f64>)> {
        let (m, blocks, counts) = self.running_moments()?;
        let eps = estimate::epsilon(m.mu, m.sigma);
        let total = self.plan.blocks.len() as u64;
        let se = if blocks >= total {
            Some(0.0)
        } else {
            let population = self.rows.saturating_sub(counts.dropped());
            self.pair_sample
                .as_ref()
                .and_then(|s| estimate::epsilon_standard_error(s, &m, blocks, total, m.rows, population))
        };
        Some((m, eps, se))
    }

    /// Whether the pass has a running ε yet (two usable rows); cheap, unlike [`Self::progress`].
    pub fn has_estimate(&self) -> bool {
        match self.band_snapshot() {
            Some(at_checkpoint) => at_checkpoint.is_some(),
            None => self.estimate_counts().kept >= 2,
        }
    }

    /// The rows the running estimate covers: all those seen, except into the sweep, where it is
    /// the random phase's ([`Analysis::running_moments`]) until the pass is exact.
    fn estimate_counts(&self) -> RowCounts {
        match (self.random_phase.as_deref(), &self.random_phase_estimate) {
            (Some(r), _) if !self.is_exact() => r.gram.counts(),
            (_, Some((counts, _))) if !self.is_exact() => *counts,
            _ => self.counts(),
        }
    }

    /// How far the pass is, with its running ε ([`Analysis::progress_without_estimate`] for
    /// the rest alone: the ε costs a pass over G, d²/2 values, ~0.6 s at d = 16384).
    pub fn progress(&self) -> Progress {
        self.progress_with(true)
    }

    /// [`Analysis::progress`] without the running ε: a helper's (the page shows the lead's; it
    /// takes only the helpers' rows and fractions), or the lead's between two estimates.
    pub fn progress_without_estimate(&self) -> Progress {
        self.progress_with(false)
    }

    fn progress_with(&self, estimate: bool) -> Progress {
        // Weight phases by their cost in pass rows: a pass row costs d²/2 multiply-adds, the n²/2
        // sample pairs n²·d/2, i.e. as much as n²/d pass rows.
        let n = self.plan.sample_rows() as f64;
        // A share's own pass: its blocks among the target ones (all of them for a whole pass).
        let pass_rows = self.share.count_below(self.pass_target()) as f64 * self.plan.block_rows as f64;
        let sample_cost = n * n / self.dim as f64 + 1.0;
        let total = sample_cost + pass_rows;
        let done = match self.phase {
            Phase::Sample => sample_cost * 0.2 * self.sample_read as f64 / self.plan.sample_blocks.max(1) as f64,
            Phase::SamplePairs => {
                let rows = (self.sample_units.len() / self.dim_padded.max(1)) as f64;
                let blocks = (rows / MAX_CHUNK_ROWS as f64).ceil().max(1.0);
                sample_cost * (0.2 + 0.8 * self.pair_block as f64 / blocks)
            }
            Phase::Pass | Phase::Done => {
                let own = self.share.count_below(self.next_block.min(self.pass_target()));
                sample_cost + (own as f64 * self.plan.block_rows as f64).min(pass_rows)
            }
        };
        let running = if estimate && self.has_estimate() { self.running() } else { None };
        Progress {
            phase: self.phase,
            fraction: if self.phase == Phase::Done { 1.0 } else { (done / total).clamp(0.0, 1.0) },
            // Split by columns, the rows of the estimate shown: those of the bands' last checkpoint;
            // into the sweep, those of the random phase.
            rows_seen: self.band_snapshot().flatten().map_or(self.estimate_counts().seen, |s| s.counts.seen),
            rows: self.rows,
            rows_read: match self.phase {
                Phase::Sample | Phase::SamplePairs => self.sample_counts.seen,
                Phase::Pass | Phase::Done => self.counts().seen,
            },
            epsilon: running.as_ref().map(|r| r.1),
            epsilon_se: running.and_then(|r| r.2),
            bytes_fetched: None,
        }
    }

    /// The report for what has been computed so far: exact once every row was visited, else an
    /// estimate with its interval. Fails when fewer than two usable rows were seen.
    /// A GPU pass must have been read back first ([`Analysis::finish_gpu`]).
    pub fn report(&self, timing_ms: f64) -> Result<Report, Error> {
        #[cfg(feature = "gpu")]
        if self.on_gpu() {
            return Err(GpuError::NotFinished.into());
        }
        // Stopped at an estimate, the rows that estimate covers (into the sweep, the random phase's).
        let counts = self.stopped_at.map_or_else(|| self.estimate_counts(), |s| s.counts);
        let too_few = || Error::TooFewRows {
            tensor: self.tensor.name.clone(),
            rows: counts.seen,
            kept: counts.kept,
            zero: counts.dropped_zero,
            nonfinite: counts.dropped_nonfinite,
        };
        let (moments, _, se) = self.running().ok_or_else(too_few)?;
        let empty = PairSample::new(Vec::new());
        let precision = self.precision();
        let (kernel, workers) = match &self.gpu_ran {
            // The precision last, as every kernel name has it (a permalink reads it from there).
            Some(gpu) => (format!("wgsl gram ({}) f32", gpu.backend), 1),
            None => (format!("{} {}", kernel::kernel_name(precision), precision.name()), self.share.of.max(1)),
        };
        let mut report = Report::from_pass(PassOutcome {
            file: &self.origin.file,
            format: &self.origin.format,
            tensor: &self.tensor.name,
            tensor_reason: &self.origin.tensor_reason,
            tensor_role: self.origin.tensor_role,
            dtype: self.tensor.dtype.name(),
            rows: self.rows,
            dim: self.dim as u64,
            counts,
            moments,
            epsilon_se: se,
            exact: self.is_exact(),
            seed: self.config.seed,
            sample: self.pair_sample.as_ref().unwrap_or(&empty),
            timing_ms,
            workers,
            kernel,
            precision: precision.name(),
            precision_reason: &self.precision_reason,
            gram_gflops: self.gram.kernel_gflops(),
            accumulator_bytes: self.gram.bytes() as u64,
        });
        report.gpu = self.gpu_ran.clone();
        report.gpu_fallback = self.gpu_declined.clone();
        Ok(report)
    }

    /// The spectrum of G/V and the coordinates that carry μ, for [`Report::geometry`]: `Ok(None)`
    /// unless the pass visited every row (the G of a prefix is an estimate) and d is at most
    /// [`crate::explain::geometry::MAX_GEOMETRY_DIM`] (every width the pass takes; past 4096 the leading
    /// eigenvalues by Lanczos). Takes seconds at d = 4096, so [`Analysis::report`] leaves it to the
    /// caller, which may show the result first.
    pub fn geometry(&self, timing: GeometryTiming) -> Result<Option<Geometry>, GeometryError> {
        self.geometry_on(timing, 1)
    }

    /// [`Analysis::geometry`] on up to `threads` threads ([`geometry::of_pass_on`]; natively only).
    pub fn geometry_on(&self, timing: GeometryTiming, threads: usize) -> Result<Option<Geometry>, GeometryError> {
        if !geometry_expected(self.is_exact(), self.dim as u64) || self.phase != Phase::Done {
            return Ok(None);
        }
        geometry::of_pass_on(&self.gram, self.dim, timing, threads).map(Some)
    }

    /// Whether the pass sums a Gram matrix (which a split by columns can share out) or, for few
    /// rows, pair cosines directly.
    pub fn route(&self) -> Route {
        self.gram.route()
    }

    /// Bytes of the pass's accumulator (`Report::accumulator_bytes`), what each worker of a pool holds.
    pub fn accumulator_bytes(&self) -> u64 {
        self.gram.bytes() as u64
    }

    pub fn tensor(&self) -> &TensorInfo {
        &self.tensor
    }

    /// V, the tensor's rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// d, the tensor's width.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Names the rows set aside as never trained (`read::untrained`), before the sample's pairs
    /// are taken in: the sample then keeps their pairs apart (`pass::set_aside`).
    pub fn set_aside(&mut self, set: Rc<SetAside>) {
        if !set.is_empty() {
            self.set_aside = Some(set);
        }
    }

    /// The rows set aside, if any were named.
    pub fn set_aside_rows(&self) -> Option<&SetAside> {
        self.set_aside.as_deref()
    }

    /// The pass's accumulator (s and G, or the rows), for what is computed from it after the pass.
    pub fn accumulator(&self) -> &PairAccumulator {
        &self.gram
    }

    /// The histogram's sample of pairs, once taken.
    pub fn pair_sample(&self) -> Option<&PairSample> {
        self.pair_sample.as_ref()
    }

    pub fn dtype(&self) -> &DType {
        &self.tensor.dtype
    }
}
