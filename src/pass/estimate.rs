//! From the cosine statistics to ε, the capacity bounds and the class (`docs/method.md` §1–3).
//!
//! Capacities reach 10²⁰ and beyond, so every bound is computed as log10 k.

use serde::{Deserialize, Serialize};

use crate::pass::stats::{Moments, PairSample, RowCounts};

/// ε = μ + 2σ, the accepted deviation from orthogonality (`docs/method.md` §1).
pub fn epsilon(mu: f64, sigma: f64) -> f64 {
    mu + 2.0 * sigma
}

/// μ + 3σ, the paper code's "exaggerated" variant (`docs/method.md` §1).
pub fn epsilon_3sigma(mu: f64, sigma: f64) -> f64 {
    mu + 3.0 * sigma
}

/// Johnson–Lindenstrauss constant as proven: k ≤ exp(d·ε²/8) (`docs/method.md` §2, paper §3.2).
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

/// Below this ε the paper prints a finite capacity (`docs/method.md` §2).
pub const FINITE_CAPACITY_BELOW: f64 = 0.1;
/// Above this ε a model is Class 1 (`docs/method.md` §3).
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

/// log10 capacity under each of the four formulas of `docs/method.md` §2.
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

/// The two families of `docs/method.md` §3 (and the empty gap between them).
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

impl Class {
    /// "Class 1", "Class 2", or the gap between them: how the card, the CLI and the tables name it.
    pub fn label(self) -> &'static str {
        match self {
            Class::One => "Class 1",
            Class::Two => "Class 2",
            Class::Between => "between the classes",
        }
    }
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

/// Standard error of a running ε, by the delta method on the U-statistics for μ and E[cos²], when
/// `blocks` of `blocks_total` blocks (`rows` rows) have been visited in random order:
/// Var ≈ 4ζ₁/b·(1 − b/B) + 2ζ₂/n²·(1 − n/N), with ζ₁ the covariance of block means of the per-row
/// mean (cos, cos²) and ζ₂ that of single pairs, both measured on the histogram's sample of blocks.
/// Blocks rather than rows are the sampling unit because the pass reads whole blocks (one read per
/// block; a browser read costs ~0.7 ms whatever its size). Zero once every block was visited.
pub fn epsilon_standard_error(
    sample: &PairSample,
    at: &Moments,
    blocks: u64,
    blocks_total: u64,
    rows: u64,
    rows_total: u64,
) -> Option<f64> {
    if blocks >= blocks_total {
        return Some(0.0);
    }
    if sample.pairs < 3 || blocks == 0 || rows < 2 || at.sigma <= 0.0 {
        return None;
    }
    // Gradient of ε = μ + 2·sqrt(E[c²] − μ²) with respect to (μ, E[c²]).
    let g = [1.0 - 2.0 * at.mu / at.sigma, 1.0 / at.sigma];
    // Block means of the per-row means h₁(i) = mean over partners j of (cos, cos²).
    let mut by_block: std::collections::BTreeMap<u32, ([f64; 2], f64)> = std::collections::BTreeMap::new();
    for i in 0..sample.rows() {
        let n = sample.row_pairs[i] as f64;
        if n == 0.0 {
            continue;
        }
        let e = by_block.entry(sample.block[i]).or_insert(([0.0; 2], 0.0));
        e.0[0] += sample.row_sum[i] / n;
        e.0[1] += sample.row_sum_sq[i] / n;
        e.1 += 1.0;
    }
    let means: Vec<[f64; 2]> = by_block.values().map(|(s, n)| [s[0] / n, s[1] / n]).collect();
    let m = means.len() as f64;
    if m < 2.0 {
        return None;
    }
    let centre = [means.iter().map(|x| x[0]).sum::<f64>() / m, means.iter().map(|x| x[1]).sum::<f64>() / m];
    let mut z1 = [[0.0f64; 2]; 2];
    for x in &means {
        for a in 0..2 {
            for b in 0..2 {
                z1[a][b] += (x[a] - centre[a]) * (x[b] - centre[b]) / (m - 1.0);
            }
        }
    }
    // ζ₂: covariance of (cos, cos²) over single pairs.
    let p = sample.pairs as f64;
    let [s1, s2, s3, s4] = sample.power_sums.map(|s| s / p);
    let z2 = [[s2 - s1 * s1, s3 - s1 * s2], [s3 - s1 * s2, s4 - s2 * s2]];
    let quad = |z: [[f64; 2]; 2]| g[0] * g[0] * z[0][0] + 2.0 * g[0] * g[1] * z[0][1] + g[1] * g[1] * z[1][1];
    let (b, n) = (blocks as f64, rows as f64);
    let var = 4.0 * quad(z1).max(0.0) / b * (1.0 - b / blocks_total as f64)
        + 2.0 * quad(z2).max(0.0) / (n * n) * (1.0 - n / rows_total.max(1) as f64).max(0.0);
    Some(var.max(0.0).sqrt())
}

/// 95 % normal interval half-width factor.
pub const Z_95: f64 = 1.959964;

/// The running estimate's within-block stratum: Σ cos, Σ cos² and the count of the pairs i < j
/// inside the visited blocks that were measured, and how many blocks those were. Only some of the
/// visited blocks are measured (every k-th of the plan's seeded random order, an unbiased sample of
/// them): [`WithinBlock::scaled_to`] scales the sums to all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WithinBlock {
    /// Σ cos over the measured pairs.
    pub sum: f64,
    /// Σ cos² over the measured pairs.
    pub sum_sq: f64,
    /// Pairs measured.
    pub pairs: u64,
    /// Blocks measured.
    pub blocks: u64,
}

impl WithinBlock {
    /// Adds one block's pairs i < j from its `k × k` matrix of dot products. The block's sums are
    /// made first and then added, so a block adds the same bits wherever it is measured.
    pub fn add_block(&mut self, dots: &[f32], k: usize) {
        let (mut sum, mut sum_sq, mut pairs) = (0.0f64, 0.0f64, 0u64);
        for i in 0..k {
            for &c in dots.get(i * k + i + 1..(i + 1) * k).unwrap_or(&[]) {
                let c = c as f64;
                sum += c;
                sum_sq += c * c;
                pairs += 1;
            }
        }
        self.sum += sum;
        self.sum_sq += sum_sq;
        self.pairs += pairs;
        self.blocks += 1;
    }

    /// Adds the stratum of other blocks (another share's, disjoint from these).
    pub fn merge(&mut self, other: &WithinBlock) {
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.pairs += other.pairs;
        self.blocks += other.blocks;
    }

    /// The sums scaled from the measured blocks to all `seen` visited blocks (as they are when
    /// every visited block was measured, or none).
    pub fn scaled_to(&self, seen: u64) -> WithinBlock {
        if self.blocks > 0 && self.blocks < seen {
            let f = seen as f64 / self.blocks as f64;
            WithinBlock {
                sum: self.sum * f,
                sum_sq: self.sum_sq * f,
                pairs: (self.pairs as f64 * f).round() as u64,
                blocks: seen,
            }
        } else {
            *self
        }
    }
}

/// The blocks a pass has visited, for [`stratified_moments`]: the within-block stratum measured
/// on them, and how many of the plan's blocks were visited.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlocksSeen {
    pub within: WithinBlock,
    pub seen: u64,
    pub total: u64,
}

/// The running estimate of μ and σ over all pairs from the blocks visited so far (`all`: the
/// moments of every pair among the rows seen). Pairs inside one block (vocabulary neighbours,
/// over-represented in a prefix of blocks) and pairs across blocks are averaged separately and
/// weighted by their share of the whole matrix's pairs, so the estimate is not pulled towards
/// related neighbours. Any random subset of blocks works (one worker's share, or a merge of shares).
pub fn stratified_moments(all: &Moments, counts: RowCounts, blocks: BlocksSeen, rows: u64) -> Moments {
    let within = blocks.within.scaled_to(blocks.seen);
    let (w1, w2, wp) = (within.sum, within.sum_sq, within.pairs);
    let n = counts.kept as f64;
    let pairs = n * (n - 1.0) / 2.0;
    let (b1, b2, bp) = (all.mu * pairs - w1, all.mean_sq * pairs - w2, pairs - wp as f64);
    if bp <= 0.0 || wp == 0 || blocks.seen == 0 {
        return *all;
    }
    let population = rows as f64 * n / counts.seen.max(1) as f64;
    let within_pop = wp as f64 / blocks.seen as f64 * blocks.total as f64;
    let between_pop = (population * (population - 1.0) / 2.0 - within_pop).max(0.0);
    let total = within_pop + between_pop;
    let mu = (b1 / bp * between_pop + w1 / wp as f64 * within_pop) / total;
    let mean_sq = (b2 / bp * between_pop + w2 / wp as f64 * within_pop) / total;
    let sigma = (mean_sq - mu * mu).max(0.0).sqrt();
    Moments { rows: counts.kept, pairs: all.pairs, mu, mean_sq, sigma }
}

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
