//! The browser worker layer: a `Blob` byte source, an HTTP Range byte source, the message protocol,
//! the worker's loop and the main thread's handle on it. Thin by design: all arithmetic lives in
//! the pure core.

pub mod blob_source;
pub mod client;
pub mod http_source;
pub mod protocol;
mod run;

pub use run::start;
