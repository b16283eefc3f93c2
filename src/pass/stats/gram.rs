//! The exact all-pairs accumulator: mean and spread from s = Σuᵢ and G = Σuᵢuᵢᵀ without a V×V matrix.

use super::*;
use crate::pass::kernel::{self, bench, PackedGram, Precision};
use crate::read::matrix::lane_sum;

mod wire;

/// Running s = Σuᵢ, G = Σuᵢuᵢᵀ and the diagonal terms over the unit rows seen so far.
///
/// With [`Precision::F32`] only G comes from f32-rounded rows; s and Σ‖uᵢ‖² (hence μ) stay those
/// of the f64 unit rows. The f32 kernel sums the *centred* rows wᵢ = uᵢ − c, c a fixed centre (the
/// sample's mean unit row, [`GramMoments::set_centre`]), rounded once: its rounding error then
/// scales with ‖wᵢ‖² instead of ‖uᵢ‖², which is what keeps σ within 1e-6 when μ is far from 0 (a
/// shared direction made the uncentred f32 error reach 1.7e-6·σ at μ = 0.8, d = 67). G is recovered
/// exactly in f64: Σ(c + w̃ᵢ)(c + w̃ᵢ)ᵀ = W + c·s_wᵀ + s_w·cᵀ + n·ccᵀ with s_w = Σw̃ᵢ, and Σ‖uᵢ‖⁴ is
/// taken of c + w̃ᵢ so that it removes that G's own diagonal.
/// Workers post their partials to the lead as `pass::wire::GramMessage` (`wire` below).
#[derive(Clone, Debug, PartialEq)]
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
    wide: Vec<f64>,
    /// The f32 pass's centre c (empty: none), Σw̃ᵢ of the rounded centred rows and their count; `gram`
    /// then holds W = Σw̃ᵢw̃ᵢᵀ, not G.
    centre: Vec<f64>,
    sum_centred: Vec<f64>,
    rows_centred: u64,
    /// f32 rows taken but not yet through the kernel, and the sums above as they were before them.
    pending: Box<Pending>,
    /// Work and time of the Gram kernel calls (time only where [`bench::now_ms`] has a clock).
    pub kernel_flops: f64,
    pub kernel_ms: f64,
}

/// Rows the f32 pass has taken but not yet run through the Gram kernel. The kernel runs on whole
/// batches ([`kernel::batch_rows`]) so that each block of G stays in cache while the batch passes
/// ([`kernel::gram_update_f32_batch`]), instead of G streaming through memory every 64 rows. The
/// sums outside are updated row by row as before; `before` keeps their values at the batch's first
/// row, which is what G matches until the flush. Sent with the rest: a partial is never short of
/// rows.
#[derive(Clone, Debug, Default, PartialEq)]
struct Pending {
    rows: usize,
    /// Row slots of `packed` in use: the rows, and the zero rows that pad each
    /// [`GramMoments::add_unit_rows`] call to whole chunks of [`kernel::MAX_CHUNK_ROWS`]. A call's
    /// rows then make chunks of their own, summed in f32 exactly as before batching (one block, one
    /// chunk), whatever came before them: a pass split over workers sums each block's tiles as one
    /// worker does, so the partials merge to the one-worker result up to f64 rounding. Zero rows add
    /// nothing (0·x = 0 and s + 0 = s exactly).
    slots: usize,
    /// The centred rows rounded to f32, in [`kernel::pack_row_f32_into`]'s layout.
    packed: Vec<f32>,
    before: InG,
}

/// The sums that go with the rows in G (`GramMoments`' fields of the same names).
#[derive(Clone, Debug, Default, PartialEq)]
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

/// `sum += row`, value by value.
fn add_row(sum: &mut [f64], row: &[f64]) {
    for (s, &x) in sum.iter_mut().zip(row) {
        *s += x;
    }
}
