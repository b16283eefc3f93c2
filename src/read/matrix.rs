//! An opened 2-D tensor and its rows: the reader's last step before the pass. A row is decoded to
//! `f32`, then normalised to unit length in f64 or dropped (zero or non-finite: docs/method.md §1).
//! [`Matrix`] keeps the chosen tensor after the analysis, so that later requests (a token's
//! neighbours, the centred pass, the output matrix's alignment) can stream its rows again.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::read::format::decode::decode_rows;
use crate::read::format::{DecodeError, TensorInfo};
use crate::read::source::{ByteSource, ReadError};

/// Rows read per chunk: a few hundred kB of f32 at d = 4096, and few enough reads over HTTP.
pub const CHUNK_ROWS: u64 = 256;

/// Why a row, or the matrix, cannot be read.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MatrixError {
    /// The row asked for lies past the end of the matrix.
    #[error("row {row} does not exist: the matrix has rows 0 to {last}")]
    RowOutOfRange { row: u64, last: u64 },
    /// A token string the vocabulary does not hold.
    #[error("no token is spelled “{token}” in this model's vocabulary; type a row id (0 to {last}) or another token")]
    UnknownToken { token: String, last: u64 },
    /// A token string was given but the model has no vocabulary.
    #[error("this model carries no vocabulary (drop its tokenizer.json with the weights to name tokens); type a row id instead")]
    NoVocabulary,
    /// The chosen row is all zeros or holds NaN/∞: it has no direction.
    #[error("row {row} is {what}: it has no direction to compare with")]
    UnusableRow { row: u64, what: &'static str },
    /// The tensor is not a 2-D matrix with whole rows.
    #[error("{tensor} is not a matrix of whole rows")]
    NotAMatrix { tensor: String },
    /// The bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The bytes are not valid values of the tensor's dtype.
    #[error("{tensor}: {source}")]
    Decode { tensor: String, source: DecodeError },
}

/// Why a row was left out (`docs/method.md` §1: zero rows are dropped; so are non-finite ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFate {
    Kept,
    Zero,
    NonFinite,
}

/// Normalises one row to unit length into `out` (zero-padded to `out.len()`), in `f32` or `f64`.
/// The norm is taken in f64 so that tiny and huge rows normalise alike. The exact pass keeps f64
/// unit rows: rounding them to f32 alone moves μ by up to 1e-8.
pub fn normalise_row<T: UnitValue>(row: &[f32], out: &mut [T]) -> RowFate {
    let norm_sq = lane_sum(row, |x| (x as f64) * (x as f64));
    // A NaN or ∞ makes the sum NaN or ∞ (squares of f32 values never overflow an f64), so one test
    // after the loop finds them, and the loop itself has no branch.
    if !norm_sq.is_finite() {
        return RowFate::NonFinite;
    }
    if norm_sq == 0.0 {
        return RowFate::Zero;
    }
    let inv = 1.0 / norm_sq.sqrt();
    for (o, &x) in out.iter_mut().zip(row) {
        *o = T::from_f64(x as f64 * inv);
    }
    for o in out.iter_mut().skip(row.len()) {
        *o = T::from_f64(0.0);
    }
    RowFate::Kept
}

/// Σ f(x) over `xs`, in [`SUM_LANES`] running sums added in one fixed order at the end (so the same
/// values always give the same bits). One running f64 sum waits for each add to finish (~4 cycles a
/// term), and these sums run over every value of every row: at d = 256 they and the loops around
/// them took a third of a pass, natively (the Gram kernel about half).
pub fn lane_sum<T: Copy>(xs: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut lanes = [0.0f64; SUM_LANES];
    let mut runs = xs.chunks_exact(SUM_LANES);
    for run in &mut runs {
        for (l, &x) in lanes.iter_mut().zip(run) {
            *l += f(x);
        }
    }
    let tail = runs.remainder().iter().fold(0.0, |t, &x| t + f(x));
    let [a, b, c, d, e, g, h, i] = lanes;
    (((a + b) + (c + d)) + ((e + g) + (h + i))) + tail
}

/// Running sums of [`lane_sum`]: eight f64 are four simd128 vectors in wasm, two AVX2 ones natively.
pub const SUM_LANES: usize = 8;

/// The element types unit rows are kept in.
pub trait UnitValue: Copy {
    fn from_f64(x: f64) -> Self;
}
impl UnitValue for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}
impl UnitValue for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
}

/// The embedding matrix, kept after the analysis so later requests (neighbours, the centred pass)
/// can read it again; with the model's vocabulary when it has one.
#[derive(Clone)]
pub struct Matrix {
    pub source: Rc<dyn ByteSource>,
    pub tensor: TensorInfo,
    /// Token strings by id (empty when unknown).
    pub vocab: Rc<Vec<String>>,
}

impl Matrix {
    pub fn new(source: Rc<dyn ByteSource>, tensor: TensorInfo, vocab: Rc<Vec<String>>) -> Self {
        Self { source, tensor, vocab }
    }

    /// (V, d).
    pub fn shape(&self) -> Result<(u64, usize), MatrixError> {
        let (rows, dim) =
            self.tensor.matrix().ok_or_else(|| MatrixError::NotAMatrix { tensor: self.tensor.name.clone() })?;
        Ok((rows, dim as usize))
    }

    /// The token string of row `id`, if the vocabulary has one.
    pub fn token(&self, id: u64) -> Option<String> {
        usize::try_from(id).ok().and_then(|i| self.vocab.get(i)).cloned()
    }

    /// A row id from what the user typed: digits are a row id; anything else is looked up in the
    /// vocabulary (exactly, then with the SentencePiece "▁" or GPT-2 "Ġ" word-start marks).
    pub fn resolve(&self, query: &Query) -> Result<u64, MatrixError> {
        let (rows, _) = self.shape()?;
        let last = rows.saturating_sub(1);
        match query {
            Query::Row(row) => Ok(*row),
            Query::Token(token) => {
                if self.vocab.is_empty() {
                    return Err(MatrixError::NoVocabulary);
                }
                let find = |t: &str| self.vocab.iter().position(|v| v == t);
                find(token)
                    .or_else(|| find(&format!("▁{}", token.trim_start())))
                    .or_else(|| find(&format!("Ġ{}", token.trim_start())))
                    .map(|i| i as u64)
                    .ok_or_else(|| MatrixError::UnknownToken { token: token.clone(), last })
            }
        }
    }

    /// A reader of all rows as f64 unit rows, in order.
    pub fn rows(&self) -> Result<RowReader<'_>, MatrixError> {
        RowReader::new(self)
    }
}

/// What the user picked: a row id, or a token string.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Query {
    Row(u64),
    Token(String),
}

impl Query {
    /// What the user typed: digits (or `#` and digits) are a row id; anything else, or digits in
    /// double quotes, a token string. `None` for blank input.
    pub fn parse(text: &str) -> Option<Query> {
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        if let Some(quoted) = t.strip_prefix('"').and_then(|q| q.strip_suffix('"')).filter(|q| !q.is_empty()) {
            return Some(Query::Token(quoted.to_string()));
        }
        match t.strip_prefix('#').unwrap_or(t).parse::<u64>() {
            Ok(row) => Some(Query::Row(row)),
            Err(_) => Some(Query::Token(t.to_string())),
        }
    }
}

/// Reads rows chunk by chunk, decodes and normalises them (f64, the norm in f64).
pub struct RowReader<'a> {
    matrix: &'a Matrix,
    rows: u64,
    dim: usize,
    row_bytes: u64,
    next: u64,
    raw: Vec<u8>,
    decoded: Vec<f32>,
}

impl<'a> RowReader<'a> {
    fn new(matrix: &'a Matrix) -> Result<Self, MatrixError> {
        let (rows, dim) = matrix.shape()?;
        let not_matrix = || MatrixError::NotAMatrix { tensor: matrix.tensor.name.clone() };
        let row_bytes = matrix.tensor.dtype.bytes_for(dim as u64).ok_or_else(not_matrix)?;
        let span = matrix.tensor.byte_range.1.checked_sub(matrix.tensor.byte_range.0).ok_or_else(not_matrix)?;
        if rows.checked_mul(row_bytes) != Some(span) {
            return Err(not_matrix());
        }
        Ok(Self { matrix, rows, dim, row_bytes, next: 0, raw: Vec::new(), decoded: Vec::new() })
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows read so far.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Decodes `count` rows from `first` into f32.
    fn read(&mut self, first: u64, count: u64) -> Result<&[f32], MatrixError> {
        let t = &self.matrix.tensor;
        // count ≤ CHUNK_ROWS and a row of d ≤ 16384 f64 values: these fit in usize on wasm32.
        self.raw.resize((count * self.row_bytes) as usize, 0);
        self.matrix.source.read_at(t.byte_range.0 + first * self.row_bytes, &mut self.raw)?;
        self.decoded.resize(count as usize * self.dim, 0.0);
        decode_rows(&self.raw, &t.dtype, self.dim, &mut self.decoded)
            .map_err(|source| MatrixError::Decode { tensor: t.name.clone(), source })?;
        Ok(&self.decoded)
    }

    /// Row `row` as a unit vector, or why it has none.
    pub fn unit_row(&mut self, row: u64) -> Result<Vec<f64>, MatrixError> {
        if row >= self.rows {
            return Err(MatrixError::RowOutOfRange { row, last: self.rows.saturating_sub(1) });
        }
        let dim = self.dim;
        let decoded = self.read(row, 1)?.to_vec();
        let mut unit = vec![0.0f64; dim];
        match normalise_row(&decoded, &mut unit) {
            RowFate::Kept => Ok(unit),
            RowFate::Zero => Err(MatrixError::UnusableRow { row, what: "all zeros" }),
            RowFate::NonFinite => Err(MatrixError::UnusableRow { row, what: "not finite (NaN or ∞)" }),
        }
    }

    /// Rows `first..first + count` (at most a chunk's worth per read): calls `each(row id, unit
    /// row)` for every usable row, and returns the count dropped (zero, non-finite).
    pub fn rows_at(&mut self, first: u64, count: u64, mut each: impl FnMut(u64, &[f64])) -> Result<u64, MatrixError> {
        let end = first.saturating_add(count).min(self.rows);
        let (mut at, mut dropped) = (first, 0);
        let dim = self.dim;
        let mut unit = vec![0.0f64; dim];
        while at < end {
            let n = CHUNK_ROWS.min(end - at);
            let decoded = self.read(at, n)?.to_vec();
            for (r, row) in decoded.chunks_exact(dim).enumerate() {
                match normalise_row(row, &mut unit) {
                    RowFate::Kept => each(at + r as u64, &unit),
                    _ => dropped += 1,
                }
            }
            at += n;
        }
        Ok(dropped)
    }

    /// The next chunk: calls `each(row id, unit row)` for every usable row and returns the count of
    /// rows dropped (zero, non-finite); `None` at the end.
    pub fn next_chunk(&mut self, mut each: impl FnMut(u64, &[f64])) -> Result<Option<u64>, MatrixError> {
        self.next_chunk_with_norms(|id, unit, _| each(id, unit))
    }

    /// As [`RowReader::next_chunk`], with each usable row's Euclidean norm before normalisation
    /// (the norm a weight-only indicator of untrained rows reads).
    pub fn next_chunk_with_norms(
        &mut self,
        mut each: impl FnMut(u64, &[f64], f64),
    ) -> Result<Option<u64>, MatrixError> {
        if self.next >= self.rows {
            return Ok(None);
        }
        let first = self.next;
        let count = CHUNK_ROWS.min(self.rows - first);
        let dim = self.dim;
        let decoded = self.read(first, count)?.to_vec();
        let mut unit = vec![0.0f64; dim];
        let mut dropped = 0;
        for (r, row) in decoded.chunks_exact(dim).enumerate() {
            match normalise_row(row, &mut unit) {
                RowFate::Kept => each(first + r as u64, &unit, lane_sum(row, |x| (x as f64) * (x as f64)).sqrt()),
                _ => dropped += 1,
            }
        }
        self.next = first + count;
        Ok(Some(dropped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_rows_and_words_are_tokens() {
        assert_eq!(Query::parse(" 42 "), Some(Query::Row(42)));
        assert_eq!(Query::parse("#7"), Some(Query::Row(7)));
        assert_eq!(Query::parse("\"42\""), Some(Query::Token("42".into())));
        assert_eq!(Query::parse("the"), Some(Query::Token("the".into())));
        assert_eq!(Query::parse("  "), None);
    }
}
