//! The rhythm of a worker's loops, and the clock and yields of the worker's event loop.

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::MessageChannel;

use super::current_run;

/// How long the analysis loop may run before it lets messages in (Cancel, StopEarly, a new run).
const TASK_YIELD_MS: f64 = 50.0;
/// Progress posts compute ‖G‖_F² (d²/2 values): a few per second are plenty.
const PROGRESS_MS: f64 = 400.0;

/// A running ε is computed again only after the loop has run this many times as long as the last
/// one took: the ε reads all of G (d²/2 values; in a tab ~50 ms at d = 4096, ~1 s at 16384), and
/// recomputed at every post it took a third of a single worker's time at d = 16384.
const ESTIMATE_EVERY: f64 = 9.0;
/// [`ESTIMATE_EVERY`] for the lead of a split pass, which alone computes the running ε: its time
/// there is time the helpers wait for the lead's share at the end (measured in a tab at
/// d = 4096, 2 workers: the lead's share took 0.5 s longer than the helper's), so at most ~3 %.
const ESTIMATE_EVERY_SHARED: f64 = 29.0;
/// The least time between two running ε (the progress posts in between carry the last one). With
/// no floor, one worker at 32000×4096 in a tab computed one every ~0.45 s, a twentieth of its run
/// (13.4–13.7 s against 12.9–13.1 s with a floor).
const ESTIMATE_MS: f64 = 1200.0;

/// The rhythm of a worker's loop over steps: a progress post every [`PROGRESS_MS`], a running ε at
/// most every [`ESTIMATE_MS`] and in at most a tenth of the time ([`ESTIMATE_EVERY`]), a task
/// boundary every [`TASK_YIELD_MS`] (so Cancel, StopEarly and new requests get in), a microtask in
/// between, and the end of the loop when a newer run or a Cancel replaced run `run`.
pub(super) struct Pacer {
    run: u64,
    last_post: f64,
    last_task: f64,
    /// When the last running ε was computed, and how long it took (ms).
    last_estimate: (f64, f64),
    /// The lead of a split pass: running ε less often ([`ESTIMATE_EVERY_SHARED`]).
    shared: bool,
}

impl Pacer {
    pub(super) fn new(run: u64) -> Self {
        let now = now_ms();
        Pacer { run, last_post: now, last_task: now, last_estimate: (now, 0.0), shared: false }
    }

    /// Whether this post should compute a new running ε ([`ESTIMATE_EVERY`], [`ESTIMATE_MS`]).
    pub(super) fn estimate_due(&self) -> bool {
        let (at, took) = self.last_estimate;
        let since = now_ms() - at;
        let every = if self.shared { ESTIMATE_EVERY_SHARED } else { ESTIMATE_EVERY };
        since >= (every * took).max(ESTIMATE_MS)
    }

    /// Whether this loop is the lead of a split pass (`shared`), whose running ε is its alone.
    pub(super) fn share_estimates(&mut self, shared: bool) {
        self.shared = shared;
    }

    /// A running ε was just computed, in `took_ms`.
    pub(super) fn estimated(&mut self, took_ms: f64) {
        self.last_estimate = (now_ms(), took_ms.max(0.0));
    }

    /// Whether a progress post is due, or `anyway` (counted as posted).
    pub(super) fn progress_due(&mut self, anyway: bool) -> bool {
        let now = now_ms();
        let due = anyway || now - self.last_post > PROGRESS_MS;
        if due {
            self.last_post = now;
        }
        due
    }

    /// Lets the event loop in; true when it was a task boundary (messages were delivered).
    pub(super) async fn pause(&mut self) -> bool {
        if now_ms() - self.last_task > TASK_YIELD_MS {
            yield_task().await;
            self.last_task = now_ms();
            true
        } else {
            // Each step must be a fresh call from JavaScript: V8 never swaps optimised code into a
            // wasm call already running (ARCHITECTURE.md, "Facts the code relies on").
            yield_microtask().await;
            false
        }
    }

    /// A newer run or a Cancel replaced this one: its loop ends and posts nothing more.
    pub(super) fn superseded(&self) -> bool {
        current_run() != Some(self.run)
    }
}

pub(super) fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// `performance.now()` of this worker (sub-millisecond, unlike `Date.now`), else `Date.now`.
pub(super) fn performance_now() -> f64 {
    js_sys::global()
        .dyn_into::<web_sys::WorkerGlobalScope>()
        .ok()
        .and_then(|scope| scope.performance())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}

/// Waits `ms` milliseconds (setTimeout), or not at all where the timer cannot be set.
pub(super) async fn sleep_ms(ms: i32) {
    let promise = Promise::new(&mut |resolve, _reject| {
        let set = js_sys::global()
            .dyn_into::<web_sys::WorkerGlobalScope>()
            .ok()
            .map(|scope| scope.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms).is_ok());
        if set != Some(true) {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

async fn yield_microtask() {
    let _ = wasm_bindgen_futures::JsFuture::from(Promise::resolve(&JsValue::UNDEFINED)).await;
}

/// Yields to the event loop through a MessageChannel (no 4 ms clamp, unlike nested setTimeout).
pub(super) async fn yield_task() {
    let Ok(channel) = MessageChannel::new() else {
        return yield_microtask().await;
    };
    let promise = Promise::new(&mut |resolve, _reject| {
        let port1 = channel.port1();
        let resolve_fn = resolve.clone();
        let cb = Closure::once_into_js(move || {
            let _ = resolve_fn.call0(&JsValue::UNDEFINED);
        });
        port1.set_onmessage(Some(cb.unchecked_ref()));
        let _ = channel.port2().post_message(&Object::new());
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
