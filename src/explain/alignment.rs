//! Unembedding views (the paper's Fig. 9): for a model with a separate output
//! matrix, the cosine between each token's input-embedding row and its unembedding row, over every
//! token (exact: both matrices streamed once, O(V·d)). How far a model's input and output
//! directions for the same token agree; **not the paper's ε**, which is over pairs of input rows.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::pass::stats::{Histogram, SampledHistogram, HISTOGRAM_BINS};
use crate::read::matrix::{Matrix, MatrixError};

/// Said wherever these numbers are shown.
pub const ALIGNMENT_NOTE: &str = "Cosine between each token's input-embedding row and its unembedding row, over every token: not the paper's ε, which is over pairs of input rows.";

/// The per-token cosines of embedding and unembedding rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenAlignment {
    pub embedding: String,
    pub unembedding: String,
    /// Tokens with a usable row in both matrices.
    pub tokens: u64,
    /// Tokens left out: a zero or non-finite row in either matrix.
    pub tokens_dropped: u64,
    pub mean: f64,
    pub sigma: f64,
    pub min: f64,
    pub max: f64,
    /// Over [−1, 1], 300 bins, one count per token.
    pub histogram: SampledHistogram,
    pub note: String,
}

/// Why the per-token cosines could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AlignmentError {
    #[error(transparent)]
    Rows(#[from] MatrixError),
    /// Row i of one matrix is not token i of the other.
    #[error(
        "the unembedding is {unembedding:?} and the embedding {embedding:?}: per-token cosines need the same V × d"
    )]
    ShapeMismatch { embedding: (u64, usize), unembedding: (u64, usize) },
    #[error("no token has a usable row in both matrices")]
    NoTokens,
}

/// Streams both matrices in step and histograms cos(eᵢ, wᵢ) over tokens i.
pub fn token_alignment(embedding: &Matrix, unembedding: &Matrix) -> Result<TokenAlignment, AlignmentError> {
    let (a, b) = (embedding.shape()?, unembedding.shape()?);
    if a != b {
        return Err(AlignmentError::ShapeMismatch { embedding: a, unembedding: b });
    }
    let (mut ea, mut ub) = (embedding.rows()?, unembedding.rows()?);
    let mut hist = Histogram::new(-1.0, 1.0, HISTOGRAM_BINS);
    let (mut n, mut sum, mut sum_sq, mut min, mut max) = (0u64, 0.0f64, 0.0f64, f64::INFINITY, f64::NEG_INFINITY);
    loop {
        // The same chunk of token ids from both; a row dropped in either leaves the token out.
        let mut left: Vec<(u64, Vec<f64>)> = Vec::new();
        let more = ea.next_chunk(|id, u| left.push((id, u.to_vec())))?;
        let mut at = 0usize;
        let more_b = ub.next_chunk(|id, w| {
            while left.get(at).is_some_and(|(i, _)| *i < id) {
                at += 1;
            }
            if let Some((i, u)) = left.get(at) {
                if *i == id {
                    let c = u.iter().zip(w).map(|(x, y)| x * y).sum::<f64>().clamp(-1.0, 1.0);
                    hist.add(c);
                    n += 1;
                    sum += c;
                    sum_sq += c * c;
                    min = min.min(c);
                    max = max.max(c);
                }
            }
        })?;
        if more.is_none() || more_b.is_none() {
            break;
        }
    }
    if n == 0 {
        return Err(AlignmentError::NoTokens);
    }
    let mean = sum / n as f64;
    let sigma = (sum_sq / n as f64 - mean * mean).max(0.0).sqrt();
    Ok(TokenAlignment {
        embedding: embedding.tensor.name.clone(),
        unembedding: unembedding.tensor.name.clone(),
        tokens: n,
        tokens_dropped: a.0 - n,
        mean,
        sigma,
        min,
        max,
        histogram: SampledHistogram::new(&hist, n, n),
        note: ALIGNMENT_NOTE.to_string(),
    })
}
