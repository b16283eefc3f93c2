//! Known optimal line packings, built in code: unit vectors, one per line, whose pairwise cosines
//! are known exactly. A pass over one is a check of the pass against theory, and it shows what the
//! best packing a width allows looks like beside a model's embedding (docs/method.md §2: how many
//! nearly orthogonal directions fit in d dimensions).
//!
//! - `kerdock`: real mutually unbiased bases in R^d, d = 4, 16, 64, …: d(d/2 + 1) lines at
//!   |cos| ∈ {0, 1/√d} ([`kerdock`]).
//! - `e8`, `leech`: the lines through the minimal vectors of the E8 and Leech lattices ([`lattice`]).
//! - `equiangular-28`, `equiangular-276`: the equiangular sets that meet the absolute bound
//!   d(d + 1)/2 in R^7 and R^23 ([`equiangular`]).
//!
//! Each can be placed in a wider R^N (zero columns after its own), so that it sits beside a model
//! of that width. Values are f32: the Leech and equiangular coordinates are not all exact in bf16.

mod equiangular;
mod kerdock;
mod lattice;

use thiserror::Error;

/// The names [`construct`] accepts.
pub const CONSTRUCTIONS: &[&str] = &["kerdock", "e8", "leech", "equiangular-28", "equiangular-276"];

/// The largest construction written: its f32 values in bytes. A file past it is more than a model
/// of that shape would ever be analysed as, and more than a browser tab can hold.
pub const MAX_BYTES: u64 = 4 << 30;

/// A set of lines: `rows` unit vectors of R^`native_dim`, placed in the first `native_dim` of `dim`
/// columns.
#[derive(Clone, Debug)]
pub struct Construction {
    /// One of [`CONSTRUCTIONS`].
    pub name: &'static str,
    pub rows: usize,
    /// The dimension the lines span.
    pub native_dim: usize,
    /// The width of `values`: `native_dim`, or the wider space the lines were placed in.
    pub dim: usize,
    /// `rows × dim`, row-major, each row of unit length.
    pub values: Vec<f32>,
    /// The largest |cos| between two of the lines, exactly.
    pub max_abs_cos: f64,
    /// One line: what the lines are and the cosines between them.
    pub description: String,
    /// Where the construction is published.
    pub source: &'static str,
}

/// Why a construction cannot be built as asked.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConstructionError {
    /// The name is none of [`CONSTRUCTIONS`].
    #[error("no construction named '{name}': write one of {}", CONSTRUCTIONS.join(", "))]
    Unknown { name: String },
    /// The lines span more dimensions than were asked for: they cannot be placed there.
    #[error("{name} needs --dim {native} or more (its lines span R^{native}); got --dim {dim}")]
    DimBelowNative { name: &'static str, dim: usize, native: usize },
    /// The values would pass [`MAX_BYTES`]; `largest` is the widest --dim below the one asked for
    /// that fits.
    #[error(
        "{name} in R^{dim} is {rows} × {dim} f32, {bytes} bytes, more than the {MAX_BYTES} bytes (4 GiB) \
         written here: ask for --dim {largest} or less"
    )]
    TooLarge { name: &'static str, rows: u128, dim: u64, bytes: u128, largest: u64 },
}

/// The construction `name` (one of [`CONSTRUCTIONS`]) in R^`dim`: its own dimension when `dim` is
/// `None`. For `kerdock`, `dim` (default [`kerdock::DEFAULT_DIM`]) also chooses the bases: the
/// largest d = 4^k ≤ `dim`, placed in R^`dim`.
pub fn construct(name: &str, dim: Option<usize>) -> Result<Construction, ConstructionError> {
    match name {
        "kerdock" => kerdock::construct(dim.unwrap_or(kerdock::DEFAULT_DIM)),
        "e8" => lattice::e8(dim),
        "leech" => lattice::leech(dim),
        "equiangular-28" => equiangular::lines_28(dim),
        "equiangular-276" => equiangular::lines_276(dim),
        _ => Err(ConstructionError::Unknown { name: name.to_string() }),
    }
}

/// The width asked for, checked against the lines' own and against [`MAX_BYTES`] before anything
/// is allocated.
fn width(name: &'static str, rows: usize, native: usize, dim: Option<usize>) -> Result<usize, ConstructionError> {
    let dim = dim.unwrap_or(native);
    if dim < native {
        return Err(ConstructionError::DimBelowNative { name, dim, native });
    }
    let bytes = (rows as u128).saturating_mul(dim as u128 * 4);
    if bytes > MAX_BYTES as u128 {
        let largest = MAX_BYTES / (rows as u64 * 4);
        return Err(ConstructionError::TooLarge { name, rows: rows as u128, dim: dim as u64, bytes, largest });
    }
    Ok(dim)
}

/// Lines given as vectors of R^`native` (any length, flattened) made unit rows `dim` wide.
fn placed(lines: &[f64], native: usize, dim: usize) -> Vec<f32> {
    let mut values = vec![0.0f32; lines.len() / native * dim];
    for (row, line) in values.chunks_exact_mut(dim).zip(lines.chunks_exact(native)) {
        // Normalised in f64, rounded once to f32.
        let norm = line.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (out, x) in row.iter_mut().zip(line) {
            *out = (x / norm) as f32;
        }
    }
    values
}

/// One vector of each antipodal pair: the one whose first nonzero coordinate is positive.
fn first_nonzero_positive(v: &[f64]) -> bool {
    v.iter().find(|&&x| x != 0.0).is_some_and(|&x| x > 0.0)
}
