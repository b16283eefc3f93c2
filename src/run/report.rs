//! The Report of one analysis: the pass's [`Summary`] with the file it came from, in the result
//! layer's terms. The pass knows nothing of reports; this is where its findings become one.

use crate::pass::analysis::Analysis;
use crate::pass::error::Error;
use crate::pass::stats::PairSample;
use crate::result::report::{PassOutcome, Report};

/// The Report of what an analysis has computed so far.
pub trait ToReport {
    /// Exact once every row was visited, else an estimate with its interval. Fails when fewer than
    /// two usable rows were seen, or a GPU pass was not read back (`Analysis::finish_gpu`). Without
    /// the geometry (`explain::geometry::of_analysis`), which takes seconds at large d.
    fn report(&self, timing_ms: f64) -> Result<Report, Error>;
}

impl ToReport for Analysis {
    fn report(&self, timing_ms: f64) -> Result<Report, Error> {
        let s = self.summary()?;
        let empty = PairSample::new(Vec::new());
        let mut report = Report::from_pass(PassOutcome {
            file: &s.origin.file,
            format: &s.origin.format,
            tensor: &s.tensor.name,
            tensor_reason: &s.origin.tensor_reason,
            tensor_role: s.origin.tensor_role,
            dtype: s.tensor.dtype.name(),
            rows: s.rows,
            dim: s.dim as u64,
            counts: s.counts,
            moments: s.moments,
            epsilon_se: s.epsilon_se,
            exact: s.exact,
            seed: s.seed,
            sample: s.sample.unwrap_or(&empty),
            timing_ms,
            workers: s.workers,
            kernel: s.kernel,
            precision: s.precision.name(),
            precision_reason: s.precision_reason,
            gram_gflops: s.gram_gflops,
            accumulator_bytes: s.accumulator_bytes,
        });
        report.gpu = s.gpu.cloned();
        report.gpu_fallback = s.gpu_fallback.map(str::to_string);
        Ok(report)
    }
}
