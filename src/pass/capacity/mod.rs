//! What is proven about capacity, beside the paper's laws (`docs/method.md` §2).
//!
//! The paper's four formulas are not upper bounds: its JL forms say at least that many directions
//! exist (random constructions), and its adjusted forms are fits to one optimiser's packings. This
//! module gives, for the dimension d and a tolerance ε or a count k, what geometry guarantees:
//! - [`floor_max_cos`]: no k unit vectors in R^d have a smaller max |cos| (Welch, orthoplex,
//!   Levenshtein, cap packing);
//! - [`at_most`]: no more lines than this have every |cos| ≤ ε (relative bound, Levenshtein's
//!   linear-programming bound, cap packing);
//! - [`at_least`]: this many provably exist (orthonormal basis, simplex, the covering bound, and
//!   explicit constructions: Kerdock sets, E8, the Leech lattice, equiangular tight frames).
//!
//! Everything is in log10, so counts up to 10³⁰⁰ stay finite.

pub mod levenshtein;
pub mod special;

use serde::{Deserialize, Serialize};

use levenshtein::Levenshtein;
use special::ln_beta_inc;

const LN_10: f64 = std::f64::consts::LN_10;

/// Which theorem gives the floor on max |cos|.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FloorBy {
    /// k ≤ d: an orthonormal basis has max |cos| = 0.
    Orthonormal,
    /// Welch 1974 (Rankin's simplex bound for lines): √((k − d)/(d(k − 1))).
    Welch,
    /// Conway–Hardin–Sloane 1996 from Rankin 1955: 1/√d once k > d(d + 1)/2.
    Orthoplex,
    /// Levenshtein 1982: degree 2 in closed form, higher degrees inverted.
    Levenshtein,
    /// The inverse of the cap-packing bound (counts beyond Levenshtein's degrees).
    CapPacking,
}

/// Which theorem gives the most lines possible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AtMostBy {
    /// Delsarte–Goethals–Seidel 1975: d(1 − ε²)/(1 − dε²) for dε² < 1.
    Relative,
    /// Levenshtein's universal bound of degree τ ≥ 2.
    Levenshtein,
    /// Disjoint caps of angular radius arccos(ε)/2 around the 2k antipodal points.
    CapPacking,
    /// ε ≥ 1: any number of lines.
    Unbounded,
}

/// Which construction or argument gives the lines that provably exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AtLeastBy {
    /// d orthonormal directions.
    Orthonormal,
    /// The d + 1 vertices of a regular simplex, |cos| = 1/d.
    Simplex,
    /// Chabauty–Shannon–Wyner: a maximal set's caps cover the sphere.
    Covering,
    /// Kerdock line sets (real mutually unbiased bases) in R^{4^j}, the rest orthonormal.
    Kerdock,
    /// E8's 120 lines at ½.
    E8,
    /// The Leech lattice's 98,280 lines at ½.
    Leech,
    /// 28 equiangular lines in R⁷ at 1/3.
    #[serde(rename = "equiangular-28")]
    Equiangular28,
    /// 276 equiangular lines in R²³ at 1/5.
    #[serde(rename = "equiangular-276")]
    Equiangular276,
    /// ε ≥ 1: any number of lines.
    Unbounded,
}

impl FloorBy {
    /// The name in `Report.capacity_proven.floor_by`.
    pub fn name(self) -> &'static str {
        match self {
            FloorBy::Orthonormal => "orthonormal",
            FloorBy::Welch => "welch",
            FloorBy::Orthoplex => "orthoplex",
            FloorBy::Levenshtein => "levenshtein",
            FloorBy::CapPacking => "cap-packing",
        }
    }
}

impl AtMostBy {
    /// The name in `Report.capacity_proven.at_most_by`.
    pub fn name(self) -> &'static str {
        match self {
            AtMostBy::Relative => "relative",
            AtMostBy::Levenshtein => "levenshtein",
            AtMostBy::CapPacking => "cap-packing",
            AtMostBy::Unbounded => "unbounded",
        }
    }
}

impl AtLeastBy {
    /// The name in `Report.capacity_proven.at_least_by`.
    pub fn name(self) -> &'static str {
        match self {
            AtLeastBy::Orthonormal => "orthonormal",
            AtLeastBy::Simplex => "simplex",
            AtLeastBy::Covering => "covering",
            AtLeastBy::Kerdock => "kerdock",
            AtLeastBy::E8 => "e8",
            AtLeastBy::Leech => "leech",
            AtLeastBy::Equiangular28 => "equiangular-28",
            AtLeastBy::Equiangular276 => "equiangular-276",
            AtLeastBy::Unbounded => "unbounded",
        }
    }
}

/// `Report.capacity_proven`: for the report's ε, d and kept rows, what is proven (the names are
/// the testing contract).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityProven {
    /// No set of `rows` unit vectors in R^d has a smaller max |cos|.
    pub floor_max_cos: f64,
    pub floor_by: FloorBy,
    /// log10 of the directions with pairwise |cos| ≤ ε that provably exist; null when unbounded.
    pub log10_at_least: Option<f64>,
    pub at_least_by: AtLeastBy,
    /// log10 of the most directions that can have pairwise |cos| ≤ ε; null when unbounded.
    pub log10_at_most: Option<f64>,
    pub at_most_by: AtMostBy,
}

/// The proven interval for tolerance `eps` in R^d and the floor for `rows` unit vectors.
pub fn proven(eps: f64, d: u64, rows: u64) -> CapacityProven {
    let (floor, floor_by) = floor_max_cos((rows.max(1) as f64).log10(), d);
    let (log10_at_least, at_least_by) = at_least(eps, d);
    let (log10_at_most, at_most_by) = at_most(eps, d);
    CapacityProven { floor_max_cos: floor, floor_by, log10_at_least, at_least_by, log10_at_most, at_most_by }
}

/// The tolerance the bounds are taken at: a negative ε (μ + 2σ < 0 cannot hold of real lines
/// that are not orthogonal) is taken as 0.
fn tolerance(eps: f64) -> f64 {
    if eps.is_nan() {
        0.0
    } else {
        eps.max(0.0)
    }
}

/// log10 of the cap-packing bound: k ≤ 1 / I_{sin²(θ/2)}((d−1)/2, ½), θ = arccos ε.
pub fn log10_cap_packing(eps: f64, d: f64) -> f64 {
    // sin²(θ/2) = (1 − cos θ)/2.
    let x = (1.0 - eps) / 2.0;
    -ln_beta_inc(x, (d - 1.0) / 2.0, 0.5) / LN_10
}

/// log10 of the covering bound: k ≥ 1 / I_{1−ε²}((d−1)/2, ½).
pub fn log10_covering(eps: f64, d: f64) -> f64 {
    (-ln_beta_inc(1.0 - eps * eps, (d - 1.0) / 2.0, 0.5) / LN_10).max(0.0)
}

/// The Kabatiansky–Levenshtein bound (1978) as an asymptotic only: log10 k ≲ d·R(θ)·log10 2
/// with θ = arccos ε the lines' least angle. Not a bound at finite d; never the card's number.
pub fn log10_kabatiansky_levenshtein_asymptotic(eps: f64, d: f64) -> f64 {
    let theta = tolerance(eps).min(1.0).acos();
    // Their θ* ≈ 62.9974°: below it (ε > 0.454) the sharper −½·log2(1 − cos θ) − 0.099, from the
    // bound at θ* by their angle argument; from θ* to 90° the rate formula itself.
    const THETA_STAR: f64 = 1.099_5;
    let rate = if theta < THETA_STAR {
        -0.5 * (1.0 - theta.cos()).log2() - 0.099
    } else {
        let s = theta.sin();
        let (u, v) = ((1.0 + s) / (2.0 * s), (1.0 - s) / (2.0 * s));
        u * u.log2() - if v > 0.0 { v * v.log2() } else { 0.0 }
    };
    d * rate * 2f64.log10()
}

/// The most lines in R^d with every |cos| ≤ ε, as log10 and the bound that gives it.
pub fn at_most(eps: f64, d: u64) -> (Option<f64>, AtMostBy) {
    UpperBounds::new(d).at_most(eps)
}

/// [`at_most`] for many ε at one d (a chart's curve): Levenshtein's zeros are found once.
pub struct UpperBounds {
    d: u64,
    lev: Levenshtein,
}

impl UpperBounds {
    pub fn new(d: u64) -> UpperBounds {
        UpperBounds { d, lev: Levenshtein::new(d as f64) }
    }

    pub fn at_most(&mut self, eps: f64) -> (Option<f64>, AtMostBy) {
        let e = tolerance(eps);
        if e >= 1.0 || self.d == 0 {
            return (None, AtMostBy::Unbounded);
        }
        at_most_with(e, self.d as f64, &mut self.lev)
    }
}

fn at_most_with(e: f64, d: f64, lev: &mut Levenshtein) -> (Option<f64>, AtMostBy) {
    let s = e * e;
    let mut best = (log10_cap_packing(e, d), AtMostBy::CapPacking);
    if d * s < 1.0 {
        // Closed form (also Levenshtein's τ = 1), exact to the last digit where it is met.
        let relative = (d * (1.0 - s) / (1.0 - d * s)).log10();
        if relative <= best.0 {
            best = (relative, AtMostBy::Relative);
        }
    }
    if let Some(l) = lev.log10_bound(e) {
        let closed = if l.tau == 2 { Some((d * (d + 2.0) * (1.0 - s) / (3.0 - (d + 2.0) * s)).log10()) } else { None };
        let value = closed.filter(|c| c.is_finite()).unwrap_or(l.log10);
        // A tie with the relative bound (τ = 1) keeps its name.
        if value < best.0 - 1e-12 {
            best = (value, if l.tau == 1 { AtMostBy::Relative } else { AtMostBy::Levenshtein });
        }
    }
    (Some(best.0), best.1)
}

/// A construction that provably exists: in R^{dim} (placed in any larger d with d − dim
/// orthonormal directions beside it), `lines` lines with every |cos| ≤ `max_cos`.
struct Known {
    by: AtLeastBy,
    dim: f64,
    lines: f64,
    max_cos: f64,
}

/// E8, Leech and the two equiangular tight frames (Conway–Sloane, SPLAG ch. 4, 8; Lemmens–Seidel 1973).
const KNOWN: [Known; 4] = [
    Known { by: AtLeastBy::E8, dim: 8.0, lines: 120.0, max_cos: 0.5 },
    Known { by: AtLeastBy::Leech, dim: 24.0, lines: 98_280.0, max_cos: 0.5 },
    Known { by: AtLeastBy::Equiangular28, dim: 7.0, lines: 28.0, max_cos: 1.0 / 3.0 },
    Known { by: AtLeastBy::Equiangular276, dim: 23.0, lines: 276.0, max_cos: 0.2 },
];

/// Lines in R^d with every |cos| ≤ ε that provably exist, as log10 and what gives them.
pub fn at_least(eps: f64, d: u64) -> (Option<f64>, AtLeastBy) {
    let e = tolerance(eps);
    if e >= 1.0 {
        return (None, AtLeastBy::Unbounded);
    }
    let df = d as f64;
    let mut best = (df.max(1.0).log10(), AtLeastBy::Orthonormal);
    let mut offer = |log10: f64, by: AtLeastBy| {
        if log10 > best.0 + 1e-12 {
            best = (log10, by);
        }
    };
    if d >= 1 && e >= 1.0 / df - 1e-15 {
        offer((df + 1.0).log10(), AtLeastBy::Simplex);
    }
    offer(log10_covering(e, df), AtLeastBy::Covering);
    // Kerdock: the largest 4^j ≤ d whose 1/√(4^j) = 2^−j ≤ ε (a larger j only tightens |cos|).
    let mut j = 0u32;
    while j < 31 && 4f64.powi(j as i32 + 1) <= df {
        j += 1;
    }
    while j >= 1 && 2f64.powi(-(j as i32)) > e {
        j -= 1;
    }
    if j >= 1 {
        let n = 4f64.powi(j as i32);
        offer((n * (n / 2.0 + 1.0) + (df - n)).log10(), AtLeastBy::Kerdock);
    }
    for k in &KNOWN {
        if df >= k.dim && e >= k.max_cos - 1e-15 {
            offer((k.lines + df - k.dim).log10(), k.by);
        }
    }
    (Some(best.0), best.1)
}

/// The ε = μ + 2σ below which no `rows` unit vectors in R^d can go. Welch's bound is one on the
/// mean square: Σ_{i≠j} cos² ≥ k²/d − k, so μ² + σ² ≥ (k − d)/(d(k − 1)); and
/// μ + 2σ ≥ √(μ² + σ²) whenever μ ≥ −¾σ, which holds for any k vectors once σ ≥ 4/(3(k − 1)),
/// since ‖Σu‖² ≥ 0 gives μ ≥ −1/(k − 1). (The other floors bound max |cos| only.)
pub fn floor_epsilon(rows: u64, d: u64) -> f64 {
    let (k, df) = (rows as f64, d as f64);
    if rows <= d || d == 0 {
        return 0.0;
    }
    ((k - df) / (df * (k - 1.0))).sqrt()
}

/// The floor on max |cos| for 10^log10_k unit vectors in R^d: no such set does better.
pub fn floor_max_cos(log10_k: f64, d: u64) -> (f64, FloorBy) {
    let df = d as f64;
    if d == 0 || log10_k <= df.log10() + 1e-15 {
        return (0.0, FloorBy::Orthonormal);
    }
    // d/k and d(d+1)/(2k) as powers of ten, so k may be 10^300.
    let d_over_k = 10f64.powf(df.log10() - log10_k);
    let inv_k = 10f64.powf(-log10_k);
    let mut best = (((1.0 - d_over_k) / (df * (1.0 - inv_k))).max(0.0).sqrt(), FloorBy::Welch);
    let offer = |best: &mut (f64, FloorBy), value: f64, by: FloorBy| {
        if value > best.0 * (1.0 + 1e-12) {
            *best = (value, by);
        }
    };
    let half_d_d1 = df * (df + 1.0) / 2.0;
    if log10_k > half_d_d1.log10() + 1e-15 {
        offer(&mut best, 1.0 / df.sqrt(), FloorBy::Orthoplex);
        let sq = (3.0 - (df * df + 2.0 * df) * inv_k) / ((df + 2.0) * (1.0 - d_over_k));
        offer(&mut best, sq.max(0.0).sqrt(), FloorBy::Levenshtein);
    }
    // Beyond the closed forms: the largest ε at which the upper bound on k still falls below k,
    // by bisection. Every ε kept as `lo` is certified (its bound < k), so the answer is a floor
    // whatever the bound's shape between the points tried.
    let mut lev = Levenshtein::new(df);
    let below = |lev: &mut Levenshtein, e: f64| -> Option<AtMostBy> {
        match at_most_with(e, df, lev) {
            (Some(v), by) if v < log10_k => Some(by),
            _ => None,
        }
    };
    let start = best.0;
    if let Some(by) = below(&mut lev, start * (1.0 + 1e-9) + 1e-300) {
        let (mut lo, mut lo_by, mut hi) = (start, by, 1.0f64);
        for _ in 0..64 {
            let mid = 0.5 * (lo + hi);
            match below(&mut lev, mid) {
                Some(by) => (lo, lo_by) = (mid, by),
                None => hi = mid,
            }
            if hi - lo <= 1e-15 * hi {
                break;
            }
        }
        let name = match lo_by {
            AtMostBy::CapPacking => FloorBy::CapPacking,
            _ => FloorBy::Levenshtein,
        };
        offer(&mut best, lo, name);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tight_configurations_meet_their_bounds() {
        // The relative bound at the equiangular tight frames, degree 2 at E8 and Kerdock, degree 4 at Leech.
        for &(d, eps, lines) in &[
            (7u64, 1.0 / 3.0, 28.0f64),
            (23, 0.2, 276.0),
            (8, 0.5, 120.0),
            (16, 0.25, 144.0),
            (64, 0.125, 2112.0),
            (256, 0.0625, 33024.0),
            (24, 0.5, 98280.0),
        ] {
            let (most, _) = at_most(eps, d);
            let most = most.unwrap();
            assert!((most - lines.log10()).abs() < 1e-9, "d {d}: {} vs {lines}", 10f64.powf(most));
            let (floor, _) = floor_max_cos(lines.log10(), d);
            assert!((floor - eps).abs() < 1e-9, "d {d}: floor {floor} vs {eps}");
        }
    }
}
