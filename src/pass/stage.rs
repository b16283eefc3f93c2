//! The stages of one analysis's pass, each owning the data only it needs, so that a state that
//! cannot happen (a GPU pass during the sample, a stopped estimate that steps on, a random phase
//! kept twice) cannot be written down. The driver that steps through them is `pass::analysis`;
//! the accumulators common to every stage (s and G, the within-block stratum, the blocks seen)
//! stay with it.
//!
//! The sample reads the histogram's rows ([`SampleRead`]), pairs them ([`SamplePairs`]), and the
//! Gram pass then runs on one [`Driver`] (the CPU, the GPU, or the lead of a split by columns)
//! until it is done or stopped at an estimate ([`Stage::Stopped`]).

use crate::pass::bands::BandTally;
use crate::pass::estimate::WithinBlock;
#[cfg(feature = "gpu")]
use crate::pass::gpu::{gram::GpuGram, GpuInfo};
use crate::pass::shares::PassPartial;
use crate::pass::stats::{Moments, RowCounts};

/// Where one analysis stands, with what only that stage holds.
pub enum Stage {
    /// Reading the histogram's row sample.
    Sample(SampleRead),
    /// All pairs among the sample's rows (histogram, uncertainty model).
    SamplePairs(SamplePairs),
    /// The Gram pass over the plan's blocks.
    Pass(Driver),
    /// This share's blocks are all visited; a GPU's sums may still be to read back, a split by
    /// columns' bands may still be to come.
    Done(Driver),
    /// *Stop here* at a running estimate (a GPU read-back, or the bands' last common checkpoint):
    /// the result is that estimate, and nothing more is stepped. `pass_done`: the stop came once
    /// this share's own blocks were all visited.
    Stopped { at: Snapshot, pass_done: bool },
}

/// The histogram's sample while its rows are read.
#[derive(Default)]
pub struct SampleRead {
    /// Unit rows of the sample (kept rows only), `dim_padded` each.
    pub units: Vec<f32>,
    /// The block of each kept row.
    pub blocks: Vec<u32>,
    /// Row id of each kept row (names the tail explorer's pairs).
    pub row_ids: Vec<u64>,
    /// Sample blocks read so far.
    pub read: usize,
    pub counts: RowCounts,
    /// Sample blocks with a row kept: each costs the kernel a whole chunk.
    pub blocks_kept: u64,
}

/// The histogram's sample, read, while its pairs are taken in.
pub struct SamplePairs {
    /// The sample's unit rows, `dim_padded` each: freed once the pass begins, so that G can take
    /// their room (2048 × d f32: 134 MB at d = 16384).
    pub units: Vec<f32>,
    /// Blocks of pairs taken in so far.
    pub pair_block: usize,
    /// The sample's row counts.
    pub counts: RowCounts,
}

/// The way the Gram pass runs, from the sample's end until its result is in hand.
pub enum Driver {
    /// On the CPU, this worker's share of the blocks; the sums in the accumulator are the result.
    Cpu,
    /// On the GPU, until its sums are read back into the accumulator.
    #[cfg(feature = "gpu")]
    Gpu(Box<GpuRun>),
    /// On the CPU, the lead of a pass split by columns, while the bands' checkpoints give the
    /// running estimate (until the bands are placed into one G).
    ColumnLead(BandTally),
}

/// The GPU Gram pass of an analysis.
#[cfg(feature = "gpu")]
pub struct GpuRun {
    pub gram: GpuGram,
    pub info: GpuInfo,
    /// Fates of the rows submitted, as the CPU sees them (checked against the GPU's at the end).
    pub counts: RowCounts,
    pub started_ms: Option<f64>,
    /// The last running moments read back, with what the analysis had seen at that point.
    pub snapshot: Option<Snapshot>,
}

/// What a pass split over workers or a whole pass keeps of the plan's random phase once it has gone
/// on into the sweep (`Plan::sweep_tail`): swept blocks are no random sample, so the running
/// estimate, and the result of a pass stopped early, are the random phase's.
pub enum RandomPhase {
    /// A share by rows keeps all of it (small: only narrow shares sweep), which the lead merges.
    Share(Box<PassPartial>),
    /// A whole pass, which merges with nothing, only its row counts and estimate (None with fewer
    /// than two rows kept), not a copy of G (268 MB at d = 8192).
    Whole { counts: RowCounts, estimate: Option<Snapshot> },
}

/// The pass at some point, with what it had seen there: `sums` are the running moments (a GPU
/// pass's read-back, the last checkpoint every band reached, the random phase's), or at the lead
/// of a split by columns the sums that give them once the bands' parts of ‖G‖²_F are in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snapshot<S = Moments> {
    pub sums: S,
    pub counts: RowCounts,
    pub blocks_seen: u64,
    /// The within-block stratum measured so far.
    pub within: WithinBlock,
}

impl<S> Snapshot<S> {
    /// The same point of the pass with other sums (the moments its scalars give).
    pub fn with<T>(self, sums: T) -> Snapshot<T> {
        Snapshot { sums, counts: self.counts, blocks_seen: self.blocks_seen, within: self.within }
    }
}
