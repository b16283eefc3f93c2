//! Why ε is what it is: the spectrum of G/V and the coordinates that carry μ, from the
//! exact pass's s = Σuᵢ and G = Σuᵢuᵢᵀ over the V unit rows used (`docs/method.md` §1).
//!
//! - The eigenvalues λₖ of G/V sum to 1 (trace = Σ‖uᵢ‖²/V). One large λ means one direction carries
//!   most of the rows' second moment, which is what pushes μ and ε up.
//! - Participation ratio (Σλ)²/Σλ² and effective rank exp(−Σ pₖ ln pₖ), pₖ = λₖ/Σλ: how many
//!   directions the rows really spread over.
//! - cₖ = (sₖ² − Gₖₖ)/(V(V−1)) sums to μ over the coordinates k (Σₖ sₖ² = ‖s‖², Σₖ Gₖₖ = Σ‖uᵢ‖²):
//!   the share of the mean cosine each coordinate carries ("rogue dimensions").
//!
//! Only the whole matrix's G gives these: a prefix's G is an estimate and is not used.
//! The eigen step is faer's self-adjoint solver, values only. Its tridiagonalisation streams the
//! d×d matrix d times, so it takes seconds at d = 4096 (15 s natively on a loaded 2-core machine):
//! the browser shows the result first and adds the geometry after ([`GeometryTiming`]).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::pass::accumulate::{dot, PairAccumulator, RowPairs};

/// Coordinates listed in [`Geometry::top_mean_dimensions`].
pub const TOP_MEAN_DIMENSIONS: usize = 8;

/// Largest d whose spectrum is computed: the solver needs the full d×d matrix twice in f64 (ours,
/// and its working copy), 2·8·d² bytes — 256 MiB at 4096, 1 GiB at 8192, beyond what a wasm32 tab
/// should ask for and beyond the CLI's memory budget (600 MB); the CLI keeps the same limit
/// so both print the same Report.
pub const MAX_GEOMETRY_DIM: usize = 4096;

/// Largest d whose spectrum the page computes before it shows the result (the eigen step takes
/// ~0.3 s at d = 1024 in a tab and ~16 s at 4096); beyond, it follows the result.
pub const WITH_RESULT_MAX_DIM: u64 = 2048;

/// Whether a report of this kind gets a geometry: an exact pass over the whole matrix, with d up to
/// [`MAX_GEOMETRY_DIM`]. The page uses it to say "computing the spectrum…" while the worker does.
pub fn geometry_expected(exact: bool, dim: u64) -> bool {
    exact && dim <= MAX_GEOMETRY_DIM as u64
}

/// When the geometry was computed relative to the result being shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GeometryTiming {
    /// Before the report was printed (CLI, tests).
    #[serde(rename = "with the result")]
    WithTheResult,
    /// After the result was shown (the browser: the eigen step can take tens of seconds).
    #[serde(rename = "after the result")]
    AfterTheResult,
}

/// One coordinate's share of μ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanDimension {
    /// The coordinate k, 0-based.
    pub dim: u64,
    /// cₖ = (sₖ² − Gₖₖ)/(V(V−1)).
    pub contribution: f64,
}

/// The spectrum of G/V and the coordinates that carry μ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// All d eigenvalues of G/V, descending (they sum to 1).
    pub eigenvalues: Vec<f64>,
    /// (Σλ)²/Σλ².
    pub participation_ratio: f64,
    /// exp(−Σ pₖ ln pₖ), pₖ = λₖ/Σλ over λₖ > 0.
    pub effective_rank: f64,
    /// ‖s/V‖, the length of the mean unit row.
    pub mean_vector_norm: f64,
    /// The [`TOP_MEAN_DIMENSIONS`] coordinates with the largest |cₖ|, largest first.
    pub top_mean_dimensions: Vec<MeanDimension>,
    /// Σₖ cₖ over all d coordinates: μ over pairs i ≠ j, a check the reader can make.
    pub mean_from_dimensions: f64,
    /// Wall time of the eigen step.
    pub eigen_ms: f64,
    pub timing: GeometryTiming,
}

/// Why no geometry could be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GeometryError {
    /// μ over pairs needs two rows.
    #[error("the geometry needs at least two usable rows, got {rows}")]
    TooFewRows { rows: u64 },
    /// The sum vector is shorter than d.
    #[error("internal: the sum vector has {len} values for d = {dim}")]
    SumTooShort { len: usize, dim: usize },
    /// The d×d matrix would not fit (see [`MAX_GEOMETRY_DIM`]).
    #[error("the spectrum is computed up to d = {max}; this matrix has d = {dim}")]
    DimTooLarge { dim: usize, max: usize },
    /// The eigenvalue iteration did not converge (non-finite input).
    #[error("the eigenvalues of G/V did not converge")]
    NoConvergence,
}

impl Geometry {
    /// From s (at least `dim` values), G (`gram(a, b)` = G_ab for a ≥ b; only the lower triangle is
    /// read) and V = `rows`, the number of unit rows summed.
    pub fn compute(
        sum: &[f64],
        gram: impl Fn(usize, usize) -> f64,
        dim: usize,
        rows: u64,
        timing: GeometryTiming,
    ) -> Result<Geometry, GeometryError> {
        if rows < 2 {
            return Err(GeometryError::TooFewRows { rows });
        }
        if dim > MAX_GEOMETRY_DIM {
            return Err(GeometryError::DimTooLarge { dim, max: MAX_GEOMETRY_DIM });
        }
        if sum.len() < dim {
            return Err(GeometryError::SumTooShort { len: sum.len(), dim });
        }
        let diagonal: Vec<f64> = (0..dim).map(|k| gram(k, k)).collect();
        let (eigenvalues, eigen_ms) = eigenvalues_scaled(dim, &gram, rows as f64)?;
        Self::from_spectrum(sum, &diagonal, eigenvalues, eigen_ms, dim, rows, timing)
    }

    /// From s, the diagonal Gₖₖ (both at least `dim` values), the eigenvalues of G/V (any order;
    /// those beyond the rank as zeros) and V = `rows`: what both of the pass's accumulators
    /// (`accumulate`) can provide, the Gram triangle directly and the row route from UUᵀ.
    pub fn from_spectrum(
        sum: &[f64],
        diagonal: &[f64],
        mut eigenvalues: Vec<f64>,
        eigen_ms: f64,
        dim: usize,
        rows: u64,
        timing: GeometryTiming,
    ) -> Result<Geometry, GeometryError> {
        if rows < 2 {
            return Err(GeometryError::TooFewRows { rows });
        }
        let s = sum.get(..dim).ok_or(GeometryError::SumTooShort { len: sum.len(), dim })?;
        let g = diagonal.get(..dim).ok_or(GeometryError::SumTooShort { len: diagonal.len(), dim })?;
        let v = rows as f64;
        let pairs = v * (v - 1.0);
        let contributions: Vec<f64> = s.iter().zip(g).map(|(&sk, &gkk)| (sk * sk - gkk) / pairs).collect();
        let mean_from_dimensions = contributions.iter().sum();
        let mut order: Vec<usize> = (0..dim).collect();
        order.sort_by(|&a, &b| contributions[b].abs().total_cmp(&contributions[a].abs()));
        let top_mean_dimensions = order
            .iter()
            .take(TOP_MEAN_DIMENSIONS)
            .map(|&k| MeanDimension { dim: k as u64, contribution: contributions[k] })
            .collect();
        let mean_vector_norm = s.iter().map(|x| x * x).sum::<f64>().sqrt() / v;
        eigenvalues.sort_by(|a, b| b.total_cmp(a));
        if eigenvalues.iter().any(|x| !x.is_finite()) {
            return Err(GeometryError::NoConvergence);
        }
        Ok(Geometry {
            participation_ratio: participation_ratio(&eigenvalues),
            effective_rank: effective_rank(&eigenvalues),
            eigenvalues,
            mean_vector_norm,
            top_mean_dimensions,
            mean_from_dimensions,
            eigen_ms,
            timing,
        })
    }

    /// λ₁/Σλ: the share of the second moment along the leading direction.
    pub fn leading_share(&self) -> f64 {
        let total: f64 = self.eigenvalues.iter().sum();
        self.eigenvalues.first().map_or(0.0, |l| if total > 0.0 { l / total } else { 0.0 })
    }
}

/// (Σλ)²/Σλ²: d for an isotropic spectrum, 1 when one direction holds everything.
pub fn participation_ratio(eigenvalues: &[f64]) -> f64 {
    let total: f64 = eigenvalues.iter().sum();
    let squares: f64 = eigenvalues.iter().map(|l| l * l).sum();
    if squares > 0.0 {
        total * total / squares
    } else {
        0.0
    }
}

/// exp of the Shannon entropy of pₖ = λₖ/Σλ over λₖ > 0 (rounding leaves tiny negative ones at the
/// null space; they carry no weight).
pub fn effective_rank(eigenvalues: &[f64]) -> f64 {
    let total: f64 = eigenvalues.iter().filter(|&&l| l > 0.0).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let entropy: f64 = eigenvalues
        .iter()
        .filter(|&&l| l > 0.0)
        .map(|&l| {
            let p = l / total;
            -p * p.ln()
        })
        .sum();
    entropy.exp()
}

/// The eigenvalues of the symmetric n×n matrix M/`scale` (`entry(a, b)` = M_ab, read for a ≥ b
/// only), unordered, and the milliseconds the solver took.
pub fn eigenvalues_scaled(
    n: usize,
    entry: impl Fn(usize, usize) -> f64,
    scale: f64,
) -> Result<(Vec<f64>, f64), GeometryError> {
    let started = now_ms();
    // The solver reads the lower triangle only; the upper stays zero.
    let mut m = faer::Mat::<f64>::zeros(n, n);
    for b in 0..n {
        for a in b..n {
            m[(a, b)] = entry(a, b) / scale;
        }
    }
    let eigenvalues = m.self_adjoint_eigenvalues(faer::Side::Lower).map_err(|_| GeometryError::NoConvergence)?;
    drop(m);
    Ok((eigenvalues, now_ms() - started))
}

/// Milliseconds from an arbitrary origin: the kernel's clock, which the browser worker sets from
/// `performance.now()` (std's clock panics in wasm32-unknown-unknown), so the core names no
/// browser crate. Without a clock the eigen step's time reads 0.
fn now_ms() -> f64 {
    crate::pass::kernel::bench::now_ms().unwrap_or(0.0)
}

/// The spectrum of G/V and the coordinates that carry μ, from a finished pass's accumulator
/// (either route; `dim` is the tensor's width).
pub fn of_pass(pass: &PairAccumulator, dim: usize, timing: GeometryTiming) -> Result<Geometry, GeometryError> {
    match pass {
        PairAccumulator::Gram(g) => Geometry::compute(g.sum(), |a, b| g.gram_entry(a, b), dim, g.counts.kept, timing),
        PairAccumulator::Rows(r) => of_rows(r, timing),
    }
}

/// The row route's spectrum from the V×V matrix UUᵀ/V (its eigenvalues are the non-zero ones of
/// UᵀU/V; the other d − V are zero), with Gₖₖ = Σᵢ uᵢₖ² and s for the coordinates that carry μ.
fn of_rows(r: &RowPairs, timing: GeometryTiming) -> Result<Geometry, GeometryError> {
    let (d, v, dim) = (r.dim_padded(), r.rows(), r.dim());
    let rows = v as u64;
    if rows < 2 {
        return Err(GeometryError::TooFewRows { rows });
    }
    if dim > MAX_GEOMETRY_DIM {
        return Err(GeometryError::DimTooLarge { dim, max: MAX_GEOMETRY_DIM });
    }
    let units = r.units();
    let mut diagonal = vec![0.0f64; dim];
    for row in units.chunks_exact(d) {
        for (g, &x) in diagonal.iter_mut().zip(row) {
            *g += x * x;
        }
    }
    let unit = |i: usize| units.get(i * d..(i + 1) * d).unwrap_or(&[]);
    let (mut eigenvalues, eigen_ms) = eigenvalues_scaled(v, |i, j| dot(unit(i), unit(j)), v as f64)?;
    eigenvalues.resize(dim.max(v), 0.0);
    eigenvalues.sort_by(|a, b| b.total_cmp(a));
    eigenvalues.truncate(dim);
    Geometry::from_spectrum(r.sum(), &diagonal, eigenvalues, eigen_ms, dim, rows, timing)
}
