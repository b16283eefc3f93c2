//! Layer 5, **run**: drives the layers below for one request. [`analysis`] steps one pass through
//! read → pass → explain → result; [`job`] runs what a user asked of a set of files (the embedding,
//! then the unembedding); [`threads`] runs a job's pass on every core natively (the CLI), as the
//! worker pool does in the browser.

pub mod analysis;
pub mod error;
pub mod job;
#[cfg(not(target_arch = "wasm32"))]
pub mod threads;
pub mod trained;
