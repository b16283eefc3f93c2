//! The page's handle on the analysis worker: spawn, send, cancel.
//!
//! Cancel is cooperative: the worker is told, acknowledges at once and its loop returns at the next
//! step (it lets messages in every few tens of milliseconds). The worker, its wasm and the demo it
//! generated stay, so nothing is downloaded again. Only a worker that crashed, or that does not
//! acknowledge a Cancel within [`CANCEL_GRACE_MS`] (stuck in a slow network read), is terminated
//! and replaced; requests then wait until the new one says "ready".

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, File, MessageEvent, Worker};

use super::protocol::{Envelope, Request, Response};

/// The worker build to load, as its loader's URL. The release build gives each loader a
/// content-hashed name and writes them into `<meta name="orthoscope-worker">` (plain simd128) and
/// `<meta name="orthoscope-worker-relaxed">` (relaxed SIMD) (scripts/postbuild.mjs). The relaxed build
/// is chosen where the browser validates a relaxed instruction ([`relaxed_simd_supported`]; Safari
/// does not) unless `?kernel=simd128` asks for the plain one. Without the tags (a page made by
/// wasm-bindgen-test, a build without the hook) it is the plain loader next to the page.
pub fn worker_url() -> String {
    let document = web_sys::window().and_then(|window| window.document());
    let meta = |name: &str| {
        document
            .as_ref()
            .and_then(|d| d.query_selector(&format!(r#"meta[name="{name}"]"#)).ok().flatten())
            .and_then(|meta| meta.get_attribute("content"))
            .filter(|url| !url.is_empty())
    };
    let plain_asked = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|search| web_sys::UrlSearchParams::new_with_str(&search).ok())
        .and_then(|q| q.get("kernel"))
        .is_some_and(|k| k == "simd128");
    if !plain_asked {
        if let Some(relaxed) = meta("orthoscope-worker-relaxed").filter(|_| relaxed_simd_supported()) {
            return relaxed;
        }
    }
    meta("orthoscope-worker").unwrap_or_else(|| "./worker_loader.js".to_owned())
}

/// The smallest module holding one relaxed-SIMD instruction, assembled by hand (equal to
/// `wat2wasm --enable-all` of `(module (func (param v128 v128 v128) (result v128) local.get 0
/// local.get 1 local.get 2 f32x4.relaxed_madd))`).
const RELAXED_PROBE: [u8; 37] = [
    0x00, 0x61, 0x73, 0x6d, // "\0asm"
    0x01, 0x00, 0x00, 0x00, // version 1
    0x01, 0x08, // type section, 8 bytes
    0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b, // one type: (v128 v128 v128) -> v128
    0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
    0x0a, 0x0d, 0x01, // code section, 13 bytes, one body
    0x0b, 0x00, // body of 11 bytes, no locals
    0x20, 0x00, 0x20, 0x01, 0x20, 0x02, // local.get 0, 1, 2
    0xfd, 0x85, 0x02, // f32x4.relaxed_madd: SIMD prefix 0xfd, opcode 0x105 as LEB128
    0x0b, // end
];

/// Whether this browser's WebAssembly has relaxed SIMD (`WebAssembly.validate` of [`RELAXED_PROBE`]).
pub fn relaxed_simd_supported() -> bool {
    let bytes = js_sys::Uint8Array::from(&RELAXED_PROBE[..]);
    js_sys::WebAssembly::validate(&bytes).unwrap_or(false)
}

/// How long a Cancel may go unacknowledged before the worker is replaced.
pub const CANCEL_GRACE_MS: i32 = 2000;

/// Receives each response, with the bytes posted next to it (a helper's partial, `pool`).
type Handler = Rc<dyn Fn(Envelope, Option<JsValue>)>;

struct Inner {
    worker: Option<Worker>,
    ready: bool,
    /// Requests waiting for "ready", in order (a share, then perhaps its "stop here").
    pending: Vec<(Request, Vec<File>)>,
    handler: Handler,
    /// The run of a Cancel sent and not yet acknowledged.
    cancelling: Option<u64>,
    /// A request sent while a Cancel awaits its acknowledgement: sent again to the replacement if
    /// the worker has to be replaced.
    sent_while_cancelling: Option<(Request, Vec<File>)>,
    /// Closures kept alive as long as their worker.
    _closures: Vec<Closure<dyn FnMut(JsValue)>>,
}

/// A cheap-to-clone handle.
#[derive(Clone)]
pub struct WorkerClient {
    inner: Rc<RefCell<Inner>>,
}

impl WorkerClient {
    pub fn new(handler: impl Fn(Envelope, Option<JsValue>) + 'static) -> Self {
        let client = WorkerClient {
            inner: Rc::new(RefCell::new(Inner {
                worker: None,
                ready: false,
                pending: Vec::new(),
                handler: Rc::new(handler),
                cancelling: None,
                sent_while_cancelling: None,
                _closures: Vec::new(),
            })),
        };
        client.spawn();
        client
    }

    fn spawn(&self) {
        let worker = match Worker::new(&worker_url()) {
            Ok(w) => w,
            Err(e) => {
                let handler = self.inner.borrow().handler.clone();
                handler(
                    Envelope {
                        run: 0,
                        response: Response::Failed { message: format!("could not start the analysis worker: {e:?}") },
                    },
                    None,
                );
                return;
            }
        };
        let weak = Rc::downgrade(&self.inner);
        let on_message = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let Some(inner) = weak.upgrade() else { return };
            let Ok(event) = event.dyn_into::<MessageEvent>() else { return };
            // JSON text, or {json, bytes} when bytes come with it (`run::post_bytes`).
            let data = event.data();
            let (json, bytes) = match data.as_string() {
                Some(json) => (json, None),
                None => {
                    let json = Reflect::get(&data, &"json".into()).ok().and_then(|j| j.as_string()).unwrap_or_default();
                    (json, Reflect::get(&data, &"bytes".into()).ok())
                }
            };
            let Ok(envelope) = serde_json::from_str::<Envelope>(&json) else { return };
            if envelope.response == Response::Ready {
                let client = WorkerClient { inner: inner.clone() };
                client.inner.borrow_mut().ready = true;
                let pending = std::mem::take(&mut client.inner.borrow_mut().pending);
                for (request, files) in pending {
                    client.send(request, files);
                }
                return;
            }
            if envelope.response == Response::Cancelled {
                let mut inner = inner.borrow_mut();
                if inner.cancelling == Some(envelope.run) {
                    inner.cancelling = None;
                    inner.sent_while_cancelling = None;
                }
                return;
            }
            let handler = inner.borrow().handler.clone();
            handler(envelope, bytes);
        });
        let weak = Rc::downgrade(&self.inner);
        let on_error = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let Some(inner) = weak.upgrade() else { return };
            let detail = event.dyn_ref::<ErrorEvent>().map(|e| e.message()).unwrap_or_default();
            let handler = inner.borrow().handler.clone();
            // The pool fails the run and replaces its workers, so the next file works.
            handler(
                Envelope {
                    run: 0,
                    // A Rust panic tells the page itself (`Crashed` from the panic hook); an error
                    // event without one is a trap such as Rust's abort on a failed allocation.
                    response: Response::Crashed {
                        message: format!(
                            "the analysis worker stopped ({detail}), most likely out of memory; its workers were restarted: try again, or close other tabs to free memory"
                        ),
                    },
                },
                None,
            );
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let mut inner = self.inner.borrow_mut();
        inner.worker = Some(worker);
        inner.ready = false;
        // The old closures may be the very one running now (onerror → restart): dropping it here
        // would invalidate it mid-call, so it is leaked instead (a few bytes per restart).
        for old in std::mem::replace(&mut inner._closures, vec![on_message, on_error]) {
            old.forget();
        }
    }

    /// Sends a request with its files (after "ready" if the worker is still starting).
    pub fn send(&self, request: Request, files: Vec<File>) {
        let mut inner = self.inner.borrow_mut();
        if inner.cancelling.is_some() && matches!(request, Request::Analyze { .. }) {
            inner.sent_while_cancelling = Some((request.clone(), files.clone()));
        }
        if !inner.ready {
            inner.pending.push((request, files));
            return;
        }
        let Some(worker) = inner.worker.as_ref() else { return };
        let Ok(json) = serde_json::to_string(&request) else { return };
        let message = Object::new();
        let _ = Reflect::set(&message, &"json".into(), &JsValue::from_str(&json));
        if !files.is_empty() {
            let array = js_sys::Array::new();
            for f in &files {
                array.push(f);
            }
            let _ = Reflect::set(&message, &"files".into(), &array);
        }
        if let Err(e) = worker.post_message(&message) {
            drop(inner);
            let handler = self.inner.borrow().handler.clone();
            handler(
                Envelope {
                    run: 0,
                    response: Response::Failed { message: format!("could not reach the analysis worker: {e:?}") },
                },
                None,
            );
        }
    }

    /// Sends a request with a `Uint8Array` next to it, its buffer transferred (a helper's partial
    /// going to the lead: no copy of megabytes). Only to a worker that is ready (the lead is).
    pub fn send_bytes(&self, request: Request, bytes: JsValue) {
        let inner = self.inner.borrow();
        let Some(worker) = inner.worker.as_ref().filter(|_| inner.ready) else { return };
        let Ok(json) = serde_json::to_string(&request) else { return };
        let message = Object::new();
        let _ = Reflect::set(&message, &"json".into(), &JsValue::from_str(&json));
        let _ = Reflect::set(&message, &"bytes".into(), &bytes);
        let transfer = js_sys::Array::new();
        if let Ok(buffer) = Reflect::get(&bytes, &"buffer".into()) {
            transfer.push(&buffer);
        }
        let _ = worker.post_message_with_transfer(&message, &transfer);
    }

    /// Stops the worker at once, for good (the pool replaces crashed workers by new clients).
    pub fn terminate(&self) {
        let mut inner = self.inner.borrow_mut();
        if let Some(w) = inner.worker.take() {
            w.terminate();
        }
        inner.ready = false;
        inner.pending.clear();
        // Possibly called from one of these closures: leaked rather than dropped mid-call.
        for old in std::mem::take(&mut inner._closures) {
            old.forget();
        }
    }

    /// Stops run `run`: the worker drops it at its next step and acknowledges. Without an
    /// acknowledgement within [`CANCEL_GRACE_MS`] the worker is replaced.
    pub fn cancel(&self, run: u64) {
        {
            let mut inner = self.inner.borrow_mut();
            if !inner.ready {
                // Still starting: nothing runs yet, so dropping the waiting requests is the cancel.
                inner.pending.clear();
                return;
            }
            inner.cancelling = Some(run);
            inner.sent_while_cancelling = None;
        }
        self.send(Request::Cancel { run }, Vec::new());
        let weak = Rc::downgrade(&self.inner);
        let fallback = Closure::once_into_js(move || {
            let Some(inner) = weak.upgrade() else { return };
            if inner.borrow().cancelling != Some(run) {
                return;
            }
            let resend = {
                let mut i = inner.borrow_mut();
                i.cancelling = None;
                i.sent_while_cancelling.take()
            };
            let client = WorkerClient { inner };
            client.restart();
            if let Some((request, files)) = resend {
                client.send(request, files);
            }
        });
        let scheduled = web_sys::window().map(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(fallback.unchecked_ref(), CANCEL_GRACE_MS)
        });
        if !matches!(scheduled, Some(Ok(_))) {
            // No timer: replace the worker now rather than risk a stuck one.
            self.inner.borrow_mut().cancelling = None;
            self.restart();
        }
    }

    /// Stops whatever runs, at once, and starts a fresh worker (which loads the worker's script
    /// and wasm again, from the HTTP cache at best): for a crashed or stuck worker only.
    fn restart(&self) {
        {
            let mut inner = self.inner.borrow_mut();
            if let Some(w) = inner.worker.take() {
                w.terminate();
            }
            inner.pending.clear();
            inner.ready = false;
            inner.cancelling = None;
        }
        self.spawn();
    }
}
