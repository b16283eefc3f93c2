//! The leading eigenvalues of a symmetric positive semi-definite d×d matrix without its full
//! eigen decomposition: Lanczos with full reorthogonalisation (`docs/method.md` §8).
//!
//! Each step costs one mat-vec (d² multiply-adds over the packed triangle, read once in storage
//! order) and a reorthogonalisation against the basis so far (4·j·d); nothing d×d is allocated
//! beyond G itself. Ritz values are accepted by their residual bounds: for a Ritz pair (θ, y) of the
//! tridiagonal T_m, some eigenvalue λ lies within r = β_m·|y_m| of θ, and within r²/gap when θ is
//! separated from the other Ritz values by `gap`.
//!
//! A Lanczos run sees only the invariant subspace its start vector reaches: an eigenvalue of
//! multiplicity > 1 shows once per start. When the recurrence breaks down (β ≈ 0) it restarts from a
//! fresh random vector orthogonal to the basis, which is what lets a degenerate G (equal rows,
//! repeated eigenvalues) fill its leading k with the right multiplicities.

use rand_xoshiro::rand_core::Rng;

use crate::pass::accumulate::dot;
use crate::pass::kernel::{PackedGram, TILE_A};
use crate::pass::plan;

/// A symmetric operator y = A·x on vectors of length [`SymOp::dim`].
pub trait SymOp {
    fn dim(&self) -> usize;
    /// Writes A·x into `y` (both `dim` long).
    fn apply(&self, x: &[f64], y: &mut [f64]);
}

/// G from the exact pass's packed triangle (`kernel::PackedGram`), plus the centred f32 pass's
/// rank-2 term c·s_wᵀ + s_w·cᵀ + n·ccᵀ when there is one (`stats::GramMoments`).
pub struct PackedOp<'a> {
    gram: &'a PackedGram,
    dim: usize,
    centre: Option<(&'a [f64], &'a [f64], f64)>,
    /// Bands of panels, one per thread ([`PackedOp::on_threads`]); one band covers them all.
    bands: Vec<std::ops::Range<usize>>,
}

impl<'a> PackedOp<'a> {
    /// `centre`: (c, s_w, n) as `GramMoments::centre_parts` gives them.
    pub fn new(gram: &'a PackedGram, dim: usize, centre: Option<(&'a [f64], &'a [f64], u64)>) -> Self {
        let dim = dim.min(gram.dim_padded());
        let bands = balanced_bands(gram.panels(), gram.dim_padded(), 1);
        Self { gram, dim, centre: centre.map(|(c, s, n)| (c, s, n as f64)), bands }
    }

    /// Each product with G shared by up to `threads` threads, each over a band of panels holding
    /// an equal part of the triangle: a step streams all of G (256 MiB at d = 8192), which one core
    /// reads at a fraction of the memory's bandwidth. Each band's y is summed apart, then the bands'
    /// in order, so a given number of threads always gives the same values (and one thread exactly
    /// the sequential ones). Where a thread cannot start (wasm), its band runs on the caller's.
    pub fn on_threads(mut self, threads: usize) -> Self {
        self.bands = balanced_bands(self.gram.panels(), self.gram.dim_padded(), threads);
        self
    }

    /// The centre's part of G at (a, b), as `GramMoments::gram_entry` adds it.
    fn centre_term(&self, a: usize, b: usize) -> f64 {
        let Some((c, s, n)) = self.centre else { return 0.0 };
        match (c.get(a), c.get(b), s.get(a), s.get(b)) {
            (Some(&ca), Some(&cb), Some(&sa), Some(&sb)) => ca * sb + sa * cb + n * ca * cb,
            _ => 0.0,
        }
    }

    /// ‖G‖²_F, centre included.
    pub fn frobenius_sq(&self) -> f64 {
        let (c, s, n) = self.centre.unwrap_or((&[], &[], 0.0));
        self.gram.frobenius_sq_centred(c, s, n)
    }

    /// G_kk, centre included.
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.dim).map(|k| self.gram.get(k, k) + self.centre_term(k, k)).collect()
    }
}

impl SymOp for PackedOp<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let dp = self.gram.dim_padded();
        // Padded copies: every panel row then runs to d_pad without a bound check per entry.
        let mut xp = vec![0.0f64; dp];
        let mut yp = vec![0.0f64; dp];
        for (o, &v) in xp.iter_mut().zip(x.iter().take(self.dim)) {
            *o = v;
        }
        packed_symv_bands(self.gram, &self.bands, &xp, &mut yp);
        if let Some((c, s, n)) = self.centre {
            // (c·s_wᵀ + s_w·cᵀ + n·ccᵀ)·x = c·(s_w·x) + s_w·(c·x) + n·c·(c·x).
            let (sx, cx) = (dot_prefix(s, &xp), dot_prefix(c, &xp));
            for ((o, &ck), &sk) in yp.iter_mut().zip(c).zip(s) {
                *o += ck * (sx + n * cx) + sk * cx;
            }
        }
        for (o, &v) in y.iter_mut().zip(&yp) {
            *o = v;
        }
    }
}

fn dot_prefix(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    dot(&a[..n], &b[..n])
}

/// Contiguous ranges of `panels` panels, at most `threads` of them, each holding about the same
/// number of stored values (panel p holds 4·(d_pad − 4p): the early panels are the long ones).
fn balanced_bands(panels: usize, dim_padded: usize, threads: usize) -> Vec<std::ops::Range<usize>> {
    let threads = threads.clamp(1, panels.max(1));
    let size = |p: usize| (dim_padded - PackedGram::panel_start(p).min(dim_padded)) as f64;
    let total: f64 = (0..panels).map(size).sum();
    let mut bands = Vec::with_capacity(threads);
    let (mut start, mut held) = (0, 0.0);
    for p in 0..panels {
        held += size(p);
        let wanted = total * (bands.len() + 1) as f64 / threads as f64;
        if held >= wanted && bands.len() + 1 < threads {
            bands.push(start..p + 1);
            start = p + 1;
        }
    }
    bands.push(start..panels);
    bands
}

/// y = G·x with each band of panels summed into a y of its own on a thread of its own (the first on
/// the caller's), then the bands' y added in order.
fn packed_symv_bands(gram: &PackedGram, bands: &[std::ops::Range<usize>], x: &[f64], y: &mut [f64]) {
    let [first, rest @ ..] = bands else { return };
    if rest.is_empty() {
        packed_symv(gram, first.clone(), x, y);
        return;
    }
    let n = y.len();
    let band_y = |band: &std::ops::Range<usize>| {
        let mut part = vec![0.0f64; n];
        packed_symv(gram, band.clone(), x, &mut part);
        part
    };
    let parts: Vec<Vec<f64>> = std::thread::scope(|scope| {
        let others: Vec<_> = rest
            .iter()
            .map(|band| std::thread::Builder::new().spawn_scoped(scope, move || band_y(band)).map_err(|_| band))
            .collect();
        let mut parts = vec![band_y(first)];
        for other in others {
            // A thread that could not start, or failed, leaves its band to this one.
            parts.push(match other {
                Ok(handle) => handle.join().unwrap_or_default(),
                Err(band) => band_y(band),
            });
        }
        parts
    });
    for (band, part) in bands.iter().zip(&parts) {
        if part.len() == n {
            for (o, &v) in y.iter_mut().zip(part) {
                *o += v;
            }
        } else {
            packed_symv(gram, band.clone(), x, y);
        }
    }
}

/// y += G·x over the panels in `panels` of the packed upper triangle (x, y of length d_pad). Each
/// panel's 4 rows are read once, front to back: below its 4×4 diagonal block a stored G_ab (b > a)
/// adds G_ab·x_b to y_a and G_ab·x_a to y_b, so one pass over the triangle gives the whole
/// symmetric product.
fn packed_symv(gram: &PackedGram, panels: std::ops::Range<usize>, x: &[f64], y: &mut [f64]) {
    let dp = gram.dim_padded();
    if x.len() < dp || y.len() < dp {
        return;
    }
    for p in panels.start..panels.end.min(gram.panels()) {
        let c0 = PackedGram::panel_start(p);
        let width = dp - c0;
        let panel = gram.panel(p);
        if panel.len() < TILE_A * width {
            continue;
        }
        let a0 = p * TILE_A;
        // The 4×4 block on the diagonal: only b ≥ a is stored meaningfully.
        let j0 = a0 - c0;
        for t in 0..TILE_A {
            let a = a0 + t;
            let row = &panel[t * width..(t + 1) * width];
            for u in t..TILE_A {
                let b = a0 + u;
                let g = row[j0 + u];
                if u == t {
                    y[a] += g * x[a];
                } else {
                    y[a] += g * x[b];
                    y[b] += g * x[a];
                }
            }
        }
        // Columns past the block, four rows at once.
        let jb = j0 + TILE_A;
        let (r0, rest) = panel.split_at(width);
        let (r1, rest) = rest.split_at(width);
        let (r2, r3) = rest.split_at(width);
        let (r0, r1, r2, r3) = (&r0[jb..], &r1[jb..], &r2[jb..], &r3[..width][jb..]);
        let xs = &x[c0 + jb..dp];
        let ys = &mut y[c0 + jb..dp];
        let xa = [x[a0], x[a0 + 1], x[a0 + 2], x[a0 + 3]];
        // Four lanes per row sum, so the loop vectorises without reassociating one long sum.
        let mut acc = [[0.0f64; 4]; TILE_A];
        let quads = ys
            .chunks_exact_mut(4)
            .zip(xs.chunks_exact(4))
            .zip(r0.chunks_exact(4).zip(r1.chunks_exact(4)))
            .zip(r2.chunks_exact(4).zip(r3.chunks_exact(4)));
        for (((yq, xq), (g0, g1)), (g2, g3)) in quads {
            for l in 0..4 {
                yq[l] += g0[l] * xa[0] + g1[l] * xa[1] + g2[l] * xa[2] + g3[l] * xa[3];
                acc[0][l] += g0[l] * xq[l];
                acc[1][l] += g1[l] * xq[l];
                acc[2][l] += g2[l] * xq[l];
                acc[3][l] += g3[l] * xq[l];
            }
        }
        // d_pad and the panel starts are multiples of 8, so the tail is empty; kept for safety.
        let done = xs.len() / 4 * 4;
        for j in done..xs.len() {
            let g = [r0[j], r1[j], r2[j], r3[j]];
            ys[j] += g[0] * xa[0] + g[1] * xa[1] + g[2] * xa[2] + g[3] * xa[3];
            for t in 0..TILE_A {
                acc[t][0] += g[t] * xs[j];
            }
        }
        for (t, lanes) in acc.iter().enumerate() {
            y[a0 + t] += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        }
    }
}

/// G = UᵀU from the row route's V unit rows (`stride` f64 each, the first `dim` used):
/// G·x = Σᵢ uᵢ(uᵢ·x), 2·V·d multiply-adds.
pub struct RowsOp<'a> {
    units: &'a [f64],
    stride: usize,
    dim: usize,
}

impl<'a> RowsOp<'a> {
    pub fn new(units: &'a [f64], stride: usize, dim: usize) -> Self {
        Self { units, stride: stride.max(1), dim: dim.min(stride) }
    }
}

impl SymOp for RowsOp<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let d = self.dim.min(x.len()).min(y.len());
        y.iter_mut().for_each(|v| *v = 0.0);
        for row in self.units.chunks_exact(self.stride) {
            let u = &row[..d];
            let t = dot(u, &x[..d]);
            for (o, &v) in y[..d].iter_mut().zip(u) {
                *o += t * v;
            }
        }
    }
}

/// A symmetric matrix given entry by entry (`entry(a, b)` for a ≥ b): d² calls per product, for
/// callers that hold G in another form (and tests).
pub struct EntryOp<F: Fn(usize, usize) -> f64> {
    pub dim: usize,
    pub entry: F,
}

impl<F: Fn(usize, usize) -> f64> SymOp for EntryOp<F> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let n = self.dim.min(x.len()).min(y.len());
        y.iter_mut().for_each(|v| *v = 0.0);
        for a in 0..n {
            let mut sum = 0.0;
            for b in 0..a {
                let g = (self.entry)(a, b);
                sum += g * x[b];
                y[b] += g * x[a];
            }
            y[a] += sum + (self.entry)(a, a) * x[a];
        }
    }
}

/// What a Lanczos run is asked for.
#[derive(Clone, Copy, Debug)]
pub struct LanczosOptions {
    /// k, the number of leading eigenvalues wanted.
    pub wanted: usize,
    /// Accept when every one of the k has an error bound ≤ `tolerance`·λ₁.
    pub tolerance: f64,
    /// Most Lanczos steps (basis vectors) before giving up on the tolerance.
    pub max_steps: usize,
    pub seed: u64,
}

impl LanczosOptions {
    /// k leading eigenvalues to 1e-10·λ₁, within 4k + 64 steps.
    pub fn leading(wanted: usize) -> Self {
        Self { wanted, tolerance: 1e-10, max_steps: 4 * wanted + 64, seed: 0x006c_616e_637a_6f73 }
    }
}

/// The leading eigenvalues found, and how far to trust them.
#[derive(Clone, Debug, PartialEq)]
pub struct LeadingEigenvalues {
    /// Descending; min(k, d) of them unless the Krylov space was exhausted first.
    pub values: Vec<f64>,
    /// Error bound of each value (same order): an eigenvalue of A lies within it.
    pub errors: Vec<f64>,
    /// Lanczos steps taken (mat-vecs).
    pub steps: usize,
    /// How many of `values` met the tolerance.
    pub converged: usize,
}

/// The k leading eigenvalues of `op` (positive semi-definite or not: "leading" is "largest").
pub fn leading_eigenvalues(op: &impl SymOp, options: LanczosOptions) -> LeadingEigenvalues {
    let n = op.dim();
    let k = options.wanted.min(n);
    let max_steps = options.max_steps.max(k).min(n);
    let mut out = LeadingEigenvalues { values: Vec::new(), errors: Vec::new(), steps: 0, converged: 0 };
    if k == 0 {
        return out;
    }
    let mut rng = plan::rng(options.seed, 0x4c41_4e43);
    let mut basis: Vec<f64> = Vec::new();
    let mut alpha: Vec<f64> = Vec::new();
    // beta[j] couples basis vectors j and j + 1 (0 where the recurrence restarted).
    let mut beta: Vec<f64> = Vec::new();
    let mut q = random_vector(&mut rng, n);
    normalise(&mut q);
    let mut w = vec![0.0f64; n];
    let mut norm_estimate = 0.0f64;
    let mut ritz: Option<(Vec<f64>, Vec<f64>)> = None;
    loop {
        let j = alpha.len();
        basis.extend_from_slice(&q);
        op.apply(&q, &mut w);
        let a = dot(&q, &w);
        let previous = if j > 0 { beta[j - 1] } else { 0.0 };
        if j > 0 && previous != 0.0 {
            let prev = &basis[(j - 1) * n..j * n];
            for (wi, &pi) in w.iter_mut().zip(prev) {
                *wi -= previous * pi;
            }
        }
        for (wi, &qi) in w.iter_mut().zip(&q) {
            *wi -= a * qi;
        }
        // Twice is enough (Kahan–Parlett): w is then orthogonal to the basis to rounding.
        orthogonalise(&mut w, &basis, n);
        orthogonalise(&mut w, &basis, n);
        let mut b = norm(&w);
        alpha.push(a);
        norm_estimate = norm_estimate.max(a.abs() + b + previous);
        let steps = j + 1;
        let check = (steps >= k && (steps - k).is_multiple_of(4)) || steps == max_steps;
        if check {
            if let Some((values, vectors_last)) = tridiagonal_eigen(&alpha, &beta) {
                let converged = accepted(&values, &vectors_last, b, k, options.tolerance * norm_estimate);
                ritz = Some((values, vectors_last));
                if converged >= k {
                    beta.push(b);
                    break;
                }
            }
        }
        if steps == max_steps {
            beta.push(b);
            break;
        }
        // Breakdown: the basis spans an invariant subspace. Carry on from a random vector outside it.
        if b <= 1e-12 * norm_estimate || b == 0.0 {
            let mut fresh = None;
            for _ in 0..3 {
                let mut r = random_vector(&mut rng, n);
                normalise(&mut r);
                orthogonalise(&mut r, &basis, n);
                orthogonalise(&mut r, &basis, n);
                if norm(&r) > 1e-6 {
                    fresh = Some(r);
                    break;
                }
            }
            let Some(mut r) = fresh else {
                beta.push(0.0);
                ritz = None;
                break;
            };
            normalise(&mut r);
            b = 0.0;
            q = r;
        } else {
            for (qi, &wi) in q.iter_mut().zip(&w) {
                *qi = wi / b;
            }
        }
        beta.push(b);
    }
    out.steps = alpha.len();
    let last_beta = beta.last().copied().unwrap_or(0.0);
    // A run that ended without a fresh check (exhausted space) decomposes T now.
    let (values, vectors_last) = match ritz.filter(|(v, _)| v.len() == alpha.len()) {
        Some(r) => r,
        None => match tridiagonal_eigen(&alpha, beta.get(..alpha.len().saturating_sub(1)).unwrap_or(&[])) {
            Some(r) => r,
            None => return out,
        },
    };
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&x, &y| values[y].total_cmp(&values[x]));
    let threshold = options.tolerance * norm_estimate;
    for &i in order.iter().take(k) {
        let error = error_bound(&values, &vectors_last, last_beta, i);
        out.values.push(values[i]);
        out.errors.push(error);
        if error <= threshold {
            out.converged += 1;
        }
    }
    out
}

/// How many of the k largest Ritz values meet `threshold`.
fn accepted(values: &[f64], vectors_last: &[f64], beta: f64, k: usize, threshold: f64) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&x, &y| values[y].total_cmp(&values[x]));
    order.iter().take(k).filter(|&&i| error_bound(values, vectors_last, beta, i) <= threshold).count()
}

/// min(r, r²/gap) for Ritz value i, r = β·|yᵢ,last|.
fn error_bound(values: &[f64], vectors_last: &[f64], beta: f64, i: usize) -> f64 {
    let r = (beta * vectors_last.get(i).copied().unwrap_or(1.0)).abs();
    let gap = values
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != i)
        .map(|(_, &v)| (v - values[i]).abs())
        .fold(f64::INFINITY, f64::min);
    if gap > r && gap.is_finite() {
        r.min(r * r / gap)
    } else {
        r
    }
}

fn random_vector(rng: &mut impl Rng, n: usize) -> Vec<f64> {
    // Uniform on [−1, 1): its direction has a component along every eigenvector almost surely.
    (0..n).map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0).collect()
}

fn norm(x: &[f64]) -> f64 {
    dot(x, x).sqrt()
}

fn normalise(x: &mut [f64]) {
    let l = norm(x);
    if l > 0.0 {
        x.iter_mut().for_each(|v| *v /= l);
    }
}

/// w −= Σⱼ (qⱼ·w) qⱼ over the basis vectors (classical Gram–Schmidt).
fn orthogonalise(w: &mut [f64], basis: &[f64], n: usize) {
    if n == 0 {
        return;
    }
    let h: Vec<f64> = basis.chunks_exact(n).map(|q| dot(q, w)).collect();
    for (q, &c) in basis.chunks_exact(n).zip(&h) {
        for (wi, &qi) in w.iter_mut().zip(q) {
            *wi -= c * qi;
        }
    }
}

/// Eigenvalues of the symmetric tridiagonal matrix (diagonal `diag`, off-diagonal `off`, one
/// shorter) and the last component of each unit eigenvector, by the implicit QL method with
/// Wilkinson shifts, rotating only the last row of the eigenvector matrix: O(m²) instead of O(m³).
/// None if an eigenvalue needs more than 60 sweeps (non-finite input).
pub fn tridiagonal_eigen(diag: &[f64], off: &[f64]) -> Option<(Vec<f64>, Vec<f64>)> {
    let n = diag.len();
    if n == 0 {
        return Some((Vec::new(), Vec::new()));
    }
    let mut d = diag.to_vec();
    let mut e: Vec<f64> = (0..n).map(|i| if i + 1 < n { off.get(i).copied().unwrap_or(0.0) } else { 0.0 }).collect();
    let mut z = vec![0.0f64; n];
    z[n - 1] = 1.0;
    for l in 0..n {
        let mut sweeps = 0;
        loop {
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd {
                    break;
                }
                m += 1;
            }
            if m == l {
                break;
            }
            sweeps += 1;
            if sweeps > 60 || !d[l].is_finite() {
                return None;
            }
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = g.hypot(1.0);
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0f64, 1.0f64, 0.0f64);
            let mut i = m;
            let mut deflated = false;
            while i > l {
                i -= 1;
                let f = s * e[i];
                let b = c * e[i];
                r = f.hypot(g);
                e[i + 1] = r;
                if r == 0.0 {
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    deflated = true;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                let f = z[i + 1];
                z[i + 1] = s * z[i] + c * f;
                z[i] = c * z[i] - s * f;
            }
            if deflated {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    Some((d, z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tridiagonal_eigen_matches_a_known_spectrum() {
        // The path graph's Laplacian-like matrix 2 on the diagonal, −1 beside it: λⱼ = 2 − 2cos(jπ/(n+1)).
        let n = 40;
        let (values, last) = tridiagonal_eigen(&vec![2.0; n], &vec![-1.0; n - 1]).expect("converges");
        let mut got = values.clone();
        got.sort_by(f64::total_cmp);
        for (j, v) in got.iter().enumerate() {
            let want = 2.0 - 2.0 * (((j + 1) as f64) * std::f64::consts::PI / (n + 1) as f64).cos();
            assert!((v - want).abs() < 1e-13, "λ{j} = {v}, want {want}");
        }
        // Last components of the unit eigenvectors: Σ yₙ² = 1 (the last row of an orthogonal matrix).
        let sum: f64 = last.iter().map(|x| x * x).sum();
        assert!((sum - 1.0).abs() < 1e-12, "Σ y_last² = {sum}");
    }

    #[test]
    fn bands_cover_every_panel_once_with_equal_shares() {
        for (dim, threads) in [(8192usize, 2usize), (8192, 16), (4096, 3), (40, 7), (8, 4), (0, 3), (1000, 1)] {
            let gram = PackedGram::new(dim);
            let (panels, dp) = (gram.panels(), gram.dim_padded());
            let bands = balanced_bands(panels, dp, threads);
            assert!(!bands.is_empty() && bands.len() <= threads.max(1), "d = {dim}: {bands:?}");
            assert_eq!(bands.first().map(|b| b.start), Some(0));
            assert_eq!(bands.last().map(|b| b.end), Some(panels));
            assert!(bands.windows(2).all(|w| w[0].end == w[1].start), "d = {dim}: contiguous {bands:?}");
            // Each band holds its share of the triangle to within the first (longest) panel.
            let size =
                |b: &std::ops::Range<usize>| b.clone().map(|p| (dp - PackedGram::panel_start(p)) as f64).sum::<f64>();
            let total: f64 = bands.iter().map(size).sum();
            for b in &bands {
                assert!((size(b) - total / bands.len() as f64).abs() <= dp as f64 + 1.0, "d = {dim}: {b:?}");
            }
        }
    }

    #[test]
    fn packed_product_on_threads_matches_the_sequential_one() {
        let dim = 301;
        let mut gram = PackedGram::new(dim);
        gram.add_entries(|a, b| ((a * 13 + b * 5) % 17) as f64 - 8.0 + 0.125 * b as f64);
        let x: Vec<f64> = (0..dim).map(|i| (i as f64 * 0.37).sin()).collect();
        let (mut one, mut many) = (vec![0.0; dim], vec![0.0; dim]);
        PackedOp::new(&gram, dim, None).apply(&x, &mut one);
        PackedOp::new(&gram, dim, None).on_threads(5).apply(&x, &mut many);
        for (a, b) in one.iter().zip(&many) {
            assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn packed_product_matches_entrywise_product() {
        for dim in [1usize, 5, 8, 13, 37] {
            let mut gram = PackedGram::new(dim);
            let entry = |a: usize, b: usize| {
                if a < dim && b < dim {
                    ((a * 7 + b * 3) % 11) as f64 - 5.0 + a as f64 * 0.25
                } else {
                    0.0
                }
            };
            // A symmetric matrix: entry(min, max).
            gram.add_entries(|a, b| entry(a.min(b), a.max(b)));
            let centre: Vec<f64> =
                (0..gram.dim_padded()).map(|k| if k < dim { 0.1 * k as f64 - 0.3 } else { 0.0 }).collect();
            let sums: Vec<f64> =
                (0..gram.dim_padded()).map(|k| if k < dim { 0.5 - 0.05 * k as f64 } else { 0.0 }).collect();
            for with_centre in [false, true] {
                let op = PackedOp::new(&gram, dim, with_centre.then_some((&centre[..], &sums[..], 3)));
                let x: Vec<f64> = (0..dim).map(|k| (k as f64 * 0.7).sin()).collect();
                let mut y = vec![0.0; dim];
                op.apply(&x, &mut y);
                for (a, &got) in y.iter().enumerate() {
                    let want: f64 = (0..dim)
                        .map(|b| {
                            let g = entry(a.min(b), a.max(b));
                            let c = if with_centre { op.centre_term(a, b) } else { 0.0 };
                            (g + c) * x[b]
                        })
                        .sum();
                    assert!((got - want).abs() < 1e-12 * (1.0 + want.abs()), "d = {dim}, row {a}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn leading_eigenvalues_of_a_diagonal_matrix() {
        let n = 300;
        let diag: Vec<f64> = (0..n).map(|i| 1.0 / (1.0 + i as f64).sqrt()).collect();
        let op = EntryOp { dim: n, entry: |a: usize, b: usize| if a == b { diag[a] } else { 0.0 } };
        let got = leading_eigenvalues(&op, LanczosOptions::leading(20));
        assert_eq!(got.values.len(), 20);
        assert_eq!(got.converged, 20, "{got:?}");
        for (i, v) in got.values.iter().enumerate() {
            assert!((v - diag[i]).abs() < 1e-9, "λ{i} = {v}, want {}", diag[i]);
        }
    }

    #[test]
    fn zero_and_identity_matrices_end() {
        let zero = EntryOp { dim: 50, entry: |_: usize, _: usize| 0.0 };
        let got = leading_eigenvalues(&zero, LanczosOptions::leading(10));
        assert_eq!(got.values, vec![0.0; 10]);
        // Every eigenvalue 1: each start finds one copy, the restarts fill the rest.
        let identity = EntryOp { dim: 30, entry: |a: usize, b: usize| if a == b { 1.0 } else { 0.0 } };
        let got = leading_eigenvalues(&identity, LanczosOptions::leading(10));
        assert_eq!(got.values.len(), 10);
        assert!(got.values.iter().all(|v| (v - 1.0).abs() < 1e-12), "{got:?}");
        // k ≥ d: the whole space.
        let got = leading_eigenvalues(&identity, LanczosOptions::leading(64));
        assert_eq!(got.values.len(), 30);
        assert!(got.values.iter().all(|v| (v - 1.0).abs() < 1e-12), "{got:?}");
    }
}
