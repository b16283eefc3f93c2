//! Statistics of pairwise cosines, as mergeable partial sums (`docs/method.md` §1).
//!
//! [`GramMoments`] gives the exact mean and spread over **all** pairs from s = Σuᵢ and G = Σuᵢuᵢᵀ
//! without a V×V matrix; [`PairSample`] keeps individual cosines of a row sample for the histogram and
//! for the uncertainty of a running estimate. Both add up across workers with `merge`.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::pass::kernel::{self, bench, PackedGram, Precision};
use crate::pass::set_aside::AsidePairs;
use crate::read::matrix::{lane_sum, RowFate};

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

/// Running s = Σuᵢ, G = Σuᵢuᵢᵀ and the diagonal terms over the unit rows seen so far.
///
/// With [`Precision::F32`] only G comes from f32-rounded rows; s and Σ‖uᵢ‖² (hence μ) stay those
/// of the f64 unit rows. The f32 kernel sums the *centred* rows wᵢ = uᵢ − c, c a fixed centre (the
/// sample's mean unit row, [`GramMoments::set_centre`]), rounded once: its rounding error then
/// scales with ‖wᵢ‖² instead of ‖uᵢ‖², which is what keeps σ within 1e-6 when μ is far from 0 (a
/// shared direction made the uncentred f32 error reach 1.7e-6·σ at μ = 0.8, d = 67). G is recovered
/// exactly in f64: Σ(c + w̃ᵢ)(c + w̃ᵢ)ᵀ = W + c·s_wᵀ + s_w·cᵀ + n·ccᵀ with s_w = Σw̃ᵢ, and Σ‖uᵢ‖⁴ is
/// taken of c + w̃ᵢ so that it removes that G's own diagonal.
/// Serialisable: workers post their partials to the lead (`pass`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GramMoments {
    pub counts: RowCounts,
    dim: usize,
    precision: Precision,
    sum: Vec<f64>,
    /// Σ‖uᵢ‖² and Σ‖uᵢ‖⁴ of the unit rows actually used, so the diagonal is removed exactly.
    sum_norm2: f64,
    sum_norm4: f64,
    gram: PackedGram,
    /// Scratch: the f64 chunk packed for the f64 kernel, or the f32 pass's last row as rounded.
    #[serde(skip)]
    wide: Vec<f64>,
    /// The f32 pass's centre c (empty: none), Σw̃ᵢ of the rounded centred rows and their count; `gram`
    /// then holds W = Σw̃ᵢw̃ᵢᵀ, not G.
    centre: Vec<f64>,
    sum_centred: Vec<f64>,
    rows_centred: u64,
    /// f32 rows taken but not yet through the kernel, and the sums above as they were before them.
    #[serde(default)]
    pending: Box<Pending>,
    /// Work and time of the Gram kernel calls (time only where [`bench::now_ms`] has a clock).
    pub kernel_flops: f64,
    pub kernel_ms: f64,
}

/// Rows the f32 pass has taken but not yet run through the Gram kernel. The kernel runs on whole
/// batches ([`kernel::batch_rows`]) so that each block of G stays in cache while the batch passes
/// ([`kernel::gram_update_f32_batch`]), instead of G streaming through memory every 64 rows. The
/// sums outside are updated row by row as before; `before` keeps their values at the batch's first
/// row, which is what G matches until the flush. Serialised with the rest: a partial is never short
/// of rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Pending {
    rows: usize,
    /// Row slots of `packed` in use: the rows, and the zero rows that pad each
    /// [`GramMoments::add_unit_rows`] call to whole chunks of [`kernel::MAX_CHUNK_ROWS`]. A call's
    /// rows then make chunks of their own, summed in f32 exactly as before batching (one block, one
    /// chunk), whatever came before them: a pass split over workers sums each block's tiles as one
    /// worker does, so the partials merge to the one-worker result up to f64 rounding. Zero rows add
    /// nothing (0·x = 0 and s + 0 = s exactly).
    #[serde(default)]
    slots: usize,
    /// The centred rows rounded to f32, in [`kernel::pack_row_f32_into`]'s layout.
    packed: Vec<f32>,
    before: InG,
}

/// The sums that go with the rows in G (`GramMoments`' fields of the same names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct InG {
    sum: Vec<f64>,
    sum_norm2: f64,
    sum_norm4: f64,
    sum_centred: Vec<f64>,
    rows_centred: u64,
}

impl GramMoments {
    /// An f64 accumulator (the exact one; see [`GramMoments::with_precision`]).
    pub fn new(dim: usize) -> Self {
        Self::with_precision(dim, Precision::F64)
    }

    pub fn with_precision(dim: usize, precision: Precision) -> Self {
        Self {
            counts: RowCounts::default(),
            dim,
            precision,
            sum: vec![0.0; kernel::padded_dim(dim)],
            sum_norm2: 0.0,
            sum_norm4: 0.0,
            gram: PackedGram::new(dim),
            wide: Vec::new(),
            centre: Vec::new(),
            sum_centred: Vec::new(),
            rows_centred: 0,
            pending: Box::default(),
            kernel_flops: 0.0,
            kernel_ms: 0.0,
        }
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// An accumulator holding sums made elsewhere (the GPU pass, `pass::gpu`): s = Σvᵢ, Σ‖vᵢ‖²,
    /// Σ‖vᵢ‖⁴ of the rows vᵢ that G = Σvᵢvᵢᵀ holds, and G itself in the packed layout of width
    /// `dim`, uncentred; `kernel_flops` and `kernel_ms` the work and the time it took. The moments,
    /// the report and the spectrum then read it as they read a CPU pass's (docs/method.md §1).
    #[allow(clippy::too_many_arguments)]
    pub fn from_sums(
        counts: RowCounts,
        dim: usize,
        precision: Precision,
        sum: &[f64],
        sum_norm2: f64,
        sum_norm4: f64,
        gram: PackedGram,
        (kernel_flops, kernel_ms): (f64, f64),
    ) -> Self {
        let mut padded = vec![0.0; kernel::padded_dim(dim)];
        for (p, &x) in padded.iter_mut().zip(sum.iter().take(dim)) {
            *p = x;
        }
        // Everything else (scratch, centre, pending rows) as in an empty, uncentred accumulator.
        Self {
            counts,
            dim,
            sum: padded,
            sum_norm2,
            sum_norm4,
            gram,
            kernel_flops,
            kernel_ms,
            ..Self::with_precision(0, precision)
        }
    }

    /// Centres the f32 pass's rows on `centre` (`dim` values or more; zero-padded). Only for an f32
    /// accumulator that has no rows yet; otherwise, or for a non-finite centre, nothing changes.
    pub fn set_centre(&mut self, centre: &[f64]) {
        if self.precision != Precision::F32 || self.rows_centred > 0 || self.kernel_flops > 0.0 || self.pending.rows > 0
        {
            return;
        }
        if centre.iter().any(|x| !x.is_finite()) {
            return;
        }
        let d = self.gram.dim_padded();
        let mut c = vec![0.0; d];
        for (o, &x) in c.iter_mut().zip(centre.iter().take(self.dim)) {
            *o = x;
        }
        self.centre = c;
        self.sum_centred = vec![0.0; d];
    }

    /// Keeps only `panels` of G ([`PackedGram::band`]): this accumulator is then one share of a
    /// pass split by columns, which sees every row and sums only its band. Only while empty.
    pub fn set_band(&mut self, panels: std::ops::Range<usize>) {
        if self.counts.seen > 0 || self.pending.rows > 0 || self.kernel_flops > 0.0 {
            return;
        }
        self.gram = PackedGram::band(self.dim, panels);
    }

    /// Whether G is held only in part ([`GramMoments::set_band`]).
    pub fn is_band(&self) -> bool {
        self.gram.panel_range() != (0..self.gram.panels())
    }

    /// Takes in another share's band of G: the same rows (the same counts and sums, which every
    /// band holds alike and which are kept as they are), other panels of G, which are copied in.
    /// The first band taken in widens this accumulator to the whole triangle. An error, and nothing
    /// changed, if the two are not bands of one pass.
    pub fn place_band(&mut self, other: &GramMoments) -> Result<(), String> {
        self.place_band_from(other, None)
    }

    /// [`GramMoments::place_band`], the band's values taken from `apart` when they were sent
    /// apart from it ([`kernel::BandValues`]; `other`'s own are then absent).
    pub fn place_band_from(
        &mut self,
        other: &GramMoments,
        apart: Option<&dyn kernel::BandValues>,
    ) -> Result<(), String> {
        self.flush();
        if other.pending.rows > 0 {
            if apart.is_some() {
                return Err("a band of G came with rows not yet summed into it".into());
            }
            let mut other = other.clone();
            other.flush();
            return self.place_band_from(&other, None);
        }
        let own = other.gram.values();
        let values: &dyn kernel::BandValues = apart.unwrap_or(&own);
        if !values.is_empty() && values.len() != other.gram.stored_len() {
            return Err(format!(
                "a band of G came with {} values where its panels hold {}",
                values.len(),
                other.gram.stored_len()
            ));
        }
        if self.counts.seen == 0 && self.kernel_flops == 0.0 && self.dim == other.dim {
            // Nothing here yet (an empty partial to merge into): the band's sums are the pass's.
            let mut gram = PackedGram::new(self.dim);
            if !gram.place_from(&other.gram, values) {
                return Err("a band of G does not fit this pass's triangle".into());
            }
            *self = GramMoments { gram, ..other.clone() };
            return Ok(());
        }
        if self.dim != other.dim
            || self.counts != other.counts
            || self.precision != other.precision
            || self.centre != other.centre
            || self.rows_centred != other.rows_centred
        {
            return Err(format!(
                "a band of G over {} rows (d = {}) cannot join one over {} rows (d = {}): not the same pass",
                other.counts.seen, other.dim, self.counts.seen, self.dim
            ));
        }
        // Its layout is checked against an unallocated G first (no values are copied there), so
        // that a band that does not fit changes nothing.
        let mut whole = PackedGram::new(self.dim);
        if !whole.place_from(&other.gram, &[].as_slice()) {
            return Err("a band of G does not fit this pass's triangle".into());
        }
        self.gram.widen();
        if !self.gram.place_from(&other.gram, values) {
            return Err("a band of G does not fit this pass's triangle".into());
        }
        self.kernel_flops += other.kernel_flops;
        self.kernel_ms += other.kernel_ms;
        Ok(())
    }

    /// The centre's part of G at (a, b): c_a·s_w,b + s_w,a·c_b + n·c_a·c_b (0 without a centre).
    #[inline]
    fn centre_term(&self, a: usize, b: usize) -> f64 {
        let (sum_centred, rows_centred) = self.centred_in_g();
        match (self.centre.get(a), self.centre.get(b), sum_centred.get(a), sum_centred.get(b)) {
            (Some(&ca), Some(&cb), Some(&sa), Some(&sb)) => ca * sb + sa * cb + rows_centred as f64 * ca * cb,
            _ => 0.0,
        }
    }

    /// Σw̃ᵢ and n of the centred rows in G (short of the rows waiting, [`GramMoments::flush`]).
    fn centred_in_g(&self) -> (&[f64], u64) {
        if self.pending.rows > 0 {
            (&self.pending.before.sum_centred, self.pending.before.rows_centred)
        } else {
            (&self.sum_centred, self.rows_centred)
        }
    }

    /// The centred f32 pass's c, Σw̃ᵢ and their row count n (None without a centre): G is the stored
    /// triangle plus c·s_wᵀ + s_w·cᵀ + n·ccᵀ, which the spectrum's mat-vec applies as a rank-2 term.
    pub fn centre_parts(&self) -> Option<(&[f64], &[f64], u64)> {
        let (sum_centred, rows_centred) = self.centred_in_g();
        (!self.centre.is_empty()).then_some((&self.centre[..], sum_centred, rows_centred))
    }

    /// G_ab = Σ uᵢ,a uᵢ,b over the rows so far (either order).
    pub fn gram_entry(&self, a: usize, b: usize) -> f64 {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        self.gram.get(a, b) + self.centre_term(a, b)
    }

    /// Folds the centre's terms into the stored G and drops the centre (before merging accumulators
    /// with different centres).
    fn uncentre(&mut self) {
        if self.centre.is_empty() {
            return;
        }
        let (centre, sum, n) =
            (std::mem::take(&mut self.centre), std::mem::take(&mut self.sum_centred), self.rows_centred);
        self.gram.add_entries(|a, b| centre[a] * sum[b] + sum[a] * centre[b] + n as f64 * centre[a] * centre[b]);
        self.rows_centred = 0;
    }

    /// The Gram kernel's speed so far (None before any timed call).
    pub fn kernel_gflops(&self) -> Option<f64> {
        (self.kernel_ms > 0.0).then(|| self.kernel_flops / self.kernel_ms / 1e6)
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Adds kept unit rows (`dim_padded` each). An f32 accumulator buffers them and runs the kernel
    /// once [`kernel::batch_rows`] rows are waiting, or at [`GramMoments::flush`].
    pub fn add_unit_rows(&mut self, rows: &[f64]) {
        let d = self.gram.dim_padded();
        if d == 0 {
            return;
        }
        if self.precision == Precision::F64 {
            for chunk in rows.chunks(kernel::MAX_CHUNK_ROWS * d) {
                self.add_f64_chunk(chunk);
            }
            return;
        }
        let centred = !self.centre.is_empty();
        let batch = kernel::batch_rows(d);
        for row in rows.chunks_exact(d) {
            if self.pending.rows == 0 {
                self.pending.before = InG {
                    sum: self.sum.clone(),
                    sum_norm2: self.sum_norm2,
                    sum_norm4: self.sum_norm4,
                    sum_centred: self.sum_centred.clone(),
                    rows_centred: self.rows_centred,
                };
            }
            // The row the f32 kernel sees, uᵢ − c (or uᵢ), rounded once, and the sums of it;
            // ‖c + w̃ᵢ‖² is the norm of the row whose outer product the f32 G actually holds.
            let norms = kernel::pack_row_f32_summing(
                row,
                &self.centre,
                self.pending.slots,
                &mut self.pending.packed,
                &mut self.sum,
                &mut self.sum_centred,
            );
            self.sum_norm2 += norms.unit;
            self.sum_norm4 += norms.used * norms.used;
            if centred {
                self.rows_centred += 1;
            }
            self.pending.rows += 1;
            self.pending.slots += 1;
            if self.pending.slots >= batch {
                self.flush();
            }
        }
        // The next call starts a chunk of its own; the slots skipped are zero (`pack_row_f32_into`
        // zero-fills a chunk when its first row is packed).
        self.pending.slots = self.pending.slots.next_multiple_of(kernel::MAX_CHUNK_ROWS);
        if self.pending.slots >= batch {
            self.flush();
        }
    }

    /// Runs the Gram kernel on the rows waiting (f32; nothing waits in an f64 accumulator):
    /// afterwards every reader covers every row added.
    pub fn flush(&mut self) {
        let rows = self.pending.slots;
        if self.pending.rows == 0 {
            return;
        }
        let d = self.gram.dim_padded();
        let start = bench::now_ms();
        kernel::gram_update_f32_batch(&self.pending.packed, rows, &mut self.gram);
        if let (Some(start), Some(end)) = (start, bench::now_ms()) {
            self.kernel_ms += end - start;
        }
        // The triangle's rows·d²/2 multiply-adds, two flops each (as `bench::gram_gflops` counts),
        // or a band's part of them.
        self.kernel_flops += rows as f64 * (d * d) as f64 * self.band_fraction();
        self.pending.rows = 0;
        self.pending.slots = 0;
        self.pending.before = InG::default();
        // Keeps the allocation for the next batch; `pack_row_f32_into` grows it chunk by chunk.
        self.pending.packed.clear();
    }

    /// Rows taken but not yet in G ([`GramMoments::flush`]).
    pub fn pending_rows(&self) -> usize {
        self.pending.rows
    }

    /// Up to [`kernel::MAX_CHUNK_ROWS`] rows through the f64 kernel, at once.
    fn add_f64_chunk(&mut self, rows: &[f64]) {
        let d = self.gram.dim_padded();
        for row in rows.chunks_exact(d) {
            add_row(&mut self.sum, row);
            let n2 = lane_sum(row, |x| x * x);
            self.sum_norm2 += n2;
            self.sum_norm4 += n2 * n2;
        }
        let start = bench::now_ms();
        let k = kernel::pack_rows(rows, d, &mut self.wide);
        kernel::gram_update(&self.wide, k, &mut self.gram);
        if let (Some(start), Some(end)) = (start, bench::now_ms()) {
            self.kernel_ms += end - start;
        }
        self.kernel_flops += k as f64 * (d * d) as f64 * self.band_fraction();
    }

    /// The part of the triangle's entries that G holds (1 unless a band).
    fn band_fraction(&self) -> f64 {
        if self.is_band() {
            self.gram.stored_fraction()
        } else {
            1.0
        }
    }

    /// Exact moments over all pairs among the kept rows so far:
    /// Σ_{i≠j} cos = ‖s‖² − Σ‖uᵢ‖², Σ_{i≠j} cos² = ‖G‖_F² − Σ‖uᵢ‖⁴ (`docs/method.md` §1).
    /// With rows waiting it runs them through the kernel on a copy (correct, but a copy of G and a
    /// batch of kernel work): flush first, or take [`GramMoments::moments_so_far`] for an estimate.
    pub fn moments(&self) -> Option<Moments> {
        if self.pending.rows > 0 {
            let mut all = self.clone();
            all.flush();
            return all.moments_so_far();
        }
        self.moments_so_far()
    }

    /// [`GramMoments::moments`] of the rows already in G (all of them after a flush): cheap, for
    /// running estimates. Counts only the rows in G, so the pairs and their sums agree.
    pub fn moments_so_far(&self) -> Option<Moments> {
        self.scalars_so_far().moments(self.frobenius_so_far())
    }

    /// ‖G‖_F² over the rows in G, of the panels held: a band's part of it in a pass split by
    /// columns, where the bands' parts add up to the whole (`pass::bands`).
    pub fn frobenius_so_far(&self) -> f64 {
        let (sum_centred, rows_centred) = self.centred_in_g();
        self.gram.frobenius_sq_centred(&self.centre, sum_centred, rows_centred as f64)
    }

    /// Everything [`GramMoments::moments_so_far`] reads but ‖G‖_F², over the rows in G: O(d).
    pub fn scalars_so_far(&self) -> GramScalars {
        let (sum_norm2, sum_norm4) = if self.pending.rows > 0 {
            (self.pending.before.sum_norm2, self.pending.before.sum_norm4)
        } else {
            (self.sum_norm2, self.sum_norm4)
        };
        GramScalars {
            rows: self.counts.kept.saturating_sub(self.pending.rows as u64),
            sum_sq: self.sum().iter().map(|x| x * x).sum(),
            sum_norm2,
            sum_norm4,
        }
    }

    /// s = Σuᵢ (zero-padded past `dim`) over the rows in G: [`GramMoments::flush`] first for all.
    pub fn sum(&self) -> &[f64] {
        if self.pending.rows > 0 {
            return &self.pending.before.sum;
        }
        &self.sum
    }

    /// The stored triangle: G = Σuᵢuᵢᵀ, or for a centred f32 pass W = Σw̃ᵢw̃ᵢᵀ (use
    /// [`GramMoments::gram_entry`] for G), over the rows in G ([`GramMoments::flush`] first for all).
    pub fn gram(&self) -> &PackedGram {
        &self.gram
    }

    /// G's values (a whole G's or a band's), taken out to be sent apart from the rest
    /// ([`PackedGram::take_values`]), with every row waiting summed in first. A helper's G is most
    /// of its partial (67 MB at d = 4096): sent apart, it is neither serialised value by value nor
    /// copied into the lead's wasm memory, which adds it from the message
    /// ([`GramMoments::merge_from`], [`GramMoments::place_band_from`]).
    pub fn take_values(&mut self) -> Vec<f64> {
        self.flush();
        self.gram.take_values()
    }

    /// Adds another worker's partial sums over a disjoint set of rows. Accumulators with the same
    /// centre add as they are; otherwise both are uncentred first (exact, O(d²)).
    pub fn merge(&mut self, other: &GramMoments) {
        self.merge_values(other, &other.gram.values());
    }

    /// [`GramMoments::merge`] of a partial whose G's values came apart from it
    /// ([`GramMoments::take_values`]): they are added from `values` where they lie, a slice at a
    /// time, with the same bits as [`GramMoments::merge`] of the whole partial. An error, and
    /// nothing changed, if they do not fit its G.
    pub fn merge_from(&mut self, other: &GramMoments, values: &dyn kernel::BandValues) -> Result<(), String> {
        if values.is_empty() {
            self.merge(other);
            return Ok(());
        }
        if other.gram.is_allocated() {
            return Err("a Gram matrix came with values both in its partial and apart from it".into());
        }
        if other.dim != self.dim || other.gram.panel_range() != self.gram.panel_range() {
            return Err(format!("a Gram matrix of d = {} cannot be added to one of d = {}", other.dim, self.dim));
        }
        if values.len() != other.gram.stored_len() {
            return Err(format!(
                "a Gram matrix came with {} values where its triangle holds {}",
                values.len(),
                other.gram.stored_len()
            ));
        }
        if other.pending.rows > 0 || other.centre != self.centre {
            // Rows still to sum or another centre (not what a helper sends): merged whole.
            self.merge(&other.with_values(values)?);
            return Ok(());
        }
        self.merge_values(other, values);
        Ok(())
    }

    /// A copy of this accumulator, whose G's values were taken out, with `values` given back.
    pub fn with_values(&self, values: &dyn kernel::BandValues) -> Result<GramMoments, String> {
        if values.is_empty() {
            return Ok(self.clone());
        }
        if self.gram.is_allocated() {
            return Err("a Gram matrix came with values both in its partial and apart from it".into());
        }
        let mut whole = self.clone();
        if !whole.gram.restore_values(values) {
            return Err(format!(
                "a Gram matrix came with {} values where its triangle holds {}",
                values.len(),
                self.gram.stored_len()
            ));
        }
        Ok(whole)
    }

    /// [`GramMoments::merge`] with `other`'s G's values read from `values`.
    fn merge_values(&mut self, other: &GramMoments, values: &dyn kernel::BandValues) {
        self.flush();
        if other.counts == RowCounts::default() && other.pending.rows == 0 {
            // A share stopped before its first row (perhaps before its centre was set): nothing
            // to add, and no reason to uncentre this one.
            return;
        }
        if other.pending.rows > 0 {
            let mut other = other.clone();
            other.flush();
            return self.merge(&other);
        }
        if self.centre == other.centre {
            for (a, b) in self.sum_centred.iter_mut().zip(&other.sum_centred) {
                *a += b;
            }
            self.rows_centred += other.rows_centred;
        } else {
            self.uncentre();
            if !other.centre.is_empty() {
                let mut other = other.clone();
                other.uncentre();
                return self.merge(&other);
            }
        }
        self.counts.merge(&other.counts);
        for (a, b) in self.sum.iter_mut().zip(&other.sum) {
            *a += b;
        }
        self.sum_norm2 += other.sum_norm2;
        self.sum_norm4 += other.sum_norm4;
        self.gram.merge_from(&other.gram, values);
        self.kernel_flops += other.kernel_flops;
        self.kernel_ms += other.kernel_ms;
    }

    /// Bytes of accumulator memory (dominated by the d²/2 Gram triangle). Not counted: an f32
    /// accumulator's batch of waiting rows, at most an eighth of the triangle ([`kernel::batch_rows`]).
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

/// Most similar pairs of the histogram sample kept for the tail explorer (the paper's Fig. 3).
pub const TOP_PAIRS: usize = 20;

/// One pair of rows and their cosine: the tail explorer's list (`Report::top_pairs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopPair {
    /// Row ids in the tensor (token ids), a < b.
    pub a: u64,
    pub b: u64,
    pub cosine: f64,
    /// The tokens' strings when the model carries a vocabulary.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub a_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub b_token: Option<String>,
}

/// A pair in the top-K heap, ordered by cosine, ties broken towards the smaller indices so the list
/// does not depend on the order pairs arrive in.
#[derive(Clone, Copy, Debug)]
struct Ranked {
    cos: f64,
    i: u32,
    j: u32,
}

impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> Ordering {
        self.cos.total_cmp(&o.cos).then_with(|| (o.i, o.j).cmp(&(self.i, self.j)))
    }
}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ranked {}

/// The `k` largest of a stream of pairs: a min-heap of at most `k` (O(log k) per pair, and O(1) for
/// the many pairs below the current k-th).
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        Self { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    #[inline]
    pub fn offer(&mut self, i: usize, j: usize, cos: f64) {
        if self.k == 0 {
            return;
        }
        let (i, j) = (i.min(j) as u32, i.max(j) as u32);
        let item = Ranked { cos, i, j };
        if self.heap.len() < self.k {
            self.heap.push(Reverse(item));
        } else if self.heap.peek().is_some_and(|Reverse(least)| item > *least) {
            self.heap.pop();
            self.heap.push(Reverse(item));
        }
    }

    /// (i, j, cos), most similar first.
    pub fn sorted(&self) -> Vec<(usize, usize, f64)> {
        let mut v: Vec<Ranked> = self.heap.iter().map(|Reverse(r)| *r).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|r| (r.i as usize, r.j as usize, r.cos)).collect()
    }
}

impl PartialEq for TopK {
    fn eq(&self, o: &Self) -> bool {
        self.k == o.k && self.sorted() == o.sorted()
    }
}

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
    /// Row id in the tensor of each sample row (sample indices when not given).
    pub row_ids: Vec<u64>,
    /// The [`TOP_PAIRS`] most similar pairs recorded, as sample indices.
    pub top: TopK,
    /// The same pairs apart by the rules that set their rows aside (None: no sample row is).
    pub aside: Option<AsidePairs>,
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
            row_ids: (0..rows as u64).collect(),
            top: TopK::new(TOP_PAIRS),
            aside: None,
        }
    }

    /// Keeps the pairs apart by `mask_of(row id)`, the rules that set each sample row aside
    /// ([`crate::read::untrained::SetAside::mask_of`]). Call after [`PairSample::with_row_ids`].
    pub fn with_set_aside(mut self, mask_of: impl Fn(u64) -> u8) -> Self {
        self.aside = AsidePairs::new(self.row_ids.iter().map(|&id| mask_of(id)).collect());
        self
    }

    /// Names the sample rows by their row ids in the tensor (as many as there are sample rows).
    pub fn with_row_ids(mut self, ids: Vec<u64>) -> Self {
        if ids.len() == self.rows() {
            self.row_ids = ids;
        }
        self
    }

    /// The most similar pairs recorded, most similar first, by row id.
    pub fn top_pairs(&self) -> Vec<TopPair> {
        self.top
            .sorted()
            .into_iter()
            .map(|(i, j, cosine)| {
                let id = |k: usize| self.row_ids.get(k).copied().unwrap_or(k as u64);
                let (a, b) = (id(i).min(id(j)), id(i).max(id(j)));
                TopPair { a, b, cosine, a_token: None, b_token: None }
            })
            .collect()
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
        self.top.offer(i, j, c);
        if let Some(aside) = &mut self.aside {
            aside.add(i, j, c);
        }
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

/// `sum += row`, value by value.
fn add_row(sum: &mut [f64], row: &[f64]) {
    for (s, &x) in sum.iter_mut().zip(row) {
        *s += x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_k_largest_in_any_arrival_order_with_ties_to_the_smaller_pair() {
        // Cosines with ties, offered in two orders: same list, equal to a full sort.
        let pairs: Vec<(usize, usize, f64)> =
            (0..200).map(|n| (n % 37, 40 + n, ((n * 7919) % 23) as f64 / 23.0 - 0.5)).collect();
        let mut want = pairs.clone();
        want.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
        want.truncate(10);
        for order in [pairs.clone(), pairs.iter().rev().copied().collect()] {
            let mut top = TopK::new(10);
            for (i, j, c) in order {
                top.offer(i, j, c);
            }
            assert_eq!(top.sorted(), want);
        }
        let mut none = TopK::new(0);
        none.offer(1, 2, 0.5);
        assert!(none.sorted().is_empty());
    }
}
