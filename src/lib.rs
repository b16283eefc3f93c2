//! Orthoscope: how much room a transformer's token embeddings leave for features.
//!
//! The crate is laid out in the order data flows (ARCHITECTURE.md has the map and the rules):
//!
//! file → [`read`] (bytes, formats, which tensor, rows) → [`pass`] (kernel, statistics, ε and the
//! capacities) → [`explain`] (spectrum, centring, neighbours) → [`result`] (one [`Report`]) → views.
//!
//! [`run`] drives that chain for one request, for the CLI and the browser worker alike. A module
//! imports only from its own layer and the layers before it. Everything up to [`run`] is pure Rust
//! with no browser types, so it is tested natively; [`charts`] draws a Report through plotters'
//! backend trait; only [`worker`] and [`ui`] (wasm builds) know about the browser.

pub mod read;

pub mod pass;

pub mod explain;

pub mod result;

pub mod run;

pub mod charts;

/// Test fixtures: generated matrices, hostile files, the malformed-file corpus (cargo feature
/// `fixtures`; never in the page, the workers or the release CLI).
#[cfg(feature = "fixtures")]
pub mod fixtures;

#[cfg(target_arch = "wasm32")]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;

pub use pass::analysis::{Analysis, AnalysisConfig};
pub use pass::error::Error;
pub use result::report::Report;
