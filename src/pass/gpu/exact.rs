//! A whole exact pass of an opened matrix on the GPU, natively: rows streamed through [`GpuGram`] as
//! the file stores them (F32, BF16, F16; other types decoded to f32 on the CPU), and the Report's numbers (counts, μ, σ, ε, μ + 3σ, capacities, class) made
//! from the sums by the same functions the CPU pass uses (docs/method.md §1–3).

use std::rc::Rc;

use super::gram::{GpuGram, GpuGramSums, GramOptions, RawType};
use super::{GpuContext, GpuError, GpuInfo};
use crate::pass::estimate::{self, Capacities, Class};
use crate::pass::kernel;
use crate::pass::stats::Moments;
use crate::read::format::decode::decode_rows;
use crate::read::matrix::{Matrix, MatrixError, CHUNK_ROWS};

/// Rows whose mean is the centre, spread evenly over the matrix; the same rows' pairs decide whether
/// f32 tiles suffice ([`kernel::f32_suffices`]).
pub const CENTRE_SAMPLE_ROWS: u64 = 256;

/// Why a GPU pass of a matrix did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum GpuPassError {
    /// The GPU (or the driver's use of it) failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The matrix could not be read or decoded.
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    /// The sample says σ is inside the f32 noise: the pass must run in f64 on the CPU.
    #[error("the GPU pass is f32 only: {0}")]
    NeedsF64(String),
    /// Fewer than two rows are usable.
    #[error("fewer than two usable rows")]
    TooFewRows,
}

/// The Report's numbers from a GPU pass (field names as in `result::report::Report`).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuPass {
    pub rows_seen: u64,
    pub rows_used: u64,
    pub rows_dropped_zero: u64,
    pub rows_dropped_nonfinite: u64,
    pub pairs: u64,
    pub mu: f64,
    pub sigma: f64,
    pub epsilon: f64,
    pub epsilon_3sigma: f64,
    pub log10_capacity: Capacities,
    pub capacity_determinate: bool,
    pub class: Class,
    /// The adapter that ran it.
    pub gpu: GpuInfo,
    /// What was read back, for callers that need s or G (`explain`).
    pub sums: GpuGramSums,
}

/// The mean unit row and the moments of the pairs among up to [`CENTRE_SAMPLE_ROWS`] rows.
fn centre_sample(matrix: &Matrix) -> Result<(Option<Vec<f64>>, Option<Moments>), MatrixError> {
    let mut reader = matrix.rows()?;
    let (rows, dim) = (reader.rows(), reader.dim());
    let take = rows.min(CENTRE_SAMPLE_ROWS);
    let mut units = Vec::new();
    for k in 0..take {
        // Evenly spaced ids: vocabulary neighbours are related more often than random rows.
        match reader.unit_row(k * rows / take.max(1)) {
            Ok(unit) => units.push(unit),
            Err(MatrixError::UnusableRow { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if units.is_empty() {
        return Ok((None, None));
    }
    let mut centre = vec![0.0f64; dim];
    for u in &units {
        centre.iter_mut().zip(u).for_each(|(c, x)| *c += x);
    }
    centre.iter_mut().for_each(|c| *c /= units.len() as f64);
    let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
    for i in 0..units.len() {
        for j in i + 1..units.len() {
            let c: f64 = units[i].iter().zip(&units[j]).map(|(a, b)| a * b).sum();
            sum += 2.0 * c;
            sum_sq += 2.0 * c * c;
        }
    }
    Ok((Some(centre), Moments::from_ordered_sums(units.len() as u64, sum, sum_sq, 0.0)))
}

/// Runs the exact pass of `matrix` on the GPU. Errors with [`GpuPassError::NeedsF64`] where the
/// CPU pass would switch to f64 (the caller then runs that instead).
pub fn gpu_exact_pass(ctx: &Rc<GpuContext>, matrix: &Matrix, options: GramOptions) -> Result<GpuPass, GpuPassError> {
    let (rows, dim) = matrix.shape()?;
    let (centre, sample) = centre_sample(matrix)?;
    if let Some(m) = sample {
        kernel::f32_suffices(m.mu, m.sigma).map_err(GpuPassError::NeedsF64)?;
    }
    let tensor = &matrix.tensor;
    let not_matrix = || MatrixError::NotAMatrix { tensor: tensor.name.clone() };
    let row_bytes = tensor.dtype.bytes_for(dim as u64).ok_or_else(not_matrix)?;
    let span = tensor.byte_range.1.checked_sub(tensor.byte_range.0).ok_or_else(not_matrix)?;
    if rows.checked_mul(row_bytes) != Some(span) {
        return Err(not_matrix().into());
    }
    let mut pass = GpuGram::new(Rc::clone(ctx), dim, centre.as_deref(), options)?;
    let raw_type = RawType::of(&tensor.dtype);
    let (mut raw, mut decoded) = (Vec::new(), Vec::new());
    let mut first = 0u64;
    while first < rows {
        let count = CHUNK_ROWS.min(rows - first);
        // count ≤ CHUNK_ROWS rows of a validated shape: the sizes fit in usize.
        raw.resize((count * row_bytes) as usize, 0);
        matrix.source.read_at(tensor.byte_range.0 + first * row_bytes, &mut raw).map_err(MatrixError::from)?;
        if raw_type.is_some() {
            pass.add_raw_rows(&raw, &tensor.dtype)?;
        } else {
            decoded.resize(count as usize * dim, 0.0);
            decode_rows(&raw, &tensor.dtype, dim, &mut decoded)
                .map_err(|source| MatrixError::Decode { tensor: tensor.name.clone(), source })?;
            pass.add_rows(&decoded)?;
        }
        // Bounded memory of queued uploads (this runs on the caller's thread, natively).
        super::block_on(pass.settle(4))?;
        first += count;
    }
    let sums = pass.finish()?;
    let m = sums.moments().ok_or(GpuPassError::TooFewRows)?;
    let epsilon = estimate::epsilon(m.mu, m.sigma);
    Ok(GpuPass {
        rows_seen: sums.counts.seen,
        rows_used: sums.counts.kept,
        rows_dropped_zero: sums.counts.dropped_zero,
        rows_dropped_nonfinite: sums.counts.dropped_nonfinite,
        pairs: m.pairs,
        mu: m.mu,
        sigma: m.sigma,
        epsilon,
        epsilon_3sigma: estimate::epsilon_3sigma(m.mu, m.sigma),
        log10_capacity: estimate::capacities(dim as u64, epsilon),
        capacity_determinate: estimate::capacity_determinate(epsilon),
        class: estimate::class(epsilon),
        gpu: ctx.info().clone(),
        sums,
    })
}
