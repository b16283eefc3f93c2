//! Layer 2, **pass**: rows → statistics → estimates. One pass over an embedding's rows.
//!
//! - [`plan`]: the seeded order rows are visited in.
//! - [`kernel`]: the hot loops (f32x4 SIMD on wasm, portable/AVX2 natively) that add unit rows to G.
//! - [`stats`]: mergeable moments, the histogram sample, row counts.
//! - [`accumulate`]: the exact pass's accumulator (Gram triangle or unit rows, whichever is smaller).
//! - [`shares`]: how a pass is split between workers or threads and merged back.
//! - [`wire`]: the messages a worker sends of its share (types of their own: the accumulators
//!   derive no serde), checked as they are read.
//! - [`bands`]: the running estimate of a pass split by columns, from every band's checkpoints.
//! - [`stage`]: the stages of one analysis's pass (sample, its pairs, the pass on a driver, done or
//!   stopped), each owning its data, and the snapshot of a running estimate.
//! - [`set_aside`]: rows set aside as never trained: their sample pairs apart, and the exact
//!   moments of the rest from the pass's own s and G.
//! - [`analysis`]: one analysis of one tensor: the core (accumulators, running estimate, stage)
//!   and a driver per way of running it (the sample, the CPU step, the GPU step, the lead of a
//!   split by columns), a bounded amount of work per step; [`error`] what it can end in.
//! - [`estimate`]: ε, its uncertainty, the four capacity bounds and the class (docs/method.md §2–3).
//! - [`gpu`]: the exact pass's Gram sums on a GPU through wgpu (WGSL kernel; the wgpu parts behind
//!   the default cargo feature `gpu`, the request and report types always).
//!
//! It reads rows only through [`crate::read`] and knows nothing of reports or views: the run layer
//! makes a finished pass's `analysis::Summary` a Report.

pub mod accumulate;
pub mod analysis;
pub mod bands;
pub mod capacity;
pub mod error;
pub mod estimate;
pub mod gpu;
pub mod kernel;
pub mod plan;
pub mod set_aside;
pub mod shares;
pub mod stage;
pub mod stats;
pub mod wire;
