//! The one error type an analysis can end in: opening the files, reading them and the pass over
//! their rows. Every message names what went wrong and where. (The eigen step after a pass is the
//! explain layer's and fails with its own `GeometryError`.)

use thiserror::Error;

use crate::pass::gpu::GpuError;
use crate::read::format::decode::DecodeError;
use crate::read::format::FormatError;
use crate::read::locate::LocateError;
use crate::read::source::ReadError;

/// Why an analysis stopped; each layer's own error is wrapped as it is.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// The file's header could not be read as a model.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Another worker's share of the pass could not be merged.
    #[error(transparent)]
    Pass(#[from] crate::pass::shares::PassError),
    /// Bytes could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// No tensor to analyse: the one named is absent or unusable, or the files hold no input embedding.
    #[error(transparent)]
    Locate(#[from] LocateError),
    /// The tensor's element type cannot be decoded.
    #[error("tensor '{tensor}': {source}")]
    Decode { tensor: String, source: DecodeError },
    /// The embedding width would need a Gram matrix larger than the memory budget.
    #[error("tensor '{tensor}': d_model = {dim} exceeds the supported maximum of {max}")]
    DimTooLarge { tensor: String, dim: u64, max: u64 },
    /// More rows than any vocabulary has (bounds the memory of the visiting plan).
    #[error("tensor '{tensor}' has {rows} rows, more than the supported {max}; is it really a token embedding?")]
    TooManyRows { tensor: String, rows: u64, max: u64 },
    /// The rows set aside as never trained could not be read again to remove them from G.
    #[error("tensor '{tensor}': the statistics without the untrained rows failed: {reason}")]
    SetAside { tensor: String, reason: String },
    /// The row width is not a whole number of the dtype's blocks.
    #[error("tensor '{tensor}': a row of {dim} {dtype} elements is not a whole number of blocks")]
    RowNotWholeBlocks { tensor: String, dim: u64, dtype: String },
    /// The GPU Gram pass failed (no adapter, a lost device, a reported error): the caller reruns
    /// the whole analysis on the CPU.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A dictionary's sparsity file (SAELens's `sparsity.safetensors`) could not be read.
    #[error("the dictionary's sparsity file: {0}")]
    Sparsity(#[from] crate::read::dictionary::SparsityError),
    /// Fewer than two usable rows remain after dropping zero and non-finite rows.
    #[error("tensor '{tensor}': only {kept} usable row(s) of {rows} ({zero} all-zero, {nonfinite} with NaN/Inf dropped); ε needs at least two")]
    TooFewRows { tensor: String, rows: u64, kept: u64, zero: u64, nonfinite: u64 },
}
