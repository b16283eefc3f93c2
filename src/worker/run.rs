//! The worker's side: receive a request, open the source, step the analysis from the event loop,
//! post progress and the report.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope, File, MessageChannel, MessageEvent};

use super::blob_source::BlobSource;
use super::protocol::{Envelope, Request, Response, SourceSpec};
use crate::analysis::AnalysisConfig;
use crate::job::Job;
use crate::source::{ByteSource, SliceSource};
use crate::synth;

thread_local! {
    /// The run id of the latest request; a running loop that sees another id stops.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    static STOP_EARLY: Cell<bool> = const { Cell::new(false) };
    /// The last generated demo, so switching tensors does not regenerate it.
    static DEMO_CACHE: RefCell<Option<(String, Arc<Vec<u8>>)>> = const { RefCell::new(None) };
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(run: u64, response: Response) {
    if let Ok(json) = serde_json::to_string(&Envelope { run, response }) {
        let _ = scope().post_message(&JsValue::from_str(&json));
    }
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Installs the message handler and says "ready".
pub fn start() {
    console_error_panic_hook::set_once();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|event: MessageEvent| {
        let data = event.data();
        let json = Reflect::get(&data, &"json".into()).ok().and_then(|v| v.as_string());
        let request = json.and_then(|j| serde_json::from_str::<Request>(&j).ok());
        match request {
            Some(Request::StopEarly) => STOP_EARLY.with(|s| s.set(true)),
            Some(Request::Analyze { run: generation, source, tensor, seed, stop_after_rows }) => {
                let files: Vec<File> = Reflect::get(&data, &"files".into())
                    .ok()
                    .and_then(|f| f.dyn_into::<js_sys::Array>().ok())
                    .map(|a| a.iter().filter_map(|f| f.dyn_into::<File>().ok()).collect())
                    .unwrap_or_default();
                GENERATION.with(|g| g.set(generation));
                STOP_EARLY.with(|s| s.set(false));
                wasm_bindgen_futures::spawn_local(async move {
                    if let Err(message) = analyze(generation, source, files, tensor, seed, stop_after_rows).await {
                        post(generation, Response::Failed { message });
                    }
                });
            }
            None => post(0, Response::Failed { message: "internal: unreadable request".into() }),
        }
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(0, Response::Ready);
}

/// Opens the sources named by the request.
fn open_sources(source: &SourceSpec, files: Vec<File>) -> Result<Vec<Rc<dyn ByteSource>>, String> {
    match source {
        SourceSpec::Files => {
            if files.is_empty() {
                return Err("internal: no file attached to the request".into());
            }
            files
                .into_iter()
                .map(|f| {
                    let name = f.name();
                    let blob: Blob = f.into();
                    BlobSource::new(name, blob).map(|s| Rc::new(s) as Rc<dyn ByteSource>).map_err(|e| e.to_string())
                })
                .collect()
        }
        SourceSpec::Demo(name) => {
            let cached = DEMO_CACHE.with(|c| c.borrow().as_ref().filter(|(n, _)| n == name).map(|(_, b)| b.clone()));
            let bytes = match cached {
                Some(b) => b,
                None => {
                    let (_, bytes) = synth::demo(name).ok_or_else(|| {
                        let names: Vec<&str> = synth::DEMOS.iter().map(|d| d.0).collect();
                        format!("no built-in demo named '{name}' (try {})", names.join(", "))
                    })?;
                    let bytes = Arc::new(bytes);
                    DEMO_CACHE.with(|c| *c.borrow_mut() = Some((name.clone(), bytes.clone())));
                    bytes
                }
            };
            Ok(vec![Rc::new(SliceSource::new(format!("demo-{name}.safetensors"), bytes))])
        }
    }
}

async fn analyze(
    generation: u64,
    source: SourceSpec,
    files: Vec<File>,
    tensor: Option<String>,
    seed: u64,
    stop_after_rows: Option<u64>,
) -> Result<(), String> {
    let started = now_ms();
    let sources = open_sources(&source, files)?;
    let config = AnalysisConfig { seed, stop_after_rows, ..AnalysisConfig::default() };
    let (mut job, opened) = Job::open(sources, tensor.as_deref(), config).map_err(|e| e.to_string())?;
    post(generation, Response::Opened(opened));
    let mut last_post = now_ms();
    loop {
        if job.step().map_err(|e| e.to_string())? {
            break;
        }
        if STOP_EARLY.with(|s| s.get()) {
            job.stop();
            break;
        }
        // Every progress report computes ‖G‖_F² (d²/2 values): a few per second is plenty.
        if now_ms() - last_post > 400.0 {
            post(generation, Response::Progress(job.progress()));
            last_post = now_ms();
            // A task boundary: lets a StopEarly or a new request in.
            yield_task().await;
        } else {
            // Each step must be a fresh call from JavaScript: V8 never swaps optimised code into a
            // wasm call already running (`shared/toolchain.md`, "V8 tier-up trap").
            yield_microtask().await;
        }
        if GENERATION.with(|g| g.get()) != generation {
            return Ok(());
        }
    }
    let mut report = job.report(now_ms() - started).map_err(|e| e.to_string())?;
    report.peak_wasm_bytes = wasm_memory_bytes();
    post(generation, Response::Done(report));
    Ok(())
}

/// Current size of this instance's linear memory (it only grows, so this is the peak).
fn wasm_memory_bytes() -> Option<u64> {
    let memory = wasm_bindgen::memory();
    let buffer = Reflect::get(&memory, &"buffer".into()).ok()?;
    let len = Reflect::get(&buffer, &"byteLength".into()).ok()?.as_f64()?;
    Some(len as u64)
}

async fn yield_microtask() {
    let _ = wasm_bindgen_futures::JsFuture::from(Promise::resolve(&JsValue::UNDEFINED)).await;
}

/// Yields to the event loop through a MessageChannel (no 4 ms clamp, unlike nested setTimeout).
async fn yield_task() {
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
