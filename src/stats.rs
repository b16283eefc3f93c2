//! Statistics of pairwise cosines, as mergeable partial sums (`shared/paper.md` §1).
//!
//! [`GramMoments`] gives the exact mean and spread over **all** pairs from s = Σuᵢ and G = Σuᵢuᵢᵀ
//! without a V×V matrix; [`PairSample`] keeps individual cosines of a row sample for the histogram and
//! for the uncertainty of a running estimate. Both add up across workers with `merge`.

use serde::{Deserialize, Serialize};

use crate::kernel::{self, PackedGram};

/// Why a row was left out (`shared/paper.md` §1: zero rows are dropped; so are non-finite ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFate {
    Kept,
    Zero,
    NonFinite,
}

/// Normalises one row to unit length into `out` (zero-padded to `out.len()`), in `f32` or `f64`.
/// The norm is taken in f64 so that tiny and huge rows normalise alike. The exact pass keeps f64
/// unit rows: rounding them to f32 alone moves μ by up to 1e-8.
pub fn normalise_row<T: UnitValue>(row: &[f32], out: &mut [T]) -> RowFate {
    let mut norm_sq = 0.0f64;
    for &x in row {
        if !x.is_finite() {
            return RowFate::NonFinite;
        }
        norm_sq += (x as f64) * (x as f64);
    }
    if norm_sq == 0.0 {
        return RowFate::Zero;
    }
    let inv = 1.0 / norm_sq.sqrt();
    for (o, &x) in out.iter_mut().zip(row) {
        *o = T::from_f64(x as f64 * inv);
    }
    for o in out.iter_mut().skip(row.len()) {
        *o = T::from_f64(0.0);
    }
    RowFate::Kept
}

/// The element types unit rows are kept in.
pub trait UnitValue: Copy {
    fn from_f64(x: f64) -> Self;
}
impl UnitValue for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}
impl UnitValue for f64 {
    fn from_f64(x: f64) -> Self {
        x
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

/// Running s = Σuᵢ, G = Σuᵢuᵢᵀ and the diagonal terms over the unit rows seen so far. Serialisable:
/// workers post their partials to the lead (`pass`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GramMoments {
    pub counts: RowCounts,
    dim: usize,
    sum: Vec<f64>,
    /// Σ‖uᵢ‖² and Σ‖uᵢ‖⁴ of the f32 unit rows actually used, so the diagonal is removed exactly.
    sum_norm2: f64,
    sum_norm4: f64,
    gram: PackedGram,
    /// The chunk packed for the kernel (reused; not part of the sums).
    #[serde(skip)]
    wide: Vec<f64>,
}

impl GramMoments {
    pub fn new(dim: usize) -> Self {
        Self {
            counts: RowCounts::default(),
            dim,
            sum: vec![0.0; kernel::padded_dim(dim)],
            sum_norm2: 0.0,
            sum_norm4: 0.0,
            gram: PackedGram::new(dim),
            wide: Vec::new(),
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Adds kept unit rows (`dim_padded` each, at most [`kernel::MAX_CHUNK_ROWS`]).
    pub fn add_unit_rows(&mut self, rows: &[f64]) {
        let d = self.gram.dim_padded();
        for row in rows.chunks_exact(d) {
            let mut n2 = 0.0f64;
            for (s, &x) in self.sum.iter_mut().zip(row) {
                *s += x;
                n2 += x * x;
            }
            self.sum_norm2 += n2;
            self.sum_norm4 += n2 * n2;
        }
        let k = kernel::pack_rows(rows, d, &mut self.wide);
        kernel::gram_update(&self.wide, k, &mut self.gram);
    }

    /// Exact moments over all pairs among the kept rows so far:
    /// Σ_{i≠j} cos = ‖s‖² − Σ‖uᵢ‖², Σ_{i≠j} cos² = ‖G‖_F² − Σ‖uᵢ‖⁴ (`shared/paper.md` §1).
    pub fn moments(&self) -> Option<Moments> {
        let s2: f64 = self.sum.iter().map(|x| x * x).sum();
        let g2 = self.gram.frobenius_sq();
        let magnitude = g2 + self.sum_norm4 + 2.0 * (s2 + self.sum_norm2);
        Moments::from_ordered_sums(self.counts.kept, s2 - self.sum_norm2, g2 - self.sum_norm4, magnitude)
    }

    /// s = Σuᵢ (zero-padded past `dim`).
    pub fn sum(&self) -> &[f64] {
        &self.sum
    }

    /// G = Σuᵢuᵢᵀ, upper triangle packed.
    pub fn gram(&self) -> &PackedGram {
        &self.gram
    }

    /// Adds another worker's partial sums over a disjoint set of rows.
    pub fn merge(&mut self, other: &GramMoments) {
        self.counts.merge(&other.counts);
        for (a, b) in self.sum.iter_mut().zip(&other.sum) {
            *a += b;
        }
        self.sum_norm2 += other.sum_norm2;
        self.sum_norm4 += other.sum_norm4;
        self.gram.merge(&other.gram);
    }

    /// Bytes of accumulator memory (dominated by the d²/2 Gram triangle).
    pub fn bytes(&self) -> usize {
        self.gram.bytes() + self.sum.len() * 8
    }
}

/// Σ cos and Σ cos² over the pairs i < j of one block, from its `k × k` matrix of dot products:
/// the within-block stratum of a running estimate (`analysis`).
pub fn within_block_sums(dots: &[f32], k: usize) -> (f64, f64, u64) {
    let mut sums = (0.0f64, 0.0f64, 0u64);
    for i in 0..k {
        for &c in dots.get(i * k + i + 1..(i + 1) * k).unwrap_or(&[]) {
            let c = c as f64;
            sums.0 += c;
            sums.1 += c * c;
            sums.2 += 1;
        }
    }
    sums
}

/// A histogram over `[lo, hi]` with equal bins; values outside land in the end bins' outside counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub lo: f64,
    pub hi: f64,
    /// `counts.len() + 1` bin edges.
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
    /// Pairs below `lo` / above `hi` (only for a zoomed histogram).
    pub below: u64,
    pub above: u64,
}

impl Histogram {
    pub fn new(lo: f64, hi: f64, bins: usize) -> Self {
        let edges = (0..=bins).map(|i| lo + (hi - lo) * i as f64 / bins as f64).collect();
        Self { lo, hi, edges, counts: vec![0; bins], below: 0, above: 0 }
    }

    #[inline]
    pub fn add(&mut self, x: f64) {
        let bins = self.counts.len();
        if x < self.lo {
            self.below += 1;
        } else if x > self.hi {
            self.above += 1;
        } else {
            let i = (((x - self.lo) / (self.hi - self.lo)) * bins as f64) as usize;
            // x == hi belongs to the last bin.
            if let Some(c) = self.counts.get_mut(i.min(bins.saturating_sub(1))) {
                *c += 1;
            }
        }
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.below += o.below;
        self.above += o.above;
    }
}

/// Bins over [−1, 1], as the paper's Fig. 1/2.
pub const HISTOGRAM_BINS: usize = 300;
/// The zoom of Fig. 1/2: [−0.2, 0.2].
pub const ZOOM_HALF_WIDTH: f64 = 0.2;

/// Individual cosines among a sample of rows: histograms, and the moments needed for the
/// uncertainty of a partial pass (the U-statistic variance terms ζ₁, ζ₂). The sample is made of
/// whole blocks of adjacent rows; pairs within one block are left out when the sample does not
/// cover the matrix, because vocabulary neighbours are related more often than random pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct PairSample {
    pub full: Histogram,
    pub zoom: Histogram,
    /// Σ cos^p for p = 1..4 over the pairs recorded.
    pub power_sums: [f64; 4],
    pub pairs: u64,
    /// Per sample row: its block, and Σ_j cos(i, j), Σ_j cos²(i, j) and the count over its partners.
    pub block: Vec<u32>,
    pub row_sum: Vec<f64>,
    pub row_sum_sq: Vec<f64>,
    pub row_pairs: Vec<u64>,
}

impl PairSample {
    /// A sample whose row `i` belongs to block `block[i]`.
    pub fn new(block: Vec<u32>) -> Self {
        let rows = block.len();
        Self {
            full: Histogram::new(-1.0, 1.0, HISTOGRAM_BINS),
            zoom: Histogram::new(-ZOOM_HALF_WIDTH, ZOOM_HALF_WIDTH, HISTOGRAM_BINS),
            power_sums: [0.0; 4],
            pairs: 0,
            block,
            row_sum: vec![0.0; rows],
            row_sum_sq: vec![0.0; rows],
            row_pairs: vec![0; rows],
        }
    }

    /// Records cos(i, j) for sample rows i ≠ j.
    #[inline]
    pub fn add_pair(&mut self, i: usize, j: usize, cos: f32) {
        // Rounding can carry |cos| a hair past 1 for (near) duplicate rows.
        let c = (cos as f64).clamp(-1.0, 1.0);
        self.full.add(c);
        self.zoom.add(c);
        let c2 = c * c;
        self.power_sums[0] += c;
        self.power_sums[1] += c2;
        self.power_sums[2] += c2 * c;
        self.power_sums[3] += c2 * c2;
        self.pairs += 1;
        for k in [i, j] {
            if let (Some(s), Some(s2), Some(n)) =
                (self.row_sum.get_mut(k), self.row_sum_sq.get_mut(k), self.row_pairs.get_mut(k))
            {
                *s += c;
                *s2 += c2;
                *n += 1;
            }
        }
    }

    /// Number of sample rows.
    pub fn rows(&self) -> usize {
        self.row_sum.len()
    }

    /// μ, σ of the sampled pairs.
    pub fn moments(&self) -> Option<Moments> {
        if self.pairs == 0 {
            return None;
        }
        let p = self.pairs as f64;
        let (mu, mean_sq) = (self.power_sums[0] / p, self.power_sums[1] / p);
        let sigma = (mean_sq - mu * mu).max(0.0).sqrt();
        Some(Moments { rows: self.rows() as u64, pairs: self.pairs, mu, mean_sq, sigma })
    }
}
