//! The one error type an analysis can end in. Every message names what went wrong and where.

use thiserror::Error;

use crate::format::decode::DecodeError;
use crate::format::FormatError;
use crate::source::ReadError;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// The file's header could not be read as a model.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The spectrum of G/V could not be computed.
    #[error(transparent)]
    Geometry(#[from] crate::geometry::GeometryError),
    /// Another worker's share of the pass could not be merged.
    #[error(transparent)]
    Pass(#[from] crate::pass::PassError),
    /// Bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The tensor's element type cannot be decoded.
    #[error("tensor '{tensor}': {source}")]
    Decode { tensor: String, source: DecodeError },
    /// No tensor of that name in the file(s).
    #[error("no tensor named '{name}' in {file}")]
    TensorNotFound { name: String, file: String },
    /// The tensor asked for (or the located embedding) lives in a shard the index names but that
    /// was not among the files given.
    #[error("tensor '{tensor}' is in {shard}, which was not among the files given — add it")]
    MissingShard { tensor: String, shard: String },
    /// Nothing in the file looks like a token-embedding matrix.
    #[error("{file}: no 2-D floating-point tensor found, so no token embedding to analyse")]
    NoEmbedding { file: String },
    /// The tensor is not a matrix.
    #[error("tensor '{tensor}' has shape {shape:?}; a token embedding must be 2-D (vocabulary × d_model)")]
    NotAMatrix { tensor: String, shape: Vec<u64> },
    /// The matrix has no rows or no columns.
    #[error("tensor '{tensor}' has shape {shape:?}: nothing to analyse")]
    Empty { tensor: String, shape: Vec<u64> },
    /// The embedding width would need a Gram matrix larger than the memory budget.
    #[error("tensor '{tensor}': d_model = {dim} exceeds the supported maximum of {max}")]
    DimTooLarge { tensor: String, dim: u64, max: u64 },
    /// More rows than any vocabulary has (bounds the memory of the visiting plan).
    #[error("tensor '{tensor}' has {rows} rows, more than the supported {max}; is it really a token embedding?")]
    TooManyRows { tensor: String, rows: u64, max: u64 },
    /// The row width is not a whole number of the dtype's blocks.
    #[error("tensor '{tensor}': a row of {dim} {dtype} elements is not a whole number of blocks")]
    RowNotWholeBlocks { tensor: String, dim: u64, dtype: String },
    /// Fewer than two usable rows remain after dropping zero and non-finite rows.
    #[error("tensor '{tensor}': only {kept} usable row(s) of {rows} ({zero} all-zero, {nonfinite} with NaN/Inf dropped); ε needs at least two")]
    TooFewRows { tensor: String, rows: u64, kept: u64, zero: u64, nonfinite: u64 },
}
