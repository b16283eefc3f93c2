//! The running estimate of a pass split by columns (`shares::Share::columns`), while it runs.
//!
//! Split by columns, every worker reads every row and sums one band of G's triangle, so no worker
//! alone holds ‖G‖²_F, which the moments need (`docs/method.md` §1). The bands run the same steps
//! over the same rows, so at fixed steps of the pass ([`is_checkpoint`]) each band's part of
//! ‖G‖²_F covers the same rows: the helpers send theirs to the lead, which adds them (in band
//! order) to its own part and to its s, row norms, counts and within-block sums at that step. The
//! running estimate, and the result of *Stop here*, is the one at the latest checkpoint that every
//! band has reached: an estimate over a prefix of the seeded block order, as in a whole pass.

use crate::pass::stage::Snapshot;
use crate::pass::stats::GramScalars;

/// Steps between checkpoints once the pass is under way (a step is up to 64 rows): a band's part
/// of ‖G‖²_F streams its panels once, as one fold of the kernel does, so one in 8 steps costs
/// about 1/512 of the pass's arithmetic. The first steps 1, 2 and 4 are checkpoints too, so that
/// an estimate shows early.
pub const CHECKPOINT_EVERY: u64 = 8;

/// Checkpoints a lead keeps waiting for slower bands: far more than a pool's bands drift apart in
/// practice; past it the oldest is dropped (the estimate then waits for a later one).
const MAX_WAITING: usize = 4096;

/// Whether the pass's step `step` (counted from 1) ends at a checkpoint.
pub fn is_checkpoint(step: u64) -> bool {
    step > 0 && (step.is_power_of_two() || step.is_multiple_of(CHECKPOINT_EVERY))
}

/// What the lead knows at a checkpoint besides ‖G‖²_F: its sums over the rows in G, its row
/// counts, the blocks visited and the within-block pairs it measured.
pub type LeadAt = Snapshot<GramScalars>;

/// The estimate at a checkpoint every band has reached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reached {
    pub step: u64,
    pub at: Snapshot,
}

/// One checkpoint not yet reached by every band.
#[derive(Clone, Debug)]
struct Waiting {
    step: u64,
    /// Each band's part of ‖G‖²_F (band 0 is the lead's).
    parts: Vec<Option<f64>>,
    lead: Option<LeadAt>,
}

/// Why a band's part was refused (a worker of another pass or a bug; the estimate is not touched).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BandError {
    /// A band index outside the pass's split.
    #[error("a worker sent a part of ‖G‖² for band {band} of a pass split into {of} bands")]
    NoSuchBand { band: u32, of: u32 },
    /// Two parts for one band at one checkpoint.
    #[error("band {band} sent its part of ‖G‖² at step {step} twice")]
    Twice { band: u32, step: u64 },
    /// A part that is not a sum of squares.
    #[error("band {band} sent {value} as its part of ‖G‖² at step {step}")]
    NotASumOfSquares { band: u32, step: u64, value: f64 },
}

/// The lead's record of the bands' checkpoints.
#[derive(Clone, Debug)]
pub struct BandTally {
    of: u32,
    /// In step order.
    waiting: Vec<Waiting>,
    latest: Option<Reached>,
}

impl BandTally {
    /// For a pass split into `of` bands (at least 1).
    pub fn new(of: u32) -> Self {
        BandTally { of: of.max(1), waiting: Vec::new(), latest: None }
    }

    /// The estimate at the latest checkpoint every band has reached.
    pub fn latest(&self) -> Option<Reached> {
        self.latest
    }

    /// The lead's own state at checkpoint `step`, with its band's part of ‖G‖²_F.
    pub fn record_lead(&mut self, step: u64, lead: LeadAt, part: f64) {
        let at = self.entry(step);
        if let Some(w) = self.waiting.get_mut(at) {
            w.lead = Some(lead);
            if let Some(slot) = w.parts.first_mut() {
                *slot = Some(part);
            }
        }
        self.settle();
    }

    /// Band `band`'s part of ‖G‖²_F at checkpoint `step`.
    pub fn record_band(&mut self, band: u32, step: u64, part: f64) -> Result<(), BandError> {
        if band >= self.of {
            return Err(BandError::NoSuchBand { band, of: self.of });
        }
        if !part.is_finite() || part < 0.0 {
            return Err(BandError::NotASumOfSquares { band, step, value: part });
        }
        if self.latest.is_some_and(|r| r.step >= step) {
            // Older than the estimate shown: nothing to wait for.
            return Ok(());
        }
        let at = self.entry(step);
        let slot = self.waiting.get_mut(at).and_then(|w| w.parts.get_mut(band as usize));
        match slot {
            Some(Some(_)) => return Err(BandError::Twice { band, step }),
            Some(slot) => *slot = Some(part),
            None => {}
        }
        self.settle();
        Ok(())
    }

    /// The index in `waiting` of checkpoint `step`, added if new.
    fn entry(&mut self, step: u64) -> usize {
        match self.waiting.binary_search_by_key(&step, |w| w.step) {
            Ok(at) => at,
            Err(at) => {
                let parts = vec![None; self.of as usize];
                self.waiting.insert(at, Waiting { step, parts, lead: None });
                if self.waiting.len() > MAX_WAITING {
                    self.waiting.remove(0);
                    return at.saturating_sub(1);
                }
                at
            }
        }
    }

    /// Takes the latest checkpoint that is complete as the estimate, and forgets every one before.
    fn settle(&mut self) {
        let complete = self.waiting.iter().rposition(|w| w.lead.is_some() && w.parts.iter().all(Option::is_some));
        let Some(at) = complete else { return };
        let done: Vec<Waiting> = self.waiting.drain(..=at).collect();
        let Some(w) = done.last() else { return };
        let Some(lead) = w.lead else { return };
        // In band order, so that the same parts always give the same bits.
        let frobenius: f64 = w.parts.iter().flatten().sum();
        if let Some(moments) = lead.sums.moments(frobenius) {
            self.latest = Some(Reached { step: w.step, at: lead.with(moments) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::estimate::WithinBlock;
    use crate::pass::stats::RowCounts;

    fn lead(rows: u64) -> LeadAt {
        LeadAt {
            sums: GramScalars { rows, sum_sq: rows as f64 * 1.5, sum_norm2: rows as f64, sum_norm4: rows as f64 },
            counts: RowCounts { seen: rows, kept: rows, ..RowCounts::default() },
            blocks_seen: rows / 4,
            within: WithinBlock::default(),
        }
    }

    #[test]
    fn checkpoints_come_early_then_every_few_steps() {
        let first: Vec<u64> = (0..=40).filter(|&s| is_checkpoint(s)).collect();
        assert_eq!(first, vec![1, 2, 4, 8, 16, 24, 32, 40]);
    }

    #[test]
    fn an_estimate_needs_every_band_at_one_checkpoint() {
        let mut t = BandTally::new(3);
        t.record_lead(1, lead(64), 70.0);
        t.record_band(1, 1, 20.0).unwrap();
        assert_eq!(t.latest(), None, "band 2 has not reached step 1");
        // Band 2 runs ahead: its parts wait for the lead's and band 1's.
        t.record_band(2, 1, 10.0).unwrap();
        t.record_band(2, 2, 30.0).unwrap();
        let first = t.latest().unwrap();
        assert_eq!(first.step, 1);
        assert_eq!(first.at.sums, lead(64).sums.moments(100.0).unwrap());
        t.record_band(1, 2, 40.0).unwrap();
        assert_eq!(t.latest().unwrap().step, 1, "the lead has not reached step 2");
        t.record_lead(2, lead(128), 130.0);
        let second = t.latest().unwrap();
        assert_eq!((second.step, second.at.counts.kept), (2, 128));
        assert_eq!(second.at.sums, lead(128).sums.moments(200.0).unwrap());
        // A late part of an older checkpoint changes nothing.
        t.record_band(1, 1, 5.0).unwrap();
        assert_eq!(t.latest(), Some(second));
    }

    #[test]
    fn parts_add_in_band_order_whatever_their_arrival() {
        let parts = [0.1f64, 1e16, -0.0, 3.3];
        let mut a = BandTally::new(4);
        let mut b = BandTally::new(4);
        a.record_lead(8, lead(512), parts[0]);
        for band in 1..4 {
            a.record_band(band, 8, parts[band as usize].abs()).unwrap();
        }
        for band in (1..4).rev() {
            b.record_band(band, 8, parts[band as usize].abs()).unwrap();
        }
        b.record_lead(8, lead(512), parts[0]);
        assert_eq!(a.latest(), b.latest());
        assert!(a.latest().is_some());
    }

    #[test]
    fn foreign_or_doubled_parts_are_refused() {
        let mut t = BandTally::new(2);
        assert_eq!(t.record_band(2, 1, 1.0), Err(BandError::NoSuchBand { band: 2, of: 2 }));
        assert!(matches!(t.record_band(1, 1, f64::NAN), Err(BandError::NotASumOfSquares { .. })));
        assert!(matches!(t.record_band(1, 1, -1.0), Err(BandError::NotASumOfSquares { .. })));
        t.record_band(1, 4, 1.0).unwrap();
        assert_eq!(t.record_band(1, 4, 1.0), Err(BandError::Twice { band: 1, step: 4 }));
        assert_eq!(t.latest(), None);
    }
}
