//! The worker's side: receive a request, open the source, step the analysis from the event loop,
//! post progress and the report. This file holds the worker's state and its message loop; each job
//! has its own module.

mod analyze;
mod bench;
mod crash;
mod pacer;
mod share;
mod sources;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use super::protocol::{Envelope, Request, Response};
use crate::explain::neighbours::nearest;
use crate::pass::analysis::SampleVerdict;
use crate::pass::gpu::{GpuChoice, GpuContext};
use crate::pass::kernel::{self, BandValues};
use crate::pass::shares::{PassError, PassPartial};
use crate::pass::wire::Frame;
use crate::read::matrix::Matrix;

use analyze::{analyze, run_centred, Stop, Task};
use share::run_share;
use sources::attached_files;

/// The envelope's run of a message about no run (Ready, the benchmark, an unreadable request, a
/// crash between runs): the page reads run 0 as the worker's own.
const NO_RUN: u64 = 0;

/// What a worker keeps between messages.
#[derive(Default)]
struct State {
    /// The run whose loop may go on: the latest Analyze's or Share's, None once a Cancel stopped
    /// it. A loop that finds another value here ends without posting more.
    run: Option<u64>,
    /// "Stop here" was asked of the current run: its loop ends after this step.
    stop_early: bool,
    /// The last generated demo, by name, so switching tensors does not regenerate it.
    demo: Option<(String, Arc<Vec<u8>>)>,
    /// The embedding of the last finished run, with its run, for the requests that follow its
    /// result (neighbours, the centred pass).
    last_matrix: Option<(u64, Matrix)>,
    /// Helpers' partials the page forwarded to this (lead) worker, with their run and share, not
    /// yet absorbed. Kept as JavaScript bytes until taken in: the lead may hold several while its
    /// own share ends, and wasm memory, once grown, never shrinks.
    partials: Vec<(u64, u32, js_sys::Uint8Array)>,
    /// Helpers' blocks of the histogram sample's pairs (run, blocks, their f32 dot products),
    /// forwarded to this lead and not yet taken in.
    sample_dots: Vec<(u64, Vec<u32>, js_sys::Uint8Array)>,
    /// What the lead's histogram sample decided, forwarded to this helper for its run, until its
    /// share's pass starts with it.
    verdict: Option<(u64, SampleVerdict)>,
    /// Bands' parts of ‖G‖²_F at their checkpoints (run, band, step, part), forwarded to this lead
    /// of a pass split by columns and not yet taken in.
    band_parts: Vec<(u64, u32, u64, f64)>,
    /// The GPU device of earlier runs, with the choice it was acquired for (asking the browser for
    /// an adapter again each run costs a round trip); dropped when it fails.
    gpu: Option<(GpuChoice, Rc<GpuContext>)>,
}

thread_local! {
    /// The worker's one state (a worker has one thread; messages and loops take turns on it).
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

/// The run whose loop may go on (None after a Cancel).
fn current_run() -> Option<u64> {
    with_state(|s| s.run)
}

/// Makes `run` the current run, not asked to stop early.
fn begin_run(run: u64) {
    with_state(|s| {
        s.run = Some(run);
        s.stop_early = false;
    });
}

/// Stops run `run`'s loop at its next step; a later run is left alone.
fn cancel_run(run: u64) {
    with_state(|s| {
        if s.run == Some(run) {
            s.run = None;
        }
    });
}

fn ask_stop_early() {
    with_state(|s| s.stop_early = true);
}

fn stop_early_asked() -> bool {
    with_state(|s| s.stop_early)
}

/// The bytes of demo `name`, if it is the one generated last.
fn cached_demo(name: &str) -> Option<Arc<Vec<u8>>> {
    with_state(|s| s.demo.as_ref().filter(|(n, _)| n == name).map(|(_, b)| b.clone()))
}

fn cache_demo(name: &str, bytes: Arc<Vec<u8>>) {
    with_state(|s| s.demo = Some((name.to_string(), bytes)));
}

/// Keeps run `run`'s embedding for the requests that follow its result.
fn keep_matrix(run: u64, matrix: Matrix) {
    with_state(|s| s.last_matrix = Some((run, matrix)));
}

/// The matrix of run `run`, if it is the last finished one.
fn matrix_of(run: u64) -> Result<Matrix, String> {
    with_state(|s| s.last_matrix.as_ref().filter(|(r, _)| *r == run).map(|(_, m)| m.clone()))
        .ok_or_else(|| "this result's file is no longer open in the worker: analyse it again".to_string())
}

/// The lead's verdict for run `run`, once forwarded (taken out of the state).
fn take_verdict(run: u64) -> Option<SampleVerdict> {
    with_state(|s| match s.verdict.take() {
        Some((r, verdict)) if r == run => Some(verdict),
        // Another run's (an older one's): dropped.
        _ => None,
    })
}

/// Takes the helpers' blocks of run `run`'s sample pairs received so far into the empty places of
/// `dots` (block k has `lens[k]` values); returns how many it filled. Other runs' are dropped, and
/// so is a message whose blocks or length do not fit (the lead computes those blocks itself).
fn take_sample_dots(run: u64, lens: &[usize], dots: &mut [Option<Vec<f32>>]) -> u32 {
    let mut filled = 0;
    let received = with_state(|s| std::mem::take(&mut s.sample_dots));
    for (r, blocks, bytes) in received {
        let sizes: Option<Vec<usize>> = blocks.iter().map(|&k| lens.get(k as usize).copied()).collect();
        let Some(sizes) = sizes else { continue };
        let fits = sizes.iter().sum::<usize>().checked_mul(4) == Some(bytes.length() as usize);
        if r != run || !fits || !bytes.byte_offset().is_multiple_of(4) {
            continue;
        }
        let values = js_sys::Float32Array::new_with_byte_offset_and_length(
            &bytes.buffer(),
            bytes.byte_offset(),
            bytes.length() / 4,
        );
        let mut at = 0u32;
        for (&k, &len) in blocks.iter().zip(&sizes) {
            let start = at;
            at += len as u32;
            if let Some(slot) = dots.get_mut(k as usize).filter(|s| s.is_none()) {
                let mut block = vec![0.0f32; len];
                values.subarray(start, at).copy_to(&mut block);
                *slot = Some(block);
                filled += 1;
            }
        }
    }
    filled
}

fn receive_partial(run: u64, share: u32, bytes: js_sys::Uint8Array) {
    with_state(|s| s.partials.push((run, share, bytes)));
}

/// The partial of share `share` of run `run`, if received, removed from the state; partials of
/// other runs are dropped. Still JavaScript bytes: [`read_partial`] reads them.
fn take_partial(run: u64, share: u32) -> Option<js_sys::Uint8Array> {
    with_state(|s| {
        s.partials.retain(|&(r, _, _)| r == run);
        let at = s.partials.iter().position(|&(_, i, _)| i == share)?;
        Some(s.partials.swap_remove(at).2)
    })
}

/// G's values (whole, or a band) as they came in a helper's message, read where they lie
/// (JavaScript memory) as the lead adds or places them into its G: never a second copy in wasm
/// memory.
struct ValuesInMessage(js_sys::Float64Array);

impl BandValues for ValuesInMessage {
    fn len(&self) -> usize {
        self.0.length() as usize
    }
    fn copy_to(&self, at: usize, dest: &mut [f64]) {
        // `len` is u32, so both ends fit; a range outside the array copies nothing.
        let (Ok(start), Ok(end)) = (u32::try_from(at), u32::try_from(at + dest.len())) else { return };
        if end <= self.0.length() {
            self.0.subarray(start, end).copy_to(dest);
        }
    }
}

/// A helper's partial from its message ([`PassPartial::into_frame`]): the partial, copied into
/// wasm memory without its G's values, and those where they lie.
fn read_partial(bytes: &js_sys::Uint8Array) -> Result<(PassPartial, ValuesInMessage), PassError> {
    let total = bytes.length();
    let mut first = [0u8; 8];
    if total >= 8 {
        bytes.subarray(0, 8).copy_to(&mut first);
    }
    let frame = Frame::read(&first[..(total as usize).min(8)], u64::from(total))?;
    let unreadable = |why: &str| PassError::Unreadable(why.to_string());
    let (Ok(start), Ok(end), Ok(values_at)) =
        (u32::try_from(frame.meta.start), u32::try_from(frame.meta.end), u32::try_from(frame.values_at))
    else {
        return Err(unreadable("a partial past 4 GiB"));
    };
    let partial = PassPartial::from_bytes(&bytes.subarray(start, end).to_vec())?;
    // A Float64Array must start at a multiple of 8 in its buffer; a helper's message does.
    let at = bytes.byte_offset() + values_at;
    if !at.is_multiple_of(8) {
        return Err(unreadable("the Gram matrix's values are not aligned to 8 bytes"));
    }
    let values = js_sys::Float64Array::new_with_byte_offset_and_length(&bytes.buffer(), at, frame.values as u32);
    Ok((partial, ValuesInMessage(values)))
}

/// How many helpers' partials of run `run` have come and wait to be taken in.
fn partials_waiting(run: u64) -> usize {
    with_state(|s| s.partials.iter().filter(|&&(r, _, _)| r == run).count())
}

/// The bands' parts of run `run` received since the last call (those of other runs are dropped).
fn take_band_parts(run: u64) -> Vec<(u32, u64, f64)> {
    with_state(|s| {
        s.band_parts.drain(..).filter(|p| p.0 == run).map(|(_, band, step, part)| (band, step, part)).collect()
    })
}

fn drop_partials() {
    with_state(|s| {
        s.partials.clear();
        s.band_parts.clear();
        s.sample_dots.clear();
    });
}

/// The device acquired earlier for `choice`, if any.
fn cached_gpu(choice: GpuChoice) -> Option<Rc<GpuContext>> {
    with_state(|s| s.gpu.as_ref().filter(|(c, _)| *c == choice).map(|(_, g)| g.clone()))
}

fn cache_gpu(choice: GpuChoice, gpu: Option<Rc<GpuContext>>) {
    with_state(|s| s.gpu = gpu.map(|g| (choice, g)));
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(run: u64, response: Response) {
    if let Ok(json) = serde_json::to_string(&Envelope { run, response }) {
        let _ = scope().post_message(&JsValue::from_str(&json));
    }
}

/// Posts a helper's partial next to `response`, as one `Uint8Array` transferred rather than
/// copied: the head of its frame, then its G's values (whole, or its band) copied straight from
/// wasm memory ([`PassPartial::into_frame`]). A partial's G is d²/2 f64 values (67 MB at
/// d = 4096, a band of 537 MB at d = 16384), so it is never first copied into a `Vec<u8>` in wasm
/// memory.
fn post_partial(run: u64, response: Response, partial: PassPartial) {
    let Ok(json) = serde_json::to_string(&Envelope { run, response }) else { return };
    let (head, values) = partial.into_frame();
    let total = values.len().checked_mul(8).and_then(|v| v.checked_add(head.len())).and_then(|t| u32::try_from(t).ok());
    let Some(total) = total else {
        post(
            run,
            Response::Failed {
                message: "a worker's partial result is past 4 GiB, more than a message can carry".into(),
            },
        );
        return;
    };
    let array = js_sys::Uint8Array::new_with_length(total);
    // `head.len()` is a multiple of 8 (the frame's layout), as a Float64Array needs.
    array.subarray(0, head.len() as u32).copy_from(&head);
    js_sys::Float64Array::new_with_byte_offset_and_length(&array.buffer(), head.len() as u32, values.len() as u32)
        .copy_from(&values);
    drop(values);
    post_with_bytes(&json, &array);
}

/// Posts a helper's blocks of the lead's sample pairs ([`Response::SampleDots`]): `values[i]` are
/// block `blocks[i]`'s f32 dot products, one after the other in one transferred array (~4 MB at
/// d = 4096 with two workers).
fn post_sample_dots(run: u64, blocks: Vec<u32>, values: &[Vec<f32>]) {
    let Ok(json) = serde_json::to_string(&Envelope { run, response: Response::SampleDots { blocks } }) else {
        return;
    };
    let total = values.iter().map(Vec::len).sum::<usize>();
    let Some(bytes) = total.checked_mul(4).and_then(|b| u32::try_from(b).ok()) else { return };
    let array = js_sys::Uint8Array::new_with_length(bytes);
    let floats = js_sys::Float32Array::new(&array.buffer());
    let mut at = 0u32;
    for block in values {
        floats.subarray(at, at + block.len() as u32).copy_from(block);
        at += block.len() as u32;
    }
    post_with_bytes(&json, &array);
}

/// Posts the envelope `json` with `array` next to it, its buffer transferred rather than copied.
fn post_with_bytes(json: &str, array: &js_sys::Uint8Array) {
    let message = Object::new();
    let _ = Reflect::set(&message, &"json".into(), &JsValue::from_str(json));
    let _ = Reflect::set(&message, &"bytes".into(), array);
    let transfer = js_sys::Array::of1(&array.buffer());
    let _ = scope().post_message_with_transfer(&message, &transfer);
}

/// Installs the message handler and says "ready".
pub fn start() {
    // A panic leaves this wasm instance unusable: say so to the page (which replaces the workers)
    // before the trap, besides the console trace.
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        // `try_borrow`: the panic may have come while the state was borrowed.
        let run = STATE.with(|s| s.try_borrow().ok().and_then(|s| s.run)).unwrap_or(NO_RUN);
        post(run, Response::Crashed {
            message: format!("the analysis worker crashed, a bug in Orthoscope; its workers were restarted, so try again ({info})"),
        });
    }));
    // Kernel timings (Report.gram_gflops, the benchmark): std's clock does not exist on wasm.
    kernel::bench::set_clock(pacer::performance_now);
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|event: MessageEvent| {
        let data = event.data();
        let json = Reflect::get(&data, &"json".into()).ok().and_then(|v| v.as_string());
        let request = json.and_then(|j| serde_json::from_str::<Request>(&j).ok());
        match request {
            Some(request) => dispatch(request, &data),
            None => post(NO_RUN, Response::Failed { message: "internal: unreadable request".into() }),
        }
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(NO_RUN, Response::Ready);
}

/// The bytes that ride next to a request's JSON (a helper's partial or blocks of pairs).
fn attached_bytes(data: &JsValue) -> Option<js_sys::Uint8Array> {
    Reflect::get(data, &"bytes".into()).ok().and_then(|b| b.dyn_into::<js_sys::Uint8Array>().ok())
}

/// Acts on one request from the page; `data` is the whole message (files and bytes ride next to
/// the JSON).
fn dispatch(request: Request, data: &JsValue) {
    match request {
        Request::StopEarly => ask_stop_early(),
        Request::Cancel { run } => {
            // The loop of that run returns at its next step.
            cancel_run(run);
            post(run, Response::Cancelled);
        }
        Request::Benchmark { peak_iterations, dim, rows } => wasm_bindgen_futures::spawn_local(async move {
            post(NO_RUN, bench::benchmark(peak_iterations, dim, rows).await)
        }),
        Request::Analyze { run, source, tensor, settings, workers, gpu_fallback } => {
            let files = attached_files(data);
            begin_run(run);
            drop_partials();
            let task = Task { run, source, files, settings };
            wasm_bindgen_futures::spawn_local(async move {
                match analyze(task, tensor, workers, gpu_fallback).await {
                    Ok(()) => {}
                    Err(Stop::Failed(message)) => post(run, Response::Failed { message }),
                    Err(Stop::Gpu(message)) => {
                        // A device that failed once is not offered to the next run.
                        cache_gpu(GpuChoice::Off, None);
                        post(run, Response::GpuFailed { message });
                    }
                }
            });
        }
        Request::Neighbours { run, query, k } => {
            let found = matrix_of(run).and_then(|m| {
                let row = m.resolve(&query).map_err(|e| e.to_string())?;
                nearest(&m, row, k).map_err(|e| e.to_string())
            });
            match found {
                Ok(n) => post(run, Response::Neighbours(n)),
                Err(message) => post(run, Response::NeighboursFailed { message }),
            }
        }
        Request::Centred { run } => wasm_bindgen_futures::spawn_local(async move {
            if let Err(message) = run_centred(run).await {
                post(run, Response::CentredFailed { message });
            }
        }),
        Request::Share { run, source, tensor, share, settings } => {
            let files = attached_files(data);
            begin_run(run);
            let task = Task { run, source, files, settings };
            wasm_bindgen_futures::spawn_local(async move {
                if let Err(message) = run_share(task, tensor, share).await {
                    post(run, Response::Failed { message });
                }
            });
        }
        Request::Verdict { run, verdict } => with_state(|s| s.verdict = Some((run, verdict))),
        Request::BandPart { run, share, step, frobenius } => {
            with_state(|s| s.band_parts.push((run, share, step, frobenius)));
        }
        Request::SampleDots { run, blocks } => {
            if let Some(bytes) = attached_bytes(data) {
                with_state(|s| s.sample_dots.push((run, blocks, bytes)));
            }
        }
        Request::Absorb { run, share } => {
            if let Some(bytes) = attached_bytes(data) {
                receive_partial(run, share, bytes);
            }
        }
    }
}
