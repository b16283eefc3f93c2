//! The running estimate and the progress a step reports: the moments so far, with the
//! within-block stratum, and the estimate's uncertainty.

use super::*;

impl Analysis {
    /// Moments of all pairs: exact once every block was visited, before that
    /// [`estimate::stratified_moments`] over the blocks seen.
    /// While the GPU pass runs, they are those of its last read-back ([`Analysis::refresh_gpu_estimate`]),
    /// with what the analysis had seen then. Also returns the blocks and the counts they cover.
    pub(super) fn running_moments(&self) -> Option<(Moments, u64, RowCounts)> {
        let total = self.plan.blocks.len() as u64;
        let snapshot = match (&self.stage, &self.random_phase) {
            (Stage::Stopped { at, .. }, _) => Some(*at),
            (Stage::Pass(Driver::ColumnLead(tally)) | Stage::Done(Driver::ColumnLead(tally)), _) => {
                Some(tally.latest()?.at)
            }
            #[cfg(feature = "gpu")]
            (Stage::Pass(Driver::Gpu(run)) | Stage::Done(Driver::Gpu(run)), _) => Some(run.snapshot?),
            // A whole pass into its sweep: the random phase's estimate, until the pass is exact.
            (_, Some(RandomPhase::Whole { estimate, .. })) if !self.is_exact() => Some((*estimate)?),
            _ => None,
        };
        if let Some(s) = snapshot {
            if s.blocks_seen >= total {
                return Some((s.sums, s.blocks_seen, s.counts));
            }
            let seen = estimate::BlocksSeen { within: s.within, seen: s.blocks_seen, total };
            return Some((estimate::stratified_moments(&s.sums, s.counts, seen, self.rows), s.blocks_seen, s.counts));
        }
        // Mid-pass, the rows already through the kernel; at Done (flushed), all of them.
        if self.is_exact() {
            return Some((self.gram.moments_so_far()?, self.blocks_seen, self.gram.counts()));
        }
        // Into the sweep, the estimate is the random phase's: swept blocks are no random sample.
        let (gram, within, blocks_seen) = match &self.random_phase {
            Some(RandomPhase::Share(r)) => (&r.gram, r.within, r.blocks_seen),
            _ => (&self.gram, self.within, self.blocks_seen),
        };
        let (all, counts) = (gram.moments_so_far()?, gram.counts());
        let seen = estimate::BlocksSeen { within, seen: blocks_seen, total };
        Some((estimate::stratified_moments(&all, counts, seen, self.rows), blocks_seen, counts))
    }

    /// Running estimate: ε with its standard error.
    pub(super) fn running(&self) -> Option<(Moments, f64, Option<f64>)> {
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
    pub(super) fn estimate_counts(&self) -> RowCounts {
        match &self.random_phase {
            Some(RandomPhase::Share(r)) if !self.is_exact() => r.gram.counts(),
            Some(RandomPhase::Whole { counts, .. }) if !self.is_exact() => *counts,
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

    pub(super) fn progress_with(&self, estimate: bool) -> Progress {
        // Weight phases by their cost in pass rows: a pass row costs d²/2 multiply-adds, the n²/2
        // sample pairs n²·d/2, i.e. as much as n²/d pass rows.
        let n = self.plan.sample_rows() as f64;
        // A share's own pass: its blocks among the target ones (all of them for a whole pass).
        let pass_rows = self.share.count_below(self.pass_target()) as f64 * self.plan.block_rows as f64;
        let sample_cost = n * n / self.dim as f64 + 1.0;
        let total = sample_cost + pass_rows;
        let phase = self.phase();
        let done = match &self.stage {
            Stage::Sample(s) => sample_cost * 0.2 * s.read as f64 / self.plan.sample_blocks.max(1) as f64,
            Stage::SamplePairs(p) => {
                let rows = (p.units.len() / self.dim_padded.max(1)) as f64;
                let blocks = (rows / MAX_CHUNK_ROWS as f64).ceil().max(1.0);
                sample_cost * (0.2 + 0.8 * p.pair_block as f64 / blocks)
            }
            Stage::Pass(_) | Stage::Done(_) | Stage::Stopped { .. } => {
                let own = self.share.count_below(self.next_block.min(self.pass_target()));
                sample_cost + (own as f64 * self.plan.block_rows as f64).min(pass_rows)
            }
        };
        let running = if estimate && self.has_estimate() { self.running() } else { None };
        Progress {
            phase,
            fraction: if phase == Phase::Done { 1.0 } else { (done / total).clamp(0.0, 1.0) },
            // Split by columns, the rows of the estimate shown: those of the bands' last checkpoint;
            // into the sweep, those of the random phase.
            rows_seen: self.band_snapshot().flatten().map_or(self.estimate_counts().seen, |s| s.counts.seen),
            rows: self.rows,
            rows_read: match &self.stage {
                Stage::Sample(s) => s.counts.seen,
                Stage::SamplePairs(p) => p.counts.seen,
                Stage::Pass(_) | Stage::Done(_) | Stage::Stopped { .. } => self.counts().seen,
            },
            epsilon: running.as_ref().map(|r| r.1),
            epsilon_se: running.and_then(|r| r.2),
            bytes_fetched: None,
        }
    }
}
