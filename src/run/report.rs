//! The Report of one analysis: the pass's findings ([`Analysis::summary`]) in the result layer's
//! terms. The pass knows nothing of reports; the run layer asks for one.

use crate::pass::analysis::Analysis;
use crate::pass::error::Error;
use crate::result::report::Report;

/// The Report of what an analysis has computed so far.
pub trait ToReport {
    /// Exact once every row was visited, else an estimate with its interval. Fails when fewer than
    /// two usable rows were seen, or a GPU pass was not read back (`Analysis::finish_gpu`). Without
    /// the geometry (`explain::geometry::of_analysis`), which takes seconds at large d.
    fn report(&self, timing_ms: f64) -> Result<Report, Error>;
}

impl ToReport for Analysis {
    fn report(&self, timing_ms: f64) -> Result<Report, Error> {
        Ok(Report::from_pass(self.summary()?, timing_ms))
    }
}
