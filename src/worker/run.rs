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
use super::http_source::{HttpSource, Traffic};
use super::protocol::{CrashKind, Envelope, Request, Response, RunSettings, SourceSpec, TestCrash};
use crate::explain::centred::CentredPass;
use crate::explain::geometry::{GeometryTiming, WITH_RESULT_MAX_DIM};
use crate::explain::neighbours::nearest;
use crate::pass::kernel::{self, Precision};
use crate::pass::shares::{shares_for, PassPartial, Share};
use crate::read::demo;
use crate::read::format::set::MAX_JSON_BYTES;
use crate::read::matrix::Matrix;
use crate::read::remote::{self, HfRepo, RemoteError, HF_INDEX_FILE, HF_SINGLE_FILE};
use crate::read::source::{ByteSource, ReadError, SliceSource};
use crate::run::analysis::Phase;
use crate::run::job::{Job, JobOptions};

/// How long the analysis loop may run before it lets messages in (Cancel, StopEarly, a new run).
const TASK_YIELD_MS: f64 = 50.0;
/// Progress posts compute ‖G‖_F² (d²/2 values): a few per second are plenty.
const PROGRESS_MS: f64 = 400.0;

thread_local! {
    /// The run id of the latest request; a running loop that sees another id stops. A Cancel sets
    /// it to 0, which no run has.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    static STOP_EARLY: Cell<bool> = const { Cell::new(false) };
    /// The last generated demo, so switching tensors does not regenerate it.
    static DEMO_CACHE: RefCell<Option<(String, Arc<Vec<u8>>)>> = const { RefCell::new(None) };
    /// The embedding of the last finished run, for the requests that follow its result
    /// (neighbours, the centred pass).
    static LAST_MATRIX: RefCell<Option<(u64, Matrix)>> = const { RefCell::new(None) };
    /// Helpers' partials the page forwarded to this (lead) worker, with their run, not yet absorbed.
    static PARTIALS: RefCell<Vec<(u64, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
}

/// The matrix of run `run`, if it is the last finished one.
fn matrix_of(run: u64) -> Result<Matrix, String> {
    LAST_MATRIX
        .with(|m| m.borrow().as_ref().filter(|(r, _)| *r == run).map(|(_, m)| m.clone()))
        .ok_or_else(|| "this result's file is no longer open in the worker: analyse it again".to_string())
}

/// The centred pass over run `run`'s matrix, a chunk at a time between yields.
async fn run_centred(run: u64) -> Result<(), String> {
    let matrix = matrix_of(run)?;
    let mut pass = CentredPass::new(&matrix).map_err(|e| e.to_string())?;
    let mut pacer = Pacer::new(run);
    while !pass.step().map_err(|e| e.to_string())? {
        if pacer.progress_due(false) {
            post(run, Response::CentredProgress { fraction: pass.fraction() });
        }
        pacer.pause().await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    post(run, Response::Centred(pass.result().map_err(|e| e.to_string())?));
    Ok(())
}

/// How often a lead whose own share is done looks for the helpers' partials (a timer, not a busy
/// loop: the helpers need the cores).
const WAIT_PARTIALS_MS: i32 = 10;

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(run: u64, response: Response) {
    if let Ok(json) = serde_json::to_string(&Envelope { run, response }) {
        let _ = scope().post_message(&JsValue::from_str(&json));
    }
}

/// Posts a response with bytes next to it, transferred rather than copied (a partial's G is d²/2
/// f64 values: 16.8 MB at d = 2048).
fn post_bytes(run: u64, response: Response, bytes: Vec<u8>) {
    let Ok(json) = serde_json::to_string(&Envelope { run, response }) else { return };
    let array = js_sys::Uint8Array::from(bytes.as_slice());
    drop(bytes);
    let message = Object::new();
    let _ = Reflect::set(&message, &"json".into(), &JsValue::from_str(&json));
    let _ = Reflect::set(&message, &"bytes".into(), &array);
    let transfer = js_sys::Array::of1(&array.buffer());
    let _ = scope().post_message_with_transfer(&message, &transfer);
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Installs the message handler and says "ready".
pub fn start() {
    // A panic leaves this wasm instance unusable: say so to the page (which replaces the workers)
    // before the trap, besides the console trace.
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let run = GENERATION.with(|g| g.get());
        post(run, Response::Crashed {
            message: format!("the analysis worker crashed, a bug in Orthoscope; its workers were restarted, so try again ({info})"),
        });
    }));
    // Kernel timings (Report.gram_gflops, the benchmark): std's clock does not exist on wasm.
    kernel::bench::set_clock(performance_now);
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|event: MessageEvent| {
        let data = event.data();
        let json = Reflect::get(&data, &"json".into()).ok().and_then(|v| v.as_string());
        let request = json.and_then(|j| serde_json::from_str::<Request>(&j).ok());
        match request {
            Some(Request::StopEarly) => STOP_EARLY.with(|s| s.set(true)),
            Some(Request::Cancel { run }) => {
                // The loop of that run returns at its next step; a later run is left alone.
                GENERATION.with(|g| {
                    if g.get() == run {
                        g.set(0);
                    }
                });
                post(run, Response::Cancelled);
            }
            Some(Request::Benchmark { peak_iterations, dim, rows }) => {
                wasm_bindgen_futures::spawn_local(async move { post(0, benchmark(peak_iterations, dim, rows).await) })
            }
            Some(Request::Analyze { run: generation, source, tensor, settings, workers }) => {
                let files = attached_files(&data);
                GENERATION.with(|g| g.set(generation));
                STOP_EARLY.with(|s| s.set(false));
                PARTIALS.with(|p| p.borrow_mut().clear());
                let request = Run { generation, source, files, settings };
                wasm_bindgen_futures::spawn_local(async move {
                    if let Err(message) = analyze(request, tensor, workers).await {
                        post(generation, Response::Failed { message });
                    }
                });
            }
            Some(Request::Neighbours { run, query, k }) => {
                let found = matrix_of(run).and_then(|m| {
                    let row = m.resolve(&query).map_err(|e| e.to_string())?;
                    nearest(&m, row, k).map_err(|e| e.to_string())
                });
                match found {
                    Ok(n) => post(run, Response::Neighbours(n)),
                    Err(message) => post(run, Response::NeighboursFailed { message }),
                }
            }
            Some(Request::Centred { run }) => {
                wasm_bindgen_futures::spawn_local(async move {
                    if let Err(message) = run_centred(run).await {
                        post(run, Response::CentredFailed { message });
                    }
                });
            }
            Some(Request::Share { run: generation, source, tensor, share, settings }) => {
                let files = attached_files(&data);
                GENERATION.with(|g| g.set(generation));
                STOP_EARLY.with(|s| s.set(false));
                let request = Run { generation, source, files, settings };
                wasm_bindgen_futures::spawn_local(async move {
                    if let Err(message) = run_share(request, tensor, share).await {
                        post(generation, Response::Failed { message });
                    }
                });
            }
            Some(Request::Absorb { run }) => {
                let bytes = Reflect::get(&data, &"bytes".into())
                    .ok()
                    .and_then(|b| b.dyn_into::<js_sys::Uint8Array>().ok())
                    .map(|b| b.to_vec());
                if let Some(bytes) = bytes {
                    PARTIALS.with(|p| p.borrow_mut().push((run, bytes)));
                }
            }
            None => post(0, Response::Failed { message: "internal: unreadable request".into() }),
        }
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(0, Response::Ready);
}

/// The `File`s attached to a request.
fn attached_files(data: &JsValue) -> Vec<File> {
    Reflect::get(data, &"files".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Array>().ok())
        .map(|a| a.iter().filter_map(|f| f.dyn_into::<File>().ok()).collect())
        .unwrap_or_default()
}

/// What an analysis or a share of one reads, and how.
struct Run {
    generation: u64,
    source: SourceSpec,
    files: Vec<File>,
    settings: RunSettings,
}

/// The rhythm of a worker's loop over steps: a progress post every [`PROGRESS_MS`], a task
/// boundary every [`TASK_YIELD_MS`] (so Cancel, StopEarly and new requests get in), a microtask in
/// between, and the end of the loop when a newer run or a Cancel replaced run `generation`.
struct Pacer {
    generation: u64,
    last_post: f64,
    last_task: f64,
}

impl Pacer {
    fn new(generation: u64) -> Self {
        let now = now_ms();
        Pacer { generation, last_post: now, last_task: now }
    }

    /// Whether a progress post is due, or `anyway` (counted as posted).
    fn progress_due(&mut self, anyway: bool) -> bool {
        let now = now_ms();
        let due = anyway || now - self.last_post > PROGRESS_MS;
        if due {
            self.last_post = now;
        }
        due
    }

    /// Lets the event loop in; true when it was a task boundary (messages were delivered).
    async fn pause(&mut self) -> bool {
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
    fn superseded(&self) -> bool {
        GENERATION.with(|g| g.get()) != self.generation
    }
}

/// The test hook behind `?crash_after_rows=N` (and `?crash=oom`): a real panic, as a bug would
/// cause, or a real exhaustion of the wasm memory, to show the page recovers.
fn crash_if_asked(crash: Option<TestCrash>, rows_seen: u64) {
    let Some(TestCrash { after_rows, kind }) = crash else { return };
    if rows_seen < after_rows {
        return;
    }
    match kind {
        CrashKind::Panic => panic!("test crash after {rows_seen} rows (?crash_after_rows={after_rows})"),
        CrashKind::OutOfMemory => {
            web_sys::console::log_1(&format!("test out of memory after {rows_seen} rows (?crash=oom)").into());
            // 1 GiB at a time: the 4 GiB address space ends this within four allocations, and
            // untouched pages cost the machine nothing. The failed one aborts (a trap, no panic).
            let mut held: Vec<Vec<u8>> = Vec::new();
            loop {
                held.push(Vec::with_capacity(1 << 30));
                std::hint::black_box(&held);
            }
        }
    }
}

/// Absorbs the helpers' partials of run `generation` received so far; returns how many.
fn absorb_received(generation: u64, job: &mut Job) -> Result<u32, String> {
    let received: Vec<(u64, Vec<u8>)> = PARTIALS.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let mut absorbed = 0;
    for (run, bytes) in received {
        if run != generation {
            continue;
        }
        let partial = PassPartial::from_bytes(&bytes).map_err(|e| e.to_string())?;
        drop(bytes);
        job.absorb(&partial).map_err(|e| e.to_string())?;
        absorbed += 1;
    }
    Ok(absorbed)
}

/// A helper worker: its share of the lead's pass, then the partial for the lead.
async fn run_share(request: Run, tensor: String, share: Share) -> Result<(), String> {
    let Run { generation, source, files, settings } = request;
    let opened = open_sources(&source, files).await?;
    let mut pacer = Pacer::new(generation);
    if pacer.superseded() {
        return Ok(());
    }
    let mut analysis = Job::open_share(opened.sources, &tensor, settings.config(), share).map_err(|e| e.to_string())?;
    while analysis.phase() != Phase::Done {
        analysis.step().map_err(|e| e.to_string())?;
        if STOP_EARLY.with(|s| s.get()) {
            break;
        }
        if pacer.progress_due(false) {
            let progress = analysis.progress();
            crash_if_asked(settings.crash, progress.rows_seen);
            post(generation, Response::Progress(progress));
        }
        pacer.pause().await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    post(generation, Response::Progress(analysis.progress()));
    post_bytes(generation, Response::Partial, analysis.into_partial().to_bytes());
    Ok(())
}

/// The sources of a request, and for a model opened by URL the address read and its traffic.
struct Sources {
    sources: Vec<Rc<dyn ByteSource>>,
    url: Option<(String, Rc<Traffic>)>,
}

/// Opens the sources named by the request (probing the server for a URL).
async fn open_sources(source: &SourceSpec, files: Vec<File>) -> Result<Sources, String> {
    let local = |sources| Ok(Sources { sources, url: None });
    match source {
        SourceSpec::Files => {
            if files.is_empty() {
                return Err("internal: no file attached to the request".into());
            }
            local(
                files
                    .into_iter()
                    .map(|f| {
                        let name = f.name();
                        let blob: Blob = f.into();
                        BlobSource::new(name, blob).map(|s| Rc::new(s) as Rc<dyn ByteSource>).map_err(|e| e.to_string())
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        SourceSpec::Demo(name) => {
            let cached = DEMO_CACHE.with(|c| c.borrow().as_ref().filter(|(n, _)| n == name).map(|(_, b)| b.clone()));
            let bytes = match cached {
                Some(b) => b,
                None => {
                    let (_, bytes) = demo::demo(name).ok_or_else(|| {
                        let names: Vec<&str> = demo::DEMOS.iter().map(|d| d.0).collect();
                        format!("no built-in demo named '{name}' (try {})", names.join(", "))
                    })?;
                    let bytes = Arc::new(bytes);
                    DEMO_CACHE.with(|c| *c.borrow_mut() = Some((name.clone(), bytes.clone())));
                    bytes
                }
            };
            local(vec![Rc::new(SliceSource::new(format!("demo-{name}.safetensors"), bytes))])
        }
        SourceSpec::Url { url } => {
            let traffic = Rc::new(Traffic::default());
            let url = remote::normalise_url(url.trim());
            remote::check_url(&url).map_err(|e| e.to_string())?;
            let first = HttpSource::open(url.clone(), traffic.clone()).await.map_err(|e| e.to_string())?;
            let sources = open_remote(first, &traffic).await?;
            Ok(Sources { sources, url: Some((url, traffic)) })
        }
        SourceSpec::Hf { id, endpoint } => {
            let traffic = Rc::new(Traffic::default());
            let repo = HfRepo::parse(id).map_err(|e| e.to_string())?;
            let endpoint = remote::hf_endpoint(endpoint.as_deref()).map_err(|e| e.to_string())?;
            let index_url = repo.file_url(&endpoint, HF_INDEX_FILE);
            let first = match HttpSource::open(index_url, traffic.clone()).await {
                Err(RemoteError::NotFound { .. }) => {
                    match HttpSource::open(repo.file_url(&endpoint, HF_SINGLE_FILE), traffic.clone()).await {
                        Err(RemoteError::NotFound { .. }) => Err(RemoteError::HfNoModel { repo: repo.id() }),
                        other => other,
                    }
                }
                other => other,
            }
            .map_err(|e| e.to_string())?;
            let url = first.url().to_string();
            let sources = open_remote(first, &traffic).await?;
            Ok(Sources { sources, url: Some((url, traffic)) })
        }
    }
}

/// A probed model file as it is, or a probed shard index read whole (it is small) with its shards
/// probed next to it; handed to `Job` like dropped files, named by their file names.
async fn open_remote(first: HttpSource, traffic: &Rc<Traffic>) -> Result<Vec<Rc<dyn ByteSource>>, String> {
    if !first.name().to_ascii_lowercase().ends_with(".json") {
        return Ok(vec![Rc::new(first)]);
    }
    let len = first.len();
    if len > MAX_JSON_BYTES {
        let e = RemoteError::IndexTooLarge { url: first.url().to_string(), len, max: MAX_JSON_BYTES };
        return Err(e.to_string());
    }
    // len <= 64 MB, so it fits in usize.
    let mut json = vec![0u8; len as usize];
    first.read_at(0, &mut json).map_err(|e: ReadError| e.to_string())?;
    let shards = remote::index_shards(first.url(), &json).map_err(|e| e.to_string())?;
    // Probed together: a model of 30 shards should not wait for 30 round trips in a row.
    let probes = shards.into_iter().map(|(_, url)| HttpSource::open(url, traffic.clone()));
    let opened = futures::future::try_join_all(probes).await.map_err(|e| e.to_string())?;
    let mut sources: Vec<Rc<dyn ByteSource>> = vec![Rc::new(SliceSource::new(first.name(), json))];
    sources.extend(opened.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>));
    Ok(sources)
}

async fn analyze(request: Run, tensor: Option<String>, workers: u32) -> Result<(), String> {
    let Run { generation, source, files, settings } = request;
    let started = now_ms();
    let opened = open_sources(&source, files).await?;
    // A Cancel or a newer run may have come in while the server was probed.
    let mut pacer = Pacer::new(generation);
    if pacer.superseded() {
        return Ok(());
    }
    let traffic = opened.url.as_ref().map(|(_, t)| t.clone());
    let bytes_fetched = || traffic.as_ref().map(|t| t.bytes.get());
    let config = settings.config();
    // Over the network every byte is a download: read the embedding and nothing more.
    let options = JobOptions { tensor_bytes_only: opened.url.is_some() };
    let (mut job, found) =
        Job::open_with(opened.sources, tensor.as_deref(), config, options).map_err(|e| e.to_string())?;
    let chosen = found.chosen.clone();
    post(generation, Response::Opened(found));
    // The pass is split only as far as the accumulators fit the memory budget (`pass`).
    let of = shares_for(workers, job.accumulator_bytes());
    if of > 1 {
        job.split(of);
        post(generation, Response::Split { tensor: chosen, of });
    }
    let mut absorbed = 0u32;
    let mut estimate_posted = false;
    if traffic.is_some() {
        // The headers' download, shown before the first rows arrive.
        let mut progress = job.progress();
        progress.bytes_fetched = bytes_fetched();
        post(generation, Response::Progress(progress));
    }
    loop {
        if job.step().map_err(|e| e.to_string())? {
            break;
        }
        if STOP_EARLY.with(|s| s.get()) {
            job.stop();
            break;
        }
        // The first running ε goes on screen as soon as the pass has one, not at the next tick.
        let first_estimate = !estimate_posted && job.has_estimate();
        if pacer.progress_due(first_estimate) {
            let mut progress = job.progress();
            estimate_posted |= progress.epsilon.is_some();
            crash_if_asked(settings.crash, progress.rows_seen);
            progress.bytes_fetched = bytes_fetched();
            post(generation, Response::Progress(progress));
        }
        if pacer.pause().await {
            // A helper that finished first: its rows join the running estimate now.
            absorbed += absorb_received(generation, &mut job)?;
        }
        if pacer.superseded() {
            return Ok(());
        }
    }
    // The helpers post their partials when their shares end (or on "stop here", sent to all).
    absorbed += absorb_received(generation, &mut job)?;
    while absorbed + 1 < of {
        sleep_ms(WAIT_PARTIALS_MS).await;
        if pacer.superseded() {
            return Ok(());
        }
        absorbed += absorb_received(generation, &mut job)?;
    }
    let mut report = job.report(now_ms() - started).map_err(|e| e.to_string())?;
    LAST_MATRIX.with(|m| *m.borrow_mut() = Some((generation, job.matrix().clone())));
    report.peak_wasm_bytes = wasm_memory_bytes();
    report.source_url = opened.url.as_ref().map(|(u, _)| u.clone());
    report.bytes_fetched = bytes_fetched();
    // The spectrum comes with the result while the eigen step is short (d ≤ 2048: well under 2 s);
    // beyond, it runs after the result is shown — one call of tens of seconds at d = 4096 that cannot
    // yield. A run started meanwhile cancels this one, and the page replaces a worker that does not
    // acknowledge (`client.rs`).
    if report.dim <= WITH_RESULT_MAX_DIM {
        let geometry = job.geometry(GeometryTiming::WithTheResult);
        if let Ok(g) = &geometry {
            report.geometry = g.clone();
        }
        post(generation, Response::Done(Box::new(report)));
        if let Err(e) = geometry {
            post(generation, Response::GeometryFailed { message: e.to_string() });
        }
        return Ok(());
    }
    post(generation, Response::Done(Box::new(report)));
    yield_task().await;
    if !pacer.superseded() {
        match job.geometry(GeometryTiming::AfterTheResult) {
            Ok(Some(geometry)) => post(generation, Response::Geometry(geometry)),
            Ok(None) => {}
            Err(e) => post(generation, Response::GeometryFailed { message: e.to_string() }),
        }
    }
    Ok(())
}

/// `performance.now()` of this worker (sub-millisecond, unlike `Date.now`), else `Date.now`.
fn performance_now() -> f64 {
    js_sys::global()
        .dyn_into::<web_sys::WorkerGlobalScope>()
        .ok()
        .and_then(|scope| scope.performance())
        .map(|p| p.now())
        .unwrap_or_else(js_sys::Date::now)
}

/// Runs the peak loops and the Gram kernels of this build (a few seconds at most for sane sizes).
async fn benchmark(peak_iterations: u64, dim: u64, rows: u64) -> Response {
    let (dim, rows) = (dim.clamp(8, 16384) as usize, rows.clamp(64, 1 << 16) as usize);
    // Short runs first make every timed function hot. V8 compiles the optimised code in the
    // background and only later calls use it (a running call is never switched: the "tier-up trap"
    // of ARCHITECTURE.md, "Facts the code relies on"), so the timed runs wait for it; measured without this wait, the
    // peak loop ran at 4 GFLOP/s instead of ~40.
    for _ in 0..2 {
        let _ = kernel::bench::peak_f32x4_gflops(peak_iterations / 1000 + 1, false);
        let _ = kernel::bench::peak_f32x4_gflops(peak_iterations / 1000 + 1, true);
        let _ = kernel::bench::gram_gflops(dim.min(512), 64, Precision::F32);
        let _ = kernel::bench::gram_gflops(dim.min(512), 64, Precision::F64);
        sleep_ms(300).await;
    }
    Response::Benchmark {
        kernel: kernel::kernel_name(Precision::F32).to_string(),
        peak_gflops: kernel::bench::peak_f32x4_gflops(peak_iterations, false),
        peak_relaxed_gflops: kernel::bench::peak_f32x4_gflops(peak_iterations, true),
        kernel_gflops: kernel::bench::gram_gflops(dim, rows, Precision::F32),
        kernel_f64_gflops: kernel::bench::gram_gflops(dim, rows, Precision::F64),
    }
}

/// Current size of this instance's linear memory (it only grows, so this is the peak).
fn wasm_memory_bytes() -> Option<u64> {
    let memory = wasm_bindgen::memory();
    let buffer = Reflect::get(&memory, &"buffer".into()).ok()?;
    let len = Reflect::get(&buffer, &"byteLength".into()).ok()?.as_f64()?;
    Some(len as u64)
}

/// Waits `ms` milliseconds (setTimeout), or not at all where the timer cannot be set.
async fn sleep_ms(ms: i32) {
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
