//! A histogram in a link: its range, its bins' counts quantised to 16 bits, the empty ends left
//! out and the rest as small differences, with the bound on what quantising costs each bin.

use serde::{Deserialize, Serialize};

use super::{PermalinkError, COUNT_LEVELS, MAX_HISTOGRAM_BINS};
use crate::pass::stats::{Histogram, SampledHistogram};

/// A histogram as its range, bin count and quantised counts of the bins from the first to the last
/// non-empty one (the empty ends of a [−1, 1] histogram are most of it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactHistogram {
    pub lo: f64,
    pub hi: f64,
    pub bins: u32,
    pub below: u64,
    pub above: u64,
    pub pairs: u64,
    pub rows: u64,
    /// The largest count, exactly: the scale of the levels ([`quantise_counts`]).
    pub largest: u64,
    /// Index of the first bin stored; bins outside `first..first + deltas.len()` are empty.
    pub first: u32,
    /// Each stored bin's level minus the previous one's (the first's minus 0): a histogram is
    /// smooth, so the differences are small and their zigzag varints short.
    pub deltas: Vec<i32>,
}

/// The top level of a histogram whose largest count is `largest`: counts up to 65535 are stored
/// as they are, larger ones scaled down to 16 bits.
pub fn top_level(largest: u64) -> u64 {
    largest.min(COUNT_LEVELS)
}

/// Scales counts to `0..=top` with `top = min(largest, 65535)`; the largest is returned exactly.
///
/// Level `q = round(c · top / largest)`, raised to 1 for any non-zero count so a sparse tail stays
/// visible; [`dequantise_counts`] returns `round(q · largest / top)`. With `step = largest / top`
/// (1 while `largest ≤ 65535`, else `largest / 65535`):
/// - every count is exact when `largest ≤ 65535`;
/// - zero stays zero, non-zero stays non-zero, the largest count is exact;
/// - a count `c ≥ step / 2` comes back within `step / 2 + 1`;
/// - a smaller non-zero count (raised to level 1) comes back as `round(step)`, within `step`.
///
/// So `|decoded − original| ≤ max(step / 2 + 1, step)` for every bin: for the 2048-row sample
/// (~2·10⁶ pairs, largest bin ~10⁵) that is a few counts, below a pixel at any chart height.
pub fn quantise_counts(counts: &[u64]) -> (u64, Vec<u16>) {
    let largest = counts.iter().copied().max().unwrap_or(0);
    if largest == 0 {
        return (0, vec![0; counts.len()]);
    }
    let top = top_level(largest) as u128;
    let levels = counts
        .iter()
        .map(|&c| {
            let q = (c as u128 * top + largest as u128 / 2) / largest as u128;
            let q = if c > 0 { q.max(1) } else { q };
            u16::try_from(q).unwrap_or(u16::MAX)
        })
        .collect();
    (largest, levels)
}

/// The counts [`quantise_counts`] stands for.
pub fn dequantise_counts(largest: u64, levels: &[u16]) -> Vec<u64> {
    let top = top_level(largest).max(1) as u128;
    levels
        .iter()
        .map(|&q| {
            let c = (q as u128 * largest as u128 + top / 2) / top;
            u64::try_from(c).unwrap_or(u64::MAX)
        })
        .collect()
}

impl CompactHistogram {
    pub fn from_report(h: &SampledHistogram) -> Self {
        let (largest, levels) = quantise_counts(&h.counts);
        let first = levels.iter().position(|&q| q > 0).unwrap_or(levels.len());
        let last = levels.iter().rposition(|&q| q > 0).map_or(first, |i| i + 1);
        let mut previous = 0i32;
        let deltas = levels
            .get(first..last)
            .unwrap_or_default()
            .iter()
            .map(|&q| {
                let d = q as i32 - previous;
                previous = q as i32;
                d
            })
            .collect();
        Self {
            lo: h.lo,
            hi: h.hi,
            bins: u32::try_from(h.counts.len()).unwrap_or(u32::MAX),
            below: h.below,
            above: h.above,
            pairs: h.pairs_in_histogram,
            rows: h.rows_in_histogram,
            largest,
            first: u32::try_from(first).unwrap_or(u32::MAX),
            deltas,
        }
    }

    pub(super) fn into_report(self, name: &'static str) -> Result<SampledHistogram, PermalinkError> {
        let implausible = |value: String| Err(PermalinkError::Implausible { field: name, value });
        if !(self.lo.is_finite() && self.hi.is_finite() && self.lo < self.hi) {
            return implausible(format!("range [{}, {}]", self.lo, self.hi));
        }
        if self.bins == 0 || self.bins > MAX_HISTOGRAM_BINS {
            return implausible(format!("{} bins", self.bins));
        }
        let end = self.first as u64 + self.deltas.len() as u64;
        if end > self.bins as u64 {
            return implausible(format!("bins {}..{end} of {}", self.first, self.bins));
        }
        let top = top_level(self.largest);
        let mut levels = Vec::with_capacity(self.deltas.len());
        let mut level = 0i64;
        for &d in &self.deltas {
            level += d as i64;
            match u16::try_from(level) {
                Ok(q) if q as u64 <= top => levels.push(q),
                _ => return implausible(format!("level {level} above the top level {top}")),
            }
        }
        let n = self.rows as u128;
        let outside = self.below as u128 + self.above as u128;
        if self.pairs as u128 > n * n.saturating_sub(1) / 2
            || outside > self.pairs as u128
            || self.largest > self.pairs
            // The largest bin is the one at the top level, and only an empty histogram has none.
            || levels.iter().max().map_or(0, |&q| q as u64) != top
        {
            return implausible(format!(
                "{} pairs of {} rows, {} below, {} above, largest bin {}",
                self.pairs, self.rows, self.below, self.above, self.largest
            ));
        }
        let Histogram { edges, .. } = Histogram::new(self.lo, self.hi, self.bins as usize);
        let mut counts = vec![0u64; self.bins as usize];
        for (slot, c) in counts.iter_mut().skip(self.first as usize).zip(dequantise_counts(self.largest, &levels)) {
            *slot = c;
        }
        Ok(SampledHistogram {
            lo: self.lo,
            hi: self.hi,
            edges,
            counts,
            below: self.below,
            above: self.above,
            pairs_in_histogram: self.pairs,
            rows_in_histogram: self.rows,
        })
    }
}
