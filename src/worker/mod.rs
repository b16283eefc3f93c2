//! The browser worker layer: a `Blob` byte source, an HTTP Range byte source, the message protocol,
//! the worker's loop, the main thread's handle on one worker and its pool of them, and the events
//! the pool passes on to the page. Thin by design: all arithmetic lives in the pure core.

pub mod blob_source;
pub mod client;
pub mod events;
pub mod http_source;
pub mod pool;
pub mod protocol;
mod run;

pub use run::start;
