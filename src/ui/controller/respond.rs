//! The pool's events as the page takes them in: each sets the signals it concerns, and a finished
//! result moves a folder's queue on.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::actions::{compute_centred, next_in_queue, stop_queue};
use super::{current_run, fail, Provenance, State, Status, CONTROLLER, DEAD_BELOW_APPLY};
use crate::explain::geometry::geometry_expected;
use crate::result::report::{significant, Report};
use crate::run::job::Opened;
use crate::worker::events::PageEvent;

/// Takes in one of the pool's events. Those about the run in progress count only while it runs (a
/// cancelled or failed run's late messages are dropped); those about the result on display (its
/// geometry, the tail explorer, the centred pass) come after it is done.
pub(super) fn on_event(state: State, run: u64, event: PageEvent) {
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
