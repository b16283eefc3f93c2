//! The loops that step a pass from the event loop: the lead's analysis (a sequence of steps, each a
//! method of `Lead`) and the centred pass that follows a result. A helper's share is `share.rs`'s.

use std::rc::Rc;

use web_sys::File;

use super::bench::wasm_memory_bytes;
use super::crash::{crash_if_asked, gpu_loss_asked};
use super::pacer::{now_ms, performance_now, sleep_ms, yield_task, Pacer};
use super::sources::{open_sources, Sources};
use super::{
    cache_gpu, cached_gpu, keep_matrix, matrix_of, partials_waiting, post, read_partial, stop_early_asked,
    take_band_parts, take_partial, take_sample_dots,
};
use crate::explain::centred::CentredPass;
use crate::explain::geometry::{of_analysis, GeometryTiming, WITH_RESULT_MAX_DIM};
use crate::pass::accumulate::Route;
use crate::pass::analysis::Progress;
use crate::pass::gpu::{GpuChoice, GpuContext};
use crate::pass::shares::{choose_split, Share, Split, WORKER_MEMORY_LIMIT};
use crate::read::locate::LocateError;
use crate::result::report::Report;
use crate::run::job::{Job, JobOptions, Opened};
use crate::worker::protocol::{Response, RunSettings, SourceSpec};
use crate::Error;

/// How often a lead that has computed its blocks of the sample's pairs looks for its helpers'.
const WAIT_SAMPLE_DOTS_MS: i32 = 2;
/// The least a lead waits for its helpers' blocks of the sample's pairs before it computes them
/// itself (they read the sample after the lead, and may still be loading their wasm).
const MIN_PATIENCE_MS: f64 = 200.0;

/// How often a lead whose own share is done looks for the helpers' partials (a timer, not a busy
/// loop: the helpers need the cores).
const WAIT_PARTIALS_MS: i32 = 10;

/// What an analysis or a share of one reads, and how.
pub(super) struct Task {
    pub(super) run: u64,
    pub(super) source: SourceSpec,
    pub(super) files: Vec<File>,
    pub(super) settings: RunSettings,
}

/// How a lead's run ended without a result.
pub(super) enum Stop {
    /// Posted as [`Response::Failed`].
    Failed(String),
    /// The GPU failed: posted as [`Response::GpuFailed`], and the page runs the pass again on the
    /// CPU pool.
    Gpu(String),
}

/// A pass's error: the GPU's own are told apart, since the CPU can still give the result.
fn pass_error(e: Error) -> Stop {
    match e {
        Error::Gpu(e) => {
            Stop::Gpu(format!("the GPU failed during the pass ({e}); the exact pass ran on the CPU instead"))
        }
        e => Stop::Failed(e.to_string()),
    }
}

/// Passes smaller than this many multiply-adds (rows·d²/2) stay on the CPU pool unless the GPU is
/// asked for (`?gpu=1`): they take about a second there, less than a GPU's set-up (adapter, shader
/// compilation, the read-back of G).
const GPU_MIN_MULTIPLY_ADDS: f64 = 4e9;

/// Where a run asked for `choice` computes its Gram sums: `Ok(Off)` for the CPU pool without a word
/// (asked so, or a pass too small to gain), `Err` for the CPU with a reason for the card (the demo,
/// generated in the worker, always runs on the CPU: its pass is small and the opening page should not
/// wait for a shader compilation).
fn gpu_choice(choice: GpuChoice, demo: bool, shape: Option<(u64, usize)>) -> Result<GpuChoice, String> {
    match choice {
        GpuChoice::Off => Ok(GpuChoice::Off),
        _ if demo => Err("the built-in demo runs on the CPU pool".to_string()),
        GpuChoice::Auto => {
            let work = shape.map_or(0.0, |(rows, dim)| rows as f64 * (dim * dim) as f64 / 2.0);
            Ok(if work >= GPU_MIN_MULTIPLY_ADDS { GpuChoice::Auto } else { GpuChoice::Off })
        }
        GpuChoice::Any => Ok(GpuChoice::Any),
    }
}

/// The GPU device for a run asked to use `choice`: the one of an earlier run, else a new one from
/// the browser; `Err` says why there is none (the Report's `gpu_fallback`).
async fn gpu_for(choice: GpuChoice) -> Result<Option<Rc<GpuContext>>, String> {
    if choice == GpuChoice::Off {
        return Ok(None);
    }
    if let Some(gpu) = cached_gpu(choice) {
        return Ok(Some(gpu));
    }
    let gpu = Rc::new(GpuContext::acquire_async(choice).await.map_err(|e| format!("{e}; the CPU pool ran the pass"))?);
    cache_gpu(choice, Some(gpu.clone()));
    Ok(Some(gpu))
}

/// The lead's analysis of run `task.run`: open, pass (on the GPU, alone), take in the helpers'
/// partials in share order, report, then the spectrum. `gpu_fallback`: why a rerun after a GPU
/// failure is on the CPU.
pub(super) async fn analyze(
    task: Task,
    tensor: Option<String>,
    workers: u32,
    gpu_fallback: Option<String>,
) -> Result<(), Stop> {
    match steps(task, tensor, workers, gpu_fallback).await {
        Ok(()) | Err(Halt::Superseded) => Ok(()),
        Err(Halt::Stop(stop)) => Err(stop),
    }
}

/// The lead's steps, in order; each ends the run early by [`Halt`].
async fn steps(task: Task, tensor: Option<String>, workers: u32, gpu_fallback: Option<String>) -> Result<(), Halt> {
    let started = now_ms();
    let demo = matches!(task.source, SourceSpec::Demo(_));
    let Some(mut lead) = Lead::open(task, tensor.as_deref(), workers).await? else { return Ok(()) };
    let gpu_fallback = lead.choose_gpu(demo, gpu_fallback).await?;
    lead.pass().await?;
    lead.wait_for_bands().await?;
    lead.take_partials().await?;
    let report = lead.report(started, gpu_fallback).await?;
    lead.post_result(report).await;
    Ok(())
}

/// Why the lead's steps end before its result is posted.
enum Halt {
    /// A Cancel or a newer run came in: nothing more is posted about this run.
    Superseded,
    /// The run ends without a result, which the worker's loop posts.
    Stop(Stop),
}

impl From<Stop> for Halt {
    fn from(stop: Stop) -> Self {
        Halt::Stop(stop)
    }
}

impl From<String> for Halt {
    fn from(message: String) -> Self {
        Halt::Stop(Stop::Failed(message))
    }
}

/// The lead's run once its sources are open: the job and what its steps share.
struct Lead {
    run: u64,
    settings: RunSettings,
    /// Workers the page can give this run.
    workers: u32,
    opened: Sources,
    job: Job,
    pacer: Pacer,
    /// The tensor analysed, which the helpers of a split pass are told to take.
    chosen: String,
    gpu: Option<Rc<GpuContext>>,
    /// Over how many workers the pass runs, and whether split by columns: decided once the
    /// sample's rows are read (`split_after_sample`), at once for a GPU pass (the lead's alone).
    split: Option<(u32, bool)>,
    /// Split, the helpers wait for what the sample's pairs decide ([`Response::Verdict`]): until it
    /// is posted, the blocks of the sample's pairs and how many of them the helpers computed.
    verdict_due: Option<(u32, u32)>,
    /// The last progress posted with a running ε, reposted between two estimates.
    last_estimate: Option<Progress>,
}

impl Lead {
    /// Opens the sources and the job, and tells the page what was found (`Opened`), or, when the
    /// files hold no input embedding but matrices to choose from, offers them (`Choose`: None, nothing
    /// runs). With no matrix at all there is nothing to choose: an error.
    async fn open(task: Task, tensor: Option<&str>, workers: u32) -> Result<Option<Lead>, Halt> {
        let Task { run, source, files, settings } = task;
        let opened = open_sources(&source, files).await?;
        // A Cancel or a newer run may have come in while the server was probed.
        let pacer = Pacer::new(run);
        if pacer.superseded() {
            return Err(Halt::Superseded);
        }
        let config = settings.config();
        // Over the network every byte is a download: read the embedding and nothing more.
        let options = JobOptions { tensor_bytes_only: opened.url.is_some(), gpu: None };
        let (job, found) = match Job::open_with(opened.sources.clone(), tensor, config, options) {
            Ok(opened) => opened,
            Err(e @ Error::Locate(LocateError::NoInputEmbedding { .. })) if has_candidates(&e) => {
                let survey = Opened::survey(&opened.sources).map_err(|e| e.to_string())?;
                post(run, Response::Choose { opened: survey, message: e.to_string() });
                return Ok(None);
            }
            Err(e) => return Err(Stop::Failed(e.to_string()).into()),
        };
        let chosen = found.chosen.clone();
        post(run, Response::Opened(found));
        Ok(Some(Lead {
            run,
            settings,
            workers,
            opened,
            job,
            pacer,
            chosen,
            gpu: None,
            split: None,
            verdict_due: None,
            last_estimate: None,
        }))
    }

    /// Ends the run quietly when a Cancel or a newer run came in.
    fn go_on(&self) -> Result<(), Halt> {
        if self.pacer.superseded() {
            Err(Halt::Superseded)
        } else {
            Ok(())
        }
    }

    /// The bytes downloaded so far, for a model opened by URL.
    fn bytes_fetched(&self) -> Option<u64> {
        self.opened.url.as_ref().map(|(_, traffic)| traffic.bytes.get())
    }

    /// Takes the GPU the settings ask for and the pass can use; returns why the pass is on the CPU
    /// when a GPU was asked for (`gpu_fallback`, kept when the page gave one).
    async fn choose_gpu(&mut self, demo: bool, gpu_fallback: Option<String>) -> Result<Option<String>, Halt> {
        let (gpu, gpu_fallback) = match gpu_choice(self.settings.gpu, demo, self.job.matrix().shape().ok()) {
            Ok(GpuChoice::Off) => (None, gpu_fallback),
            Ok(choice) => match gpu_for(choice).await {
                Ok(gpu) => (gpu, gpu_fallback),
                Err(why) => (None, gpu_fallback.or(Some(why))),
            },
            Err(why) => (None, gpu_fallback.or(Some(why))),
        };
        self.go_on()?;
        if let Some(gpu) = &gpu {
            self.job.embedding_mut().set_gpu(gpu.clone());
        }
        // The split waits for the sample's rows (tens of ms), which say whether the pass is bound by
        // its reads (`split_after_sample`); a GPU pass is the lead's alone.
        self.split = gpu.is_some().then_some((1, false));
        self.gpu = gpu;
        Ok(gpu_fallback)
    }

    /// The lead's pass, step after step, until its last or *Stop here*: the split once the
    /// sample's rows are read, the verdict for the helpers, the bands' checkpoints, the GPU's queue
    /// and the progress posts.
    async fn pass(&mut self) -> Result<(), Halt> {
        if self.opened.url.is_some() {
            // The headers' download, shown before the first rows arrive.
            let mut progress = self.job.progress();
            progress.bytes_fetched = self.bytes_fetched();
            post(self.run, Response::Progress(progress));
        }
        let mut ahead = self.opened.read_ahead();
        loop {
            ahead.before_step(self.job.step_reads(), |n| self.job.upcoming_reads(n)).await;
            // A Cancel or a newer run may have come in while the reads were awaited: nothing more
            // is posted about this run once its Cancel is acknowledged.
            self.go_on()?;
            if self.job.step().map_err(pass_error)? {
                return Ok(());
            }
            if self.split.is_none() && self.job.embedding().sample_is_read() {
                self.split_after_sample().await?;
            }
            self.post_verdict();
            self.take_checkpoints()?;
            // Split by columns, the lead stops at the bands' last common checkpoint, and steps on
            // until there is one (`Job::stop`).
            if stop_early_asked() && self.job.stop() {
                return Ok(());
            }
            // The GPU's queue is kept short (memory), without blocking the worker. Messages get in
            // while the GPU is awaited: a Cancel or a newer run ends this loop before it posts
            // anything more, and Stop here ends it with the estimate on screen, without waiting for
            // the block.
            if let Some(settled) = unless_interrupted(self.job.embedding_mut().settle_gpu(), &self.pacer).await {
                settled.map_err(pass_error)?;
            }
            self.go_on()?;
            if stop_early_asked() && self.job.stop() {
                return Ok(());
            }
            // The first running ε goes on screen as soon as the pass has one, not at the next tick.
            let first_estimate = self.last_estimate.is_none() && self.job.embedding().has_estimate();
            if self.pacer.progress_due(first_estimate) {
                if let Some(refreshed) =
                    unless_interrupted(self.job.embedding_mut().refresh_gpu_estimate(), &self.pacer).await
                {
                    refreshed.map_err(pass_error)?;
                }
                self.go_on()?;
                if stop_early_asked() && self.job.stop() {
                    return Ok(());
                }
                self.post_progress();
            }
            // The helpers' partials wait in the state until the lead's own share is done, and are
            // then taken in by share: the f64 sums then add in one order whatever the timing, so
            // the same seed gives the same bits (taken in as they came, μ differed in its last bit).
            self.pacer.pause().await;
            self.go_on()?;
        }
    }

    /// The sample's rows are read: splits the pass (`split_after_sample`) and, split, pairs the
    /// sample with the helpers.
    async fn split_after_sample(&mut self) -> Result<(), Halt> {
        let (of, columns) = split_after_sample(&mut self.job, self.settings.split, self.workers);
        if of > 1 {
            post(self.run, Response::Split { tensor: self.chosen.clone(), of, columns });
        }
        self.split = Some((of, columns));
        // The running ε is the lead's alone: time spent on it is time the helpers wait at the end,
        // so it is computed less often (`Pacer::share_estimates`).
        self.pacer.share_estimates(of > 1);
        if of > 1 {
            let paired =
                pair_sample_with_helpers(&mut self.job, self.run, of, &mut self.pacer).await.map_err(pass_error)?;
            self.verdict_due = Some(paired);
            self.go_on()?;
        }
        Ok(())
    }

    /// Split, posts what the sample's pairs decided once the lead has it, for the helpers.
    fn post_verdict(&mut self) {
        let Some((blocks, blocks_from_helpers)) = self.verdict_due else { return };
        if let Some(verdict) = self.job.embedding().sample_verdict() {
            post(self.run, Response::Verdict { verdict: verdict.clone(), blocks, blocks_from_helpers });
            self.verdict_due = None;
        }
    }

    /// Split by columns: the bands' parts of ‖G‖²_F at their checkpoints (the running ε).
    fn take_checkpoints(&mut self) -> Result<(), Halt> {
        self.job.embedding_mut().note_checkpoint();
        self.take_band_parts()
    }

    /// The bands' parts of ‖G‖²_F received since the last look.
    fn take_band_parts(&mut self) -> Result<(), Halt> {
        for (band, step, part) in take_band_parts(self.run) {
            self.job.embedding_mut().take_band_part(band, step, part).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Posts the progress, with a new running ε when one is due (else the last one again); the
    /// test crashes fire here.
    fn post_progress(&mut self) {
        let mut progress = match self.last_estimate.as_ref().filter(|_| !self.pacer.estimate_due()) {
            Some(last) => self.job.progress_reusing(last),
            None => {
                let started = performance_now();
                let progress = self.job.progress();
                self.pacer.estimated(performance_now() - started);
                progress
            }
        };
        if progress.epsilon.is_some() {
            self.last_estimate = Some(progress.clone());
        }
        crash_if_asked(self.settings.crash, progress.rows_seen);
        if let Some(gpu) = self.gpu.as_ref().filter(|_| gpu_loss_asked(self.settings.crash, progress.rows_seen)) {
            gpu.lose_device_for_test();
        }
        progress.bytes_fetched = self.bytes_fetched();
        post(self.run, Response::Progress(progress));
    }

    /// Split by columns, a lead whose own band is done waits for slower bands: their checkpoints
    /// still move the running ε, and *Stop here* takes the last one. Their partials are taken in
    /// only once all have come, since a band placed into G ends the bands' running estimate.
    async fn wait_for_bands(&mut self) -> Result<(), Halt> {
        let (of, columns) = self.split.unwrap_or((1, false));
        if !columns || of < 2 || self.job.embedding().stopped_at_estimate() {
            return Ok(());
        }
        while partials_waiting(self.run) + 1 < of as usize {
            self.take_band_parts()?;
            if stop_early_asked() && self.job.stop_while_waiting() {
                break;
            }
            if self.pacer.progress_due(false) {
                let mut progress = self.job.progress();
                progress.bytes_fetched = self.bytes_fetched();
                post(self.run, Response::Progress(progress));
            }
            sleep_ms(WAIT_PARTIALS_MS).await;
            self.go_on()?;
        }
        Ok(())
    }

    /// Takes in the helpers' partials, in share order. The helpers post them when their shares end
    /// (or, split by rows, on "stop here"). Stopped at a checkpoint of a split by columns, the result
    /// is that estimate: the page cancels the bands.
    async fn take_partials(&mut self) -> Result<(), Halt> {
        let (of, _) = self.split.unwrap_or((1, false));
        let partials = if self.job.embedding().stopped_at_estimate() { 1 } else { of };
        for share in 1..partials {
            loop {
                if let Some(bytes) = take_partial(self.run, share) {
                    let (partial, band) = read_partial(&bytes).map_err(|e| e.to_string())?;
                    self.job.embedding_mut().absorb_from(&partial, Some(&band)).map_err(|e| e.to_string())?;
                    break;
                }
                sleep_ms(WAIT_PARTIALS_MS).await;
                self.go_on()?;
            }
        }
        Ok(())
    }

    /// The Report, once the GPU's sums are read back (once, into the accumulator the report and
    /// the eigen step read); the matrix is kept for the requests that follow the result.
    async fn report(&mut self, started: f64, gpu_fallback: Option<String>) -> Result<Report, Halt> {
        self.job.finish_gpu().await.map_err(pass_error)?;
        self.go_on()?;
        let mut report = self.job.report(now_ms() - started).map_err(|e| e.to_string())?;
        report.gpu_fallback = report.gpu_fallback.or(gpu_fallback);
        keep_matrix(self.run, self.job.matrix().clone());
        report.peak_wasm_bytes = wasm_memory_bytes();
        report.source_url = self.opened.url.as_ref().map(|(u, _)| u.clone());
        report.bytes_fetched = self.bytes_fetched();
        Ok(report)
    }

    /// Posts the result and its geometry. The spectrum comes with the result while the eigen step
    /// is short (d ≤ 2048: well under 2 s); beyond, it runs after the result is shown — one call of
    /// tens of seconds at d = 4096 that cannot yield. A run started meanwhile cancels this one, and
    /// the page replaces a worker that does not acknowledge (`client.rs`).
    async fn post_result(&self, mut report: Report) {
        let run = self.run;
        if report.dim <= WITH_RESULT_MAX_DIM {
            let geometry = of_analysis(self.job.embedding(), GeometryTiming::WithTheResult, 1);
            if let Ok(g) = &geometry {
                report.geometry = g.clone();
            }
            post(run, Response::Done(Box::new(report)));
            if let Err(e) = geometry {
                post(run, Response::GeometryFailed { message: e.to_string() });
            }
            return;
        }
        post(run, Response::Done(Box::new(report)));
        yield_task().await;
        if !self.pacer.superseded() {
            match of_analysis(self.job.embedding(), GeometryTiming::AfterTheResult, 1) {
                Ok(Some(geometry)) => post(run, Response::Geometry(geometry)),
                Ok(None) => {}
                Err(e) => post(run, Response::GeometryFailed { message: e.to_string() }),
            }
        }
    }
}

/// Splits the lead's pass once its sample's rows are read: by rows as far as whole accumulators
/// fit the memory budget, else (and from d = 8192) by columns where the lead can assemble G
/// (`shares::choose_split`). Asked for no split in particular, a pass the sample shows is bound by
/// its reads runs whole where its shares could not sweep (`Analysis::reads_whole`). `(of, by_columns)`.
fn split_after_sample(job: &mut Job, split: Split, workers: u32) -> (u32, bool) {
    if split == Split::Auto && job.embedding().reads_whole() {
        return (1, false);
    }
    let gram = job.embedding().route() == Route::Gram;
    let (of, columns) =
        choose_split(split, workers, job.embedding().accumulator_bytes(), gram, Some(WORKER_MEMORY_LIMIT));
    if of > 1 {
        if columns {
            job.split_columns(of);
        } else {
            job.split(of);
        }
    }
    (of, columns)
}

/// The lead of a pass split over `of` workers pairs the histogram's sample with its helpers: each
/// computes the blocks of the pairs `Share::pairs_sample_block` deals it (the CLI's threads share
/// them too), where the lead alone took ~1 s at d = 4096 while the helpers waited for its verdict.
/// The lead computes its blocks, takes in the helpers' as they come ([`Request::SampleDots`]) and,
/// once it has waited as long as its own blocks took (at least [`MIN_PATIENCE_MS`]: a helper slow
/// to start), computes the missing ones itself, last first, until they come. Every block is
/// `kernel::dots`'s wherever it ran, so the histogram and the verdict are the ones a single worker
/// gets, bit for bit. Returns with the pairs taken in, or with none taken in when stopped or
/// replaced (the steps go on); and how many blocks there were, and came from the helpers.
///
/// [`Request::SampleDots`]: crate::worker::protocol::Request::SampleDots
async fn pair_sample_with_helpers(job: &mut Job, run: u64, of: u32, pacer: &mut Pacer) -> Result<(u32, u32), Error> {
    let Some(lead) = Share::new(0, of) else { return Ok((0, 0)) };
    let blocks = job.embedding().sample_pair_blocks();
    let n = blocks.last().map_or(0, |b| b.end);
    let lens: Vec<usize> = blocks.iter().map(|b| b.len() * (n - b.start)).collect();
    let mut dots: Vec<Option<Vec<f32>>> = vec![None; blocks.len()];
    let interrupted = |pacer: &Pacer| pacer.superseded() || stop_early_asked();
    let started = now_ms();
    for (k, rows) in blocks.iter().enumerate().filter(|(k, _)| lead.pairs_sample_block(*k)) {
        dots[k] = Some(job.embedding().sample_pair_dots(rows));
        pacer.pause().await;
        if interrupted(pacer) {
            return Ok((0, 0));
        }
    }
    let patience = (now_ms() - started).max(MIN_PATIENCE_MS);
    let waiting_since = now_ms();
    let mut from_helpers = 0;
    loop {
        from_helpers += take_sample_dots(run, &lens, &mut dots);
        let Some(missing) = dots.iter().rposition(Option::is_none) else { break };
        if now_ms() - waiting_since > patience {
            dots[missing] = blocks.get(missing).map(|rows| job.embedding().sample_pair_dots(rows));
            pacer.pause().await;
        } else {
            sleep_ms(WAIT_SAMPLE_DOTS_MS).await;
        }
        if interrupted(pacer) {
            return Ok((0, 0));
        }
    }
    let blocks = u32::try_from(dots.len()).unwrap_or(u32::MAX);
    let dots: Vec<Vec<f32>> = dots.into_iter().map(Option::unwrap_or_default).collect();
    job.embedding_mut().finish_sample_pairs_with(|_, _, _| dots)?;
    Ok((blocks, from_helpers))
}

/// How often a GPU wait looks for *Stop here*, a Cancel or a newer run.
const INTERRUPT_POLL_MS: i32 = 20;

/// Awaits `work` (a wait on the GPU) unless *Stop here*, a Cancel or a newer run comes first
/// (None): on a slow adapter one block can take seconds, and both must act at once. The GPU work
/// awaited stays queued; a stopped pass reports its last estimate and never reads it back.
async fn unless_interrupted<T>(work: impl std::future::Future<Output = T>, pacer: &Pacer) -> Option<T> {
    use futures::future::{select, Either};
    let watch = async {
        while !stop_early_asked() && !pacer.superseded() {
            sleep_ms(INTERRUPT_POLL_MS).await;
        }
    };
    match select(std::pin::pin!(work), std::pin::pin!(watch)).await {
        Either::Left((value, _)) => Some(value),
        Either::Right(_) => None,
    }
}

/// The centred pass over run `run`'s matrix, a chunk at a time between yields.
pub(super) async fn run_centred(run: u64) -> Result<(), String> {
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

/// Whether a refusal leaves 2-D tensors the user could choose.
fn has_candidates(e: &Error) -> bool {
    matches!(e, Error::Locate(LocateError::NoInputEmbedding { candidates, .. }) if !candidates.is_empty())
}
