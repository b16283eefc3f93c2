//! Layer 4, **result**: everything a user sees, as data. One [`report::Report`] per analysis: what
//! the views draw, what the CLI prints, what `data-report` and a permalink carry.
//!
//! - [`report`]: the `Report` struct and its assembly from a finished pass.
//! - [`trained`]: the statistics without the rows a model never trained, beside the paper's ε.
//! - [`paper`]: the paper's Table 1 and the series plotted beside a result.
//! - [`proven`]: what the capacity numbers are, in words (the proven interval beside the law).
//! - [`permalink`]: a Report packed into a URL fragment and back.
//! - [`links`]: the links a result gives its reader (re-run, permalink, embed snippet).
//! - [`text`]: the Report as the CLI's plain text.

pub mod links;
pub mod paper;
pub mod permalink;
pub mod proven;
pub mod report;
pub mod text;
pub mod trained;
