//! The hot loops: the Gram update `G += Σ uᵢuᵢᵀ` and row-against-row dot products.
//!
//! The Gram update works on f64 unit rows (decoded f32 values normalised in f64), with f64 products
//! and sums, so the exact pass matches an all-pairs float64 computation to 1e-9. (A first version
//! summed 64 f32 products before widening; its error reached 1.7e-8 in ε and 1e-4 in σ when σ ≈ 0,
//! which is why this costs about twice the f32 kernel's time.) The histogram's
//! `dots` stay f32: a 1/150-wide bin does not need more.
//!
//! Two implementations share one arithmetic order, so they agree bit for bit: [`portable`] (native
//! builds, tests) and [`simd`] (explicit `core::arch::wasm32` f64x2/f32x4, used whenever simd128 is
//! enabled, because LLVM does not vectorise these loops well for wasm: `shared/toolchain.md`).
//!
//! Rows are stored zero-padded to a multiple of [`LANES`] so that every vector load is whole; the
//! padding adds nothing to any dot product.

pub mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd;

/// Rows are padded to a multiple of this many `f32`.
pub const LANES: usize = 8;
/// Height of one Gram tile (dimensions held as broadcast scalars).
pub const TILE_A: usize = 4;
/// Rows per kernel call: enough to amortise loading and storing each Gram tile, few enough that a
/// call stays short (V8 tier-up, progress points).
pub const MAX_CHUNK_ROWS: usize = 64;
/// Row panels of G updated together while one column panel of the chunk sits in L1: without this
/// blocking each row panel streams the whole packed chunk (2 MB at d = 4096) through the cache.
pub const PANEL_BLOCK: usize = 16;

/// `dim` rounded up to a whole number of lanes.
pub fn padded_dim(dim: usize) -> usize {
    dim.div_ceil(LANES) * LANES
}

/// The upper triangle of the d×d Gram matrix G = Σ uᵢuᵢᵀ, in f64, stored by panels of
/// [`TILE_A`] rows: panel `p` holds rows `4p..4p+4` from column `(4p) rounded down to 8` to the end.
/// That is about d²/2 values, never the full square.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PackedGram {
    dim_padded: usize,
    offsets: Vec<usize>,
    values: Vec<f64>,
}

impl PackedGram {
    pub fn new(dim: usize) -> Self {
        let dim_padded = padded_dim(dim);
        let mut offsets = Vec::with_capacity(dim_padded / TILE_A + 1);
        let mut total = 0usize;
        for p in 0..dim_padded / TILE_A {
            offsets.push(total);
            total += TILE_A * (dim_padded - Self::panel_start(p));
        }
        offsets.push(total);
        Self { dim_padded, offsets, values: vec![0.0; total] }
    }

    /// First column stored for panel `p`.
    #[inline]
    pub fn panel_start(p: usize) -> usize {
        (p * TILE_A) / LANES * LANES
    }

    pub fn dim_padded(&self) -> usize {
        self.dim_padded
    }

    /// Number of panels (d_pad / 4).
    pub fn panels(&self) -> usize {
        self.dim_padded / TILE_A
    }

    /// The values of panel `p`: `TILE_A` rows of `dim_padded - panel_start(p)` columns.
    #[inline]
    pub fn panel_mut(&mut self, p: usize) -> &mut [f64] {
        let (lo, hi) = (self.offsets[p], self.offsets[p + 1]);
        &mut self.values[lo..hi]
    }

    /// ‖G‖_F² = Σ_{a,b} G_ab², read from the upper triangle (off-diagonal entries count twice).
    pub fn frobenius_sq(&self) -> f64 {
        let mut total = 0.0f64;
        for p in 0..self.panels() {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = &self.values[self.offsets[p]..self.offsets[p + 1]];
            for t in 0..TILE_A {
                let a = p * TILE_A + t;
                for (j, &g) in panel[t * width..(t + 1) * width].iter().enumerate() {
                    let b = c0 + j;
                    if b > a {
                        total += 2.0 * g * g;
                    } else if b == a {
                        total += g * g;
                    }
                }
            }
        }
        total
    }

    /// vᵀ G v for a vector of length ≥ dim (used for the spread of per-row mean cosines).
    pub fn quadratic_form(&self, v: &[f64]) -> f64 {
        let mut total = 0.0f64;
        for p in 0..self.panels() {
            let c0 = Self::panel_start(p);
            let width = self.dim_padded - c0;
            let panel = &self.values[self.offsets[p]..self.offsets[p + 1]];
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

    /// Adds another accumulator's values (partials from several workers add up to one answer).
    /// G_ab (either order; the triangle is symmetric). Zero outside the padded dimension.
    pub fn get(&self, a: usize, b: usize) -> f64 {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        if b >= self.dim_padded {
            return 0.0;
        }
        let p = a / TILE_A;
        let c0 = Self::panel_start(p);
        let width = self.dim_padded.saturating_sub(c0);
        let Some(&offset) = self.offsets.get(p) else { return 0.0 };
        self.values.get(offset + (a - p * TILE_A) * width + (b - c0)).copied().unwrap_or(0.0)
    }

    pub fn merge(&mut self, other: &PackedGram) {
        for (a, b) in self.values.iter_mut().zip(&other.values) {
            *a += b;
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.values.len() * 8
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

/// Adds Σ_r u_r u_rᵀ over `k` rows packed by [`pack_rows`] into `g`. Dispatches to the SIMD
/// kernel when compiled in.
pub fn gram_update(packed: &[f64], k: usize, g: &mut PackedGram) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::gram_update(packed, k, g);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::gram_update(packed, k, g);
}

/// `out[i * nb + j] = a_i · b_j` for rows of `a` and `b` (each `dim_padded` long).
pub fn dots(a: &[f32], b: &[f32], dim_padded: usize, out: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    simd::dots(a, b, dim_padded, out);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    portable::dots(a, b, dim_padded, out);
}

/// Which kernel this build runs ("wasm-simd128" or "portable"), for the report and the benchmark.
pub fn kernel_name() -> &'static str {
    if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        "wasm-simd128"
    } else {
        "portable"
    }
}
