//! Orthoscope: how much room a transformer's token embeddings leave for features.
//!
//! The crate is laid out in the order data flows (`shared/design.md`):
//! file → [`source`] → [`format`] → [`locate`] → [`plan`] → [`kernel`] → [`stats`] → [`estimate`]
//! → [`report`]. [`analysis`] drives one pass through that chain; [`job`] runs the passes a user
//! asked for (embedding, then unembedding) over a set of files; [`remote`] holds the HTTP rules for
//! models opened by URL. Everything up to here is pure Rust with no browser types, so it is tested
//! natively; only [`worker`] and [`ui`] (wasm builds) know about the browser.

pub mod accumulate;
pub mod alignment;
pub mod analysis;
pub mod centred;
pub mod charts;
/// The malformed-file corpus: not in the product (cargo feature `fixtures`).
#[cfg(feature = "fixtures")]
pub mod corpus;
pub mod demo;
pub mod error;
pub mod estimate;
pub mod format;
pub mod geometry;
pub mod job;
pub mod kernel;
pub mod locate;
pub mod neighbours;
pub mod paper;
pub mod pass;
pub mod permalink;
pub mod plan;
pub mod remote;
pub mod report;
pub mod source;
pub mod stats;
/// Test fixtures and hostile inputs: not in the product (cargo feature `fixtures`).
#[cfg(feature = "fixtures")]
pub mod synth;
pub mod vocab;

#[cfg(target_arch = "wasm32")]
pub mod ui;
#[cfg(target_arch = "wasm32")]
pub mod worker;

pub use analysis::{Analysis, AnalysisConfig};
pub use error::Error;
pub use report::Report;
