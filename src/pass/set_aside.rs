//! The pass's side of rows set aside as never trained ([`crate::read::untrained`]): the histogram
//! sample's pairs kept apart by which rules name their rows, and the exact moments over all pairs
//! of the rows that remain, from the pass's own s and G (`docs/method.md` §9):
//! s' = s − Σ_S uᵢ, G' = G − Σ_S uᵢuᵢᵀ, and the diagonal terms likewise. That costs one Gram update
//! of the |S| rows, O(|S|·d²), and one walk over G, not a second pass over the matrix.

use crate::pass::accumulate::{PairAccumulator, RowPairs};
use crate::pass::kernel::{self, PackedGram, TILE_A};
use crate::pass::stats::{
    pairs_by_row_id, BottomK, GramMoments, GramScalars, Histogram, Moments, TopK, TopPair, ANTIPODAL_PAIRS,
    HISTOGRAM_BINS, TOP_PAIRS,
};
use crate::read::untrained::RowRanges;

/// Pairs kept per class of [`AsidePairs`]: more than shown, so that the list without a rule's
/// rows found after the pass (the suspected ones) is still full once they are filtered out.
pub const CLASS_TOP_PAIRS: usize = 64;

/// Masks of rules: three rules, so eight classes of pairs.
const CLASSES: usize = 8;

/// The sample pairs of one class: those whose two rows' rules together make one mask.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskedPairs {
    pub full: Histogram,
    pub sum: f64,
    pub sum_sq: f64,
    pub pairs: u64,
    pub top: TopK,
    pub opposed: BottomK,
}

impl MaskedPairs {
    fn new() -> Self {
        Self {
            full: Histogram::new(-1.0, 1.0, HISTOGRAM_BINS),
            sum: 0.0,
            sum_sq: 0.0,
            pairs: 0,
            top: TopK::new(CLASS_TOP_PAIRS),
            opposed: BottomK::new(CLASS_TOP_PAIRS),
        }
    }
}

/// The histogram sample's pairs by the rules that name their rows: pair (i, j) goes to class
/// mask(i) | mask(j), so the pairs without any of the rules in a set `enabled` are exactly the
/// classes `m` with `m & enabled == 0`, for every `enabled` the user may switch to.
#[derive(Clone, Debug, PartialEq)]
pub struct AsidePairs {
    /// Per sample row, the rules naming it.
    pub row_mask: Vec<u8>,
    pub classes: Vec<MaskedPairs>,
}

impl AsidePairs {
    /// For sample rows whose masks are `row_mask`; None when no row has one (nothing to keep apart).
    pub fn new(row_mask: Vec<u8>) -> Option<Self> {
        row_mask
            .iter()
            .any(|&m| m != 0)
            .then(|| Self { row_mask, classes: (0..CLASSES).map(|_| MaskedPairs::new()).collect() })
    }

    #[inline]
    pub fn add(&mut self, i: usize, j: usize, cos: f64) {
        let m = self.row_mask.get(i).copied().unwrap_or(0) | self.row_mask.get(j).copied().unwrap_or(0);
        if let Some(c) = self.classes.get_mut(m as usize % CLASSES) {
            c.full.add(cos);
            c.sum += cos;
            c.sum_sq += cos * cos;
            c.pairs += 1;
            c.top.offer(i, j, cos);
            c.opposed.offer(i, j, cos);
        }
    }

    fn kept(&self, enabled: u8) -> impl Iterator<Item = &MaskedPairs> {
        self.classes.iter().enumerate().filter(move |(m, _)| *m as u8 & enabled == 0).map(|(_, c)| c)
    }

    /// μ, σ of the sample's pairs among rows no rule in `enabled` names.
    pub fn kept_moments(&self, enabled: u8) -> Option<Moments> {
        let (mut s, mut s2, mut n) = (0.0, 0.0, 0u64);
        for c in self.kept(enabled) {
            s += c.sum;
            s2 += c.sum_sq;
            n += c.pairs;
        }
        if n == 0 {
            return None;
        }
        let (mu, mean_sq) = (s / n as f64, s2 / n as f64);
        let rows = self.row_mask.iter().filter(|&&m| m & enabled == 0).count() as u64;
        Some(Moments { rows, pairs: n, mu, mean_sq, sigma: (mean_sq - mu * mu).max(0.0).sqrt() })
    }

    /// The most similar sample pairs among rows no rule in `enabled` names and outside `also`
    /// (rows set aside after the pass), by row id (`row_ids` of the sample rows).
    pub fn kept_top(&self, enabled: u8, row_ids: &[u64], also: &RowRanges) -> Vec<TopPair> {
        let all = self.kept(enabled).flat_map(|c| c.top.sorted()).collect();
        kept_pairs(all, row_ids, also, TOP_PAIRS, |a: &f64, b: &f64| b.total_cmp(a))
    }

    /// The most opposed sample pairs among the same rows as [`AsidePairs::kept_top`], most opposed first.
    pub fn kept_opposed(&self, enabled: u8, row_ids: &[u64], also: &RowRanges) -> Vec<TopPair> {
        let all = self.kept(enabled).flat_map(|c| c.opposed.sorted()).collect();
        kept_pairs(all, row_ids, also, ANTIPODAL_PAIRS, f64::total_cmp)
    }

    /// Counts over the full histogram's bins of the pairs with a row some rule in `enabled` names.
    pub fn aside_counts(&self, enabled: u8) -> Vec<u64> {
        let mut counts = vec![0u64; HISTOGRAM_BINS];
        for (m, c) in self.classes.iter().enumerate() {
            if m as u8 & enabled != 0 {
                for (a, b) in counts.iter_mut().zip(&c.full.counts) {
                    *a += b;
                }
            }
        }
        counts
    }
}

/// The first `k` of the classes' pairs `all` (sample indices) in the order `by` puts their cosines,
/// ties to the smaller pair, without any pair with a row in `also`.
fn kept_pairs(
    mut all: Vec<(usize, usize, f64)>,
    row_ids: &[u64],
    also: &RowRanges,
    k: usize,
    by: impl Fn(&f64, &f64) -> std::cmp::Ordering,
) -> Vec<TopPair> {
    let id = |k: usize| row_ids.get(k).copied().unwrap_or(k as u64);
    all.retain(|&(i, j, _)| !also.contains(id(i)) && !also.contains(id(j)));
    all.sort_by(|a, b| by(&a.2, &b.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
    all.truncate(k);
    pairs_by_row_id(all, row_ids)
}

/// Reads unit rows of the matrix for the removal: calls `each` with chunks of the kept (usable)
/// rows among `ranges`, `dim_padded` f64 values each (zero past d), as the pass normalised them.
pub trait UnitRows {
    fn for_each_chunk(&self, ranges: &RowRanges, each: &mut dyn FnMut(&[f64])) -> Result<(), String>;
}

/// A band of G's triangle to hold at once while removing: 256 MiB (d ≤ 8192 in one).
const REMOVAL_BAND_BYTES: usize = 256 << 20;

/// Exact moments over all pairs of the rows of a finished pass but those in `aside`
/// (`rows`: the matrix's row count). The Gram route subtracts the set-aside rows' own s and G
/// (read through `read`, once per band of G it holds at a time); the row route, which keeps the
/// rows themselves and no G, sums the rest again (it is only taken for few rows).
pub fn moments_without(
    acc: &PairAccumulator,
    aside: &RowRanges,
    rows: u64,
    read: &dyn UnitRows,
) -> Result<Option<Moments>, String> {
    match acc {
        PairAccumulator::Gram(g) => gram_without(g, aside, read),
        PairAccumulator::Rows(r) => {
            let rest = complement(aside, rows);
            let mut kept = RowPairs::new(rest.rows(), r.dim());
            read.for_each_chunk(&rest, &mut |chunk| kept.add_unit_rows(chunk))?;
            Ok(kept.moments())
        }
    }
}

/// The rows of `0..rows` outside `aside`.
pub fn complement(aside: &RowRanges, rows: u64) -> RowRanges {
    let mut out = Vec::new();
    let mut at = 0;
    for &(s, e) in aside.ranges() {
        if s > at {
            out.push(at..s.min(rows));
        }
        at = at.max(e);
    }
    if at < rows {
        out.push(at..rows);
    }
    RowRanges::from_ranges(out)
}

fn gram_without(g: &GramMoments, aside: &RowRanges, read: &dyn UnitRows) -> Result<Option<Moments>, String> {
    if g.pending_rows() > 0 {
        return Err("the pass still holds rows back from G".into());
    }
    let dim = g.dim();
    let panels = kernel::padded_dim(dim) / TILE_A;
    let whole = PackedGram::new(dim).stored_len().max(1) * 8;
    let bands = whole.div_ceil(REMOVAL_BAND_BYTES).max(1);
    let per_band = panels.div_ceil(bands).max(1);
    let mut frobenius = 0.0f64;
    let mut scalars: Option<(GramScalars, Vec<f64>, u64)> = None;
    let mut start = 0;
    while start < panels.max(1) {
        let band = start..(start + per_band).min(panels);
        let mut removed = GramMoments::new(dim);
        if bands > 1 {
            removed.set_band(band.clone());
        }
        read.for_each_chunk(aside, &mut |chunk| {
            for _ in chunk.chunks_exact(kernel::padded_dim(dim).max(1)) {
                removed.counts.record(crate::read::matrix::RowFate::Kept);
            }
            removed.add_unit_rows(chunk);
        })?;
        removed.flush();
        frobenius += difference_frobenius(g, &removed, band.start * TILE_A..band.end * TILE_A);
        if scalars.is_none() {
            scalars = Some((removed.scalars_so_far(), removed.sum().to_vec(), removed.counts.kept));
        }
        start = band.end;
        if panels == 0 {
            break;
        }
    }
    let Some((r, r_sum, r_rows)) = scalars else { return Ok(None) };
    let all = g.scalars_so_far();
    let rest_sum_sq: f64 =
        g.sum().iter().zip(r_sum.iter().chain(std::iter::repeat(&0.0))).map(|(a, b)| (a - b) * (a - b)).sum();
    let rest = GramScalars {
        rows: all.rows.saturating_sub(r_rows),
        sum_sq: rest_sum_sq,
        sum_norm2: all.sum_norm2 - r.sum_norm2,
        sum_norm4: all.sum_norm4 - r.sum_norm4,
    };
    Ok(rest.moments(frobenius))
}

/// Σ (G − R)²_ab over the rows `a` of the triangle in `rows` (each entry b > a twice, the diagonal
/// once), G with its centre's terms ([`GramMoments::gram_entry`]).
fn difference_frobenius(g: &GramMoments, removed: &GramMoments, rows: std::ops::Range<usize>) -> f64 {
    let dim = g.dim();
    let mut total = 0.0f64;
    for a in rows.start..rows.end.min(dim) {
        let mut off = 0.0f64;
        for b in a + 1..dim {
            let x = g.gram_entry(a, b) - removed.gram_entry(a, b);
            off += x * x;
        }
        let diag = g.gram_entry(a, a) - removed.gram_entry(a, a);
        total += diag * diag + 2.0 * off;
    }
    total
}
