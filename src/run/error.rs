//! What a request can end in beyond its pass's own [`Error`]: the eigen step that follows it.

use thiserror::Error;

use crate::explain::geometry::GeometryError;
use crate::pass::error::Error;

/// Why a Report with its geometry could not be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReportError {
    /// The files could not be read or the pass failed.
    #[error(transparent)]
    Analysis(#[from] Error),
    /// The spectrum of G/V could not be computed.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
}
