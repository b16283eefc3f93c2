//! One analysis of one tensor, as a state machine that advances a bounded amount of work per
//! [`Analysis::step`]. The browser worker calls `step` from JavaScript again and again (a wasm call
//! already running never tiers up to optimised code in V8, ARCHITECTURE.md, "Facts the code relies on"), posting progress
//! between calls; the CLI just loops.
//!
//! Stages (`pass::stage`, each owning what only it needs): read the histogram's row sample → all
//! pairs among it (histogram, uncertainty model) → the Gram pass over all rows in the plan's order,
//! on one driver (the CPU, the GPU, or the lead of a split by columns) → done (exact), or stopped
//! at a running estimate. [`Phase`] is what a caller sees of the stage.
//!
//! Given a GPU ([`Analysis::set_gpu`]), the Gram pass runs there when the sample says f32 suffices
//! (`pass::gpu`): `step` stays synchronous and only reads and submits rows; the caller awaits
//! [`Analysis::settle_gpu`] after each step, [`Analysis::refresh_gpu_estimate`] before a progress
//! message and [`Analysis::finish_gpu`] once the pass is done (or stopped). Any GPU failure is
//! [`Error::Gpu`], and the caller then reruns the whole analysis on the CPU.

mod gpu;
use gpu::is_gpu;
mod pass;

mod progress;
mod sample;
mod shares;
mod stage;

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::pass::accumulate::{PairAccumulator, Route};
use crate::pass::bands::{is_checkpoint, BandTally};
use crate::pass::error::Error;
use crate::pass::estimate::{self, WithinBlock};
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
#[cfg(feature = "gpu")]
use crate::pass::stage::GpuRun;
use crate::pass::stage::{Driver, RandomPhase, SamplePairs, SampleRead, Snapshot, Stage};
use crate::pass::stats::{mean_row, GramMoments, Moments, PairSample, RowCounts};
use crate::read::format::decode::{all_zero, decode_rows};
use crate::read::format::{DType, Layout, TensorInfo};
use crate::read::inflate::checkpoint_spacing;
use crate::read::locate::{LocateError, TensorRole};
use crate::read::matrix::{normalise_row, RowFate};
use crate::read::source::ByteSource;
use crate::read::untrained::SetAside;

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

/// What a pass has found so far ([`Analysis::summary`]): the pass layer's facts, which
/// `result::report::Report::from_pass` makes a Report (the run layer asks it to, `run::report`),
/// so that this layer knows nothing of reports.
#[derive(Debug)]
pub struct Summary<'a> {
    pub origin: &'a Origin,
    pub tensor: &'a TensorInfo,
    /// V and d as stored.
    pub rows: u64,
    pub dim: usize,
    /// The rows the moments cover (at a stop, those of the estimate stopped at).
    pub counts: RowCounts,
    /// Exact over all pairs, or the running estimate (`estimate::stratified_moments`).
    pub moments: Moments,
    /// The standard error of ε while an estimate.
    pub epsilon_se: Option<f64>,
    pub exact: bool,
    pub seed: u64,
    /// The histogram's sample of pairs, once taken.
    pub sample: Option<&'a PairSample>,
    /// The kernel that ran, its precision last ("wgsl gram (vulkan) f32", "simd128 f64").
    pub kernel: String,
    /// The shares the pass was split into (1 on a GPU).
    pub workers: u32,
    pub precision: Precision,
    pub precision_reason: &'a str,
    pub gram_gflops: Option<f64>,
    pub accumulator_bytes: u64,
    /// The GPU that ran the pass, or why it did not.
    pub gpu: Option<&'a GpuInfo>,
    pub gpu_fallback: Option<&'a str>,
}

/// The buffers a step reuses, so that a pass allocates them once.
#[derive(Default)]
struct Scratch {
    /// Raw bytes of the rows read.
    raw: Vec<u8>,
    /// Those rows decoded to f32.
    decoded: Vec<f32>,
    /// The sample's unit rows, or a block's dot products (`measure_within_block`).
    units: Vec<f32>,
    /// The sample's dot products.
    dots: Vec<f32>,
    /// The pass's f64 unit rows.
    wide: Vec<f64>,
}

/// The GPU offered for the Gram pass ([`Analysis::set_gpu`]) and what came of it.
#[derive(Default)]
struct GpuOffer {
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    offered: Option<Rc<GpuContext>>,
    /// Why the GPU offered did not run the pass (the Report's `gpu_fallback`).
    declined: Option<String>,
    /// The adapter that ran the pass, once its sums are in `gram`.
    ran: Option<GpuInfo>,
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
    /// Where the analysis stands, with what only that stage holds.
    stage: Stage,
    /// Sample blocks with a row kept, once the sample is read: each costs the kernel a whole chunk
    /// ([`Analysis::read_bound`]).
    sample_blocks_kept: Option<u64>,
    /// The histogram's sample of pairs, from the end of the sample's reads (None when a share
    /// was given its lead's verdict instead).
    pair_sample: Option<PairSample>,
    /// s and G, or the unit rows themselves when there are few (`accumulate`).
    gram: PairAccumulator,
    /// Why the pass runs in f64 when f32 was asked for (empty otherwise).
    precision_reason: String,
    /// What the histogram's sample decided for the pass, once it has (`choose_precision`).
    verdict: Option<SampleVerdict>,
    /// The running estimate's within-block stratum, over the visited blocks measured: every
    /// [`within_every`]-th of the plan's order, on the CPU as on the GPU.
    within: WithinBlock,
    /// Position in the plan's order of the next block this worker visits (steps by `share.of`).
    next_block: usize,
    /// The blocks this worker visits (`pass`): all of them unless the pass is split over workers.
    share: Share,
    /// Blocks whose rows are in `gram`: this worker's and those of the partials absorbed.
    blocks_seen: u64,
    /// Reused buffers.
    scratch: Scratch,
    /// The GPU offered, and whether it ran the pass.
    gpu: GpuOffer,
    /// Steps of the pass taken (a split by columns has its checkpoints at fixed steps).
    pass_steps: u64,
    /// A band's last part of ‖G‖²_F and the rows in G it covers: while no row enters G (zero or
    /// skipped rows) the part is unchanged, and a checkpoint need not stream the band again.
    band_part_at: Option<(u64, f64)>,
    /// What the pass keeps of the plan's random phase once it has gone on into the sweep.
    random_phase: Option<RandomPhase>,
    /// Rows set aside as never trained ([`Analysis::set_aside`]): the sample keeps their pairs apart.
    set_aside: Option<Rc<SetAside>>,
}

/// Rows a GPU step reads and submits: the GPU does the arithmetic, so a step is mostly reads.
#[cfg(feature = "gpu")]
const GPU_STEP_ROWS: u64 = 1024;
/// Blocks the GPU may have queued before [`Analysis::settle_gpu`] waits (memory of the uploads).
#[cfg(feature = "gpu")]
const GPU_IN_FLIGHT: usize = 4;

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
            stage: Stage::Sample(SampleRead::default()),
            sample_blocks_kept: None,
            pair_sample: None,
            verdict: None,
            gram,
            precision_reason: match config.precision {
                Precision::F64 => "asked for (precision=f64)".to_string(),
                Precision::F32 => String::new(),
            },
            within: WithinBlock::default(),
            next_block: 0,
            share: Share::WHOLE,
            blocks_seen: 0,
            scratch: Scratch::default(),
            gpu: GpuOffer::default(),
            pass_steps: 0,
            band_part_at: None,
            random_phase: None,
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
            && self.gpu.offered.is_none()
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
        let kept = self.sample_blocks_kept?;
        if blocks == 0.0 {
            return None;
        }
        let (d, narrow) = (self.dim as f64, SWEEP_MAX_DIM as f64);
        let kept = kept as f64 * MAX_CHUNK_ROWS as f64 * d * d;
        Some(kept / (blocks * self.plan.block_rows as f64 * narrow * narrow))
    }

    /// Whether the histogram's sample has been read (its pairs may still be to compute): from
    /// then on [`Analysis::read_bound`] is known.
    pub fn sample_is_read(&self) -> bool {
        !matches!(self.stage, Stage::Sample(_))
    }

    /// Does one bounded piece of work (≤ 64 rows read, or one block of sample pairs).
    pub fn step(&mut self) -> Result<Phase, Error> {
        match &self.stage {
            Stage::Sample(_) => self.step_sample()?,
            Stage::SamplePairs(_) => self.step_sample_pairs()?,
            Stage::Pass(driver) if is_gpu(driver) => self.step_pass_gpu()?,
            Stage::Pass(_) => {
                self.step_pass()?;
                // The first running ε as soon as the pass has two rows, not after a whole batch of
                // the kernel (`GramMoments::flush`): only the first, short batch is cut.
                if self.gram.rows_in_sums() < 2 {
                    self.gram.flush();
                }
            }
            // Stopped at an estimate: nothing more is stepped.
            Stage::Done(_) | Stage::Stopped { .. } => {}
        }
        if matches!(self.stage, Stage::Done(_)) {
            // The f32 kernel's last, partial batch (`GramMoments::flush`): the report reads G next.
            self.gram.flush();
        }
        Ok(self.phase())
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

    /// Reads `count` rows from `first` into `self.scratch.decoded` (`count × dim` f32); returns how many
    /// were decoded: `count`, or 0 when every byte was zero. Zero bytes are zero rows in every dtype
    /// (`decode::all_zero`) but affine ones with a zero point (`DType::zero_bytes_are_zero`), which
    /// the pass drops: skipping their decode and norms lets an all-zero
    /// tensor be refused at the speed of its reads.
    fn read_rows(&mut self, first: u64, count: usize) -> Result<usize, Error> {
        let start = self.tensor.byte_range.0 + first * self.row_bytes;
        self.scratch.raw.resize(count * self.row_bytes as usize, 0);
        self.source.read_at(start, &mut self.scratch.raw)?;
        if self.tensor.dtype.zero_bytes_are_zero() && all_zero(&self.scratch.raw) {
            return Ok(0);
        }
        self.scratch.decoded.resize(count * self.dim, 0.0);
        decode_rows(&self.scratch.raw, &self.tensor.dtype, self.dim, &mut self.scratch.decoded)
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
        let sample = match &self.stage {
            Stage::Sample(s) => self.plan.sample().get(s.read..).unwrap_or(&[]),
            _ => &[],
        };
        let pass = match self.phase() {
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

    /// Whether every row has been visited.
    pub fn is_exact(&self) -> bool {
        self.blocks_seen >= self.plan.blocks.len() as u64
    }

    /// What the pass has found so far, for its Report (`run::report`):
    /// exact once every row was visited, else an estimate with its standard error. Fails when
    /// fewer than two usable rows were seen. A GPU pass must have been read back first
    /// ([`Analysis::finish_gpu`]).
    pub fn summary(&self) -> Result<Summary<'_>, Error> {
        #[cfg(feature = "gpu")]
        if self.on_gpu() {
            return Err(GpuError::NotFinished.into());
        }
        // Stopped at an estimate, the rows that estimate covers (into the sweep, the random phase's).
        let counts = match &self.stage {
            Stage::Stopped { at, .. } => at.counts,
            _ => self.estimate_counts(),
        };
        let too_few = || Error::TooFewRows {
            tensor: self.tensor.name.clone(),
            rows: counts.seen,
            kept: counts.kept,
            zero: counts.dropped_zero,
            nonfinite: counts.dropped_nonfinite,
        };
        let (moments, _, epsilon_se) = self.running().ok_or_else(too_few)?;
        let precision = self.precision();
        let (kernel, workers) = match &self.gpu.ran {
            // The precision last, as every kernel name has it (a permalink reads it from there).
            Some(gpu) => (format!("wgsl gram ({}) f32", gpu.backend), 1),
            None => (format!("{} {}", kernel::kernel_name(precision), precision.name()), self.share.of.max(1)),
        };
        Ok(Summary {
            origin: &self.origin,
            tensor: &self.tensor,
            rows: self.rows,
            dim: self.dim,
            counts,
            moments,
            epsilon_se,
            exact: self.is_exact(),
            seed: self.config.seed,
            sample: self.pair_sample.as_ref(),
            kernel,
            workers,
            precision,
            precision_reason: &self.precision_reason,
            gram_gflops: self.gram.kernel_gflops(),
            accumulator_bytes: self.gram.bytes() as u64,
            gpu: self.gpu.ran.as_ref(),
            gpu_fallback: self.gpu.declined.as_deref(),
        })
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
