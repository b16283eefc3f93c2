//! Why ε is what it is: the spectrum of G/V and the coordinates that carry μ, from the
//! exact pass's s = Σuᵢ and G = Σuᵢuᵢᵀ over the V unit rows used (`docs/method.md` §1, §8).
//!
//! - The eigenvalues λₖ of G/V sum to 1 (trace = Σ‖uᵢ‖²/V). One large λ means one direction carries
//!   most of the rows' second moment, which is what pushes μ and ε up.
//! - Participation ratio (Σλ)²/Σλ² = (tr G)²/‖G‖²_F, which needs no eigenvalues, and effective
//!   rank exp(−Σ pₖ ln pₖ), pₖ = λₖ/Σλ, which needs all of them: how many directions the rows
//!   really spread over.
//! - cₖ = (sₖ² − Gₖₖ)/(V(V−1)) sums to μ over the coordinates k (Σₖ sₖ² = ‖s‖², Σₖ Gₖₖ = Σ‖uᵢ‖²):
//!   the share of the mean cosine each coordinate carries ("rogue dimensions").
//!
//! Only the whole matrix's G gives these: a prefix's G is an estimate and is not used.
//! Up to n = [`FULL_SPECTRUM_MAX_DIM`] (n = d on the Gram route, V on the row route) the eigen step
//! is faer's self-adjoint solver, values only: its tridiagonalisation streams the n×n matrix n
//! times, seconds at 4096. Beyond, the [`LEADING_EIGENVALUES`] largest come from Lanczos on G itself
//! (`explain::lanczos`), one pass over the packed triangle per step, and the effective rank becomes
//! an interval. The browser shows the result first and adds the geometry after ([`GeometryTiming`]).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::lanczos::{self, EntryOp, LanczosOptions, PackedOp, RowsOp, SymOp};
use crate::pass::accumulate::{dot, PairAccumulator, RowPairs};
use crate::pass::analysis::{Analysis, Phase};

/// Coordinates listed in [`Geometry::top_mean_dimensions`].
pub const TOP_MEAN_DIMENSIONS: usize = 8;

/// Largest d that gets a geometry: every width the pass accepts (`pass::analysis::MAX_DIM`). Beyond
/// [`FULL_SPECTRUM_MAX_DIM`] nothing d×d is allocated besides the pass's own triangle.
pub const MAX_GEOMETRY_DIM: usize = 16384;

/// Largest n whose n×n eigen problem is solved in full. The solver holds the matrix twice in f64
/// (ours and its working copy), 256 MiB at 4096, and takes ~15 s there natively (~16 s in a tab);
/// at 8192 it would need 1 GiB and eight times as long. Lanczos takes the leading eigenvalues at a
/// fraction of that (`docs/method.md` §8).
pub const FULL_SPECTRUM_MAX_DIM: usize = 4096;

/// The row route forms UUᵀ before its eigen step, V²·d/2 multiply-adds: the most the Gram route's
/// widths allowed it (V < 2048 at d ≤ 4096). Past this the row route uses Lanczos too.
const FULL_ROWS_MAX_WORK: f64 = 2048.0 * 2048.0 * 4096.0 / 2.0;

/// Eigenvalues Lanczos reports where the full spectrum is not computed.
pub const LEADING_EIGENVALUES: usize = 64;

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

/// How [`Geometry::eigenvalues`] were obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpectrumMethod {
    /// All eigenvalues, by a dense symmetric solver.
    #[default]
    Full,
    /// The leading ones, by Lanczos with full reorthogonalisation.
    Lanczos,
}

/// How far the Lanczos eigenvalues can be trusted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LanczosSummary {
    /// Lanczos steps (products with G) taken.
    pub steps: u64,
    /// How many of the reported eigenvalues met the tolerance (1e-10·λ₁).
    pub converged: u64,
    /// The largest error bound over the reported eigenvalues of G/V: each lies within this of an
    /// eigenvalue of G/V.
    pub max_error: f64,
}

/// One coordinate's share of μ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanDimension {
    /// The coordinate k, 0-based.
    pub dim: u64,
    /// cₖ = (sₖ² − Gₖₖ)/(V(V−1)).
    pub contribution: f64,
}

fn yes() -> bool {
    true
}

/// The spectrum of G/V and the coordinates that carry μ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Eigenvalues of G/V, descending: all d when [`Geometry::eigenvalues_complete`], otherwise the
    /// [`LEADING_EIGENVALUES`] largest.
    pub eigenvalues: Vec<f64>,
    /// Whether `eigenvalues` holds all d of them (they then sum to 1).
    #[serde(default = "yes")]
    pub eigenvalues_complete: bool,
    #[serde(default)]
    pub method: SpectrumMethod,
    /// Σλ = tr(G)/V = Σ‖uᵢ‖²/V (1 up to rounding), known without the eigenvalues (0: not recorded).
    #[serde(default)]
    pub trace: f64,
    /// (Σλ)²/Σλ² = (tr G)²/‖G‖²_F.
    pub participation_ratio: f64,
    /// exp(−Σ pₖ ln pₖ), pₖ = λₖ/Σλ over λₖ > 0: needs every eigenvalue, so None when only the
    /// leading ones were computed.
    #[serde(default)]
    pub effective_rank: Option<f64>,
    /// When the effective rank is None: the interval it certainly lies in, from the leading
    /// eigenvalues, the trace and ‖G‖_F (`docs/method.md` §8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_rank_bounds: Option<[f64; 2]>,
    /// ‖s/V‖, the length of the mean unit row.
    pub mean_vector_norm: f64,
    /// The [`TOP_MEAN_DIMENSIONS`] coordinates with the largest |cₖ|, largest first.
    pub top_mean_dimensions: Vec<MeanDimension>,
    /// Σₖ cₖ over all d coordinates: μ over pairs i ≠ j, a check the reader can make.
    pub mean_from_dimensions: f64,
    /// Wall time of the eigen step.
    pub eigen_ms: f64,
    /// The Lanczos run's convergence, with [`SpectrumMethod::Lanczos`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lanczos: Option<LanczosSummary>,
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
    /// Wider than any pass (see [`MAX_GEOMETRY_DIM`]).
    #[error("the spectrum is computed up to d = {max}; this matrix has d = {dim}")]
    DimTooLarge { dim: usize, max: usize },
    /// The eigenvalue iteration did not converge (non-finite input).
    #[error("the eigenvalues of G/V did not converge")]
    NoConvergence,
}

/// The eigenvalues of G/V as computed, before the coordinates are added.
#[derive(Clone, Debug)]
pub struct Spectrum {
    /// Eigenvalues of G/V, any order (sorted by [`Geometry::from_parts`]).
    pub eigenvalues: Vec<f64>,
    pub complete: bool,
    pub lanczos: Option<LanczosSummary>,
    pub eigen_ms: f64,
}

/// Sums that need no eigenvalues: tr(G)/V and ‖G/V‖²_F.
#[derive(Clone, Copy, Debug)]
pub struct Moments2 {
    pub trace: f64,
    pub frobenius_sq: f64,
}

/// (tr G)²/‖G‖²_F from tr(G)/V and ‖G/V‖²_F (the scale cancels): d for G ∝ I, 1 for rank one.
pub fn participation_ratio_closed(m: Moments2) -> f64 {
    if m.frobenius_sq > 0.0 {
        m.trace * m.trace / m.frobenius_sq
    } else {
        0.0
    }
}

impl Geometry {
    /// From s (at least `dim` values), G (`gram(a, b)` = G_ab for a ≥ b; only the lower triangle is
    /// read) and V = `rows`, the number of unit rows summed. Past [`FULL_SPECTRUM_MAX_DIM`] the
    /// leading eigenvalues come from Lanczos over `gram` (d² calls per step).
    pub fn compute(
        sum: &[f64],
        gram: impl Fn(usize, usize) -> f64,
        dim: usize,
        rows: u64,
        timing: GeometryTiming,
    ) -> Result<Geometry, GeometryError> {
        Self::compute_with(sum, gram, dim, rows, timing, FULL_SPECTRUM_MAX_DIM)
    }

    /// [`Geometry::compute`] with the full solver used up to `full_max` instead of
    /// [`FULL_SPECTRUM_MAX_DIM`] (tests force the Lanczos path at small d with `full_max = 0`).
    pub fn compute_with(
        sum: &[f64],
        gram: impl Fn(usize, usize) -> f64,
        dim: usize,
        rows: u64,
        timing: GeometryTiming,
        full_max: usize,
    ) -> Result<Geometry, GeometryError> {
        check(dim, rows)?;
        if sum.len() < dim {
            return Err(GeometryError::SumTooShort { len: sum.len(), dim });
        }
        let v = rows as f64;
        let diagonal: Vec<f64> = (0..dim).map(|k| gram(k, k)).collect();
        let mut frobenius = 0.0;
        for (a, &gaa) in diagonal.iter().enumerate() {
            for b in 0..a {
                let g = gram(a, b);
                frobenius += 2.0 * g * g;
            }
            frobenius += gaa * gaa;
        }
        let moments = Moments2 { trace: diagonal.iter().sum::<f64>() / v, frobenius_sq: frobenius / (v * v) };
        let spectrum = if dim <= full_max {
            full_spectrum(dim, &gram, v, 1)?
        } else {
            leading_spectrum(&EntryOp { dim, entry: &gram }, v)?
        };
        Self::from_parts(sum, &diagonal, moments, spectrum, dim, dim, rows, timing)
    }

    /// From s, the diagonal Gₖₖ (both at least `dim` values), all eigenvalues of G/V (any order;
    /// those beyond the rank as zeros) and V = `rows`: what both of the pass's accumulators
    /// (`accumulate`) can provide, the Gram triangle directly and the row route from UUᵀ.
    pub fn from_spectrum(
        sum: &[f64],
        diagonal: &[f64],
        eigenvalues: Vec<f64>,
        eigen_ms: f64,
        dim: usize,
        rows: u64,
        timing: GeometryTiming,
    ) -> Result<Geometry, GeometryError> {
        let moments =
            Moments2 { trace: eigenvalues.iter().sum(), frobenius_sq: eigenvalues.iter().map(|l| l * l).sum() };
        let spectrum = Spectrum { eigenvalues, complete: true, lanczos: None, eigen_ms };
        Self::from_parts(sum, diagonal, moments, spectrum, dim, dim, rows, timing)
    }

    /// From s, the diagonal, tr(G)/V and ‖G/V‖²_F, the spectrum as computed, d = `dim` and the
    /// rank bound `rank_max` (min(d, V): how many eigenvalues can be non-zero).
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        sum: &[f64],
        diagonal: &[f64],
        moments: Moments2,
        spectrum: Spectrum,
        dim: usize,
        rank_max: usize,
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
        let Spectrum { mut eigenvalues, complete, lanczos, eigen_ms } = spectrum;
        eigenvalues.sort_by(|a, b| b.total_cmp(a));
        if eigenvalues.iter().any(|x| !x.is_finite()) || !moments.trace.is_finite() || !moments.frobenius_sq.is_finite()
        {
            return Err(GeometryError::NoConvergence);
        }
        let (effective_rank, effective_rank_bounds) = if complete {
            (Some(effective_rank(&eigenvalues)), None)
        } else {
            (None, Some(effective_rank_bounds(&eigenvalues, moments, rank_max)))
        };
        Ok(Geometry {
            participation_ratio: participation_ratio_closed(moments),
            effective_rank,
            effective_rank_bounds,
            eigenvalues_complete: complete,
            method: if lanczos.is_some() { SpectrumMethod::Lanczos } else { SpectrumMethod::Full },
            trace: moments.trace,
            eigenvalues,
            mean_vector_norm,
            top_mean_dimensions,
            mean_from_dimensions,
            eigen_ms,
            lanczos,
            timing,
        })
    }

    /// λ₁/Σλ: the share of the second moment along the leading direction (Σλ the trace, so it
    /// holds whether or not every eigenvalue was computed).
    pub fn leading_share(&self) -> f64 {
        let total = self.total();
        self.eigenvalues.first().map_or(0.0, |l| if total > 0.0 { l / total } else { 0.0 })
    }

    /// The effective rank for display: the value, or the interval it lies in when only the
    /// leading eigenvalues were computed.
    pub fn effective_rank_text(&self) -> String {
        // Three significant digits or the whole number (explain sits left of `result`'s formatter).
        let fmt = |x: f64| match x.abs() {
            a if a >= 100.0 => format!("{x:.0}"),
            a if a >= 10.0 => format!("{x:.1}"),
            _ => format!("{x:.2}"),
        };
        match (self.effective_rank, self.effective_rank_bounds) {
            (Some(er), _) => fmt(er),
            (None, Some([lo, hi])) => format!("{}–{} (bounds)", fmt(lo), fmt(hi)),
            (None, None) => "not computed".to_string(),
        }
    }

    /// Which eigenvalues `eigenvalues` holds, for a label: "all 4096 eigenvalues" or "leading 64 of
    /// 8192 eigenvalues (Lanczos)".
    pub fn spectrum_label(&self, dim: u64) -> String {
        if self.eigenvalues_complete {
            format!("all {dim} eigenvalues")
        } else {
            format!("leading {} of {dim} eigenvalues (Lanczos)", self.eigenvalues.len())
        }
    }

    /// Σλ: the trace where recorded, else the sum of the eigenvalues (all of them, in older reports).
    pub fn total(&self) -> f64 {
        if self.trace > 0.0 {
            self.trace
        } else {
            self.eigenvalues.iter().sum()
        }
    }
}

fn check(dim: usize, rows: u64) -> Result<(), GeometryError> {
    if rows < 2 {
        return Err(GeometryError::TooFewRows { rows });
    }
    if dim > MAX_GEOMETRY_DIM {
        return Err(GeometryError::DimTooLarge { dim, max: MAX_GEOMETRY_DIM });
    }
    Ok(())
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

/// Bounds on the effective rank from the k leading eigenvalues (descending), the trace T = Σλ, the
/// sum of squares F = Σλ² and `rank_max`, how many eigenvalues may be non-zero. With the tail's
/// weight w = R/T (R = T − Σ_top λ) and its own distribution q = λ/R over the other eigenvalues,
/// H(p) = −Σ_top p ln p − w ln w + w·H(q), and H(q) lies between the collision entropy
/// ln(R²/Q) (Q = F − Σ_top λ²; Rényi-2 ≤ Shannon) and ln(number of tail eigenvalues) (uniform).
pub fn effective_rank_bounds(leading: &[f64], moments: Moments2, rank_max: usize) -> [f64; 2] {
    let t = moments.trace;
    if t <= 0.0 {
        return [0.0, 0.0];
    }
    let top: f64 = leading.iter().filter(|&&l| l > 0.0).sum();
    let top_sq: f64 = leading.iter().filter(|&&l| l > 0.0).map(|l| l * l).sum();
    let head: f64 = leading.iter().filter(|&&l| l > 0.0).map(|&l| -(l / t) * (l / t).ln()).sum();
    let tail_count = rank_max.saturating_sub(leading.len());
    let r = (t - top).max(0.0);
    // Rounding of T and of the Lanczos values leaves a tail of ~1e-15·T where there is none.
    if tail_count == 0 || r <= 1e-12 * t {
        let er = head.exp();
        return [er, er];
    }
    let q = (moments.frobenius_sq - top_sq).max(0.0);
    let w = r / t;
    let upper_tail = (tail_count as f64).ln();
    let smallest = leading.last().copied().unwrap_or(r).max(0.0);
    // Both lower bounds hold; take the larger, never above the upper one.
    let collision = if q > 0.0 { (r * r / q).ln() } else { upper_tail };
    let min_entropy = if smallest > 0.0 { (r / smallest).ln() } else { 0.0 };
    let lower_tail = collision.max(min_entropy).max(0.0).min(upper_tail);
    let base = head - w * w.ln();
    [(base + w * lower_tail).exp(), (base + w * upper_tail).exp()]
}

/// Up to this n the full spectrum comes from Lanczos run over the whole space (n steps, n² values
/// held, exact to rounding with full reorthogonalisation): faer's solver sets up a ~4 MB workspace
/// on its first call at such sizes, more than the whole work of a small matrix.
const SMALL_EXACT_DIM: usize = 64;

/// All eigenvalues of G/V by the dense solver (by Lanczos over the whole space for small n), on up
/// to `threads` threads.
fn full_spectrum(
    n: usize,
    entry: &impl Fn(usize, usize) -> f64,
    scale: f64,
    threads: usize,
) -> Result<Spectrum, GeometryError> {
    if n <= SMALL_EXACT_DIM {
        let started = now_ms();
        // The lower triangle once (an entry may be a d-long dot product), read n times below.
        let lower: Vec<f64> = (0..n).flat_map(|a| (0..=a).map(move |b| (a, b))).map(|(a, b)| entry(a, b)).collect();
        let at = |a: usize, b: usize| lower.get(a * (a + 1) / 2 + b).copied().unwrap_or(0.0);
        let options = LanczosOptions { max_steps: n, ..LanczosOptions::leading(n) };
        let found = lanczos::leading_eigenvalues(&EntryOp { dim: n, entry: at }, options);
        if found.values.len() == n && found.values.iter().all(|x| x.is_finite()) {
            let eigenvalues = found.values.iter().map(|l| l / scale).collect();
            return Ok(Spectrum { eigenvalues, complete: true, lanczos: None, eigen_ms: now_ms() - started });
        }
    }
    let (eigenvalues, eigen_ms) = eigenvalues_scaled_on(n, entry, scale, threads)?;
    Ok(Spectrum { eigenvalues, complete: true, lanczos: None, eigen_ms })
}

/// The [`LEADING_EIGENVALUES`] largest eigenvalues of G/V by Lanczos on `op` (= G).
fn leading_spectrum(op: &impl SymOp, scale: f64) -> Result<Spectrum, GeometryError> {
    let started = now_ms();
    let found = lanczos::leading_eigenvalues(op, LanczosOptions::leading(LEADING_EIGENVALUES));
    if found.values.is_empty() || found.values.iter().chain(&found.errors).any(|x| !x.is_finite()) {
        return Err(GeometryError::NoConvergence);
    }
    let eigenvalues = found.values.iter().map(|l| l / scale).collect();
    let max_error = found.errors.iter().fold(0.0f64, |m, &e| m.max(e)) / scale;
    // The whole space may be spanned before k values were wanted (d ≤ k): then they are all of them.
    let complete = found.values.len() >= op.dim() && found.converged == found.values.len();
    let lanczos = Some(LanczosSummary { steps: found.steps as u64, converged: found.converged as u64, max_error });
    Ok(Spectrum { eigenvalues, complete, lanczos, eigen_ms: now_ms() - started })
}

/// The eigenvalues of the symmetric n×n matrix M/`scale` (`entry(a, b)` = M_ab, read for a ≥ b
/// only), unordered, and the milliseconds the solver took.
pub fn eigenvalues_scaled(
    n: usize,
    entry: impl Fn(usize, usize) -> f64,
    scale: f64,
) -> Result<(Vec<f64>, f64), GeometryError> {
    eigenvalues_scaled_on(n, entry, scale, 1)
}

/// [`eigenvalues_scaled`] on up to `threads` threads (natively; one in wasm, which has none). The
/// solver's tridiagonalisation streams the matrix once per column, so at n = 4096 it is bound by
/// memory more than arithmetic, and several cores' caches and memory channels shorten it.
pub fn eigenvalues_scaled_on(
    n: usize,
    entry: impl Fn(usize, usize) -> f64,
    scale: f64,
    threads: usize,
) -> Result<(Vec<f64>, f64), GeometryError> {
    let started = now_ms();
    // The solver reads the lower triangle only; the upper stays zero.
    let mut m = faer::Mat::<f64>::zeros(n, n);
    for b in 0..n {
        for a in b..n {
            m[(a, b)] = entry(a, b) / scale;
        }
    }
    let par = solver_parallelism(threads);
    // The work is O(n²) here, whatever the rows behind G. On x86-64 the first solve on a thread
    // also reserves faer's matrix-product workspace (twice the L3 cache's bytes, 64 MiB on a
    // 32 MiB L3), kept for the thread's life and used by every later product: a constant of the
    // machine, not of the matrix, and only the pages the packing touches are ever committed.
    let mut s = faer::diag::Diag::<f64>::zeros(n);
    let scratch = faer::linalg::evd::self_adjoint_evd_scratch::<f64>(
        n,
        faer::linalg::evd::ComputeEigenvectors::No,
        par,
        Default::default(),
    );
    faer::linalg::evd::self_adjoint_evd(
        m.as_ref(),
        s.as_mut(),
        None,
        par,
        dyn_stack::MemStack::new(&mut dyn_stack::MemBuffer::new(scratch)),
        Default::default(),
    )
    .map_err(|_| GeometryError::NoConvergence)?;
    drop(m);
    let eigenvalues = s.column_vector().iter().copied().collect();
    Ok((eigenvalues, now_ms() - started))
}

/// faer's parallelism for `threads`: its rayon pool natively (the CLI's `--threads`), sequential
/// in wasm, where faer is built without rayon.
fn solver_parallelism(threads: usize) -> faer::Par {
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(n) = std::num::NonZeroUsize::new(threads).filter(|n| n.get() > 1) {
        return faer::Par::Rayon(n);
    }
    let _ = threads;
    faer::Par::Seq
}

/// Milliseconds from an arbitrary origin: the kernel's clock, which the browser worker sets from
/// `performance.now()` (std's clock panics in wasm32-unknown-unknown), so the core names no
/// browser crate. Without a clock the eigen step's time reads 0.
fn now_ms() -> f64 {
    crate::pass::kernel::bench::now_ms().unwrap_or(0.0)
}

/// The spectrum of G/V and the coordinates that carry μ of an analysis, for `Report::geometry`:
/// `Ok(None)` unless its pass visited every row (the G of a prefix is an estimate) and is done, and
/// d is at most [`MAX_GEOMETRY_DIM`] (every width the pass takes; past 4096 the leading eigenvalues
/// by Lanczos). Takes seconds at d = 4096, so a Report is made without it and the caller may show
/// the result first. On up to `threads` threads ([`of_pass_on`]; natively only).
pub fn of_analysis(
    analysis: &Analysis,
    timing: GeometryTiming,
    threads: usize,
) -> Result<Option<Geometry>, GeometryError> {
    if !geometry_expected(analysis.is_exact(), analysis.dim() as u64) || analysis.phase() != Phase::Done {
        return Ok(None);
    }
    of_pass_on(analysis.accumulator(), analysis.dim(), timing, threads).map(Some)
}

/// The spectrum of G/V and the coordinates that carry μ, from a finished pass's accumulator
/// (either route; `dim` is the tensor's width).
pub fn of_pass(pass: &PairAccumulator, dim: usize, timing: GeometryTiming) -> Result<Geometry, GeometryError> {
    of_pass_on(pass, dim, timing, 1)
}

/// [`of_pass`] on up to `threads` threads (the CLI's `--threads`): the dense solver through faer's
/// rayon pool, Lanczos's products with G by bands of its panels. Natively only; the same
/// eigenvalues to rounding on any number.
pub fn of_pass_on(
    pass: &PairAccumulator,
    dim: usize,
    timing: GeometryTiming,
    threads: usize,
) -> Result<Geometry, GeometryError> {
    of_pass_by(pass, dim, timing, FULL_SPECTRUM_MAX_DIM, threads)
}

/// [`of_pass`] with the full solver used up to n = `full_max` (tests force Lanczos with 0).
pub fn of_pass_with(
    pass: &PairAccumulator,
    dim: usize,
    timing: GeometryTiming,
    full_max: usize,
) -> Result<Geometry, GeometryError> {
    of_pass_by(pass, dim, timing, full_max, 1)
}

/// [`of_pass_with`] on up to `threads` threads ([`of_pass_on`]).
pub fn of_pass_by(
    pass: &PairAccumulator,
    dim: usize,
    timing: GeometryTiming,
    full_max: usize,
    threads: usize,
) -> Result<Geometry, GeometryError> {
    match pass {
        PairAccumulator::Gram(g) => {
            let rows = g.counts.kept;
            check(dim, rows)?;
            let v = rows as f64;
            let op = PackedOp::new(g.gram(), dim, g.centre_parts()).on_threads(threads);
            let diagonal = op.diagonal();
            let moments =
                Moments2 { trace: diagonal.iter().sum::<f64>() / v, frobenius_sq: op.frobenius_sq() / (v * v) };
            let spectrum = if dim <= full_max {
                full_spectrum(dim, &|a, b| g.gram_entry(a, b), v, threads)?
            } else {
                leading_spectrum(&op, v)?
            };
            Geometry::from_parts(g.sum(), &diagonal, moments, spectrum, dim, dim, rows, timing)
        }
        PairAccumulator::Rows(r) => of_rows(r, timing, full_max, threads),
    }
}

/// The row route's spectrum: from the V×V matrix UUᵀ/V while that is affordable (its eigenvalues
/// are the non-zero ones of UᵀU/V; the other d − V are zero), else Lanczos on UᵀU. Gₖₖ = Σᵢ uᵢₖ²
/// and s give the coordinates that carry μ; ‖G‖²_F = ‖UUᵀ‖²_F = Σᵢ‖uᵢ‖⁴ + Σ_{i≠j} cos².
fn of_rows(r: &RowPairs, timing: GeometryTiming, full_max: usize, threads: usize) -> Result<Geometry, GeometryError> {
    let (d, v, dim) = (r.dim_padded(), r.rows(), r.dim());
    let rows = v as u64;
    check(dim, rows)?;
    let units = r.units();
    let mut diagonal = vec![0.0f64; dim];
    let mut norm4 = 0.0f64;
    for row in units.chunks_exact(d) {
        let mut n2 = 0.0;
        for (g, &x) in diagonal.iter_mut().zip(row) {
            *g += x * x;
            n2 += x * x;
        }
        norm4 += n2 * n2;
    }
    let vf = v as f64;
    let off_diagonal = r.moments().map_or(0.0, |m| m.mean_sq * vf * (vf - 1.0));
    let moments =
        Moments2 { trace: diagonal.iter().sum::<f64>() / vf, frobenius_sq: (norm4 + off_diagonal) / (vf * vf) };
    let full = v <= full_max && (v as f64) * (v as f64) * (d as f64) / 2.0 <= FULL_ROWS_MAX_WORK;
    let spectrum = if full {
        let unit = |i: usize| units.get(i * d..(i + 1) * d).unwrap_or(&[]);
        let Spectrum { mut eigenvalues, eigen_ms, .. } = full_spectrum(v, &|i, j| dot(unit(i), unit(j)), vf, threads)?;
        eigenvalues.resize(dim.max(v), 0.0);
        eigenvalues.sort_by(|a, b| b.total_cmp(a));
        eigenvalues.truncate(dim);
        Spectrum { eigenvalues, complete: true, lanczos: None, eigen_ms }
    } else {
        leading_spectrum(&RowsOp::new(units, d, dim), vf)?
    };
    Geometry::from_parts(r.sum(), &diagonal, moments, spectrum, dim, dim.min(v), rows, timing)
}
