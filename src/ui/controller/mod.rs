//! Page state and the one place that talks to the workers: the state as signals (`state.rs`), the
//! pool's events setting them (`respond.rs`), and what the user asks (`actions.rs`). Signals hold
//! plain data; the pool and the `File`s (not `Send`) live in a thread-local beside them, in this file.
//!
//! Data flows one way: the workers' messages set the signals, the views read them. A finished
//! analysis becomes the result on display *and* a row of the session (the comparison table);
//! the previous result stays on screen until the next one replaces it.

mod actions;
mod respond;
mod state;

use std::cell::RefCell;
use std::collections::VecDeque;

use leptos::prelude::*;
use web_sys::File;

use super::params::Params;
use crate::result::permalink;
use crate::result::report::significant;
use crate::worker::pool::Pool;
use crate::worker::protocol::SourceSpec;

pub use actions::{
    cancel, choose_tensor, compute_centred, find_neighbours, open_demo, open_files, open_url, set_dead_below, start,
    stop_early,
};
pub use state::{LayerQueue, Provenance, State, Status};

/// The id of the card's button that applies a dead-latent threshold (`set_dead_below`).
pub const DEAD_BELOW_APPLY: &str = "dead-below-apply";

/// What the page keeps beside its signals: the pool, the page's parameters and the analyses to
/// start again.
struct Controller {
    /// Started on the first analysis: a permalink or an embed of a stored result never loads it.
    client: Option<Pool>,
    params: Params,
    /// The dead-latent threshold of the next analyses (`?dead_below=`, then the card's control).
    dead_below: Option<f64>,
    /// The current analysis, to re-run it with another tensor.
    current: Option<Analysed>,
    /// The analysis whose result is on display, to re-run it with another dead-latent threshold.
    shown: Option<Analysed>,
    /// The card's threshold control started the current run: its result, and each redraw of its card
    /// (the geometry, the centred result), give the keyboard focus back to *Apply* when the redraw
    /// took it (the new card replaces the one that held it).
    refocus_dead_below: bool,
    /// Id of the current run; events of older runs are dropped.
    run: u64,
    /// The dictionaries of a folder still to analyse after the current one: (label, files).
    pending: VecDeque<(String, Vec<File>)>,
}

/// What one analysis read and how: enough to start it again.
#[derive(Clone)]
struct Analysed {
    source: SourceSpec,
    files: Vec<File>,
    /// The tensor the user picked (None: the one located).
    tensor: Option<String>,
    dead_below: Option<f64>,
}

thread_local! {
    static CONTROLLER: RefCell<Option<Controller>> = const { RefCell::new(None) };
}

/// The page's clock (`performance.now()`, ms).
pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Opens what the URL asks for: a permalink's stored result, a model by URL, or a demo.
pub fn init(state: State, params: Params) {
    state.exact_only.set(params.exact);
    let fragment = web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default();
    let source = params.source();
    state.demo.set(params.demo.clone());
    let dead_below = params.dead_below.clone();
    CONTROLLER.with(|c| {
        *c.borrow_mut() = Some(Controller {
            client: None,
            dead_below: dead_below.clone().ok().flatten(),
            params,
            current: None,
            shown: None,
            refocus_dead_below: false,
            run: 0,
            pending: VecDeque::new(),
        })
    });
    // Nothing is analysed with a threshold the link did not mean.
    if let Err(e) = dead_below {
        fail(state, format!("This link's ?dead_below= cannot be used: {e}. Remove it, or drop the files and set the threshold on the card."));
        return;
    }
    if !fragment.trim_start_matches('#').is_empty() {
        show_permalink(state, &fragment);
        return;
    }
    start(state, source, Vec::new(), None);
}

/// Shows the Report a permalink carries: no file, no worker, no network.
fn show_permalink(state: State, fragment: &str) {
    match permalink::decode(fragment) {
        Ok(report) => {
            state.provenance.set(Provenance::Permalink);
            state.session.add(&report);
            state.announcement.set(format!("Shared result: ε = {}", significant(report.epsilon, 4)));
            state.report.set(Some(report));
            state.status.set(Status::Done);
        }
        Err(e) => fail(state, format!("This link does not open a result: {e}")),
    }
}

/// Shows `message` as the page's error.
fn fail(state: State, message: String) {
    state.announcement.set(String::new());
    state.message.set(message);
    state.status.set(Status::Error);
}

/// The id of the current run (0 before the first).
fn current_run() -> u64 {
    CONTROLLER.with(|c| c.borrow().as_ref().map_or(0, |c| c.run))
}
