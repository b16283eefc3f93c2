//! Page state and the one place that talks to the worker. Signals hold plain data; the worker
//! handle and the `File`s (not `Send`) live in a thread-local beside them.
//!
//! Data flows one way: the worker's messages set the signals, the views read them. A finished
//! analysis becomes the result on display *and* a row of the session (the comparison table);
//! the previous result stays on screen until the next one replaces it.

use std::cell::RefCell;
use std::collections::VecDeque;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::File;

use super::params::Params;
use super::session::Session;
use crate::explain::geometry::geometry_expected;
use crate::explain::neighbours::Neighbours;
use crate::read::dictionary::dictionaries_in_folder;
use crate::read::matrix::Query;
use crate::result::permalink;
use crate::result::report::{significant, Report};
use crate::run::analysis::Progress;
use crate::run::job::Opened;
use crate::worker::events::PageEvent;
use crate::worker::pool::{pool_size, Pool};
use crate::worker::protocol::{Request, RunSettings, SourceSpec};

/// The id of the card's button that applies a dead-latent threshold (`set_dead_below`).
pub const DEAD_BELOW_APPLY: &str = "dead-below-apply";

/// Where the page stands; `data-status` on the report element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    Running,
    Done,
    Error,
    Cancelled,
    /// The files hold no input embedding: nothing ran; the picker and a message say why.
    Choose,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Done => "done",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
            Status::Choose => "choose",
        }
    }
}

/// Where the result on display came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Computed in this tab.
    Analysed,
    /// Decoded from a permalink: nothing was read or computed.
    Permalink,
}

/// A folder of several dictionaries, analysed one after another (`LayersPanel` shows it).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerQueue {
    pub total: usize,
    /// Dictionaries whose Report is in the session.
    pub done: usize,
    /// What runs now ("layer 3 — dictionary 4 of 12 (run/layers.3)").
    pub current: String,
    pub running: bool,
    /// Why the queue ended before its last dictionary (a failure, Cancel, another model opened).
    pub stopped: Option<String>,
}

/// All page state, as copyable signals.
#[derive(Clone, Copy)]
pub struct State {
    pub status: RwSignal<Status>,
    /// The error or cancel message.
    pub message: RwSignal<String>,
    pub progress: RwSignal<Option<Progress>>,
    /// When the current run started (`performance.now()` ms), for elapsed time, ETA and rows/s.
    pub started_ms: RwSignal<f64>,
    /// The result on display: the last finished analysis (kept while the next one runs).
    pub report: RwSignal<Option<Report>>,
    pub provenance: RwSignal<Provenance>,
    pub opened: RwSignal<Option<Opened>>,
    /// What is being analysed, for the progress line ("demo “trained-like”", "model.safetensors").
    pub source_label: RwSignal<String>,
    pub exact_only: RwSignal<bool>,
    /// Id of the current run, `data-run` on the report element: a watcher can tell a new result
    /// from the previous one.
    pub run: RwSignal<u64>,
    /// Every analysis of the session (and earlier ones kept in the browser's storage).
    pub session: Session,
    /// The last status change, read out by screen readers (`aria-live`).
    pub announcement: RwSignal<String>,
    /// The demo the page shows (so the demo list names it instead of "choose…").
    pub demo: RwSignal<String>,
    /// The worker is computing the geometry of the result on display (it comes after the result).
    pub geometry_pending: RwSignal<bool>,
    /// Why the geometry of the result on display is missing, when its eigen step failed.
    pub geometry_message: RwSignal<String>,
    /// The tail explorer's last answer, and why the last search failed.
    pub neighbours: RwSignal<Option<Neighbours>>,
    pub neighbours_message: RwSignal<String>,
    /// Share of the centred pass done while it runs.
    pub centred_progress: RwSignal<Option<f64>>,
    pub centred_message: RwSignal<String>,
    /// The folder of dictionaries being analysed one after another, or last analysed so.
    pub queue: RwSignal<Option<LayerQueue>>,
    /// The dead-latent threshold (log10 firing density) the result on display was analysed with;
    /// None: the default, latents that never fired.
    pub dead_below: RwSignal<Option<f64>>,
}

impl State {
    pub fn new() -> Self {
        Self {
            status: RwSignal::new(Status::Idle),
            message: RwSignal::new(String::new()),
            progress: RwSignal::new(None),
            started_ms: RwSignal::new(0.0),
            report: RwSignal::new(None),
            provenance: RwSignal::new(Provenance::Analysed),
            opened: RwSignal::new(None),
            source_label: RwSignal::new(String::new()),
            exact_only: RwSignal::new(false),
            run: RwSignal::new(0),
            session: Session::load(),
            announcement: RwSignal::new(String::new()),
            demo: RwSignal::new(String::new()),
            geometry_pending: RwSignal::new(false),
            geometry_message: RwSignal::new(String::new()),
            neighbours: RwSignal::new(None),
            neighbours_message: RwSignal::new(String::new()),
            centred_progress: RwSignal::new(None),
            centred_message: RwSignal::new(String::new()),
            queue: RwSignal::new(None),
            dead_below: RwSignal::new(None),
        }
    }
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

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
    /// Id of the current run; responses of older runs are dropped.
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

fn fail(state: State, message: String) {
    state.announcement.set(String::new());
    state.message.set(message);
    state.status.set(Status::Error);
}

fn current_run() -> u64 {
    CONTROLLER.with(|c| c.borrow().as_ref().map_or(0, |c| c.run))
}

/// Takes in one of the pool's events. Those about the run in progress count only while it runs (a
/// cancelled or failed run's late messages are dropped); those about the result on display (its
/// geometry, the tail explorer, the centred pass) come after it is done.
fn on_event(state: State, run: u64, event: PageEvent) {
    // Run 0 is the worker itself failing: it concerns whatever runs now.
    if run != 0 && run != current_run() {
        return;
    }
    let running = state.status.get_untracked() == Status::Running;
    match event {
        PageEvent::Opened(opened) => {
            if running {
                on_opened(state, opened);
            }
        }
        PageEvent::Progress(p) => {
            if running {
                state.progress.set(Some(p));
            }
        }
        PageEvent::Done(report) => {
            if running {
                on_done(state, *report);
            }
        }
        PageEvent::Failed { message } => {
            if running {
                on_failed(state, message);
            }
        }
        PageEvent::Choose { opened, message } => {
            if running {
                on_choose(state, opened, message);
            }
        }
        // The geometry follows the result of the current run, so it arrives after "done".
        PageEvent::Geometry(geometry) => {
            if state.geometry_pending.get_untracked() {
                state.geometry_pending.set(false);
                state.report.update(|r| {
                    if let Some(r) = r {
                        state.session.set_geometry(r, &geometry);
                        r.geometry = Some(geometry);
                    }
                });
                refocus_threshold_control();
                next_in_queue(state);
            }
        }
        PageEvent::GeometryFailed { message } => {
            state.geometry_pending.set(false);
            state.geometry_message.set(message);
            next_in_queue(state);
        }
        PageEvent::Neighbours(n) => {
            state.neighbours_message.set(String::new());
            state.neighbours.set(Some(n));
        }
        PageEvent::NeighboursFailed { message } => {
            // The previous query's table would read as this query's answer.
            state.neighbours.set(None);
            state.neighbours_message.set(message);
        }
        PageEvent::CentredProgress { fraction } => state.centred_progress.set(Some(fraction)),
        PageEvent::Centred(centred) => {
            state.centred_progress.set(None);
            state.report.update(|r| {
                if let Some(r) = r {
                    r.centred = Some(centred);
                }
            });
            refocus_threshold_control();
        }
        PageEvent::CentredFailed { message } => {
            state.centred_progress.set(None);
            state.centred_message.set(message);
        }
    }
}

fn on_opened(state: State, opened: Opened) {
    // Re-running another tensor of the same files keeps the picker as it is (and the keyboard focus
    // on its button).
    let same = state
        .opened
        .with_untracked(|o| o.as_ref().is_some_and(|o| o.files == opened.files && o.tensors == opened.tensors));
    // After a refusal the picker named no tensor: it now names the one chosen, and the keyboard
    // focus goes back to its button.
    let after_choose = state.opened.with_untracked(|o| o.as_ref().is_some_and(|o| o.chosen.is_empty()));
    if !same || after_choose {
        state.opened.set(Some(opened));
    }
    if same && after_choose {
        request_animation_frame(|| focus_if_lost("tensor-run"));
    }
}

/// A finished analysis: the result on display and a row of the session; a folder's queue goes on,
/// and an exact result gets its centred pass when the page asks for one.
fn on_done(state: State, report: Report) {
    state.announcement.set(format!(
        "Done: ε = {} for {}{}",
        significant(report.epsilon, 4),
        report.tensor,
        if report.exact { ", exact over all pairs" } else { ", an estimate" }
    ));
    state.session.add(&report);
    state.provenance.set(Provenance::Analysed);
    state.geometry_message.set(String::new());
    state.geometry_pending.set(report.geometry.is_none() && geometry_expected(report.exact, report.dim));
    state.neighbours.set(None);
    state.neighbours_message.set(String::new());
    state.centred_progress.set(None);
    state.centred_message.set(String::new());
    let queued = state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| q.running));
    // A folder's dictionaries go on to the next instead of a second pass over this one.
    let centred = !queued && report.exact && CONTROLLER.with(|c| c.borrow().as_ref().is_some_and(|c| c.params.centred));
    let (dead_below, refocus) = CONTROLLER.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else { return (None, false) };
        c.shown.clone_from(&c.current);
        (c.shown.as_ref().and_then(|s| s.dead_below), c.refocus_dead_below)
    });
    state.dead_below.set(dead_below);
    state.report.set(Some(report));
    if refocus {
        request_animation_frame(|| focus_if_lost(DEAD_BELOW_APPLY));
    }
    state.progress.set(None);
    state.status.set(Status::Done);
    if queued {
        state.queue.update(|q| {
            if let Some(q) = q {
                q.done += 1;
            }
        });
        next_in_queue(state);
    }
    if centred {
        compute_centred(state);
    }
}

fn on_failed(state: State, message: String) {
    state.progress.set(None);
    let message = match state.queue.get_untracked().filter(|q| q.running) {
        Some(q) => format!("{}: {message}", q.current),
        None => message,
    };
    stop_queue(state, &message);
    fail(state, message);
}

fn on_choose(state: State, opened: Opened, message: String) {
    stop_queue(state, "a folder held no dictionary Orthoscope reads");
    state.progress.set(None);
    state.opened.set(Some(opened));
    // No ε stays on screen that a reader could take for these files'.
    state.report.set(None);
    state.announcement.set(String::new());
    state.message.set(message);
    state.status.set(Status::Choose);
}

/// Analyses a source: the located embedding, or `tensor` when the user picked one. A folder's
/// dictionaries still queued are dropped: the user asked for something else.
pub fn start(state: State, source: SourceSpec, files: Vec<File>, tensor: Option<String>) {
    // A finished folder's line goes with the next analysis; a running one says why it stopped.
    if state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| !q.running)) {
        state.queue.set(None);
    }
    stop_queue(state, "another model was opened");
    run_source(state, source, files, tensor);
}

fn run_source(state: State, source: SourceSpec, files: Vec<File>, tensor: Option<String>) {
    // The status flips before anything else, so a watcher never mistakes the previous "done" for
    // this run. The previous result stays on display until this one replaces it.
    state.status.set(Status::Running);
    state.progress.set(None);
    state.message.set(String::new());
    state.started_ms.set(now_ms());
    if tensor.is_none() {
        state.opened.set(None);
    }
    let label = match &source {
        SourceSpec::Demo(name) => format!("built-in demo “{name}”"),
        SourceSpec::Files => match files.as_slice() {
            [one] => one.name(),
            many => format!("{} files", many.len()),
        },
        SourceSpec::Url { url } => crate::read::remote::file_name(url),
        SourceSpec::Hf { id, .. } => format!("{id} (Hugging Face)"),
    };
    state.announcement.set(format!("Analysing {label}…"));
    state.source_label.set(label);
    CONTROLLER.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else { return };
        // A previous run still going stops at its next step when it sees the new run id. One in
        // its eigen step cannot see it: cancelling it gets the worker replaced if it does not answer.
        if state.geometry_pending.get_untracked() {
            if let Some(client) = c.client.as_ref() {
                client.cancel(c.run);
            }
            state.geometry_pending.set(false);
        }
        c.run += 1;
        c.refocus_dead_below = false;
        state.run.set(c.run);
        c.current = Some(Analysed {
            source: source.clone(),
            files: files.clone(),
            tensor: tensor.clone(),
            dead_below: c.dead_below,
        });
        // The test crash (`?crash_after_rows=`) applies to the first analysis of files only.
        let crash = if source == SourceSpec::Files { c.params.crash.take() } else { None };
        let size = pool_size(c.params.workers);
        let pool = c.client.get_or_insert_with(|| Pool::new(size, move |run, event| on_event(state, run, event)));
        // A folder's dictionaries are each analysed exactly, as with `?exact=1`.
        let queued = state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| q.running));
        let settings = RunSettings {
            seed: c.params.seed,
            stop_after_rows: if queued { None } else { c.params.rows },
            precision: c.params.precision,
            gpu: c.params.gpu,
            crash,
            split: c.params.split,
            dead_below_log10: c.dead_below,
        };
        pool.analyze(c.run, source, files, tensor, settings);
    });
}

/// Files chosen or dropped by the user: one model file, or shards (with their index, if any), or a
/// folder. A folder of several dictionaries (named by their relative paths) is analysed one
/// dictionary after another, each exactly, each its own row of the session.
pub fn open_files(state: State, files: Vec<File>) {
    if files.is_empty() {
        return;
    }
    let paths: Vec<String> = files.iter().map(File::name).collect();
    let dictionaries = dictionaries_in_folder(&paths);
    if dictionaries.len() < 2 {
        start(state, SourceSpec::Files, files, None);
        return;
    }
    let total = dictionaries.len();
    let mut pending: VecDeque<(String, Vec<File>)> = dictionaries
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let layer = d.layer.map_or_else(|| "layer unknown".to_string(), |l| format!("layer {l}"));
            let label = format!("{layer} — dictionary {} of {total} ({})", i + 1, d.folder);
            (label, d.files.iter().filter_map(|&f| files.get(f).cloned()).collect())
        })
        .collect();
    let Some((label, first)) = pending.pop_front() else { return };
    stop_queue(state, "another model was opened");
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.pending = pending;
        }
    });
    state.exact_only.set(true);
    state.queue.set(Some(LayerQueue { total, done: 0, current: label.clone(), running: true, stopped: None }));
    run_queued(state, label, first);
}

fn run_queued(state: State, label: String, files: Vec<File>) {
    run_source(state, SourceSpec::Files, files, None);
    state.source_label.set(label.clone());
    state.announcement.set(format!("Analysing {label}…"));
}

/// Starts the folder's next dictionary once the one on display is done (with its geometry, which
/// follows it): on a fresh turn of the event loop, outside the worker's message handler.
fn next_in_queue(state: State) {
    let waiting = state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| q.running));
    if !waiting || state.status.get_untracked() != Status::Done || state.geometry_pending.get_untracked() {
        return;
    }
    let next = CONTROLLER.with(|c| c.borrow_mut().as_mut().and_then(|c| c.pending.pop_front()));
    match next {
        Some((label, files)) => {
            state.queue.update(|q| {
                if let Some(q) = q {
                    q.current.clone_from(&label);
                }
            });
            // Cancel, or another model opened, before the timer fires ends the queue.
            let go_on = move || {
                if state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| q.running)) {
                    run_queued(state, label, files);
                }
            };
            set_timeout(go_on, std::time::Duration::ZERO);
        }
        None => {
            state.queue.update(|q| {
                if let Some(q) = q {
                    q.running = false;
                }
            });
            restore_exact(state);
            let total = state.queue.with_untracked(|q| q.as_ref().map_or(0, |q| q.total));
            state.announcement.set(format!("All {total} dictionaries of the folder analysed."));
        }
    }
}

/// Ends a running queue (its remaining dictionaries are not analysed), saying why.
fn stop_queue(state: State, why: &str) {
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.pending.clear();
        }
    });
    if state.queue.with_untracked(|q| q.as_ref().is_some_and(|q| q.running)) {
        state.queue.update(|q| {
            if let Some(q) = q {
                q.running = false;
                q.stopped = Some(why.to_string());
            }
        });
        restore_exact(state);
    }
}

fn restore_exact(state: State) {
    let exact = CONTROLLER.with(|c| c.borrow().as_ref().is_some_and(|c| c.params.exact));
    state.exact_only.set(exact);
}

/// Re-runs the current source with another tensor.
pub fn choose_tensor(state: State, name: String) {
    let current = CONTROLLER.with(|c| c.borrow().as_ref().and_then(|c| c.current.clone()));
    if let Some(a) = current {
        start(state, a.source, a.files, Some(name));
    }
}

/// Sets the dead-latent threshold (log10 firing density) of this and later analyses, and analyses
/// the files of the result on display again with it: the dead latents are set aside in the pass
/// itself (docs/method.md §10), so a new threshold is a new pass.
pub fn set_dead_below(state: State, log10_density: f64) {
    let shown = CONTROLLER.with(|c| {
        let mut c = c.borrow_mut();
        let c = c.as_mut()?;
        c.dead_below = Some(log10_density);
        c.shown.clone()
    });
    if let Some(a) = shown {
        start(state, a.source, a.files, a.tensor);
        CONTROLLER.with(|c| {
            if let Some(c) = c.borrow_mut().as_mut() {
                c.refocus_dead_below = true;
            }
        });
    }
}

/// Opens a model by URL or Hugging Face id (the address field). An hf id without an endpoint
/// uses the page's `?hf_endpoint=`, if any.
pub fn open_url(state: State, source: SourceSpec) {
    let source = match source {
        SourceSpec::Hf { id, endpoint: None } => {
            let endpoint = CONTROLLER.with(|c| c.borrow().as_ref().and_then(|c| c.params.hf_endpoint.clone()));
            SourceSpec::Hf { id, endpoint }
        }
        other => other,
    };
    start(state, source, Vec::new(), None);
}

/// Opens a built-in demo.
pub fn open_demo(state: State, name: String) {
    state.demo.set(name.clone());
    start(state, SourceSpec::Demo(name), Vec::new(), None);
}

/// Stops the run (the worker drops it at its next step) and discards it; the previous result stays
/// on display.
pub fn cancel(state: State) {
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            if let Some(client) = c.client.as_ref() {
                client.cancel(c.run);
            }
        }
    });
    stop_queue(state, "cancelled");
    state.progress.set(None);
    state.message.set("Cancelled.".into());
    state.announcement.set("Cancelled.".into());
    state.status.set(Status::Cancelled);
}

/// Ends the pass after the current step and reports the estimate so far.
pub fn stop_early() {
    CONTROLLER.with(|c| {
        if let Some(pool) = c.borrow().as_ref().and_then(|c| c.client.as_ref()) {
            pool.stop_early();
        }
    });
}

/// Asks the worker that produced the result on display for the nearest neighbours of a row.
pub fn find_neighbours(state: State, query: Query, k: u32) {
    state.neighbours_message.set(String::new());
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            match c.client.as_ref() {
                Some(pool) => pool.send_to_lead(Request::Neighbours { run: c.run, query, k }),
                None => state.neighbours_message.set("open the model to search its rows".into()),
            }
        }
    });
}

/// Starts the centred pass over the result on display (a second exact pass, with progress).
pub fn compute_centred(state: State) {
    state.centred_message.set(String::new());
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            if let Some(client) = c.client.as_ref() {
                state.centred_progress.set(Some(0.0));
                client.send_to_lead(Request::Centred { run: c.run });
            }
        }
    });
}

/// Focuses the element `id` when the focus fell to the page's body (its holder was re-rendered).
/// After the card of a run the threshold control started is drawn again (its geometry or centred
/// result arrived), the focus goes back to *Apply* if the redraw took it: the flag lasts the run.
fn refocus_threshold_control() {
    if CONTROLLER.with(|c| c.borrow().as_ref().is_some_and(|c| c.refocus_dead_below)) {
        request_animation_frame(|| focus_if_lost(DEAD_BELOW_APPLY));
    }
}

fn focus_if_lost(id: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    let lost = document.active_element().is_none_or(|a| a.tag_name().eq_ignore_ascii_case("body"));
    if let Some(el) = document.get_element_by_id(id).filter(|_| lost) {
        if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
            let _ = el.focus();
        }
    }
}
