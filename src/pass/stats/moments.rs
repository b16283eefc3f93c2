//! Mean and spread of cosines over pairs, the scalars of a Gram pass and the row counts.

use serde::{Deserialize, Serialize};

use crate::read::matrix::RowFate;

/// The mean of unit rows stored `dim` values each, in f64; `None` when there are none. The f32
/// Gram pass subtracts the histogram sample's mean row so that its f32 sums stay small.
pub fn mean_row(units: &[f32], dim: usize) -> Option<Vec<f64>> {
    let n = units.len() / dim.max(1);
    if n == 0 {
        return None;
    }
    let mut mean = vec![0.0f64; dim];
    for row in units.chunks_exact(dim) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += x as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    Some(mean)
}

/// The sums over a set of unit rows that, with ‖G‖_F², give the moments of all their pairs
/// (`docs/method.md` §1): Σ_{i≠j} cos = ‖s‖² − Σ‖uᵢ‖², Σ_{i≠j} cos² = ‖G‖_F² − Σ‖uᵢ‖⁴.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GramScalars {
    /// Rows in the sums.
    pub rows: u64,
    /// ‖s‖², s = Σuᵢ.
    pub sum_sq: f64,
    /// Σ‖uᵢ‖² and Σ‖uᵢ‖⁴ (each ‖uᵢ‖ is 1 up to rounding).
    pub sum_norm2: f64,
    pub sum_norm4: f64,
}

impl GramScalars {
    /// The moments of all pairs, given ‖G‖_F² over the same rows.
    pub fn moments(&self, frobenius_sq: f64) -> Option<Moments> {
        let (s2, n2, n4, g2) = (self.sum_sq, self.sum_norm2, self.sum_norm4, frobenius_sq);
        Moments::from_ordered_sums(self.rows, s2 - n2, g2 - n4, g2 + n4 + 2.0 * (s2 + n2))
    }
}

/// Counts of rows seen, kept and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowCounts {
    pub seen: u64,
    pub kept: u64,
    pub dropped_zero: u64,
    pub dropped_nonfinite: u64,
}

impl RowCounts {
    pub fn record(&mut self, fate: RowFate) {
        self.seen += 1;
        match fate {
            RowFate::Kept => self.kept += 1,
            RowFate::Zero => self.dropped_zero += 1,
            RowFate::NonFinite => self.dropped_nonfinite += 1,
        }
    }
    pub fn dropped(&self) -> u64 {
        self.dropped_zero + self.dropped_nonfinite
    }
    pub fn merge(&mut self, o: &RowCounts) {
        self.seen += o.seen;
        self.kept += o.kept;
        self.dropped_zero += o.dropped_zero;
        self.dropped_nonfinite += o.dropped_nonfinite;
    }
}

/// Mean and spread of cosines over pairs i < j.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// Rows the pairs are drawn from.
    pub rows: u64,
    /// n(n−1)/2.
    pub pairs: u64,
    /// μ, mean cosine.
    pub mu: f64,
    /// E[cos²].
    pub mean_sq: f64,
    /// σ, population standard deviation over pairs.
    pub sigma: f64,
}

impl Moments {
    /// From Σ_{i≠j} cos and Σ_{i≠j} cos² over ordered pairs of `n` rows. `magnitude` bounds the
    /// size of the terms these sums were obtained from by subtraction (0 when summed directly).
    pub fn from_ordered_sums(n: u64, sum: f64, sum_sq: f64, magnitude: f64) -> Option<Moments> {
        if n < 2 {
            return None;
        }
        let ordered = n as f64 * (n as f64 - 1.0);
        let mu = sum / ordered;
        let mean_sq = sum_sq / ordered;
        // σ² = E[cos²] − μ² cancels when σ ≪ |μ| (near-identical rows, or V = 2 where σ = 0 by
        // definition). A variance inside the rounding noise of the terms it came from is zero, not
        // √(noise) ≈ 1e-8: the formula cannot resolve it.
        let var = mean_sq - mu * mu;
        let noise = 64.0 * f64::EPSILON * (magnitude / ordered + mean_sq.abs());
        let sigma = if var <= noise { 0.0 } else { var.sqrt() };
        Some(Moments { rows: n, pairs: n * (n - 1) / 2, mu, mean_sq, sigma })
    }
}
