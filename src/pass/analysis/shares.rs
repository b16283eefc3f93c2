//! A pass split between workers or threads: this analysis's share of it, the bands of G a split
//! by columns reports at checkpoints, and the partials of other shares absorbed into this one.

use super::*;

impl Analysis {
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
        }
        // Given after the sample (a share handed its lead's verdict), the pass's driver is the
        // share's; otherwise the pass begins with it.
        if matches!(self.stage, Stage::Pass(Driver::Cpu)) && self.pass_steps == 0 {
            self.stage = Stage::Pass(self.cpu_driver());
        }
    }

    /// After a step of a pass split by columns that ends at a checkpoint (`bands::is_checkpoint`):
    /// the step and this band's part of ‖G‖²_F, for the lead's running estimate. Streams the band
    /// once, unless no row entered G since the last checkpoint (then the part is the same number:
    /// a file of zero rows costs no streaming). None at other steps, and for a pass not split by
    /// columns.
    pub fn band_part(&mut self) -> Option<(u64, f64)> {
        let in_pass = matches!(self.stage, Stage::Pass(_));
        if !self.share.columns || self.share.of < 2 || !in_pass || !is_checkpoint(self.pass_steps) {
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
        let lead = self.snapshot(g.scalars_so_far(), g.counts);
        if let Some(Driver::ColumnLead(t)) = self.driver_mut() {
            t.record_lead(step, lead, part);
        }
    }

    /// The lead of a pass split by columns takes in band `band`'s part of ‖G‖²_F at checkpoint
    /// `step` (from [`Analysis::band_part`] in that band's worker).
    pub fn take_band_part(&mut self, band: u32, step: u64, part: f64) -> Result<(), Error> {
        match self.driver_mut() {
            Some(Driver::ColumnLead(t)) => t.record_band(band, step, part).map_err(|e| Error::from(PassError::from(e))),
            _ => Ok(()),
        }
    }

    /// The estimate of a pass split by columns while its bands run, from their last common
    /// checkpoint (None before the first, and once the bands are placed into one G).
    pub(super) fn band_snapshot(&self) -> Option<Option<Snapshot>> {
        match self.driver() {
            Some(Driver::ColumnLead(tally)) => Some(tally.latest().map(|r| r.at)),
            _ => None,
        }
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
                self.stop_at(snapshot);
                true
            }
        }
    }

    /// Whether the result is the estimate at a checkpoint ([`Analysis::stop_at_checkpoint`]) or a
    /// GPU read-back, rather than the sums themselves.
    pub fn stopped_at_estimate(&self) -> bool {
        matches!(self.stage, Stage::Stopped { .. })
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
            blocks_seen: self.blocks_seen,
            random_phase: match self.random_phase {
                Some(RandomPhase::Share(partial)) => Some(partial),
                _ => None,
            },
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
        // A whole pass's random phase merges with nothing: it stays as it is.
        let (mine_random, whole_random) = match self.random_phase.take() {
            Some(RandomPhase::Share(partial)) => (Some(partial), None),
            whole => (None, whole),
        };
        let mut mine = PassPartial {
            gram: std::mem::replace(&mut self.gram, PairAccumulator::Gram(GramMoments::new(0))),
            within: self.within,
            blocks_seen: self.blocks_seen,
            random_phase: mine_random,
        };
        let merged = mine.merge_from(partial, apart);
        self.gram = mine.gram;
        self.within = mine.within;
        self.blocks_seen = mine.blocks_seen;
        self.random_phase = mine.random_phase.map(RandomPhase::Share).or(whole_random);
        // The bands placed into one G: the running estimate is that G's, no longer the checkpoints'.
        if !self.gram.is_band() {
            if let Some(driver @ Driver::ColumnLead(_)) = self.driver_mut() {
                *driver = Driver::Cpu;
            }
        }
        merged?;
        let total = self.plan.blocks.len() as u64;
        if self.blocks_seen > total {
            return Err(PassError::TooManyBlocks { seen: self.blocks_seen, total }.into());
        }
        Ok(())
    }
}
