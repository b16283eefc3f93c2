//! Shares of the Gram pass, for several workers (browser) or threads (CLI) at once.
//!
//! The pass visits the plan's blocks in a seeded random order (`plan`). A pass of N shares gives
//! share w the blocks at positions ≡ w (mod N) of that order, so every share is itself a random
//! subset of blocks, and so is the union of any prefixes of them: the stratified running estimate
//! (`analysis`) holds for one share alone and for any merge of shares. What a share accumulates —
//! s = Σuᵢ, G = Σuᵢuᵢᵀ and the row counts (`stats::GramMoments`), the within-block sums and the
//! number of blocks visited — is a sum over its rows, so partials over disjoint blocks add up to
//! the one-pass answer (`docs/method.md` §1: μ and σ over all pairs need only s and G).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::pass::accumulate::PairAccumulator;
use crate::pass::estimate::WithinBlock;
use crate::pass::kernel::BandValues;
use crate::pass::stats::GramMoments;

/// Memory all workers' accumulators may take together (≤ 600 MB at d = 8192, where one
/// f64 Gram triangle alone is 268 MB).
pub const POOL_MEMORY_BUDGET: u64 = 600_000_000;

/// Most workers the page starts (`navigator.hardwareConcurrency`, capped).
pub const MAX_WORKERS: u32 = 16;

/// Which part of the pass a worker runs. Split by rows (the default): the plan's blocks at
/// positions ≡ `index` (mod `of`), each with the whole of G. Split by columns: every block, and
/// only band `index` of `of` of G's triangle ([`column_band`]), so that together the workers hold
/// one G however many they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub index: u32,
    pub of: u32,
    #[serde(default)]
    pub columns: bool,
}

impl Share {
    /// The whole pass.
    pub const WHOLE: Share = Share { index: 0, of: 1, columns: false };

    /// Share `index` of `of` by rows; None unless `index < of`.
    pub fn new(index: u32, of: u32) -> Option<Share> {
        (index < of).then_some(Share { index, of, columns: false })
    }

    /// Band `index` of `of` by columns; None unless `index < of`.
    pub fn columns(index: u32, of: u32) -> Option<Share> {
        (index < of).then_some(Share { index, of, columns: true })
    }

    /// Whether the block at position `position` of the plan's order is this share's.
    pub fn owns(&self, position: usize) -> bool {
        self.columns || position % self.of.max(1) as usize == self.index as usize
    }

    /// Positions between two blocks of this share in the plan's order.
    pub fn stride(&self) -> usize {
        if self.columns {
            1
        } else {
            self.of.max(1) as usize
        }
    }

    /// Whether this share computes block `block` of the histogram sample's pairs for its lead
    /// (`Analysis::sample_pair_blocks`), the page's helpers pairing the sample with it. Block k
    /// holds rows 64k.. against every later row, so the blocks shrink: they are dealt out back and
    /// forth (0, 1, …, of − 1, of − 1, …, 0, 0, 1, …) to even out the shares' work.
    pub fn pairs_sample_block(&self, block: usize) -> bool {
        let of = self.of.max(1) as usize;
        let (round, at) = (block / of, block % of);
        let owner = if round % 2 == 0 { at } else { of - 1 - at };
        owner == self.index as usize
    }

    /// The first position that is this share's.
    pub fn first(&self) -> usize {
        if self.columns {
            0
        } else {
            self.index as usize
        }
    }

    /// How many of the first `blocks` positions are this share's.
    pub fn count_below(&self, blocks: usize) -> usize {
        let (first, stride) = (self.first(), self.stride());
        if blocks <= first {
            0
        } else {
            (blocks - first).div_ceil(stride)
        }
    }
}

/// The panels of G's packed triangle (`kernel::PackedGram`, 4 rows each) that band `index` of
/// `of` holds for a matrix of width `dim`: whole row octets, cut where the triangle's area is
/// split evenly (row a of the triangle is d − a long, so the first bands have fewer rows).
pub fn column_band(dim: usize, index: u32, of: u32) -> std::ops::Range<usize> {
    let octets = crate::pass::kernel::padded_dim(dim) / 8;
    let of = of.max(1) as usize;
    // Area of the triangle's octets before octet m: Σ_{k<m} (octets − k).
    let area_before = |m: usize| m * octets - m * m.saturating_sub(1) / 2;
    let total = area_before(octets);
    let cut = |i: usize| {
        if i >= of {
            return octets;
        }
        let want = total * i / of;
        (0..=octets).find(|&m| area_before(m) >= want).unwrap_or(octets)
    };
    let i = index as usize;
    2 * cut(i)..2 * cut(i + 1)
}

/// How many workers a tensor's pass is split over: as many as asked, but no more than the memory
/// budget holds accumulators of `accumulator_bytes` each, and always at least one.
pub fn shares_for(requested: u32, accumulator_bytes: u64) -> u32 {
    let fit = POOL_MEMORY_BUDGET / accumulator_bytes.max(1);
    requested.clamp(1, MAX_WORKERS).min(fit.clamp(1, MAX_WORKERS as u64) as u32)
}

/// Accumulators from this size (d ≥ 8192) are split by columns even where whole ones would fit:
/// measured on 12000×8192 bf16 with 2 threads, the pass took 14.5 s by columns and 17.9 s by rows
/// (each thread then streams half of G instead of all of it), in 483 MB instead of 688 MB.
pub const COLUMNS_FROM_BYTES: u64 = 8192 * 8192 / 2 * 8;

/// How a pass of a Gram accumulator of `accumulator_bytes` is split over up to `requested`
/// workers: by rows while that many whole accumulators fit the budget ([`shares_for`]) and G is
/// narrower than [`COLUMNS_FROM_BYTES`]; otherwise by columns over all of them, which holds one G
/// in bands plus the lead's whole G to assemble them in: under two accumulators whatever the
/// number of workers. `(of, by_columns)`.
pub fn split_for(requested: u32, accumulator_bytes: u64) -> (u32, bool) {
    let rows = shares_for(requested, accumulator_bytes);
    let wanted = requested.clamp(1, MAX_WORKERS);
    if wanted < 2 || (rows >= wanted && accumulator_bytes < COLUMNS_FROM_BYTES) {
        (rows, false)
    } else {
        (wanted, true)
    }
}

/// How a pass is split over workers or threads (the CLI's `--split`, the page's `?split=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// By rows while whole accumulators fit the memory budget and d < 8192, else by columns
    /// ([`split_for`]).
    #[default]
    Auto,
    /// By rows, as many workers as the budget holds.
    Rows,
    /// By columns: every worker reads every row and sums a band of G.
    Columns,
}

/// Most wasm memory one worker of the page may take for its pass.
pub const WORKER_MEMORY_LIMIT: u64 = 1_500_000_000;

/// How a pass whose accumulator takes `accumulator_bytes` is split over up to `requested` workers,
/// asked `split`: `(of, by_columns)`. Only a pass that sums G (`gram`; few rows sum pair cosines
/// directly) has columns to share out. With `worker_limit` (the page), a split by columns that
/// would take one worker past it is by rows instead. The lead assembling the bands holds the whole
/// G and nothing more of them: its own band is the first, which grows into G in place
/// (`kernel::PackedGram::widen`), and the others are copied into G from the helpers' messages,
/// where they arrive apart from the rest of the partial ([`PassPartial::into_frame`]). So at
/// d = 16384 (G is 1.07 GB) even two workers stay under 1.5 GB each.
pub fn choose_split(
    split: Split,
    requested: u32,
    accumulator_bytes: u64,
    gram: bool,
    worker_limit: Option<u64>,
) -> (u32, bool) {
    let by_rows = (shares_for(requested, accumulator_bytes), false);
    let (of, columns) = match split {
        _ if !gram => by_rows,
        Split::Auto => split_for(requested, accumulator_bytes),
        Split::Rows => by_rows,
        Split::Columns => (requested.clamp(1, MAX_WORKERS), requested > 1),
    };
    if columns && worker_limit.is_some_and(|limit| accumulator_bytes > limit) {
        return by_rows;
    }
    (of, columns)
}

/// What one share of the pass has accumulated; partials over disjoint blocks merge exactly. A
/// worker sends it as a `wire::PartialMessage` ([`PassPartial::to_bytes`], in `wire`).
#[derive(Clone, Debug, PartialEq)]
pub struct PassPartial {
    pub gram: PairAccumulator,
    /// The running estimate's within-block stratum, over the visited blocks measured (only some
    /// are: the estimate scales them to all).
    pub within: WithinBlock,
    /// Blocks of the plan visited.
    pub blocks_seen: u64,
    /// This partial over the plan's random phase alone, once its share has gone on into the sweep
    /// (`plan::Plan::sweep_tail`); None while the whole partial is in the random phase. Where a
    /// pass stops before every share is done, the merge of these is its estimate: the swept blocks
    /// are not a random sample.
    pub random_phase: Option<Box<PassPartial>>,
}

/// Why a partial could not be taken in.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PassError {
    /// The bytes a worker posted are not a partial of this build (a truncated or foreign message).
    #[error("a worker's partial result could not be read ({0}); run the analysis again")]
    Unreadable(String),
    /// A partial of another tensor's width: the workers did not analyse the same matrix.
    #[error(
        "a worker's partial result has d = {got}, this pass has d = {expected}: the workers read different tensors"
    )]
    DimMismatch { expected: usize, got: usize },
    /// A band of G (a pass split by columns) that is not of this pass.
    #[error("a worker's band of the Gram matrix does not fit this pass: {0}")]
    Band(String),
    /// A whole G (a pass split by rows) whose values, sent apart from its partial, do not fit it.
    #[error("a worker's Gram matrix does not fit its partial result: {0}")]
    Values(String),
    /// A band's checkpoint of a pass split by columns that does not fit it (`pass::bands`).
    #[error(transparent)]
    Checkpoint(#[from] crate::pass::bands::BandError),
    /// Together the partials claim more blocks than the plan has: one was counted twice.
    #[error("the workers' partial results cover {seen} blocks of a {total}-block pass: one was counted twice")]
    TooManyBlocks { seen: u64, total: u64 },
}

impl PassPartial {
    /// Nothing accumulated yet, for a matrix of width `dim`.
    pub fn empty(dim: usize) -> Self {
        Self {
            gram: PairAccumulator::Gram(GramMoments::new(dim)),
            within: WithinBlock::default(),
            blocks_seen: 0,
            random_phase: None,
        }
    }

    /// The partial over the random phase: [`PassPartial::random_phase`], or a copy of this one
    /// when it has no other part.
    pub fn random_part(&self) -> PassPartial {
        match &self.random_phase {
            Some(r) => (**r).clone(),
            None => PassPartial {
                gram: self.gram.clone(),
                within: self.within,
                blocks_seen: self.blocks_seen,
                random_phase: None,
            },
        }
    }

    /// Adds another share's partial (over blocks disjoint from this one's).
    pub fn merge(&mut self, other: &PassPartial) -> Result<(), PassError> {
        self.merge_from(other, None)
    }

    /// [`PassPartial::merge`], the band's values taken from `apart` when they came apart from it
    /// ([`PassPartial::into_frame`]).
    pub fn merge_from(&mut self, other: &PassPartial, apart: Option<&dyn BandValues>) -> Result<(), PassError> {
        // Same width is the invariant; the routes or precisions may differ (the accumulator's merge
        // folds them), and so may their sizes (a row route holds the rows it kept).
        if other.gram.dim() != self.gram.dim() {
            return Err(PassError::DimMismatch { expected: self.gram.dim(), got: other.gram.dim() });
        }
        if other.gram.is_band() {
            // A split by columns: every share saw every block, so its band is placed, not added.
            self.gram.place_band(&other.gram, apart).map_err(PassError::Band)?;
            // Only the lead measures the within-block pairs (`analysis`); the blocks are alike.
            if other.within.pairs > self.within.pairs {
                self.within = other.within;
            }
            self.blocks_seen = self.blocks_seen.max(other.blocks_seen);
            return Ok(());
        }
        if let Some(values) = apart.filter(|values| !values.is_empty()) {
            // Split by rows: a whole G's values came apart (`into_frame`). Where a random phase is
            // kept (only small accumulators sweep), the partial is made whole again first.
            if self.random_phase.is_some() || other.random_phase.is_some() {
                let gram = match &other.gram {
                    PairAccumulator::Gram(g) => {
                        PairAccumulator::Gram(g.with_values(values).map_err(PassError::Values)?)
                    }
                    PairAccumulator::Rows(_) => {
                        return Err(PassError::Values("values of G came with a partial that holds rows".into()))
                    }
                };
                return self.merge(&PassPartial { gram, ..other.clone() });
            }
            self.gram.merge_from(&other.gram, values).map_err(PassError::Values)?;
            self.within.merge(&other.within);
            self.blocks_seen += other.blocks_seen;
            return Ok(());
        }
        if self.random_phase.is_some() || other.random_phase.is_some() {
            // Both parts are kept while either share swept: the whole for an exact end, the
            // random phases for a stopped one (only small accumulators sweep, `plan::SWEEP_MAX_DIM`).
            let mut mine = self.random_part();
            mine.merge(&other.random_part())?;
            self.random_phase = Some(Box::new(mine));
        }
        self.gram.merge(&other.gram);
        self.within.merge(&other.within);
        self.blocks_seen += other.blocks_seen;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_bands_cover_the_triangle_in_whole_octets_of_near_equal_area() {
        for (dim, of) in [(8192usize, 16u32), (16384, 2), (4096, 3), (131, 5), (9, 4), (64, 1)] {
            let panels = crate::pass::kernel::padded_dim(dim) / 4;
            let bands: Vec<_> = (0..of).map(|i| column_band(dim, i, of)).collect();
            assert_eq!(bands.first().map(|b| b.start), Some(0), "d={dim} of={of}");
            assert_eq!(bands.last().map(|b| b.end), Some(panels), "d={dim} of={of}");
            for w in bands.windows(2) {
                assert_eq!(w[0].end, w[1].start, "d={dim} of={of}: contiguous");
            }
            assert!(bands.iter().all(|b| b.start % 2 == 0 && b.end % 2 == 0 || b.end == panels));
            // Entries of G per band (panel p holds 4·(d − 8⌊p/2⌋)): within one octet row of equal.
            let d = crate::pass::kernel::padded_dim(dim);
            let area = |b: &std::ops::Range<usize>| b.clone().map(|p| 4 * (d - p / 2 * 8)).sum::<usize>();
            let total: usize = bands.iter().map(area).sum();
            for b in &bands {
                assert!(
                    area(b).abs_diff(total / of as usize) <= 8 * d,
                    "d={dim} of={of}: {b:?} {} of {total}",
                    area(b)
                );
            }
        }
    }

    #[test]
    fn a_split_by_columns_past_the_budget_or_from_d_8192() {
        let g = |d: u64| d * d / 2 * 8;
        assert_eq!(split_for(16, g(1024)), (16, false));
        assert_eq!(split_for(16, g(4096)), (16, true), "8 whole accumulators fit, 16 do not");
        assert_eq!(split_for(2, g(4096)), (2, false));
        assert_eq!(split_for(2, g(8192)), (2, true), "d ≥ 8192: by columns, measured faster");
        assert_eq!(split_for(16, g(8192)), (16, true));
        assert_eq!(split_for(2, g(16384)), (2, true));
        assert_eq!(split_for(1, g(16384)), (1, false));
    }

    #[test]
    fn the_page_splits_by_columns_only_where_the_lead_can_assemble_g() {
        let g = |d: u64| d * d / 2 * 8;
        let page = Some(WORKER_MEMORY_LIMIT);
        assert_eq!(choose_split(Split::Auto, 2, g(8192), true, page), (2, true));
        assert_eq!(choose_split(Split::Auto, 16, g(4096), true, page), (16, true));
        // d = 16384: the lead holds G (1.07 GB) and no band beside it, however many bands.
        assert_eq!(choose_split(Split::Auto, 2, g(16384), true, page), (2, true));
        assert_eq!(choose_split(Split::Auto, 16, g(16384), true, page), (16, true));
        // A G past one worker's limit cannot be assembled by columns: by rows (here one worker).
        assert_eq!(choose_split(Split::Auto, 2, g(16384), true, Some(g(16384) - 1)), (1, false));
        assert_eq!(choose_split(Split::Auto, 2, g(16384), true, None), (2, true), "natively, no limit");
        assert_eq!(choose_split(Split::Columns, 4, g(512), true, page), (4, true));
        assert_eq!(choose_split(Split::Columns, 4, g(512), false, page), (4, false), "few rows: no G");
        assert_eq!(choose_split(Split::Rows, 2, g(8192), true, page), (2, false));
        assert_eq!(choose_split(Split::Columns, 1, g(512), true, page), (1, false));
    }

    #[test]
    fn shares_partition_the_positions() {
        let of = 3;
        let shares: Vec<Share> = (0..of).filter_map(|i| Share::new(i, of)).collect();
        assert_eq!(Share::new(3, 3), None);
        for p in 0..20 {
            assert_eq!(shares.iter().filter(|s| s.owns(p)).count(), 1, "position {p}");
        }
        for blocks in 0..20 {
            let total: usize = shares.iter().map(|s| s.count_below(blocks)).sum();
            assert_eq!(total, blocks);
            for s in &shares {
                assert_eq!(s.count_below(blocks), (0..blocks).filter(|&p| s.owns(p)).count());
            }
        }
    }

    #[test]
    fn the_memory_budget_bounds_the_workers() {
        // d = 8192: one triangle is 8192·8193/2·8 bytes = 268 MB, so two fit in 600 MB.
        let d8192 = 8192u64 * 8193 / 2 * 8;
        assert_eq!(shares_for(8, d8192), 2);
        assert_eq!(shares_for(8, 700_000_000), 1);
        assert_eq!(shares_for(0, 1000), 1);
        assert_eq!(shares_for(99, 1000), MAX_WORKERS);
        assert_eq!(shares_for(4, 16_000_000), 4);
    }
}
