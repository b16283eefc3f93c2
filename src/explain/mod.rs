//! Layer 3, **explain**: why ε is what it is. Views of the same embedding beyond the paper's
//! number, each computed from a finished pass or by streaming the matrix once more.
//!
//! - [`geometry`]: the spectrum of G/V, participation ratio, effective rank, the mean vector.
//! - [`lanczos`]: the leading eigenvalues of G without a full eigen decomposition (wide d).
//! - [`centred`]: μ, σ, ε of the mean-centred rows.
//! - [`neighbours`]: a token's exact nearest neighbours.
//! - [`alignment`]: each token's input row against its output row (the paper's Fig. 9).
//! - [`suspected`]: rows whose direction matches the known-unused rows' (never trained, suspected).

pub mod alignment;
pub mod centred;
pub mod geometry;
pub mod lanczos;
pub mod neighbours;
pub mod suspected;
