//! Rows suspected of never being trained although no token's name says so (`docs/method.md` §9),
//! from the weights alone, in the spirit of Land & Bartolo's under-trained-token indicators: rows
//! that training never reached all drift the same way (the shared part of every gradient, weight
//! decay), so a row pointing where the known-unused rows point is one training barely moved.
//!
//! Every unit row uᵢ loses its component along the matrix's first principal direction v (which
//! every row shares and which would make every row look alike): wᵢ = (uᵢ − (uᵢ·v)v)/‖…‖. The
//! reference is m, the mean of wᵢ over the rows the names set aside; its length ‖m‖ says how far
//! those rows share one direction (1 when all do, about 1/√|S| for random ones). The indicator of
//! row i is wᵢ·m/‖m‖, and a row no name sets aside is suspected when its indicator reaches τ, the
//! [`KNOWN_QUANTILE`] quantile of the known rows' own indicators (and at least
//! [`MIN_INDICATOR`]). The direction names nothing when there are fewer than [`MIN_KNOWN_ROWS`]
//! known rows or they share no direction (‖m‖ below [`MIN_SHARED_DIRECTION`] or a few times
//! chance): without a common direction the indicator would name rows by chance.
//!
//! In an untied model's input embedding, a row is updated only when its token is read, while
//! weight decay shrinks every row: rows never read end up short. There a row no name sets aside is
//! also suspected when its norm is at most the [`KNOWN_QUANTILE`] upper quantile of the known rows'
//! norms, provided those are clearly shorter than the rest ([`NORM_GAP`]); in a tied or output
//! matrix every row is updated through the softmax, so the norm says nothing there.
//!
//! The rule cannot check a row by prompting the model as the indicators' authors did, so it is off
//! by default and labelled as suspected wherever it is shown.

use rand_xoshiro::rand_core::Rng;

use crate::explain::lanczos::{PackedOp, RowsOp, SymOp};
use crate::pass::accumulate::{dot, PairAccumulator};
use crate::pass::plan;
use crate::read::matrix::{Matrix, MatrixError};
use crate::read::untrained::RowRanges;

/// Fewest known-unused rows a reference direction (or norm) is taken from.
pub const MIN_KNOWN_ROWS: usize = 8;
/// Least ‖m‖ (mean resultant length of the known rows' directions) for the direction to apply,
/// and at least [`CHANCE_MULTIPLE`] times what |S| random directions give (about 1/√|S|). BERT's
/// 994 `[unusedN]` rows give 0.34 once the principal direction is removed.
pub const MIN_SHARED_DIRECTION: f64 = 0.2;
pub const CHANCE_MULTIPLE: f64 = 3.0;
/// Least indicator of a row suspected by its direction, whatever the known rows' spread.
pub const MIN_INDICATOR: f64 = 0.2;
/// τ is this quantile of the known rows' indicators: a row as aligned with the reference as nine
/// in ten known-unused rows are (and, for norms, as short as nine in ten of them).
pub const KNOWN_QUANTILE: f64 = 0.1;
/// The norm applies only when the known rows' median norm is at most this share of the other
/// rows' median: weight decay shrank them and nothing grew them back. It also caps the norm
/// threshold, so a wide spread of known norms cannot name ordinary rows.
pub const NORM_GAP: f64 = 0.75;
/// Norms of the other rows kept for their median (a strided subset past this many).
const MEDIAN_NORMS: u64 = 1 << 20;
/// Rows (f64 values) of the sample the principal direction is found from when the pass holds no
/// G of every row: 32 MiB.
const SAMPLE_VALUES: usize = 4 << 20;
/// Products with the covariance before the power iteration stops short of its tolerance.
const POWER_STEPS: usize = 100;

/// The rows suspected, and how they were found.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspected {
    pub rows: RowRanges,
    /// τ, the least direction indicator of a row suspected by its direction (None: the known rows
    /// share no direction, or too few are usable).
    pub direction_threshold: Option<f64>,
    /// ‖m‖ of the known rows.
    pub shared: f64,
    /// The greatest norm of a row suspected by its norm (None: not an untied input embedding, or
    /// the known rows are not shorter than the rest).
    pub norm_threshold: Option<f64>,
    /// Known-unused rows the reference was taken from.
    pub known: u64,
}

/// A row outside the known ones that may be suspected: its direction indicator and its norm.
struct Candidate {
    id: u64,
    indicator: f64,
    norm: f64,
}

/// The rows of `matrix` outside `known` that look like the `known` rows (see the module text):
/// by direction always, and by norm when `untied` (the matrix is an input embedding with an output
/// matrix of its own, where only the input rows a token feeds are ever updated). `pass` is a
/// finished pass over every row of the same matrix, whose G gives the principal direction (without
/// one, a strided sample of rows does). `Ok(None)` when the rule does not apply or names no row.
/// Reads the known rows and then every row once.
pub fn suspected_rows(
    matrix: &Matrix,
    known: &RowRanges,
    pass: Option<&PairAccumulator>,
    untied: bool,
) -> Result<Option<Suspected>, MatrixError> {
    if known.rows() < MIN_KNOWN_ROWS as u64 {
        return Ok(None);
    }
    let direction = match pass.and_then(direction_of_pass) {
        Some(v) => Some(v),
        None => direction_of_sample(matrix)?,
    };
    let mut reader = matrix.rows()?;
    let dim = reader.dim();
    let rows = reader.rows();
    let mut w = vec![0.0f64; dim];
    // The reference: the mean of the known rows' directions without v.
    let mut mean = vec![0.0f64; dim];
    let mut count = 0u64;
    for &(start, end) in known.ranges() {
        reader.rows_at(start, end.saturating_sub(start), |_, unit| {
            if project(unit, direction.as_deref(), &mut w) {
                mean.iter_mut().zip(&w).for_each(|(m, x)| *m += x);
                count += 1;
            }
        })?;
    }
    if count < MIN_KNOWN_ROWS as u64 {
        return Ok(None);
    }
    mean.iter_mut().for_each(|m| *m /= count as f64);
    let shared = dot(&mean, &mean).sqrt();
    let by_direction = shared >= MIN_SHARED_DIRECTION.max(CHANCE_MULTIPLE / (count as f64).sqrt());
    if by_direction {
        mean.iter_mut().for_each(|m| *m /= shared);
    }
    let mut known_indicators: Vec<f64> = Vec::with_capacity(count as usize);
    let mut known_norms: Vec<f64> = Vec::with_capacity(count as usize);
    let mut other_norms: Vec<f64> = Vec::new();
    let stride = rows.div_ceil(MEDIAN_NORMS).max(1);
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut reader = matrix.rows()?;
    while reader
        .next_chunk_with_norms(|id, unit, norm| {
            let indicator = if by_direction && project(unit, direction.as_deref(), &mut w) {
                dot(&w, &mean)
            } else {
                f64::NEG_INFINITY
            };
            if known.contains(id) {
                known_indicators.push(indicator);
                known_norms.push(norm);
            } else {
                if id % stride == 0 {
                    other_norms.push(norm);
                }
                candidates.push(Candidate { id, indicator, norm });
            }
        })?
        .is_some()
    {}
    let direction_threshold = by_direction.then(|| quantile(&mut known_indicators, KNOWN_QUANTILE).max(MIN_INDICATOR));
    let norm_threshold = if untied && known_norms.len() >= MIN_KNOWN_ROWS {
        let typical = quantile(&mut other_norms, 0.5);
        let short = quantile(&mut known_norms.clone(), 0.5);
        (short <= NORM_GAP * typical).then(|| quantile(&mut known_norms, 1.0 - KNOWN_QUANTILE).min(NORM_GAP * typical))
    } else {
        None
    };
    let rows = RowRanges::from_ids(
        candidates
            .iter()
            .filter(|c| {
                direction_threshold.is_some_and(|t| c.indicator >= t) || norm_threshold.is_some_and(|t| c.norm <= t)
            })
            .map(|c| c.id)
            .collect(),
    );
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(Suspected { rows, direction_threshold, shared, norm_threshold, known: count }))
}

/// The `q` quantile of `xs` (the value at ⌊(n − 1)·q⌋ in sorted order); +∞ when empty, so that no
/// row reaches a threshold taken from nothing.
fn quantile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let at = ((xs.len() as f64 - 1.0) * q).floor().max(0.0) as usize;
    xs.get(at).copied().unwrap_or(f64::INFINITY)
}

/// wᵢ = uᵢ without its component along `v`, to unit length; false when nothing is left.
fn project(unit: &[f64], v: Option<&[f64]>, w: &mut [f64]) -> bool {
    w.iter_mut().zip(unit).for_each(|(o, &x)| *o = x);
    if let Some(v) = v {
        let along = dot(unit, v);
        w.iter_mut().zip(v).for_each(|(o, &x)| *o -= along * x);
    }
    let norm = dot(w, w).sqrt();
    if norm.is_nan() || norm <= 1e-12 {
        return false;
    }
    w.iter_mut().for_each(|o| *o /= norm);
    true
}

/// The first principal direction of the rows a finished pass summed: the leading eigenvector of
/// G/n − s̄s̄ᵀ (s̄ = s/n, the mean row).
fn direction_of_pass(pass: &PairAccumulator) -> Option<Vec<f64>> {
    match pass {
        PairAccumulator::Gram(g) => {
            let n = g.scalars_so_far().rows;
            let op = PackedOp::new(g.gram(), g.dim(), g.centre_parts());
            leading_direction(&op, g.sum(), n)
        }
        PairAccumulator::Rows(r) => {
            let op = RowsOp::new(r.units(), r.dim_padded(), r.dim());
            leading_direction(&op, &row_sum(r.units(), r.dim_padded(), r.dim()), r.rows() as u64)
        }
    }
}

/// The first principal direction of every `step`-th row, as many rows as [`SAMPLE_VALUES`] holds.
fn direction_of_sample(matrix: &Matrix) -> Result<Option<Vec<f64>>, MatrixError> {
    let mut reader = matrix.rows()?;
    let (rows, dim) = (reader.rows(), reader.dim());
    let wanted = (SAMPLE_VALUES / dim.max(1)).max(2) as u64;
    let step = rows.div_ceil(wanted).max(1);
    let mut units: Vec<f64> = Vec::new();
    let mut at = 0;
    while at < rows {
        reader.rows_at(at, 1, |_, unit| units.extend_from_slice(unit))?;
        at += step;
    }
    let n = (units.len() / dim.max(1)) as u64;
    let op = RowsOp::new(&units, dim, dim);
    Ok(leading_direction(&op, &row_sum(&units, dim, dim), n))
}

fn row_sum(units: &[f64], stride: usize, dim: usize) -> Vec<f64> {
    let mut sum = vec![0.0f64; dim];
    for row in units.chunks_exact(stride.max(1)) {
        sum.iter_mut().zip(row).for_each(|(s, &x)| *s += x);
    }
    sum
}

/// The leading eigenvector of C = G/n − s̄s̄ᵀ by power iteration (`g` applies G, `sum` is s):
/// C is positive semi-definite, so the iterates converge to it without changing sign, at the rate
/// λ₂/λ₁. Where the two are close the direction is barely defined, and a vector in their span is
/// as good to remove. None without two rows or when C is zero.
fn leading_direction(g: &impl SymOp, sum: &[f64], n: u64) -> Option<Vec<f64>> {
    let d = g.dim();
    if n < 2 || d == 0 {
        return None;
    }
    let nf = n as f64;
    let mean: Vec<f64> = sum.iter().take(d).map(|s| s / nf).collect();
    let mut rng = plan::rng(0x7375_7370, 0x5043_4131);
    let mut x: Vec<f64> = (0..d).map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0).collect();
    let mut y = vec![0.0f64; d];
    if !normalise(&mut x) {
        return None;
    }
    for _ in 0..POWER_STEPS {
        g.apply(&x, &mut y);
        let along = dot(&mean, &x);
        y.iter_mut().zip(&mean).for_each(|(o, &m)| *o = *o / nf - along * m);
        if !normalise(&mut y) {
            return None;
        }
        let settled = 1.0 - dot(&x, &y) < 1e-12;
        std::mem::swap(&mut x, &mut y);
        if settled {
            break;
        }
    }
    Some(x)
}

fn normalise(x: &mut [f64]) -> bool {
    let norm = dot(x, x).sqrt();
    if !(norm > 0.0 && norm.is_finite()) {
        return false;
    }
    x.iter_mut().for_each(|v| *v /= norm);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_power_iteration_finds_the_widest_direction() {
        // Rows spread along (1, 1, 0)/√2 far more than along the other axes, around a mean off it.
        let d = 3;
        let mut units = Vec::new();
        for i in 0..200 {
            let t = (i as f64 - 99.5) / 10.0;
            let jitter = ((i * 37 % 11) as f64 - 5.0) / 50.0;
            units.extend_from_slice(&[2.0 + t, 2.0 + t, 1.0 + jitter]);
        }
        let op = RowsOp::new(&units, d, d);
        let v = leading_direction(&op, &row_sum(&units, d, d), 200).expect("a direction");
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((dot(&v, &[h, h, 0.0]).abs() - 1.0).abs() < 1e-6, "{v:?}");
    }

    #[test]
    fn a_projection_that_leaves_nothing_is_refused() {
        let mut w = vec![0.0; 2];
        assert!(!project(&[1.0, 0.0], Some(&[1.0, 0.0]), &mut w));
        assert!(project(&[0.6, 0.8], Some(&[1.0, 0.0]), &mut w));
        assert!((w[1] - 1.0).abs() < 1e-15 && w[0].abs() < 1e-15);
    }
}
