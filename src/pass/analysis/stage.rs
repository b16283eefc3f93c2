//! Moving between the stages (`pass::stage`): the phase a caller sees, the pass's driver, the
//! pass done or stopped at an estimate, and the one place a [`Snapshot`] of the pass is made.

use super::*;

impl Analysis {
    /// What a caller sees of the stage: a pass stopped at an estimate is where it stopped.
    pub fn phase(&self) -> Phase {
        match &self.stage {
            Stage::Sample(_) => Phase::Sample,
            Stage::SamplePairs(_) => Phase::SamplePairs,
            Stage::Pass(_) | Stage::Stopped { pass_done: false, .. } => Phase::Pass,
            Stage::Done(_) | Stage::Stopped { pass_done: true, .. } => Phase::Done,
        }
    }

    /// The driver of the pass, from the sample's end until it is done or stopped.
    pub(super) fn driver(&self) -> Option<&Driver> {
        match &self.stage {
            Stage::Pass(driver) | Stage::Done(driver) => Some(driver),
            _ => None,
        }
    }

    pub(super) fn driver_mut(&mut self) -> Option<&mut Driver> {
        match &mut self.stage {
            Stage::Pass(driver) | Stage::Done(driver) => Some(driver),
            _ => None,
        }
    }

    /// The driver a CPU pass begins with: the lead of a split by columns keeps the bands'
    /// checkpoints (`pass::bands`), every other share only its sums.
    pub(super) fn cpu_driver(&self) -> Driver {
        let share = self.share;
        if share.columns && share.index == 0 && share.of > 1 && self.gram.is_band() {
            Driver::ColumnLead(BandTally::new(share.of))
        } else {
            Driver::Cpu
        }
    }

    /// This share's blocks are all visited: the driver goes on into [`Stage::Done`] (a GPU's sums
    /// still to read back, a split by columns' bands still to come).
    pub(super) fn pass_done(&mut self) {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Done(Driver::Cpu)) {
            Stage::Pass(driver) => Stage::Done(driver),
            other => other,
        };
    }

    /// *Stop here* at `at`: the result is that estimate, and the pass is not stepped any more.
    pub(super) fn stop_at(&mut self, at: Snapshot) {
        self.blocks_seen = at.blocks_seen;
        let pass_done = self.phase() == Phase::Done;
        self.stage = Stage::Stopped { at, pass_done };
    }

    /// The GPU pass, taken out of its stage to be read back: the pass's sums are then the CPU's.
    #[cfg(feature = "gpu")]
    pub(super) fn take_gpu_run(&mut self) -> Option<Box<GpuRun>> {
        let (stage, run) = match std::mem::replace(&mut self.stage, Stage::Done(Driver::Cpu)) {
            Stage::Pass(Driver::Gpu(run)) => (Stage::Pass(Driver::Cpu), Some(run)),
            Stage::Done(Driver::Gpu(run)) => (Stage::Done(Driver::Cpu), Some(run)),
            other => (other, None),
        };
        self.stage = stage;
        run
    }

    /// The pass at this point, with `sums` as its sums (the one place a [`Snapshot`] is made).
    pub(super) fn snapshot<S>(&self, sums: S, counts: RowCounts) -> Snapshot<S> {
        Snapshot { sums, counts, blocks_seen: self.blocks_seen, within: self.within }
    }
}
