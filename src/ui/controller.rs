//! Page state and the one place that talks to the worker. Signals hold plain data; the worker
//! handle and the `File` (not `Send`) live in a thread-local beside them.

use std::cell::RefCell;

use leptos::prelude::*;
use web_sys::File;

use super::params::Params;
use crate::analysis::Progress;
use crate::job::Opened;
use crate::report::Report;
use crate::worker::client::WorkerClient;
use crate::worker::protocol::{Envelope, Request, Response, SourceSpec};

/// Where the page stands; `data-status` on the report element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    Running,
    Done,
    Error,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Done => "done",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
        }
    }
}

/// All page state, as copyable signals.
#[derive(Clone, Copy)]
pub struct State {
    pub status: RwSignal<Status>,
    pub message: RwSignal<String>,
    pub progress: RwSignal<Option<Progress>>,
    pub report: RwSignal<Option<Report>>,
    pub opened: RwSignal<Option<Opened>>,
    /// What is being analysed, for the header line ("demo: trained-like", "model.safetensors").
    pub source_label: RwSignal<String>,
    pub exact_only: RwSignal<bool>,
    /// Id of the current run, `data-run` on the report element: a watcher can tell a new result
    /// from the previous one.
    pub run: RwSignal<u64>,
}

impl State {
    pub fn new() -> Self {
        Self {
            status: RwSignal::new(Status::Idle),
            message: RwSignal::new(String::new()),
            progress: RwSignal::new(None),
            report: RwSignal::new(None),
            opened: RwSignal::new(None),
            source_label: RwSignal::new(String::new()),
            exact_only: RwSignal::new(false),
            run: RwSignal::new(0),
        }
    }
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

struct Controller {
    client: WorkerClient,
    params: Params,
    /// The source of the current analysis, to re-run it with another tensor.
    current: Option<(SourceSpec, Vec<File>)>,
    /// Id of the current run; responses of older runs are dropped.
    run: u64,
}

thread_local! {
    static CONTROLLER: RefCell<Option<Controller>> = const { RefCell::new(None) };
}

/// Starts the worker and opens the model named by `?url=` or `?hf=`, else the demo named in the
/// URL (or the default one).
pub fn init(state: State, params: Params) {
    state.exact_only.set(params.exact);
    let client = WorkerClient::new(move |envelope| on_response(state, envelope));
    let source = match (&params.url, &params.hf) {
        (Some(url), _) => SourceSpec::Url { url: url.clone() },
        (None, Some(id)) => SourceSpec::Hf { id: id.clone(), endpoint: params.hf_endpoint.clone() },
        (None, None) => SourceSpec::Demo(params.demo.clone()),
    };
    CONTROLLER.with(|c| *c.borrow_mut() = Some(Controller { client, params, current: None, run: 0 }));
    start(state, source, Vec::new(), None);
}

fn current_run() -> u64 {
    CONTROLLER.with(|c| c.borrow().as_ref().map_or(0, |c| c.run))
}

fn on_response(state: State, Envelope { run, response }: Envelope) {
    // Run 0 is the worker itself failing: it concerns whatever runs now.
    if run != 0 && run != current_run() {
        return;
    }
    if state.status.get_untracked() == Status::Cancelled {
        return;
    }
    match response {
        Response::Ready | Response::Cancelled => {}
        Response::Opened(opened) => state.opened.set(Some(opened)),
        Response::Progress(p) => {
            if state.status.get_untracked() == Status::Running {
                state.progress.set(Some(p));
            }
        }
        Response::Done(report) => {
            state.report.set(Some(report));
            state.status.set(Status::Done);
        }
        Response::Failed { message } => {
            state.message.set(message);
            state.status.set(Status::Error);
        }
    }
}

/// Analyses a source: the located embedding, or `tensor` when the user picked one.
pub fn start(state: State, source: SourceSpec, files: Vec<File>, tensor: Option<String>) {
    // The status flips before anything else, so a watcher never mistakes the previous "done" for this run.
    state.status.set(Status::Running);
    state.report.set(None);
    state.progress.set(None);
    state.message.set(String::new());
    if tensor.is_none() {
        state.opened.set(None);
    }
    state.source_label.set(match &source {
        SourceSpec::Demo(name) => format!("built-in demo “{name}”"),
        SourceSpec::Files => match files.as_slice() {
            [one] => one.name(),
            many => format!("{} files", many.len()),
        },
        SourceSpec::Url { url } => crate::remote::file_name(url),
        SourceSpec::Hf { id, .. } => format!("{id} (Hugging Face)"),
    });
    CONTROLLER.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else { return };
        // A previous run still going stops at its next step when it sees the new run id.
        c.run += 1;
        state.run.set(c.run);
        c.current = Some((source.clone(), files.clone()));
        let request =
            Request::Analyze { run: c.run, source, tensor, seed: c.params.seed, stop_after_rows: c.params.rows };
        c.client.send(request, files);
    });
}

/// Files chosen or dropped by the user: one model file, or shards (with their index, if any).
pub fn open_files(state: State, files: Vec<File>) {
    if !files.is_empty() {
        start(state, SourceSpec::Files, files, None);
    }
}

/// Re-runs the current source with another tensor.
pub fn choose_tensor(state: State, name: String) {
    let current = CONTROLLER.with(|c| c.borrow().as_ref().and_then(|c| c.current.clone()));
    if let Some((source, files)) = current {
        start(state, source, files, Some(name));
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
    start(state, SourceSpec::Demo(name), Vec::new(), None);
}

/// Stops the run (the worker drops it at its next step) and discards it.
pub fn cancel(state: State) {
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.client.cancel(c.run);
        }
    });
    state.progress.set(None);
    state.message.set("Cancelled.".into());
    state.status.set(Status::Cancelled);
}

/// Ends the pass after the current step and reports the estimate so far.
pub fn stop_early() {
    CONTROLLER.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.client.send(Request::StopEarly, Vec::new());
        }
    });
}
