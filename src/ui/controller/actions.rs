//! What the user asks of the page: analyse a source (files, a folder's dictionaries one after
//! another, a URL, a demo, another tensor, another dead-latent threshold), cancel or stop early,
//! and the questions about the result on display (nearest neighbours, the centred pass).

use std::collections::VecDeque;

use leptos::prelude::*;
use web_sys::File;

use super::respond::on_event;
use super::{now_ms, Analysed, LayerQueue, State, Status, CONTROLLER};
use crate::read::dictionary::dictionaries_in_folder;
use crate::read::matrix::Query;
use crate::worker::pool::{pool_size, Pool};
use crate::worker::protocol::{Request, RunSettings, SourceSpec};

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
pub(super) fn next_in_queue(state: State) {
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
pub(super) fn stop_queue(state: State, why: &str) {
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
