//! Layer 5, **run**: drives the layers below for one request. [`job`] runs what a user asked of a set of files (the embedding,
//! then the unembedding); [`threads`] runs a job's pass on every core natively (the CLI), as the
//! worker pool does in the browser; [`report`] makes a pass's findings (`pass::analysis`) a
//! Report; [`trained`] adds the rows never trained; [`error`] what a Report with its geometry can
//! fail with.

pub mod error;
pub mod job;
pub mod report;
#[cfg(not(target_arch = "wasm32"))]
pub mod threads;
pub mod trained;
