//! From the cosine statistics to ε, the capacity bounds and the class (`shared/paper.md` §1–3).
//!
//! Capacities reach 10²⁰ and beyond, so every bound is computed as log10 k.

use serde::{Deserialize, Serialize};

use crate::stats::{Moments, PairSample};

/// ε = μ + 2σ, the accepted deviation from orthogonality (`shared/paper.md` §1).
pub fn epsilon(mu: f64, sigma: f64) -> f64 {
    mu + 2.0 * sigma
}

/// μ + 3σ, the paper code's "exaggerated" variant (`shared/paper.md` §1).
pub fn epsilon_3sigma(mu: f64, sigma: f64) -> f64 {
    mu + 3.0 * sigma
}

/// Johnson–Lindenstrauss constant as proven: k ≤ exp(d·ε²/8) (`shared/paper.md` §2, paper §3.2).
pub const JL_C_PROVEN: f64 = 8.0;
/// JL constant fitted on random vectors (R² 0.9985; paper §3.2, Fig. 6).
pub const JL_C_TIGHT: f64 = 3.029;
/// One-parameter adjusted law k ≤ d·exp(d·ε²/C) (paper Eq. 6, Fig. 7).
pub const SIMPLE_C: f64 = 1.2934;
/// Four-constant adjusted law used for the paper's Table 1 (paper Eq. 7, App. D).
pub const FULL_C: f64 = 0.45809143;
pub const FULL_A: f64 = 1.0668005;
pub const FULL_B: f64 = 1.44738666;
pub const FULL_EXP_C: f64 = 0.97197234;

/// Below this ε the paper prints a finite capacity (`shared/paper.md` §2).
pub const FINITE_CAPACITY_BELOW: f64 = 0.1;
/// Above this ε a model is Class 1 (`shared/paper.md` §3).
pub const CLASS_1_ABOVE: f64 = 0.2;

/// log10 of exp(d·ε²/C): the JL bound.
pub fn log10_jl(d: f64, eps: f64, c: f64) -> f64 {
    d * eps * eps / c / std::f64::consts::LN_10
}

/// log10 of d·exp(d·ε²/C): the one-parameter adjusted law.
pub fn log10_adjusted_simple(d: f64, eps: f64) -> f64 {
    d.log10() + log10_jl(d, eps, SIMPLE_C)
}

/// log10 of ⌈(d·exp((d^c·ε²/C)^{1/b}))^{1/a}⌉, the full adjusted law (paper Eq. 7).
pub fn log10_adjusted_full(d: f64, eps: f64) -> f64 {
    let inner = (d.powf(FULL_EXP_C) * eps * eps / FULL_C).powf(1.0 / FULL_B);
    let ln_k = (d.ln() + inner) / FULL_A;
    // The ceiling only matters while k is small enough to be held exactly.
    if ln_k < 36.0 {
        ln_k.exp().ceil().log10()
    } else {
        ln_k / std::f64::consts::LN_10
    }
}

/// log10 capacity under each of the four formulas of `shared/paper.md` §2.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacities {
    pub jl_c8: f64,
    pub jl_c3029: f64,
    pub adjusted_simple: f64,
    pub adjusted_full: f64,
}

pub fn capacities(d: u64, eps: f64) -> Capacities {
    let d = d as f64;
    Capacities {
        jl_c8: log10_jl(d, eps, JL_C_PROVEN),
        jl_c3029: log10_jl(d, eps, JL_C_TIGHT),
        adjusted_simple: log10_adjusted_simple(d, eps),
        adjusted_full: log10_adjusted_full(d, eps),
    }
}

/// Whether the paper would print a finite capacity for this ε.
pub fn capacity_determinate(eps: f64) -> bool {
    eps < FINITE_CAPACITY_BELOW
}

/// The two families of `shared/paper.md` §3 (and the empty gap between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// ε > 0.2: wide distributions, μ far from 0; capacity indeterminate.
    #[serde(rename = "1")]
    One,
    /// ε < 0.1: tight around 0; finite capacity.
    #[serde(rename = "2")]
    Two,
    /// 0.1 ≤ ε ≤ 0.2: no published model falls here.
    #[serde(rename = "between")]
    Between,
}

pub fn class(eps: f64) -> Class {
    if eps > CLASS_1_ABOVE {
        Class::One
    } else if eps < FINITE_CAPACITY_BELOW {
        Class::Two
    } else {
        Class::Between
    }
}

/// Standard error of ε estimated from the pairs among `n` of `population` rows drawn without
/// replacement, by the delta method on the U-statistics for μ and E[cos²]:
/// Var ≈ (4ζ₁/n + 2ζ₂/n²)·(1 − n/N), with ζ₁, ζ₂ measured on the histogram's row sample.
/// Zero when every row has been seen.
pub fn epsilon_standard_error(sample: &PairSample, at: &Moments, n: u64, population: u64) -> Option<f64> {
    if n >= population {
        return Some(0.0);
    }
    let m = sample.rows();
    if m < 3 || n < 2 || at.sigma <= 0.0 {
        return None;
    }
    // Gradient of ε = μ + 2·sqrt(E[c²] − μ²) with respect to (μ, E[c²]).
    let g = [1.0 - 2.0 * at.mu / at.sigma, 1.0 / at.sigma];
    // ζ₁: covariance of the per-row means h₁(i) = mean_j (cos, cos²).
    let mf = m as f64;
    let h: Vec<[f64; 2]> = sample
        .row_sum
        .iter()
        .zip(&sample.row_sum_sq)
        .map(|(s, s2)| [s / (mf - 1.0), s2 / (mf - 1.0)])
        .collect();
    let mean = [h.iter().map(|x| x[0]).sum::<f64>() / mf, h.iter().map(|x| x[1]).sum::<f64>() / mf];
    let mut z1 = [[0.0f64; 2]; 2];
    for x in &h {
        for a in 0..2 {
            for b in 0..2 {
                z1[a][b] += (x[a] - mean[a]) * (x[b] - mean[b]) / (mf - 1.0);
            }
        }
    }
    // ζ₂: covariance of (cos, cos²) over single pairs.
    let p = sample.pairs as f64;
    let [s1, s2, s3, s4] = sample.power_sums.map(|s| s / p);
    let z2 = [[s2 - s1 * s1, s3 - s1 * s2], [s3 - s1 * s2, s4 - s2 * s2]];
    let quad = |z: [[f64; 2]; 2]| {
        g[0] * g[0] * z[0][0] + 2.0 * g[0] * g[1] * z[0][1] + g[1] * g[1] * z[1][1]
    };
    let nf = n as f64;
    let fpc = 1.0 - nf / population as f64;
    let var = (4.0 * quad(z1).max(0.0) / nf + 2.0 * quad(z2).max(0.0) / (nf * nf)) * fpc;
    Some(var.max(0.0).sqrt())
}

/// 95 % normal interval half-width factor.
pub const Z_95: f64 = 1.959964;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_boundaries_follow_section_3() {
        assert_eq!(class(0.0645), Class::Two);
        assert_eq!(class(0.15), Class::Between);
        assert_eq!(class(0.35), Class::One);
    }
}
