//! Layer 1, **read**: bytes → tensors. The only layer that touches I/O, and only through
//! [`source::ByteSource`].
//!
//! - [`source`]: random-access byte ranges (`u64` offsets) of a file, a buffer, a `Blob` or a URL.
//! - [`format`]: safetensors, sharded sets, GGUF, `.npy`: headers → [`format::TensorInfo`], raw rows →
//!   `f32` ([`format::decode`]).
//! - [`locate`]: which tensor is the input token embedding, which the unembedding.
//! - [`matrix`]: an opened 2-D tensor and a reader of its rows, for the passes after the first.
//! - [`untrained`]: rows a model never trained (past the vocabulary, tokens named unused), by rule.
//! - [`vocab`]: token strings from a dropped `tokenizer.json`.
//! - [`remote`]: what an HTTP answer means for a model opened by URL (the requests are the worker's).
//! - [`ahead`]: which ranges a worker reads ahead in one batch, and which it holds until asked.
//! - [`demo`]: the built-in demo models, generated in memory.
//! - [`dictionary`]: sparse-autoencoder dictionaries: which tensor holds the feature directions.
//!
//! Nothing here knows about statistics, reports or the browser.

pub mod ahead;
pub mod constructions;
pub mod demo;
pub mod dictionary;
pub mod format;
pub mod inflate;
pub mod layout;
pub mod locate;
pub mod matrix;
pub mod remote;
pub mod source;
pub mod untrained;
pub mod vocab;
