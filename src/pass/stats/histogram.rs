//! Histograms of cosines over [−1, 1] with equal bins.

use serde::{Deserialize, Serialize};

/// A histogram over `[lo, hi]` with equal bins; values outside land in the end bins' outside counts.
/// An accumulator: the Report carries a [`SampledHistogram`] made from it.
#[derive(Clone, Debug, PartialEq)]
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

/// A histogram of a sample, as the views and the Report carry it: its bins and counts, with how
/// many pairs (or, for the per-token alignment, tokens) and rows it holds. The pass and the
/// explain layer both make one, so it lives here with [`Histogram`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampledHistogram {
    pub lo: f64,
    pub hi: f64,
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
    /// Pairs outside [lo, hi] (the zoom only).
    pub below: u64,
    pub above: u64,
    pub pairs_in_histogram: u64,
    pub rows_in_histogram: u64,
}

impl SampledHistogram {
    pub fn new(h: &Histogram, pairs: u64, rows: u64) -> Self {
        Self {
            lo: h.lo,
            hi: h.hi,
            edges: h.edges.clone(),
            counts: h.counts.clone(),
            below: h.below,
            above: h.above,
            pairs_in_histogram: pairs,
            rows_in_histogram: rows,
        }
    }
}

/// Bins over [−1, 1], as the paper's Fig. 1/2.
pub const HISTOGRAM_BINS: usize = 300;
/// The zoom of Fig. 1/2: [−0.2, 0.2].
pub const ZOOM_HALF_WIDTH: f64 = 0.2;
