//! The hot loops: the Gram update `G += Σ uᵢuᵢᵀ` and row-against-row dot products.
//!
//! Two Gram updates, chosen by [`Precision`]:
//! - **f32** (default): unit rows normalised in f64 and rounded once to f32; a 4×8 tile of G is
//!   summed in f32 registers over at most [`MAX_CHUNK_ROWS`] rows, then folded into the f64 G. Rows
//!   come in batches of several chunks ([`batch_rows`]), and the tiles are visited block of G by
//!   block of G so that the folds hit cache, not memory ([`gram_update_f32_batch`]). About
//!   twice the f64 kernel's speed (four lanes instead of two). Its error is inside |Δε| ≤ 1e-7 and
//!   |Δσ|/σ ≤ 1e-6 for σ ≥ 1e-3 (`tests/f32_kernel.rs`), except when the cosines are so
//!   concentrated that σ² drowns in the rounding of E[cos²]: `analysis` then picks f64
//!   ([`f32_suffices`]).
//! - **f64**: f64 unit rows, products and sums; matches an all-pairs float64 loop to 1e-9.
//!
//! The histogram's `dots` stay f32: a 1/150-wide bin does not need more.
//!
//! Implementations: [`portable`] (native builds, tests) and [`simd`] (explicit `core::arch::wasm32`
//! f64x2/f32x4, used whenever simd128 is enabled, because LLVM does not vectorise these loops well for
//! wasm: ARCHITECTURE.md, "Facts the code relies on") share one arithmetic order and agree bit for bit. `relaxed` (cargo
//! feature `relaxed-simd`, wasm only) uses `f32x4.relaxed_madd`, which may fuse the multiply-add: it
//! agrees with the others within the tolerance above, not bit for bit. It is a separate worker build
//! because one relaxed instruction anywhere makes Safari reject the whole module.
//!
//! Rows are stored zero-padded to a multiple of [`LANES`] so that every vector load is whole; the
//! padding adds nothing to any dot product.

pub mod bench;
pub mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
pub mod relaxed;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd;

use serde::{Deserialize, Serialize};

/// Arithmetic of the Gram pass (`?precision=`; the CLI's `--precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f32 tiles folded into an f64 G, unless the sample says σ is inside the f32 noise.
    #[default]
    F32,
    /// f64 throughout.
    F64,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Smallest σ the f32 kernel is trusted with (the exactness target, |Δσ|/σ ≤ 1e-6, holds for σ ≥ 1e-3; the sample's σ
/// is an estimate, hence the margin).
pub const F32_MIN_SIGMA: f64 = 2e-3;
/// Largest E[cos²]/σ² = (μ² + σ²)/σ² the f32 kernel is trusted with. σ² = E[cos²] − μ², so a
/// rounding of relative size δ in E[cos²] becomes δ·E[cos²]/(2σ²) in σ. Measured with centred rows
/// (`stats::GramMoments`, `tests/f32_kernel.rs`): |Δσ|/σ = 9e-8 at E[cos²]/σ² = 2.1e4 (μ = 0.9,
/// σ = 6e-3, d = 515); 1e5 leaves a factor of two below 1e-6 if the error grows in proportion.
pub const F32_MAX_CONCENTRATION: f64 = 1e5;

/// Whether the f32 kernel meets the exactness targets (|Δε| ≤ 1e-7, |Δσ|/σ ≤ 1e-6) for cosines with this mean and spread
/// (from the histogram's sample, before the pass). Why not: `Err` with a short reason for the report.
pub fn f32_suffices(mu: f64, sigma: f64) -> Result<(), String> {
    if sigma.is_nan() || sigma < F32_MIN_SIGMA {
        return Err(format!("σ ≈ {sigma:.1e} in the sample is below {F32_MIN_SIGMA:.0e}, inside the f32 noise"));
    }
    let concentration = (mu * mu + sigma * sigma) / (sigma * sigma);
    if concentration > F32_MAX_CONCENTRATION {
        return Err(format!(
            "μ ≈ {mu:.3} with σ ≈ {sigma:.1e} in the sample: σ² would drown in the f32 rounding of E[cos²]"
        ));
    }
    Ok(())
}

/// Rows are padded to a multiple of this many `f32`.
pub const LANES: usize = 8;
/// Height of one Gram tile (dimensions held as broadcast scalars).
pub const TILE_A: usize = 4;
/// Rows of one chunk: the f32 kernel sums a tile over at most this many rows before each fold into
/// the f64 G (the bound the error tests measure); the f64 kernel takes this many per call. Enough to
/// amortise loading and storing each Gram tile.
pub const MAX_CHUNK_ROWS: usize = 64;
/// Row panels of G updated together while one column panel of the chunk sits in L1: without this
/// blocking each row panel streams the whole packed chunk (2 MB at d = 4096) through the cache.
pub const PANEL_BLOCK: usize = 16;
/// Column octets of the block of G that the f32 kernel keeps in cache while a whole batch of chunks
/// passes through it: [`PANEL_BLOCK`]·4 rows × 64·8 columns of f64 are 256 KiB, inside a 1–2 MiB L2.
/// Each chunk's fold then hits cache; G itself streams through memory once per batch instead of once
/// per chunk (67 MB per 64 rows at d = 4096, the bound that kept two workers from scaling).
/// Inside a block the f32 kernels take one panel at a time across all its column octets: its four
/// rows of G are then read in address order, which the hardware prefetcher follows when the block
/// first comes from memory, while the chunk's 64 octets (128 KiB) stay in L2 for all 16 panels.
/// Measured in Chromium at d = 4096 against octet-major order (each octet against all 16 panels,
/// which reads 64 rows of G a line at a time): 36 → 40 GFLOP/s plain, 43 → 49 relaxed.
pub const COLUMN_BLOCK: usize = 64;
/// Most bytes of f32 rows the f32 pass buffers for one kernel call ([`batch_rows`]).
pub const BATCH_BYTES: usize = 4 << 20;
/// Most rows in one batch: past this the G traffic saved is already small against the arithmetic.
pub const MAX_BATCH_ROWS: usize = 1024;

/// Rows the f32 pass buffers before running the kernel (`stats::GramMoments`): whole chunks of
/// [`MAX_CHUNK_ROWS`], at most [`BATCH_BYTES`] of f32 rows and d/8 rows (the buffer then holds at
/// most an eighth of the triangle's bytes, so the accumulator's size stays the triangle's), at least
/// one chunk. 256 rows at d = 2048–4096 (4 MiB next to the 67 MB triangle at d = 4096), 128 at
/// d = 1024, one chunk below d = 1024, where the triangle nearly fits in cache anyway.
pub fn batch_rows(dim_padded: usize) -> usize {
    let d = dim_padded.max(1);
    let fit = (BATCH_BYTES / (4 * d)).min(d / 8) / MAX_CHUNK_ROWS * MAX_CHUNK_ROWS;
    fit.clamp(MAX_CHUNK_ROWS, MAX_BATCH_ROWS)
}

/// `dim` rounded up to a whole number of lanes.
pub fn padded_dim(dim: usize) -> usize {
    dim.div_ceil(LANES) * LANES
}

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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PackedGram {
    dim_padded: usize,
    /// The first panel stored (0 unless a band); `offsets` has one entry per stored panel, plus one.
    #[serde(default)]
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

    /// Bytes held once allocated (what the memory budget plans for).
    pub fn bytes(&self) -> usize {
        self.stored_len() * 8
    }
}

/// Copies up to [`MAX_CHUNK_ROWS`] f64 rows (`dim_padded` each) into the kernel's packed layout:
/// column panels of 4, `packed[(j * k + r) * 4 + l] = rows[r][4j + l]`. Both operands of a Gram tile
/// are then read as contiguous streams instead of 64 rows a whole row apart (measured: the strided
/// form ran at half the speed for d = 1024). Returns k, the number of rows packed.
pub fn pack_rows(rows: &[f64], dim_padded: usize, packed: &mut Vec<f64>) -> usize {
    if dim_padded == 0 {
        return 0;
    }
    let k = (rows.len() / dim_padded).min(MAX_CHUNK_ROWS);
    packed.clear();
    packed.resize(k * dim_padded, 0.0);
    for (r, row) in rows.chunks_exact(dim_padded).take(k).enumerate() {
        for (j, quad) in row.chunks_exact(4).enumerate() {
            let at = (j * k + r) * 4;
            packed[at..at + 4].copy_from_slice(quad);
        }
    }
    k
}

/// Rounds up to [`MAX_CHUNK_ROWS`] f64 unit rows (`dim_padded` each) to f32, once, into the f32
/// kernel's layout: column octets, `packed[(q * k + r) * 8 + l] = rows[r][8q + l]`, so a 4×8 tile
/// reads its 4 row-dimensions (half an octet) and its 8 column-dimensions as two contiguous streams.
/// Returns k, the number of rows packed.
pub fn pack_rows_f32(rows: &[f64], dim_padded: usize, packed: &mut Vec<f32>) -> usize {
    if dim_padded == 0 {
        return 0;
    }
    let k = (rows.len() / dim_padded).min(MAX_CHUNK_ROWS);
    packed.clear();
    packed.resize(k * dim_padded, 0.0);
    for (r, row) in rows.chunks_exact(dim_padded).take(k).enumerate() {
        for (q, octet) in row.chunks_exact(LANES).enumerate() {
            let at = (q * k + r) * LANES;
            for (o, &x) in packed[at..at + LANES].iter_mut().zip(octet) {
                *o = x as f32;
            }
        }
    }
    k
}

/// Writes one f64 row (`dim_padded` values), minus `centre` where one is given (empty: none), rounded
/// once to f32, as row `r` of a batch in the layout of [`gram_update_f32_batch`]: row r is row
/// `r % MAX_CHUNK_ROWS` of chunk `r / MAX_CHUNK_ROWS`, each chunk packed as [`pack_rows_f32`] packs
/// [`MAX_CHUNK_ROWS`] rows (a last, partial chunk keeps that stride; its unused slots are never read).
/// `batch` grows to hold the chunk. Returns the row as rounded, widened back to f64 (the caller's Σw̃ᵢ).
pub fn pack_row_f32_into(row: &[f64], centre: &[f64], r: usize, batch: &mut Vec<f32>, rounded: &mut Vec<f64>) {
    let d = row.len();
    let (chunk, at) = (r / MAX_CHUNK_ROWS, r % MAX_CHUNK_ROWS);
    let base = chunk * MAX_CHUNK_ROWS * d;
    if batch.len() < base + MAX_CHUNK_ROWS * d {
        batch.resize(base + MAX_CHUNK_ROWS * d, 0.0);
    }
    rounded.clear();
    // Zipped whole, the subtraction vectorises; value by value with a lookup, it did not.
    if centre.len() == d {
        rounded.extend(row.iter().zip(centre).map(|(&x, &c)| (x - c) as f32 as f64));
    } else {
        rounded.extend(row.iter().enumerate().map(|(a, &x)| (x - centre.get(a).copied().unwrap_or(0.0)) as f32 as f64));
    }
    for (q, octet) in rounded.chunks_exact(LANES).enumerate() {
        let to = base + (q * MAX_CHUNK_ROWS + at) * LANES;
        for (o, &x) in batch[to..to + LANES].iter_mut().zip(octet) {
            *o = x as f32;
        }
    }
}

/// The norms of one row that the f32 pass keeps ([`pack_row_f32_summing`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowNorms {
    /// ‖uᵢ‖², of the unit row as read.
    pub unit: f64,
    /// ‖c + w̃ᵢ‖², of the row whose outer product the f32 G holds (w̃ᵢ: uᵢ − c rounded to f32).
    pub used: f64,
}

/// [`pack_row_f32_into`] and, in the same pass over the row, the f32 pass's sums of it: adds the
/// row to `sum` and (with a centre) w̃ᵢ to `sum_centred`, and returns the two squared norms, each
/// summed as [`crate::read::matrix::lane_sum`] sums it (lane a mod 8). The same values in the same
/// order as the separate loops, so the same bits. Those were seven passes over every row: at
/// 2,000,000×256 they took a fifth of the CLI's pass (a seventh fused), and one worker in a tab
/// 5.41–5.53 s against 5.02–5.06 s fused. `centre` is empty or `row.len()` long, `row.len()` a
/// multiple of [`LANES`], `sum` and `sum_centred` (centred only) at least as long as `row`;
/// otherwise this is the separate loops.
pub fn pack_row_f32_summing(
    row: &[f64],
    centre: &[f64],
    r: usize,
    batch: &mut Vec<f32>,
    sum: &mut [f64],
    sum_centred: &mut [f64],
) -> RowNorms {
    let d = row.len();
    let centred = !centre.is_empty();
    let regular =
        d.is_multiple_of(LANES) && sum.len() >= d && (!centred || (centre.len() == d && sum_centred.len() >= d));
    if !regular {
        return separate_row_sums(row, centre, r, batch, sum, sum_centred);
    }
    let (chunk, at) = (r / MAX_CHUNK_ROWS, r % MAX_CHUNK_ROWS);
    let base = chunk * MAX_CHUNK_ROWS * d;
    if batch.len() < base + MAX_CHUNK_ROWS * d {
        batch.resize(base + MAX_CHUNK_ROWS * d, 0.0);
    }
    let (mut unit, mut used) = ([0.0f64; LANES], [0.0f64; LANES]);
    for (q, u) in row.chunks_exact(LANES).enumerate() {
        let to = base + (q * MAX_CHUNK_ROWS + at) * LANES;
        let out = &mut batch[to..to + LANES];
        let s = &mut sum[q * LANES..(q + 1) * LANES];
        if centred {
            let c = &centre[q * LANES..(q + 1) * LANES];
            let sc = &mut sum_centred[q * LANES..(q + 1) * LANES];
            for l in 0..LANES {
                let x = u[l];
                s[l] += x;
                unit[l] += x * x;
                let w = (x - c[l]) as f32;
                out[l] = w;
                let w = w as f64;
                sc[l] += w;
                let kept = w + c[l];
                used[l] += kept * kept;
            }
        } else {
            for l in 0..LANES {
                let x = u[l];
                s[l] += x;
                unit[l] += x * x;
                let w = x as f32;
                out[l] = w;
                let w = w as f64;
                used[l] += w * w;
            }
        }
    }
    RowNorms { unit: lanes_total(unit), used: lanes_total(used) }
}

/// `lane_sum`'s last step: the eight lanes in its fixed order, then its (empty) tail.
fn lanes_total(l: [f64; LANES]) -> f64 {
    let [a, b, c, d, e, g, h, i] = l;
    (((a + b) + (c + d)) + ((e + g) + (h + i))) + 0.0
}

/// [`pack_row_f32_summing`] as separate loops, for rows it does not take whole.
fn separate_row_sums(
    row: &[f64],
    centre: &[f64],
    r: usize,
    batch: &mut Vec<f32>,
    sum: &mut [f64],
    sum_centred: &mut [f64],
) -> RowNorms {
    use crate::read::matrix::lane_sum;
    for (s, &x) in sum.iter_mut().zip(row) {
        *s += x;
    }
    let unit = lane_sum(row, |x| x * x);
    let mut wide = Vec::with_capacity(row.len());
    pack_row_f32_into(row, centre, r, batch, &mut wide);
    if !centre.is_empty() {
        for (s, &w) in sum_centred.iter_mut().zip(&wide) {
            *s += w;
        }
        for (w, &c) in wide.iter_mut().zip(centre) {
            *w += c;
        }
    }
    RowNorms { unit, used: lane_sum(&wide, |x| x * x) }
}

/// Adds Σ_r u_r u_rᵀ over `k` f32 rows packed by [`pack_rows_f32`] into `g`: each 4×8 tile summed
/// in f32 over the k rows, then added to G in f64. Dispatches to the relaxed or plain SIMD kernel
/// when compiled in.
pub fn gram_update_f32(packed: &[f32], k: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, k, k, g);
}

/// Adds `rows` f32 rows packed as [`pack_row_f32_into`] writes them (chunks of [`MAX_CHUNK_ROWS`])
/// into `g`. Each tile is summed in f32 over one chunk and folded into G in f64, chunk after chunk,
/// exactly as one [`gram_update_f32`] call per chunk would (bit for bit); only the order in which
/// the tiles are visited changes, so that a block of G stays in cache for the whole batch.
pub fn gram_update_f32_batch(packed: &[f32], rows: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, MAX_CHUNK_ROWS, rows, g);
}

/// Least length of a batch of `rows` rows in chunks of `stride` (the last may hold fewer) for
/// `dim_padded`: the last chunk's last octet ends after its k rows. 0 for no rows.
pub fn chunks_len(stride: usize, rows: usize, dim_padded: usize) -> usize {
    if rows == 0 || stride == 0 || dim_padded < LANES {
        return 0;
    }
    let chunks = rows.div_ceil(stride);
    let last = rows - (chunks - 1) * stride;
    (chunks - 1) * stride * dim_padded + (dim_padded / LANES - 1) * stride * LANES + last * LANES
}

/// `rows` rows in chunks of `stride` rows (the last may hold fewer), chunk c at `c·stride·d_pad`,
/// each packed as [`pack_rows_f32`] packs `stride` rows.
pub fn gram_update_f32_chunks(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    relaxed::gram_update_f32_chunks(packed, stride, rows, g);
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", not(feature = "relaxed-simd")))]
    simd::gram_update_f32_chunks(packed, stride, rows, g);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::gram_update_f32_chunks(packed, stride, rows, g);
}

/// Adds Σ_r u_r u_rᵀ over `k` rows packed by [`pack_rows`] into `g`, in f64. Dispatches to the SIMD
/// kernel when compiled in.
pub fn gram_update(packed: &[f64], k: usize, g: &mut PackedGram) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::gram_update(packed, k, g);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::gram_update(packed, k, g);
}

/// Rows of `b` that [`dots`] takes against every row of `a` before moving on (a multiple of 4, so
/// the kernels' tiles never straddle two blocks): 16 rows of d = 4096 f32 are 256 KiB, which stay
/// in L2 while all of `a` passes over them. Without the blocking every pair of `a` rows streamed
/// all of `b` from memory (32 MB for a 2048-row sample at d = 4096).
pub const DOTS_B_BLOCK: usize = 16;

/// `out[i * nb + j] = a_i · b_j` for rows of `a` and `b` (each `dim_padded` long).
pub fn dots(a: &[f32], b: &[f32], dim_padded: usize, out: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::dots(a, b, dim_padded, out);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::dots(a, b, dim_padded, out);
}

/// Which kernel this build runs: "relaxed-simd" (the worker built with the cargo feature
/// `relaxed-simd`), "simd128" or "portable", for the report and the benchmark. The f64 Gram update
/// has no relaxed form: with [`Precision::F64`] the relaxed build runs the simd128 kernel.
pub fn kernel_name(precision: Precision) -> &'static str {
    if cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))
        && precision == Precision::F32
    {
        "relaxed-simd"
    } else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        "simd128"
    } else {
        "portable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some_rows(dim: usize, k: usize) -> Vec<f64> {
        let d = padded_dim(dim);
        let mut rows = vec![0.0; k * d];
        for r in 0..k {
            for c in 0..dim {
                rows[r * d + c] = ((r * 31 + c * 17) % 13) as f64 / 13.0 - 0.4;
            }
        }
        rows
    }

    #[test]
    fn a_row_packed_while_summing_gives_the_separate_loops_bits() {
        for dim in [8usize, 40, 259] {
            let d = padded_dim(dim);
            let rows = some_rows(dim, 70);
            let centre: Vec<f64> = (0..d).map(|i| ((i * 5) % 7) as f64 * 0.01 - 0.03).collect();
            for centre in [&centre[..], &[][..]] {
                let (mut fused, mut apart) =
                    ((Vec::new(), vec![0.0; d], vec![0.0; d]), (Vec::new(), vec![0.0; d], vec![0.0; d]));
                for (r, row) in rows.chunks_exact(d).enumerate() {
                    let got = pack_row_f32_summing(row, centre, r, &mut fused.0, &mut fused.1, &mut fused.2);
                    let want = separate_row_sums(row, centre, r, &mut apart.0, &mut apart.1, &mut apart.2);
                    assert_eq!((got.unit.to_bits(), got.used.to_bits()), (want.unit.to_bits(), want.used.to_bits()));
                    assert!(got.unit > 0.0 && got.used > 0.0);
                }
                assert_eq!(fused, apart, "d = {dim}, centred: {}", !centre.is_empty());
                assert!(fused.1.iter().any(|&s| s != 0.0));
                assert_eq!(fused.2.iter().any(|&s| s != 0.0), !centre.is_empty());
            }
            // A centre of another length is taken by the separate loops.
            let (mut batch, mut sum, mut sum_centred) = (Vec::new(), vec![0.0; d], vec![0.0; d]);
            let short = vec![0.01; d / 2];
            let norms = pack_row_f32_summing(&rows[..d], &short, 0, &mut batch, &mut sum, &mut sum_centred);
            assert!(norms.used > 0.0 && sum_centred[0] != 0.0);
        }
    }

    #[test]
    fn the_centred_frobenius_norm_is_the_entrywise_one_bit_for_bit() {
        for dim in [1usize, 7, 37, 130] {
            let dp = padded_dim(dim);
            let mut full = PackedGram::new(dim);
            let mut packed = Vec::new();
            let k = pack_rows(&some_rows(dim, 9), dp, &mut packed);
            gram_update(&packed, k, &mut full);
            let mut band = PackedGram::band(dim, full.panels() / 2..full.panels());
            gram_update(&packed, k, &mut band);
            let unallocated = PackedGram::new(dim);
            let c: Vec<f64> = (0..dp).map(|i| ((i * 5) % 7) as f64 * 0.3 - 0.7).collect();
            let s: Vec<f64> = (0..dp).map(|i| ((i * 3) % 11) as f64 * 0.11 - 0.4).collect();
            // Full-length centres, shorter ones (entries past them add nothing), and none.
            for (c, s) in
                [(&c[..], &s[..]), (&c[..dim / 2], &s[..]), (&c[..], &s[..dim.div_ceil(3)]), (&[][..], &[][..])]
            {
                let n = 17.0;
                let entrywise = |a: usize, b: usize| match (c.get(a), c.get(b), s.get(a), s.get(b)) {
                    (Some(&ca), Some(&cb), Some(&sa), Some(&sb)) => ca * sb + sa * cb + n * ca * cb,
                    _ => 0.0,
                };
                for g in [&full, &band, &unallocated] {
                    let want = g.frobenius_sq_plus(entrywise);
                    assert_eq!(g.frobenius_sq_centred(c, s, n).to_bits(), want.to_bits(), "d = {dim}");
                }
            }
        }
    }

    #[test]
    fn a_g_added_from_values_apart_is_the_merge_bit_for_bit() {
        // d = 400: 80 000-odd values, past one 64 Ki slice of `merge_from`.
        let dim = 400;
        let dp = padded_dim(dim);
        let (mut mine, mut theirs) = (PackedGram::new(dim), PackedGram::new(dim));
        let mut packed = Vec::new();
        let k = pack_rows(&some_rows(dim, 7), dp, &mut packed);
        gram_update(&packed, k, &mut mine);
        let k = pack_rows(&some_rows(dim, 11).into_iter().map(|v| v * 0.3 + 0.01).collect::<Vec<_>>(), dp, &mut packed);
        gram_update(&packed, k, &mut theirs);
        assert!(theirs.stored_len() > 1 << 16);
        let mut want = mine.clone();
        want.merge(&theirs);
        let mut sent = theirs.clone();
        let values = sent.take_values();
        assert!(!sent.is_allocated());
        let mut got = mine.clone();
        assert!(got.merge_from(&sent, &values.as_slice()));
        assert_eq!(got, want, "the same sums, bit for bit");
        // Into a G not yet allocated, and a G of zeros sent (no values): what merge gives.
        let mut empty = PackedGram::new(dim);
        assert!(empty.merge_from(&sent, &values.as_slice()));
        assert_eq!(empty.values(), theirs.values());
        let mut unchanged = mine.clone();
        assert!(unchanged.merge_from(&PackedGram::new(dim), &[].as_slice()));
        assert_eq!(unchanged, mine);
        // A value too few or too many, or another layout: refused, nothing added.
        let mut refused = mine.clone();
        assert!(!refused.merge_from(&sent, &&values[1..]));
        let mut more = values.clone();
        more.push(1.0);
        assert!(!refused.merge_from(&sent, &more.as_slice()));
        assert!(!refused.merge_from(&PackedGram::band(dim, 0..2), &values.as_slice()));
        assert_eq!(refused, mine);
        // Given back, the values make the G that was sent.
        assert!(sent.restore_values(&values.as_slice()));
        assert_eq!(sent, theirs);
        assert!(!PackedGram::new(dim).restore_values(&&values[1..]));
    }

    #[test]
    fn a_g_is_allocated_by_its_first_write_and_reads_as_zero_until_then() {
        let dim = 40;
        let mut lazy = PackedGram::new(dim);
        assert!(!lazy.is_allocated());
        assert_eq!(lazy.bytes(), lazy.stored_len() * 8, "the bytes it will hold");
        let mut zeros = PackedGram::new(dim);
        zeros.panel_mut(0);
        assert!(zeros.is_allocated() && zeros.values().iter().all(|&v| v == 0.0));
        // Every reader gives what an allocated G of zeros gives.
        let extra = |a: usize, b: usize| (a * 3 + b) as f64 * 0.01;
        assert_eq!(lazy.frobenius_sq_plus(extra), zeros.frobenius_sq_plus(extra));
        assert_eq!(lazy.frobenius_sq(), 0.0);
        let v: Vec<f64> = (0..padded_dim(dim)).map(|i| i as f64).collect();
        assert_eq!(lazy.quadratic_form(&v), zeros.quadratic_form(&v));
        assert_eq!(lazy.get(3, 7), 0.0);
        // Merging into it, or placing a band of zeros, is merging into zeros.
        let mut full = PackedGram::new(dim);
        let rows = some_rows(dim, 5);
        let mut packed = Vec::new();
        let k = pack_rows(&rows, padded_dim(dim), &mut packed);
        gram_update(&packed, k, &mut full);
        lazy.merge(&full);
        assert_eq!(lazy, full);
        let band = PackedGram::band(dim, 2..6);
        assert!(full.place(&band));
        assert!(
            (8..24).all(|a| (a..padded_dim(dim)).all(|b| full.get(a, b) == 0.0)),
            "the band's panels are zero again"
        );
    }

    #[test]
    fn a_band_widens_to_the_whole_g_keeping_its_panels_and_the_first_in_place() {
        let dim = 70;
        let d = padded_dim(dim);
        let rows = some_rows(dim, 9);
        let mut packed = Vec::new();
        let k = pack_rows(&rows, d, &mut packed);
        let mut whole = PackedGram::new(dim);
        gram_update(&packed, k, &mut whole);
        let panels = whole.panels();
        for range in [0..6, 6..panels, 2..10] {
            let mut band = PackedGram::band(dim, range.clone());
            gram_update(&packed, k, &mut band);
            let at = band.values().as_ptr();
            band.widen();
            assert_eq!(band.panel_range(), 0..panels);
            if range.start == 0 {
                assert_eq!(band.values().as_ptr(), at, "the first band grows in place");
            }
            let stored = PackedGram::band(dim, range.clone()).panel_range();
            for a in 0..d {
                for b in a..d {
                    let want = if stored.contains(&(a / TILE_A)) { whole.get(a, b) } else { 0.0 };
                    assert_eq!(band.get(a, b), want, "{range:?}: G[{a},{b}]");
                }
            }
        }
    }
}
