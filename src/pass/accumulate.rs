//! The exact pass's accumulator, sized from the validated shape and the rows the pass will visit
//! (memory bounded by the work, not by what a header claims).
//!
//! Both routes give the same μ and σ over all pairs i < j of the kept unit rows (`docs/method.md` §1):
//! - [`Route::Gram`]: s = Σuᵢ and the d×d triangle G = Σuᵢuᵢᵀ ([`GramMoments`]), about 4·d² bytes,
//!   whatever the number of rows. Right for a vocabulary much larger than d.
//! - [`Route::Rows`]: the V unit rows themselves ([`RowPairs`]), 8·V·d bytes, and Σ cos, Σ cos² over
//!   the pairs computed directly as rows arrive (V²·d/2 multiply-adds instead of V·d²/2). Right
//!   when V < d/2: two rows of d = 16384 hold 256 KiB instead of a 1 GiB Gram.
//!
//! [`PairAccumulator::new`] takes whichever holds fewer bytes. Both merge partial sums of disjoint
//! row sets (workers), and both hold what the spectrum of G/V needs (`explain::geometry`).

use crate::pass::kernel::{self, BandValues, Precision};
use crate::pass::shares::PassError;
use crate::pass::stats::{GramMoments, Moments, RowCounts};
use crate::pass::wire::{unreadable, width, RowsMessage};
use crate::read::matrix::RowFate;

/// Which accumulator a pass uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// s and the d×d Gram triangle.
    Gram,
    /// The unit rows and directly summed pair cosines.
    Rows,
}

/// Bytes the Gram route holds for width `dim`: the packed triangle (panels of 4 rows from a
/// lane-aligned column, `kernel::PackedGram`) and s.
pub fn gram_bytes(dim: usize) -> u64 {
    let d = kernel::padded_dim(dim) as u64;
    let tile = kernel::TILE_A as u64;
    let lanes = kernel::LANES as u64;
    let triangle: u64 = (0..d / tile).map(|p| tile * (d - p * tile / lanes * lanes)).sum();
    (triangle + d) * 8
}

/// Bytes the row route holds for `rows` unit rows of width `dim` (f64, padded) and s.
pub fn rows_bytes(rows: u64, dim: usize) -> u64 {
    let d = kernel::padded_dim(dim) as u64;
    rows.saturating_add(1).saturating_mul(d).saturating_mul(8)
}

/// The route that holds fewer bytes for a pass over at most `rows` rows of width `dim`.
pub fn route_for(rows: u64, dim: usize) -> Route {
    if rows_bytes(rows, dim) < gram_bytes(dim) {
        Route::Rows
    } else {
        Route::Gram
    }
}

/// Bytes [`PairAccumulator::new`] will hold for a pass over at most `rows` rows of width `dim`.
pub fn planned_bytes(rows: u64, dim: usize) -> u64 {
    match route_for(rows, dim) {
        Route::Rows => rows_bytes(rows, dim),
        Route::Gram => gram_bytes(dim),
    }
}

/// The most rows of width `dim` the row route keeps within `budget` bytes.
pub fn rows_within(budget: u64, dim: usize) -> u64 {
    let per_row = kernel::padded_dim(dim).max(1) as u64 * 8;
    (budget / per_row).saturating_sub(1)
}

/// The V unit rows kept so far, and Σ cos, Σ cos² over their pairs i < j.
/// A worker posts its partial to the lead as `pass::wire::RowsMessage`.
#[derive(Clone, Debug, PartialEq)]
pub struct RowPairs {
    pub counts: RowCounts,
    dim: usize,
    dim_padded: usize,
    /// Kept unit rows, `dim_padded` f64 each.
    units: Vec<f64>,
    sum: Vec<f64>,
    sum_cos: f64,
    sum_cos_sq: f64,
}

impl RowPairs {
    /// Room for `rows` unit rows is reserved up front, so [`RowPairs::bytes`] is what the pass
    /// will hold and no doubling of the buffer overshoots it.
    pub fn new(rows: u64, dim: usize) -> Self {
        let dim_padded = kernel::padded_dim(dim);
        let reserve = usize::try_from(rows).unwrap_or(usize::MAX).saturating_mul(dim_padded);
        let mut units = Vec::new();
        // A reservation that cannot be had is left to grow with the rows actually kept.
        let _ = units.try_reserve_exact(reserve);
        Self {
            counts: RowCounts::default(),
            dim,
            dim_padded,
            units,
            sum: vec![0.0; dim_padded],
            sum_cos: 0.0,
            sum_cos_sq: 0.0,
        }
    }

    /// Adds kept unit rows (`dim_padded` each): each is dotted with every row before it.
    pub fn add_unit_rows(&mut self, rows: &[f64]) {
        let d = self.dim_padded;
        if d == 0 {
            return;
        }
        for row in rows.chunks_exact(d) {
            for earlier in self.units.chunks_exact(d) {
                let c = dot(row, earlier);
                self.sum_cos += c;
                self.sum_cos_sq += c * c;
            }
            for (s, &x) in self.sum.iter_mut().zip(row) {
                *s += x;
            }
            self.units.extend_from_slice(row);
        }
    }

    /// The tensor's width d (the rows are kept padded to the kernel's lanes).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The padded width each kept row occupies in [`RowPairs::units`].
    pub fn dim_padded(&self) -> usize {
        self.dim_padded
    }

    /// Rows kept so far.
    pub fn rows(&self) -> usize {
        self.units.len() / self.dim_padded.max(1)
    }

    /// Exact moments over all pairs among the kept rows (summed directly: nothing cancels).
    pub fn moments(&self) -> Option<Moments> {
        Moments::from_ordered_sums(self.rows() as u64, 2.0 * self.sum_cos, 2.0 * self.sum_cos_sq, 0.0)
    }

    /// Adds another partial over a disjoint set of rows: its pairs, and the pairs across the two sets.
    pub fn merge(&mut self, other: &RowPairs) {
        let d = self.dim_padded;
        if d == 0 || other.dim_padded != d {
            return;
        }
        for row in other.units.chunks_exact(d) {
            for mine in self.units.chunks_exact(d) {
                let c = dot(row, mine);
                self.sum_cos += c;
                self.sum_cos_sq += c * c;
            }
        }
        self.sum_cos += other.sum_cos;
        self.sum_cos_sq += other.sum_cos_sq;
        for (a, b) in self.sum.iter_mut().zip(&other.sum) {
            *a += b;
        }
        self.units.extend_from_slice(&other.units);
        self.counts.merge(&other.counts);
    }

    /// s = Σuᵢ (zero-padded past `dim`).
    pub fn sum(&self) -> &[f64] {
        &self.sum
    }

    /// The kept unit rows, `dim_padded` each.
    pub fn units(&self) -> &[f64] {
        &self.units
    }

    /// Bytes held: the row buffer as reserved, and s.
    pub fn bytes(&self) -> usize {
        (self.units.capacity() + self.sum.len()) * 8
    }
}

/// a · b in f64, four running sums (lets the compiler vectorise; the order is fixed, so results
/// are reproducible).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (qa, qb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (qa.remainder(), qb.remainder());
    for (x, y) in qa.zip(qb) {
        for ((s, p), q) in acc.iter_mut().zip(x).zip(y) {
            *s += p * q;
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// The exact pass's partial sums on either route.
#[derive(Clone, Debug, PartialEq)]
pub enum PairAccumulator {
    Gram(GramMoments),
    Rows(RowPairs),
}

impl PairAccumulator {
    /// The smaller route ([`route_for`]) for a pass that will visit at most `rows` rows of width `dim`.
    pub fn new(rows: u64, dim: usize) -> Self {
        Self::with_precision(rows, dim, Precision::F64)
    }

    /// [`PairAccumulator::new`] whose Gram route runs the kernel at `precision`. The row route sums
    /// pair cosines in f64 whatever is asked: it is exact already and its cost is not the Gram's.
    pub fn with_precision(rows: u64, dim: usize, precision: Precision) -> Self {
        match route_for(rows, dim) {
            Route::Gram => PairAccumulator::Gram(GramMoments::with_precision(dim, precision)),
            Route::Rows => PairAccumulator::Rows(RowPairs::new(rows, dim)),
        }
    }

    /// The Gram kernel's arithmetic (f64 on the row route).
    pub fn precision(&self) -> Precision {
        match self {
            PairAccumulator::Gram(g) => g.precision(),
            PairAccumulator::Rows(_) => Precision::F64,
        }
    }

    /// Falls back to the f64 kernel. Only before any row was added: the f32 choice is made from the
    /// sample, before the pass.
    pub fn use_f64(&mut self) {
        if let PairAccumulator::Gram(g) = self {
            if g.counts.seen == 0 && g.precision() != Precision::F64 {
                let band = g.gram().panel_range();
                *g = GramMoments::with_precision(g.dim(), Precision::F64);
                g.set_band(band);
            }
        }
    }

    /// Keeps only `panels` of G (a share of a pass split by columns; [`GramMoments::set_band`]).
    /// Nothing on the row route, which is small enough to hold whole.
    pub fn set_band(&mut self, panels: std::ops::Range<usize>) {
        if let PairAccumulator::Gram(g) = self {
            g.set_band(panels);
        }
    }

    /// Whether this holds only a band of G.
    pub fn is_band(&self) -> bool {
        matches!(self, PairAccumulator::Gram(g) if g.is_band())
    }

    /// Takes in another share's band of G over the same rows ([`GramMoments::place_band`]).
    /// Its values come from `apart` when they were sent apart from the band.
    pub fn place_band(&mut self, other: &PairAccumulator, apart: Option<&dyn BandValues>) -> Result<(), String> {
        match (self, other) {
            (PairAccumulator::Gram(a), PairAccumulator::Gram(b)) => a.place_band_from(b, apart),
            _ => Err("a band of G came for a pass that sums pair cosines directly".into()),
        }
    }

    /// Centres the f32 Gram pass's rows ([`GramMoments::set_centre`]); nothing on the row route.
    pub fn set_centre(&mut self, centre: &[f64]) {
        if let PairAccumulator::Gram(g) = self {
            g.set_centre(centre);
        }
    }

    /// The Gram kernel's measured speed (None on the row route or without a clock).
    pub fn kernel_gflops(&self) -> Option<f64> {
        match self {
            PairAccumulator::Gram(g) => g.kernel_gflops(),
            PairAccumulator::Rows(_) => None,
        }
    }

    /// The matrix width the accumulator was made for.
    pub fn dim(&self) -> usize {
        match self {
            PairAccumulator::Gram(g) => g.dim(),
            PairAccumulator::Rows(r) => r.dim,
        }
    }

    pub fn route(&self) -> Route {
        match self {
            PairAccumulator::Gram(_) => Route::Gram,
            PairAccumulator::Rows(_) => Route::Rows,
        }
    }

    pub fn counts(&self) -> RowCounts {
        match self {
            PairAccumulator::Gram(g) => g.counts,
            PairAccumulator::Rows(r) => r.counts,
        }
    }

    /// Counts one row read, kept or dropped.
    pub fn record(&mut self, fate: RowFate) {
        match self {
            PairAccumulator::Gram(g) => g.counts.record(fate),
            PairAccumulator::Rows(r) => r.counts.record(fate),
        }
    }

    /// Adds kept unit rows (`kernel::padded_dim(dim)` f64 each, at most `kernel::MAX_CHUNK_ROWS`).
    pub fn add_unit_rows(&mut self, rows: &[f64]) {
        match self {
            PairAccumulator::Gram(g) => g.add_unit_rows(rows),
            PairAccumulator::Rows(r) => r.add_unit_rows(rows),
        }
    }

    /// Exact moments over all pairs among the kept rows so far.
    pub fn moments(&self) -> Option<Moments> {
        match self {
            PairAccumulator::Gram(g) => g.moments(),
            PairAccumulator::Rows(r) => r.moments(),
        }
    }

    /// The moments of the rows already through the Gram kernel (all of them after
    /// [`PairAccumulator::flush`]; [`GramMoments::moments_so_far`]): cheap, for running estimates.
    pub fn moments_so_far(&self) -> Option<Moments> {
        match self {
            PairAccumulator::Gram(g) => g.moments_so_far(),
            PairAccumulator::Rows(r) => r.moments(),
        }
    }

    /// Kept rows whose pairs the sums already hold (all of them on the row route, and after a flush).
    pub fn rows_in_sums(&self) -> u64 {
        match self {
            PairAccumulator::Gram(g) => g.counts.kept.saturating_sub(g.pending_rows() as u64),
            PairAccumulator::Rows(r) => r.rows() as u64,
        }
    }

    /// Runs the rows the f32 Gram pass holds back through the kernel ([`GramMoments::flush`]).
    pub fn flush(&mut self) {
        if let PairAccumulator::Gram(g) = self {
            g.flush();
        }
    }

    /// G's values, taken out to be sent apart ([`GramMoments::take_values`]); none on the row
    /// route, whose unit rows stay in the partial.
    pub fn take_values(&mut self) -> Vec<f64> {
        match self {
            PairAccumulator::Gram(g) => g.take_values(),
            PairAccumulator::Rows(_) => Vec::new(),
        }
    }

    /// s = Σuᵢ (zero-padded past `dim`).
    pub fn sum(&self) -> &[f64] {
        match self {
            PairAccumulator::Gram(g) => g.sum(),
            PairAccumulator::Rows(r) => r.sum(),
        }
    }

    /// [`PairAccumulator::merge`] of a partial whose G's values came apart from it
    /// ([`GramMoments::merge_from`]); values apart from a partial that holds no G are refused.
    pub fn merge_from(&mut self, other: &PairAccumulator, values: &dyn BandValues) -> Result<(), String> {
        match (&mut *self, other) {
            (PairAccumulator::Gram(a), PairAccumulator::Gram(b)) => a.merge_from(b, values),
            _ if values.is_empty() => {
                self.merge(other);
                Ok(())
            }
            (PairAccumulator::Rows(_), PairAccumulator::Gram(b)) => {
                self.merge(&PairAccumulator::Gram(b.with_values(values)?));
                Ok(())
            }
            (_, PairAccumulator::Rows(_)) => {
                Err("values of G came with a partial that sums pair cosines directly".into())
            }
        }
    }

    /// Adds another partial over a disjoint set of rows. Partials of one tensor take the same route;
    /// should they differ, the rows of the row route are added into the Gram.
    pub fn merge(&mut self, other: &PairAccumulator) {
        match (&mut *self, other) {
            (PairAccumulator::Gram(a), PairAccumulator::Gram(b)) => a.merge(b),
            (PairAccumulator::Rows(a), PairAccumulator::Rows(b)) => a.merge(b),
            (PairAccumulator::Gram(a), PairAccumulator::Rows(b)) => add_rows_to_gram(a, b),
            (PairAccumulator::Rows(a), PairAccumulator::Gram(b)) => {
                let mut g = b.clone();
                add_rows_to_gram(&mut g, a);
                *self = PairAccumulator::Gram(g);
            }
        }
    }

    /// Bytes of accumulator memory (`Report::accumulator_bytes`).
    pub fn bytes(&self) -> usize {
        match self {
            PairAccumulator::Gram(g) => g.bytes(),
            PairAccumulator::Rows(r) => r.bytes(),
        }
    }
}

impl<'a> From<&'a RowPairs> for RowsMessage<'a> {
    fn from(r: &'a RowPairs) -> Self {
        RowsMessage {
            counts: r.counts.into(),
            dim: r.dim as u64,
            units: std::borrow::Cow::Borrowed(r.units.as_slice()),
            sum: std::borrow::Cow::Borrowed(r.sum.as_slice()),
            sum_cos: r.sum_cos,
            sum_cos_sq: r.sum_cos_sq,
        }
    }
}

impl TryFrom<RowsMessage<'_>> for RowPairs {
    type Error = PassError;
    /// s and every kept row are padded to the width's lanes, and the rows are the kept ones.
    fn try_from(m: RowsMessage<'_>) -> Result<Self, PassError> {
        let d = m.sum.len();
        let dim = width(m.dim, d)?;
        if (d == 0 && !m.units.is_empty()) || !m.units.len().is_multiple_of(d.max(1)) {
            return Err(unreadable(format!(
                "a row partial of d = {dim} with {} values of s, {} of rows",
                d,
                m.units.len()
            )));
        }
        let counts: RowCounts = m.counts.try_into()?;
        let rows = m.units.len() / d.max(1);
        if rows as u64 != counts.kept {
            return Err(unreadable(format!("a row partial of {rows} rows that counts {} kept", counts.kept)));
        }
        Ok(RowPairs {
            counts,
            dim,
            dim_padded: d,
            units: m.units.into_owned(),
            sum: m.sum.into_owned(),
            sum_cos: m.sum_cos,
            sum_cos_sq: m.sum_cos_sq,
        })
    }
}

fn add_rows_to_gram(g: &mut GramMoments, r: &RowPairs) {
    let d = kernel::padded_dim(r.dim);
    for chunk in r.units.chunks(d.max(1) * kernel::MAX_CHUNK_ROWS) {
        g.add_unit_rows(chunk);
    }
    g.counts.merge(&r.counts);
}
