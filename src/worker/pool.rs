//! The page's pool of analysis workers: each its own wasm instance opening the same
//! `File`s (no SharedArrayBuffer). Worker 0, the lead, runs the job as one worker would, but only
//! its share of the pass (`pass`); when it answers [`Response::Split`] (once the histogram sample's
//! rows are read: a pass that sample shows is all reading stays whole), workers 1..N get their
//! shares. Each reads the histogram's sample too and computes the blocks of its pairs it is dealt
//! ([`Response::SampleDots`], forwarded to the lead, which computes the others and takes them all
//! in); they start their shares once the lead answers [`Response::Verdict`] (its precision and
//! centre, which the pool forwards), post their partials here, and the pool forwards them to the
//! lead, which absorbs them and posts the one Report.
//!
//! The lead splits by rows (each worker a subset of the blocks and a whole G) or, from d = 8192 and
//! where whole Gram matrices do not fit the memory budget, by columns (every worker every row and
//! one band of G; `pass::shares`). Workers start with the first analysis of files (never before),
//! all at once, and stay for the next ones. Progress on screen is the rows seen over all workers (split by columns, the
//! lead's: every band reads every row). Split by rows, the running ε is the lead's, whose share is
//! itself a random subset of the blocks; split by columns, it is the estimate at the last
//! checkpoint every band reached (`pass::bands`): the helpers post their parts of ‖G‖²_F, which
//! the pool forwards to the lead, and *Stop here* goes to the lead alone, which stops there and
//! reports that estimate while the pool cancels the bands. The lead takes in the helpers'
//! partials once its own share is done, in share order, so that the sums add in one order
//! whatever the timing. A crashed worker (panic,
//! trap, out of memory) fails the run at once and the whole pool is replaced: the others would wait
//! for its partial forever. A pass on the GPU runs in the lead alone; when its GPU
//! fails ([`Response::GpuFailed`]) the pool runs the same analysis again on the CPU, split as usual,
//! and its Report says why (`gpu_fallback`). The page sees none of these messages between the
//! workers: the pool passes on its events ([`PageEvent`]: opened, progress, the result …).

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use web_sys::File;

use super::client::WorkerClient;
use super::events::PageEvent;
use super::protocol::{CrashKind, Envelope, Request, Response, RunSettings, SourceSpec};
use crate::pass::analysis::{Progress, SampleVerdict};
use crate::pass::gpu::GpuChoice;
use crate::pass::shares::{Share, MAX_WORKERS};

/// How many workers a page starts: `?workers=N`, else the number of logical cores, capped.
pub fn pool_size(requested: Option<u32>) -> u32 {
    let cores = web_sys::window().map_or(1.0, |w| w.navigator().hardware_concurrency());
    let cores = if cores.is_finite() && cores >= 1.0 { cores as u32 } else { 1 };
    requested.unwrap_or(cores).clamp(1, MAX_WORKERS)
}

/// One analysis as the pool runs it.
struct Current {
    run: u64,
    source: SourceSpec,
    files: Vec<File>,
    tensor: Option<String>,
    settings: RunSettings,
    /// Workers the pass is split over (1 until the lead says otherwise), and whether by columns.
    of: u32,
    columns: bool,
    /// *Stop here* was asked: split by columns, the bands are cancelled once the lead reports.
    stopping: bool,
    /// Each worker's latest progress.
    progress: Vec<Option<Progress>>,
    /// The run failed (or was cancelled): later messages about it are dropped.
    over: bool,
}

struct Inner {
    /// Index 0 is the lead. Created on demand, replaced all together after a crash.
    clients: Vec<WorkerClient>,
    size: u32,
    /// The page's: each event with its run.
    handler: Rc<dyn Fn(u64, PageEvent)>,
    current: Option<Current>,
}

/// A cheap-to-clone handle.
#[derive(Clone)]
pub struct Pool {
    inner: Rc<RefCell<Inner>>,
}

impl Pool {
    /// A pool of up to `size` workers; none is started yet. `handler` gets the page's events, each
    /// with its run.
    pub fn new(size: u32, handler: impl Fn(u64, PageEvent) + 'static) -> Self {
        Pool {
            inner: Rc::new(RefCell::new(Inner {
                clients: Vec::new(),
                size: size.clamp(1, MAX_WORKERS),
                handler: Rc::new(handler),
                current: None,
            })),
        }
    }

    /// Worker `index`, started if it is not yet.
    /// Sends a request about a finished run to the lead worker, which holds that run's matrix
    /// (nearest neighbours, the centred pass).
    pub fn send_to_lead(&self, request: Request) {
        self.client(0).send(request, Vec::new());
    }

    fn client(&self, index: usize) -> WorkerClient {
        while self.inner.borrow().clients.len() <= index {
            let i = self.inner.borrow().clients.len();
            let weak = Rc::downgrade(&self.inner);
            let client = WorkerClient::new(move |envelope, bytes| {
                if let Some(inner) = weak.upgrade() {
                    Pool { inner }.on_message(i, envelope, bytes);
                }
            });
            self.inner.borrow_mut().clients.push(client);
        }
        self.inner.borrow().clients[index].clone()
    }

    /// Starts run `run`. Models read over the network use one worker (N workers would download
    /// the rows N times), and so do the demos (generated in the worker: each would generate it).
    pub fn analyze(
        &self,
        run: u64,
        source: SourceSpec,
        files: Vec<File>,
        tensor: Option<String>,
        settings: RunSettings,
    ) {
        self.start(run, source, files, tensor, settings, None);
    }

    fn start(
        &self,
        run: u64,
        source: SourceSpec,
        files: Vec<File>,
        tensor: Option<String>,
        settings: RunSettings,
        gpu_fallback: Option<String>,
    ) {
        let workers = match source {
            SourceSpec::Files => self.inner.borrow().size,
            _ => 1,
        };
        self.inner.borrow_mut().current = Some(Current {
            run,
            source: source.clone(),
            files: files.clone(),
            tensor: tensor.clone(),
            settings,
            of: 1,
            columns: false,
            stopping: false,
            progress: vec![None],
            over: false,
        });
        // The test crash goes to the last worker of the run: a helper when the pass is split. A lost
        // GPU goes to the lead, the one worker a GPU pass runs in.
        let gpu_lost = settings.crash.is_some_and(|c| c.kind == CrashKind::GpuLost);
        let crash = if workers == 1 || gpu_lost { settings.crash } else { None };
        let settings = RunSettings { crash, ..settings };
        let request = Request::Analyze { run, source, tensor, settings, workers, gpu_fallback };
        self.client(0).send(request, files);
        // The helpers load their wasm while the lead opens the files and reads the sample, so that
        // they are ready to pair the sample with it when it splits the pass.
        for index in 1..workers as usize {
            self.client(index);
        }
    }

    /// The lead's GPU failed mid-pass: the same run again, on the CPU pool (the lead's loop for it
    /// has ended; the helpers had no share). The test crash is not repeated.
    fn rerun_on_cpu(&self, run: u64, message: String) {
        let again = self.inner.borrow().current.as_ref().filter(|c| c.run == run && !c.over).map(|c| {
            let settings = RunSettings { gpu: GpuChoice::Off, crash: None, ..c.settings };
            (c.source.clone(), c.files.clone(), c.tensor.clone(), settings)
        });
        if let Some((source, files, tensor, settings)) = again {
            self.start(run, source, files, tensor, settings, Some(message));
        }
    }

    /// Ends the pass of every worker of the run after its current step; the lead reports the
    /// estimate over all of them.
    pub fn stop_early(&self) {
        let of = {
            let mut inner = self.inner.borrow_mut();
            match inner.current.as_mut() {
                Some(c) => {
                    c.stopping = true;
                    // Split by columns, the lead stops at the bands' last common checkpoint; they
                    // run on until it has one, then are cancelled.
                    if c.columns {
                        1
                    } else {
                        c.of as usize
                    }
                }
                None => 1,
            }
        };
        let clients: Vec<WorkerClient> = self.inner.borrow().clients.iter().take(of).cloned().collect();
        for c in clients {
            c.send(Request::StopEarly, Vec::new());
        }
    }

    /// Stops run `run` in every worker at once.
    pub fn cancel(&self, run: u64) {
        if let Some(c) = self.inner.borrow_mut().current.as_mut().filter(|c| c.run == run) {
            c.over = true;
        }
        let clients: Vec<WorkerClient> = self.inner.borrow().clients.clone();
        for c in clients {
            c.cancel(run);
        }
    }

    /// Terminates every worker; the next run starts fresh ones.
    fn rebuild(&self) {
        let clients = std::mem::take(&mut self.inner.borrow_mut().clients);
        for c in &clients {
            c.terminate();
        }
    }

    fn emit(&self, run: u64, event: PageEvent) {
        let handler = self.inner.borrow().handler.clone();
        handler(run, event);
    }

    /// Fails the current run with `message` (once), and stops its other workers.
    fn fail(&self, run: u64, message: String, crashed: bool) {
        let first = {
            let mut inner = self.inner.borrow_mut();
            match inner.current.as_mut() {
                Some(c) if !c.over && (run == 0 || run == c.run) => {
                    c.over = true;
                    Some(c.run)
                }
                _ => None,
            }
        };
        if crashed {
            self.rebuild();
        } else if let Some(r) = first {
            self.cancel(r);
        }
        if let Some(r) = first {
            self.emit(r, PageEvent::Failed { message });
        }
    }

    /// Takes in worker `index`'s message: the pool acts on those that coordinate the workers and
    /// passes the page's events on (the lead's; progress combined over all workers).
    fn on_message(&self, index: usize, envelope: Envelope, bytes: Option<JsValue>) {
        let Envelope { run, response } = envelope;
        let current = self.inner.borrow().current.as_ref().map(|c| (c.run, c.over));
        if let Response::Crashed { message } = response {
            return self.fail(run, message, true);
        }
        // Messages of an older run (or a failed one) are dropped; run 0 is a worker-level failure.
        let live = matches!(current, Some((r, false)) if run == r || run == 0);
        if !live {
            return;
        }
        let lead = index == 0;
        // What the lead alone tells the page; a helper's copy (it has none) is dropped.
        let from_lead = |event: PageEvent| {
            if lead {
                self.emit(run, event);
            }
        };
        match response {
            Response::Split { tensor, of, columns } => {
                if lead {
                    self.split(run, tensor, of, columns);
                }
            }
            Response::Verdict { verdict, .. } => {
                if lead {
                    self.send_verdict(run, verdict);
                }
            }
            Response::BandPart { step, frobenius } => {
                if !lead {
                    self.client(0).send(Request::BandPart { run, share: index as u32, step, frobenius }, Vec::new());
                }
            }
            Response::SampleDots { blocks } => {
                if let Some(bytes) = bytes.filter(|_| !lead) {
                    self.client(0).send_bytes(Request::SampleDots { run, blocks }, bytes);
                }
            }
            Response::Partial => {
                if let Some(bytes) = bytes {
                    self.client(0).send_bytes(Request::Absorb { run, share: index as u32 }, bytes);
                }
            }
            Response::Progress(p) => {
                let combined = {
                    let mut inner = self.inner.borrow_mut();
                    let Some(c) = inner.current.as_mut() else { return };
                    if let Some(slot) = c.progress.get_mut(index) {
                        *slot = Some(p);
                    }
                    combine(&c.progress, c.columns)
                };
                if let Some(p) = combined {
                    self.emit(run, PageEvent::Progress(p));
                }
            }
            Response::Failed { message } => self.fail(run, message, false),
            Response::GpuFailed { message } => {
                if lead {
                    self.rerun_on_cpu(run, message);
                }
            }
            Response::Done(report) => {
                if lead {
                    self.cancel_bands(run);
                    self.emit(run, PageEvent::Done(report));
                }
            }
            Response::Opened(opened) => from_lead(PageEvent::Opened(opened)),
            Response::Choose { opened, message } => from_lead(PageEvent::Choose { opened, message }),
            Response::Geometry(geometry) => from_lead(PageEvent::Geometry(geometry)),
            Response::GeometryFailed { message } => from_lead(PageEvent::GeometryFailed { message }),
            Response::Neighbours(neighbours) => from_lead(PageEvent::Neighbours(neighbours)),
            Response::NeighboursFailed { message } => from_lead(PageEvent::NeighboursFailed { message }),
            Response::CentredProgress { fraction } => from_lead(PageEvent::CentredProgress { fraction }),
            Response::Centred(centred) => from_lead(PageEvent::Centred(centred)),
            Response::CentredFailed { message } => from_lead(PageEvent::CentredFailed { message }),
            // The worker's handle consumes Ready and Cancelled; a crash was handled above; benchmark
            // answers go to whoever asked (scripts/bench.sh talks to a worker of its own).
            Response::Ready | Response::Cancelled | Response::Crashed { .. } | Response::Benchmark { .. } => {}
        }
    }

    /// A pass split by columns stopped at a checkpoint (*Stop here*): its result is in, so the
    /// bands still running are cancelled (their partials are not needed).
    fn cancel_bands(&self, run: u64) {
        let bands: Vec<WorkerClient> = {
            let inner = self.inner.borrow();
            match inner.current.as_ref() {
                Some(c) if c.run == run && c.columns && c.stopping => {
                    inner.clients.iter().take(c.of as usize).skip(1).cloned().collect()
                }
                _ => Vec::new(),
            }
        };
        for c in bands {
            c.cancel(run);
        }
    }

    /// The lead's verdict on its sample, to the helpers of its split pass (each got its share
    /// first: a worker's requests keep their order, also while it starts).
    fn send_verdict(&self, run: u64, verdict: SampleVerdict) {
        let helpers: Vec<WorkerClient> = {
            let inner = self.inner.borrow();
            match inner.current.as_ref() {
                Some(c) if c.run == run => inner.clients.iter().take(c.of as usize).skip(1).cloned().collect(),
                _ => Vec::new(),
            }
        };
        for c in helpers {
            c.send(Request::Verdict { run, verdict: verdict.clone() }, Vec::new());
        }
    }

    /// The lead split the pass: give workers 1..of their shares (by columns or by rows).
    fn split(&self, run: u64, tensor: String, of: u32, columns: bool) {
        let Some((source, files, settings)) = ({
            let mut inner = self.inner.borrow_mut();
            inner.current.as_mut().map(|c| {
                c.of = of;
                c.columns = columns;
                c.progress.resize(of as usize, None);
                (c.source.clone(), c.files.clone(), c.settings)
            })
        }) else {
            return;
        };
        for index in 1..of {
            let share = if columns { Share::columns(index, of) } else { Share::new(index, of) };
            let Some(share) = share else { continue };
            let crash = settings.crash.filter(|c| index + 1 == of && c.kind != CrashKind::GpuLost);
            let settings = RunSettings { crash, ..settings };
            let request = Request::Share { run, source: source.clone(), tensor: tensor.clone(), share, settings };
            self.client(index as usize).send(request, files.clone());
        }
    }
}

/// The progress shown for a split pass: rows seen and read summed over the workers (split by
/// columns, where each reads every row, the lead's), the mean of their fractions (each of its own work),
/// and the lead's phase and running ε.
fn combine(progress: &[Option<Progress>], columns: bool) -> Option<Progress> {
    let lead = progress.first()?.clone()?;
    if progress.len() == 1 {
        return Some(lead);
    }
    let sum = |rows: fn(&Progress) -> u64| progress.iter().flatten().map(rows).sum();
    let (rows_seen, rows_read) =
        if columns { (lead.rows_seen, lead.rows_read) } else { (sum(|p| p.rows_seen), sum(|p| p.rows_read)) };
    let fraction = progress.iter().map(|p| p.as_ref().map_or(0.0, |p| p.fraction)).sum::<f64>() / progress.len() as f64;
    Some(Progress { rows_seen, rows_read, fraction, ..lead })
}
