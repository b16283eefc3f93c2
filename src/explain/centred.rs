//! Centred statistics: μ, σ and μ + 2σ of the mean-centred, re-normalised rows
//! vᵢ = (uᵢ − m)/‖uᵢ − m‖, m = s/V over the V unit rows uᵢ. How much of ε is the one common
//! direction: a model whose ε drops to near 0 here owes its anisotropy to the mean vector alone.
//! **Not the paper's ε**, which is over the raw rows (`docs/method.md` §1).
//!
//! Two streamed passes over the matrix: the first sums the unit rows for m (O(V·d)); the second
//! feeds the vᵢ — the unit rows weighted by 1/‖uᵢ − m‖ after the shift — to the same Gram
//! accumulator as the exact pass, so the same identities give μ and σ over all pairs (O(V·d²)).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::pass::estimate;
use crate::pass::kernel::{self, MAX_CHUNK_ROWS};
use crate::pass::stats::GramMoments;
use crate::read::matrix::{Matrix, MatrixError, RowFate, RowReader};

/// Said wherever the centred numbers are shown.
pub const CENTRED_NOTE: &str = "Centred statistics: cosines of the rows after the mean unit row is subtracted and each row is re-normalised. Not the paper's ε, which is over the rows as they are.";

/// A centred row shorter than this (relative to a unit row) has no direction left: the row was the
/// mean itself, up to rounding.
const MIN_CENTRED_NORM: f64 = 1e-12;

/// μ, σ, μ + 2σ of the centred rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Centred {
    pub mu: f64,
    pub sigma: f64,
    /// μ + 2σ of the centred rows: not the paper's ε.
    pub epsilon: f64,
    pub epsilon_3sigma: f64,
    /// ‖m‖, the length of the mean unit row that was subtracted.
    pub mean_norm: f64,
    /// Rows with a direction after centring.
    pub rows_used: u64,
    /// Zero or non-finite rows, and rows equal to the mean.
    pub rows_dropped: u64,
    pub pairs: u64,
    pub note: String,
}

/// Why the centred statistics could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CentredError {
    #[error(transparent)]
    Rows(#[from] MatrixError),
    /// Fewer than two rows keep a direction after centring.
    #[error("centred statistics need two rows that differ from the mean; {rows} do")]
    TooFewRows { rows: u64 },
}

/// Where the pass stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Mean,
    Centred,
    Done,
}

/// The two passes, one chunk per [`CentredPass::step`] so a worker can post progress and yield.
pub struct CentredPass<'a> {
    reader: RowReader<'a>,
    matrix: &'a Matrix,
    stage: Stage,
    sum: Vec<f64>,
    kept: u64,
    mean: Vec<f64>,
    gram: GramMoments,
    dropped: u64,
    /// Centred rows waiting for the kernel (`dim_padded` each, ≤ MAX_CHUNK_ROWS).
    batch: Vec<f64>,
}

impl<'a> CentredPass<'a> {
    pub fn new(matrix: &'a Matrix) -> Result<Self, CentredError> {
        let reader = matrix.rows()?;
        let dim = reader.dim();
        Ok(Self {
            reader,
            matrix,
            stage: Stage::Mean,
            sum: vec![0.0; dim],
            kept: 0,
            mean: Vec::new(),
            gram: GramMoments::new(dim),
            dropped: 0,
            batch: Vec::new(),
        })
    }

    /// Share of the work done, 0…1 (the second pass is most of it).
    pub fn fraction(&self) -> f64 {
        let f = self.reader.position() as f64 / self.reader.rows().max(1) as f64;
        match self.stage {
            Stage::Mean => 0.1 * f,
            Stage::Centred => 0.1 + 0.9 * f,
            Stage::Done => 1.0,
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() {
            self.gram.add_unit_rows(&self.batch);
            self.batch.clear();
        }
    }

    /// One chunk of rows; true when both passes are done.
    pub fn step(&mut self) -> Result<bool, CentredError> {
        match self.stage {
            Stage::Mean => {
                let (sum, kept) = (&mut self.sum, &mut self.kept);
                let chunk = self.reader.next_chunk(|_, u| {
                    for (s, x) in sum.iter_mut().zip(u) {
                        *s += x;
                    }
                    *kept += 1;
                })?;
                if chunk.is_none() {
                    let v = self.kept.max(1) as f64;
                    self.mean = self.sum.iter().map(|s| s / v).collect();
                    self.reader = self.matrix.rows()?;
                    self.stage = Stage::Centred;
                }
                Ok(false)
            }
            Stage::Centred => {
                let dim = self.reader.dim();
                let padded = kernel::padded_dim(dim);
                let mut rows: Vec<f64> = Vec::new();
                let mean = &self.mean;
                let mut dropped = 0u64;
                let chunk = self.reader.next_chunk(|_, u| {
                    let at = rows.len();
                    rows.resize(at + padded, 0.0);
                    let mut n2 = 0.0;
                    for ((o, x), m) in rows[at..at + dim].iter_mut().zip(u).zip(mean) {
                        *o = x - m;
                        n2 += *o * *o;
                    }
                    if n2.sqrt() <= MIN_CENTRED_NORM {
                        rows.truncate(at);
                        dropped += 1;
                        return;
                    }
                    let inv = 1.0 / n2.sqrt();
                    for o in &mut rows[at..at + dim] {
                        *o *= inv;
                    }
                })?;
                self.dropped += dropped;
                for row in rows.chunks_exact(padded) {
                    self.batch.extend_from_slice(row);
                    self.gram.counts.record(RowFate::Kept);
                    if self.batch.len() >= MAX_CHUNK_ROWS * padded {
                        self.flush();
                    }
                }
                match chunk {
                    Some(d) => {
                        self.dropped += d;
                        Ok(false)
                    }
                    None => {
                        self.flush();
                        self.stage = Stage::Done;
                        Ok(true)
                    }
                }
            }
            Stage::Done => Ok(true),
        }
    }

    /// Runs both passes to the end.
    pub fn run(mut self) -> Result<Centred, CentredError> {
        while !self.step()? {}
        self.result()
    }

    /// The statistics, once [`CentredPass::step`] returned true.
    pub fn result(&self) -> Result<Centred, CentredError> {
        let rows = self.gram.counts.kept;
        let m = self.gram.moments().ok_or(CentredError::TooFewRows { rows })?;
        Ok(Centred {
            mu: m.mu,
            sigma: m.sigma,
            epsilon: m.mu + 2.0 * m.sigma,
            epsilon_3sigma: estimate::epsilon_3sigma(m.mu, m.sigma),
            mean_norm: self.mean.iter().map(|x| x * x).sum::<f64>().sqrt(),
            rows_used: rows,
            rows_dropped: self.dropped,
            pairs: m.pairs,
            note: CENTRED_NOTE.to_string(),
        })
    }
}

/// The centred statistics of a matrix, in one call (CLI, tests).
pub fn centred(matrix: &Matrix) -> Result<Centred, CentredError> {
    CentredPass::new(matrix)?.run()
}
