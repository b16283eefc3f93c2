//! The tail explorer's exact nearest neighbours (the paper's Fig. 3 made
//! interactive): one row against all V rows, O(V·d), streamed chunk by chunk from the file after
//! the analysis. Cosines are taken between f64 unit rows, like the exact pass (`docs/method.md` §1);
//! zero and non-finite rows are skipped as there.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::pass::stats::TopK;
use crate::read::matrix::{Matrix, MatrixError};

/// Most neighbours one request may ask for.
pub const MAX_NEIGHBOURS: u32 = 1000;

/// Why the nearest neighbours could not be found.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum NeighboursError {
    /// k is zero or above [`MAX_NEIGHBOURS`].
    #[error("ask for 1 to {max} neighbours (got {k})")]
    BadK { k: u32, max: u32 },
    /// The row asked for, or the matrix itself, cannot be read.
    #[error(transparent)]
    Matrix(#[from] MatrixError),
}

/// One neighbour of the chosen row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Neighbour {
    pub row: u64,
    pub cosine: f64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token: Option<String>,
}

/// The exact nearest neighbours of one row by cosine, over every other usable row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Neighbours {
    pub row: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token: Option<String>,
    /// Most similar first.
    pub neighbours: Vec<Neighbour>,
    /// Rows the chosen one was compared with (all usable rows but itself).
    pub rows_compared: u64,
    /// Zero or non-finite rows skipped.
    pub rows_dropped: u64,
}

/// The `k` rows most similar to `row` (exact: every row is visited).
pub fn nearest(matrix: &Matrix, row: u64, k: u32) -> Result<Neighbours, NeighboursError> {
    if k == 0 || k > MAX_NEIGHBOURS {
        return Err(NeighboursError::BadK { k, max: MAX_NEIGHBOURS });
    }
    let mut reader = matrix.rows()?;
    let query = reader.unit_row(row)?;
    let mut top = TopK::new(k as usize);
    let (mut compared, mut dropped) = (0u64, 0u64);
    while let Some(d) = reader.next_chunk(|id, unit| {
        if id != row {
            let cos: f64 = query.iter().zip(unit).map(|(a, b)| a * b).sum();
            // TopK holds u32 indices: V ≤ 2²⁶ (analysis::MAX_ROWS) fits.
            top.offer(id as usize, id as usize, cos.clamp(-1.0, 1.0));
            compared += 1;
        }
    })? {
        dropped += d;
    }
    let neighbours = top
        .sorted()
        .into_iter()
        .map(|(id, _, cosine)| Neighbour { row: id as u64, cosine, token: matrix.token(id as u64) })
        .collect();
    Ok(Neighbours { row, token: matrix.token(row), neighbours, rows_compared: compared, rows_dropped: dropped })
}
