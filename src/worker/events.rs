//! What the pool tells the page: the events a reader sees, apart from the messages that only
//! coordinate the workers (a split, the sample's verdict and dot products, bands' parts, partials, a
//! GPU failure rerun on the CPU, a crash), which the pool consumes. Never sent between threads: no
//! serde.

use crate::explain::centred::Centred;
use crate::explain::geometry::Geometry;
use crate::explain::neighbours::Neighbours;
use crate::pass::analysis::Progress;
use crate::result::report::Report;
use crate::run::job::Opened;

/// Pool → page, about the run the pool tags it with.
#[derive(Clone, Debug, PartialEq)]
pub enum PageEvent {
    /// The headers were read: the tensors on offer and the one being analysed.
    Opened(Opened),
    /// The files hold no input embedding: nothing runs. The picker offers `opened`'s tensors and
    /// `message` says why and what to drop instead.
    Choose {
        opened: Opened,
        message: String,
    },
    /// The progress of the whole pass: rows over all its workers, the lead's running ε.
    Progress(Progress),
    /// Boxed: a Report is far larger than every other event.
    Done(Box<Report>),
    /// The run failed: a worker's error, a crashed worker (the pool has replaced them all), or a
    /// worker that could not be started or reached.
    Failed {
        message: String,
    },
    /// The spectrum of G/V of the result just posted (it comes after the result beyond
    /// `WITH_RESULT_MAX_DIM`).
    Geometry(Geometry),
    /// The eigen step failed; the result stands without its geometry.
    GeometryFailed {
        message: String,
    },
    /// The tail explorer's answer.
    Neighbours(Neighbours),
    NeighboursFailed {
        message: String,
    },
    /// Share of the centred pass done, 0…1.
    CentredProgress {
        fraction: f64,
    },
    Centred(Centred),
    CentredFailed {
        message: String,
    },
}
