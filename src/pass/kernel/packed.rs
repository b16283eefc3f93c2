//! The accumulator the Gram kernels write into: G's upper triangle stored by panels
//! ([`PackedGram`]), its bands, their placing and merging, and the sums over it (‖G‖²_F, centred
//! or not, quadratic forms) in one fixed order whatever the build.

use super::{padded_dim, LANES, TILE_A};

/// Lanes of [`RowSquares`].
const ROW_LANES: usize = 4;

/// The squares of one row of G's triangle past its diagonal, summed in [`ROW_LANES`] interleaved
/// running sums (entry j of the row into lane j mod 4), so that the adds do not wait for one
/// another; the row's share of ‖G‖²_F is then its diagonal squared plus twice the lanes' sum, in
/// one fixed order whatever the build.
#[derive(Default)]
struct RowSquares {
    lanes: [f64; ROW_LANES],
    next: usize,
}

impl RowSquares {
    #[inline]
    fn add(&mut self, g: f64) {
        self.lanes[self.next] += g * g;
        self.next = (self.next + 1) % ROW_LANES;
    }

    /// [`ROW_LANES`] entries in a row, from a whole lane group (`next` is 0).
    #[inline]
    fn add_lanes(&mut self, g: [f64; ROW_LANES]) {
        debug_assert_eq!(self.next, 0);
        for (lane, g) in self.lanes.iter_mut().zip(g) {
            *lane += g * g;
        }
    }

    fn row_total(&self, diagonal: f64) -> f64 {
        let [l0, l1, l2, l3] = self.lanes;
        diagonal * diagonal + 2.0 * ((l0 + l1) + (l2 + l3))
    }
}

/// The upper triangle of the d×d Gram matrix G = Σ uᵢuᵢᵀ, in f64, stored by panels of
/// [`TILE_A`] rows: panel `p` holds rows `4p..4p+4` from column `(4p) rounded down to 8` to the end.
/// That is about d²/2 values, never the full square. A *band* ([`PackedGram::band`]) stores only a
/// range of panels: a pass split by columns gives each worker one band of G and every row
/// (`pass::shares::Share::columns`), and the bands are [`PackedGram::place`]d into one G.
///
/// The values are allocated by the first write ([`PackedGram::panel_mut`]), not when G is made:
/// until then every value is zero and readers treat it so. A worker that will keep only a band
/// therefore never holds the whole triangle first (wasm memory, once grown, never shrinks: at
/// d = 16384 the whole is 1.07 GB), and a G no row enters (a file of zero rows) costs nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedGram {
    dim_padded: usize,
    /// The first panel stored (0 unless a band); `offsets` has one entry per stored panel, plus one.
    first: usize,
    offsets: Vec<usize>,
    /// The stored panels' values, `offsets.last()` of them, or none while all are zero.
    values: Vec<f64>,
}

/// Where the values of a band placed into G ([`PackedGram::place_from`]), or of a whole G added to
/// it ([`PackedGram::merge_from`]), come from: the band or G itself, or a buffer kept apart from
/// it. A helper's G reaches the page's lead as JavaScript memory; copied into wasm whole, it would
/// sit there twice (its bytes and the values read from them) beside the G it goes into.
pub trait BandValues {
    /// Values held: the band's stored count, or 0 for a band that is all zero.
    fn len(&self) -> usize;
    /// Whether there are none (the band is all zero).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies values `at..at + dest.len()` into `dest` (within [`BandValues::len`]).
    fn copy_to(&self, at: usize, dest: &mut [f64]);
}

impl BandValues for &[f64] {
    fn len(&self) -> usize {
        <[f64]>::len(self)
    }
    fn copy_to(&self, at: usize, dest: &mut [f64]) {
        if let Some(src) = self.get(at..at + dest.len()) {
            dest.copy_from_slice(src);
        }
    }
}

impl PackedGram {
    pub fn new(dim: usize) -> Self {
        let panels = padded_dim(dim) / TILE_A;
        Self::band(dim, 0..panels)
    }

    /// Only panels `panels` of G for a matrix of width `dim`, widened to whole row octets (the
    /// kernels write both panels of an octet) and clipped to the matrix (empty if nothing is left).
    pub fn band(dim: usize, panels: std::ops::Range<usize>) -> Self {
        let dim_padded = padded_dim(dim);
        let end = panels.end.next_multiple_of(2).min(dim_padded / TILE_A);
        let first = (panels.start / 2 * 2).min(end);
        Self { dim_padded, first, offsets: Self::offsets_of(dim_padded, first..end), values: Vec::new() }
    }

    /// Where each of `panels` starts in the values of a G that stores exactly them, and the end.
    fn offsets_of(dim_padded: usize, panels: std::ops::Range<usize>) -> Vec<usize> {
        let mut offsets = Vec::with_capacity(panels.len() + 1);
        let mut total = 0usize;
        for p in panels {
            offsets.push(total);
            total += TILE_A * (dim_padded - Self::panel_start(p));
        }
        offsets.push(total);
        offsets
    }

    /// The stored values, in storage order; empty while all are zero.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Values stored once allocated.
    pub fn stored_len(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// Whether the values are allocated (else all are zero).
    pub fn is_allocated(&self) -> bool {
        !self.values.is_empty()
    }

    /// The values, allocated (zero) on first use. The band that starts at panel 0 is the lead's
    /// share of a split by columns, which becomes the whole G ([`PackedGram::widen`]): it reserves
    /// the whole triangle's room at once, so widening it in place never holds both.
    fn values_mut(&mut self) -> &mut [f64] {
        let len = self.stored_len();
        if self.values.len() != len {
            let whole = if self.first == 0 { Self::offsets_of(self.dim_padded, 0..self.panels()) } else { Vec::new() };
            let mut values = Vec::with_capacity(whole.last().copied().unwrap_or(0).max(len));
            values.resize(len, 0.0);
            self.values = values;
        }
        &mut self.values
    }

    /// First column stored for panel `p`.
    #[inline]
    pub fn panel_start(p: usize) -> usize {
        (p * TILE_A) / LANES * LANES
    }

    pub fn dim_padded(&self) -> usize {
        self.dim_padded
    }

    /// Number of panels of the whole triangle (d_pad / 4), stored or not.
    pub fn panels(&self) -> usize {
        self.dim_padded / TILE_A
    }

    /// The panels stored: all of them unless this is a band. The kernels visit only these.
    pub fn panel_range(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.offsets.len().saturating_sub(1)
    }

    /// The values of stored panel `p`: `TILE_A` rows of `dim_padded - panel_start(p)` columns
    /// (allocating G on the first write).
    #[inline]
    pub fn panel_mut(&mut self, p: usize) -> &mut [f64] {
        let i = p - self.first;
        let (lo, hi) = (self.offsets[i], self.offsets[i + 1]);
        &mut self.values_mut()[lo..hi]
    }

    /// The values of panel `p` (as [`PackedGram::panel_mut`]; empty where not stored, and while G
    /// is not allocated, all zero): the spectrum's mat-vec (`explain::lanczos`) streams them in
    /// storage order.
    #[inline]
    pub fn panel(&self, p: usize) -> &[f64] {
        let Some(i) = p.checked_sub(self.first) else { return &[] };
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&lo), Some(&hi)) => self.values.get(lo..hi).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The part of the whole triangle's stored values this holds (1 unless a band).
    pub fn stored_fraction(&self) -> f64 {
        let whole: usize = (0..self.panels()).map(|p| TILE_A * (self.dim_padded - Self::panel_start(p))).sum();
        if whole == 0 {
            1.0
        } else {
            self.stored_len() as f64 / whole as f64
        }
    }

    /// Makes a band the whole triangle, its panels kept and the others zero: the lead of a pass
    /// split by columns, before it places the other bands. The band from panel 0 grows in place
    /// (its room was reserved, [`PackedGram::values_mut`]); any other is copied into a new G.
    pub fn widen(&mut self) {
        let whole = 0..self.panels();
        if self.panel_range() == whole {
            return;
        }
        if self.first == 0 {
            self.offsets = Self::offsets_of(self.dim_padded, whole);
            if self.is_allocated() {
                let len = self.stored_len();
                self.values.resize(len, 0.0);
            }
            return;
        }
        let mut widened = PackedGram {
            dim_padded: self.dim_padded,
            first: 0,
            offsets: Self::offsets_of(self.dim_padded, whole),
            values: Vec::new(),
        };
        widened.place(self);
        *self = widened;
    }

    /// Copies a band's panels into this G (the same width, holding the band's panels): the bands
    /// of a pass split by columns, each over all rows, make one G. False (nothing copied) if not.
    pub fn place(&mut self, band: &PackedGram) -> bool {
        self.place_from(band, &band.values.as_slice())
    }

    /// [`PackedGram::place`] with the band's values taken from `values` (its own may be absent:
    /// a band sent with its values apart). The band's layout is checked against this G's before
    /// anything is copied, and `values` must hold the whole band, or nothing (a band of zeros).
    pub fn place_from(&mut self, band: &PackedGram, values: &dyn BandValues) -> bool {
        let range = band.panel_range();
        let mine = self.panel_range();
        if band.dim_padded != self.dim_padded || range.start < mine.start || range.end > mine.end {
            return false;
        }
        // A band read from a worker's message: its offsets must be the layout's, panel by panel.
        if band.offsets != Self::offsets_of(band.dim_padded, range.clone()) {
            return false;
        }
        if !values.is_empty() && values.len() != band.stored_len() {
            return false;
        }
        if values.is_empty() && !self.is_allocated() {
            // Zeros into zeros.
            return true;
        }
        for (i, p) in range.enumerate() {
            let dest = self.panel_mut(p);
            if values.is_empty() {
                dest.fill(0.0);
            } else {
                values.copy_to(band.offsets[i], dest);
            }
        }
        true
    }

    /// Takes the values out, leaving a G (or band) of zeros with the same layout: a helper sends
    /// them apart from the rest of its partial ([`PackedGram::place_from`],
    /// [`PackedGram::merge_from`]). Empty if never allocated.
    pub fn take_values(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.values)
    }

    /// ‖G‖_F² = Σ_{a,b} G_ab², read from the upper triangle (off-diagonal entries count twice).
    pub fn frobenius_sq(&self) -> f64 {
        self.frobenius_sq_plus(|_, _| 0.0)
    }

    /// ‖G + E‖_F² for the centre's E_ab = c_a·s_b + s_a·c_b + n·c_a·c_b (0 where a or b is past
    /// c or s): [`PackedGram::frobenius_sq_plus`] with that E, the same values summed in the same
    /// order ([`RowSquares`]), so the same bits, but with c_a, s_a and n·c_a taken once per row and
    /// no call per entry. The running ε reads it at every estimate: one running sum over the
    /// triangle waited on each add, 13–22 ms natively at d = 4096 against 9 ms in lanes, and in a
    /// tab the lead of two workers spent 150 ms of a 6.9 s pass on its running ε (65–90 ms in lanes).
    pub fn frobenius_sq_centred(&self, c: &[f64], s: &[f64], n: f64) -> f64 {
        let mut total = 0.0f64;
        let zeros = if self.is_allocated() { Vec::new() } else { vec![0.0; self.dim_padded] };
        let limit = c.len().min(s.len()).min(self.dim_padded);
        let (c, s) = (&c[..limit], &s[..limit]);
        for p in self.panel_range() {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = if self.is_allocated() { self.panel(p) } else { &zeros[..] };
            for t in 0..TILE_A {
                let a = p * TILE_A + t;
                let row = if self.is_allocated() { &panel[t * width..(t + 1) * width] } else { &zeros[..width] };
                // Entries b ≥ a only, as `frobenius_sq_plus` reads them (a panel starts at or before
                // its first row): the first is the diagonal (counted once), the rest count twice.
                let Some(row) = row.get(a.saturating_sub(c0)..) else { continue };
                let mut squares = RowSquares::default();
                let (Some(&ca), Some(&sa)) = (c.get(a), s.get(a)) else {
                    let mut entries = row.iter();
                    let first = entries.next().map_or(0.0, |&g| g + 0.0);
                    for &g in entries {
                        squares.add(g + 0.0);
                    }
                    total += squares.row_total(first);
                    continue;
                };
                let nca = n * ca;
                let (inside, past) = row.split_at((limit - a).min(row.len()));
                // centre_term's expression, operation for operation: ca·sb + sa·cb + n·ca·cb.
                let entry = |g: f64, cb: f64, sb: f64| g + (ca * sb + sa * cb + nca * cb);
                let (Some((&g0, inside)), Some(c), Some(s)) = (inside.split_first(), c.get(a..), s.get(a..)) else {
                    let first = past.first().map_or(0.0, |&g| g + 0.0);
                    for &g in past.iter().skip(1) {
                        squares.add(g + 0.0);
                    }
                    total += squares.row_total(first);
                    continue;
                };
                let first = entry(g0, c[0], s[0]);
                let (c, s) = (&c[1..], &s[1..]);
                // Whole lane groups first (what lets the compiler keep the lanes in registers).
                let whole = inside.len() / ROW_LANES * ROW_LANES;
                for ((g, c), s) in inside[..whole]
                    .chunks_exact(ROW_LANES)
                    .zip(c[..whole].chunks_exact(ROW_LANES))
                    .zip(s[..whole].chunks_exact(ROW_LANES))
                {
                    squares.add_lanes(std::array::from_fn(|l| entry(g[l], c[l], s[l])));
                }
                for ((&g, &cb), &sb) in inside[whole..].iter().zip(&c[whole..]).zip(&s[whole..]) {
                    squares.add(entry(g, cb, sb));
                }
                for &g in past {
                    squares.add(g + 0.0);
                }
                total += squares.row_total(first);
            }
        }
        total
    }

    /// ‖G + E‖_F² for a symmetric E given entry by entry (a ≤ b), without storing G + E: the f32
    /// pass keeps G of centred rows and adds the centre's rank-2 terms here (`stats::GramMoments`).
    /// Row by row, in the order of [`RowSquares`].
    pub fn frobenius_sq_plus(&self, extra: impl Fn(usize, usize) -> f64) -> f64 {
        let mut total = 0.0f64;
        // Rows of a G not yet allocated are zero (E's entries still count).
        let zeros = if self.is_allocated() { Vec::new() } else { vec![0.0; self.dim_padded] };
        for p in self.panel_range() {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = if self.is_allocated() { self.panel(p) } else { &zeros[..] };
            for t in 0..TILE_A {
                let a = p * TILE_A + t;
                let row = if self.is_allocated() { &panel[t * width..(t + 1) * width] } else { &zeros[..width] };
                let mut squares = RowSquares::default();
                let mut first = None;
                for (j, &g) in row.iter().enumerate() {
                    let b = c0 + j;
                    if b == a {
                        first = Some(g + extra(a, b));
                    } else if b > a {
                        squares.add(g + extra(a, b));
                    }
                }
                if let Some(first) = first {
                    total += squares.row_total(first);
                }
            }
        }
        total
    }

    /// Adds a symmetric E, given entry by entry (a ≤ b), to the stored triangle.
    pub fn add_entries(&mut self, extra: impl Fn(usize, usize) -> f64) {
        self.add_entries_in_rows(0..self.dim_padded, extra);
    }

    /// Adds E's entries (a, b), a ≤ b, for the rows a in `rows` only: a GPU pass converts its sums
    /// into G a few rows at a time, so its read-back never holds more than one slice of them.
    pub fn add_entries_in_rows(&mut self, rows: std::ops::Range<usize>, extra: impl Fn(usize, usize) -> f64) {
        let end = rows.end.min(self.dim_padded);
        let stored = self.panel_range();
        for p in (rows.start / TILE_A).max(stored.start)..end.div_ceil(TILE_A).min(stored.end) {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = self.panel_mut(p);
            for t in 0..TILE_A {
                let a = p * TILE_A + t;
                if !rows.contains(&a) {
                    continue;
                }
                for (j, g) in panel[t * width..(t + 1) * width].iter_mut().enumerate() {
                    let b = c0 + j;
                    if b >= a {
                        *g += extra(a, b);
                    }
                }
            }
        }
    }

    /// vᵀ G v for a vector of length ≥ dim (used for the spread of per-row mean cosines).
    pub fn quadratic_form(&self, v: &[f64]) -> f64 {
        let mut total = 0.0f64;
        if !self.is_allocated() {
            return 0.0;
        }
        for p in self.panel_range() {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = self.panel(p);
            for t in 0..TILE_A {
                let a = p * TILE_A + t;
                let va = v.get(a).copied().unwrap_or(0.0);
                for (j, &g) in panel[t * width..(t + 1) * width].iter().enumerate() {
                    let b = c0 + j;
                    let vb = v.get(b).copied().unwrap_or(0.0);
                    if b > a {
                        total += 2.0 * g * va * vb;
                    } else if b == a {
                        total += g * va * va;
                    }
                }
            }
        }
        total
    }

    /// G_ab (either order; the triangle is symmetric). Zero outside the padded dimension, and
    /// outside the panels stored.
    pub fn get(&self, a: usize, b: usize) -> f64 {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        if b >= self.dim_padded {
            return 0.0;
        }
        let p = a / TILE_A;
        let c0 = Self::panel_start(p);
        let width = self.dim_padded.saturating_sub(c0);
        let Some(&offset) = p.checked_sub(self.first).and_then(|i| self.offsets.get(i)) else { return 0.0 };
        self.values.get(offset + (a - p * TILE_A) * width + (b - c0)).copied().unwrap_or(0.0)
    }

    /// Adds another accumulator's values (the same panels stored): partials over disjoint rows.
    pub fn merge(&mut self, other: &PackedGram) {
        if other.panel_range() != self.panel_range() || !other.is_allocated() {
            return;
        }
        for (a, b) in self.values_mut().iter_mut().zip(&other.values) {
            *a += b;
        }
    }

    /// [`PackedGram::merge`] with `other`'s values taken from `values` (a helper's message), a
    /// slice at a time: the same additions in the same order, so the same bits. `values` must hold
    /// all of `other`'s, or none (a G of zeros, which adds nothing); false, and nothing added, if the
    /// layouts or the count differ.
    pub fn merge_from(&mut self, other: &PackedGram, values: &dyn BandValues) -> bool {
        if other.panel_range() != self.panel_range() || other.dim_padded != self.dim_padded {
            return false;
        }
        if values.is_empty() {
            return true;
        }
        if values.len() != other.stored_len() {
            return false;
        }
        // 64 Ki values (512 KiB) per copy: small beside G, large enough that a copy out of a
        // JavaScript array costs little per value.
        const SLICE: usize = 1 << 16;
        let mut slice = vec![0.0f64; SLICE.min(values.len())];
        for (i, mine) in self.values_mut().chunks_mut(SLICE).enumerate() {
            let theirs = &mut slice[..mine.len()];
            values.copy_to(i * SLICE, theirs);
            for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                *a += b;
            }
        }
        true
    }

    /// The values given back to a G whose values were taken out ([`PackedGram::take_values`]):
    /// false, and nothing changed, unless `values` holds exactly its stored count.
    pub fn restore_values(&mut self, values: &dyn BandValues) -> bool {
        if values.len() != self.stored_len() {
            return false;
        }
        let mut restored = vec![0.0f64; values.len()];
        values.copy_to(0, &mut restored);
        self.values = restored;
        true
    }

    /// Takes `values` as the stored values (a G read from a worker's message): all of them, or
    /// none (all zero). False, and nothing changed, for any other count.
    pub fn set_values(&mut self, values: Vec<f64>) -> bool {
        if !values.is_empty() && values.len() != self.stored_len() {
            return false;
        }
        self.values = values;
        true
    }

    /// Bytes held once allocated (what the memory budget plans for).
    pub fn bytes(&self) -> usize {
        self.stored_len() * 8
    }
}
