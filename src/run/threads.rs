//! A job's pass on every core, natively: the CLI's `analyze`, and the tests that hold it to the
//! single-threaded pass. The browser does the same with a pool of Web Workers (`worker::pool`):
//! the lead share (share 0: the histogram's sample, the unembedding) runs here, every other share
//! on a thread of its own that opens the files itself, and the partials merge into the lead.
//! Asked for a GPU ([`PassRequest::gpu`]), the pass runs there on one thread instead, and on the
//! threads as above whenever the GPU cannot give the result (the Report says why).

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Instant;

use thiserror::Error;

use crate::explain::centred::{centred, CentredError};
use crate::explain::geometry::GeometryError;
use crate::pass::accumulate::Route;
use crate::pass::analysis::{sample_block_dots, AnalysisConfig};
use crate::pass::error::Error;
use crate::pass::gpu::GpuChoice;
pub use crate::pass::shares::Split;
use crate::pass::shares::{choose_split, Share};
use crate::read::dictionary::dictionaries_in_folder;
use crate::read::source::{ByteSource, FileSource, ReadError};
use crate::result::report::Report;
use crate::run::error::ReportError;
use crate::run::job::Job;

/// Why a native pass did not give a Report.
#[derive(Debug, Error)]
pub enum ThreadsError {
    /// A path could not be opened or listed.
    #[error("{path}: {message}")]
    Open { path: String, message: String },
    /// A directory was given that holds no regular files.
    #[error("{path}: the directory holds no files")]
    EmptyDirectory { path: String },
    /// The operating system refused the threads.
    #[error("could not start {threads} threads: {message}")]
    Pool { threads: u32, message: String },
    /// A share's thread panicked (a bug: the message says so rather than giving a wrong answer).
    #[error("a worker thread panicked; no result is given (please report this)")]
    Panicked,
    /// The analysis itself failed (the message names the file, tensor and offset).
    #[error(transparent)]
    Analysis(#[from] Error),
    /// The spectrum of G/V could not be computed.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// The centred pass failed.
    #[error(transparent)]
    Centred(#[from] CentredError),
    /// One model of several (`analyze --each`) gave no Report.
    #[error("{path}: {source}")]
    Each { path: String, source: Box<ThreadsError> },
}

impl From<ReportError> for ThreadsError {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::Analysis(e) => ThreadsError::Analysis(e),
            ReportError::Geometry(e) => ThreadsError::Geometry(e),
        }
    }
}

impl From<ReadError> for ThreadsError {
    fn from(e: ReadError) -> Self {
        ThreadsError::Analysis(Error::Read(e))
    }
}

/// What `analyze` was asked for.
#[derive(Clone, Debug, Default)]
pub struct PassRequest {
    /// The tensor to analyse (default: the located token embedding).
    pub tensor: Option<String>,
    /// Seed, early stop and precision, as in the page.
    pub config: AnalysisConfig,
    /// Threads sharing the pass (default: every core). Split by rows, fewer run when their
    /// accumulators would not fit the memory budget (`shares::shares_for`); split by columns, all do.
    pub threads: Option<usize>,
    /// How the threads share the pass.
    pub split: Split,
    /// Also the μ, σ, ε of the mean-centred rows (a second pass; not the paper's ε).
    pub centred: bool,
    /// Whether the Gram pass may run on a GPU (default: no). If no adapter is found or the GPU
    /// fails, the threads run it and `Report::gpu_fallback` says why.
    pub gpu: GpuChoice,
    /// A test hook (harmless, like `GpuContext::lose_device_for_test`): the GPU device is
    /// destroyed once the pass has read this many rows, to show the fallback to the CPU.
    pub lose_gpu_after_rows: Option<u64>,
}

/// Analyses the files at `paths` (a directory stands for the files in it) on up to
/// `request.threads` threads: the same Report as one thread, whatever the number.
pub fn analyze_paths(paths: &[PathBuf], request: &PassRequest) -> Result<Report, ThreadsError> {
    let started = Instant::now();
    let files = expand_paths(paths)?;
    let mut fallback = None;
    if request.gpu != GpuChoice::Off {
        match on_gpu(&files, request, started) {
            Ok(report) => return Ok(report),
            // Any GPU failure: the whole pass again on the CPU, saying why.
            Err(ThreadsError::Analysis(Error::Gpu(e))) => fallback = Some(format!("{e}; the CPU ran the pass")),
            Err(e) => return Err(e),
        }
    }
    let mut report = on_threads(&files, request, started)?;
    report.gpu_fallback = fallback.or(report.gpu_fallback);
    Ok(report)
}

/// The models `analyze --each` analyses: each path given, except that a folder holding two or
/// more dictionaries in folders of their own (sparsify's `layers.N/`, Gemma Scope's
/// `layer_N/width_16k/…`) stands for each of those folders, in layer order, as the page reads such
/// a folder ([`dictionaries_in_folder`]). Looks at most [`MAX_WALK_DEPTH`] folders down and
/// [`MAX_WALK_FILES`] files.
pub fn each_model(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ThreadsError> {
    let mut models = Vec::new();
    for path in paths {
        if !path.is_dir() {
            models.push(path.clone());
            continue;
        }
        let mut relative = Vec::new();
        walk(path, Path::new(""), 0, &mut relative)?;
        let found = dictionaries_in_folder(&relative);
        if found.is_empty() {
            models.push(path.clone());
        } else {
            models.extend(found.into_iter().map(|d| path.join(d.folder)));
        }
    }
    Ok(models)
}

/// Folders below a path given to [`each_model`] that are looked into.
pub const MAX_WALK_DEPTH: usize = 4;
/// Files listed below a path given to [`each_model`] (a dictionary release has a few per layer).
pub const MAX_WALK_FILES: usize = 100_000;

/// The files below `root/at`, as paths relative to `root` with `/` between their parts.
fn walk(root: &Path, at: &Path, depth: usize, out: &mut Vec<String>) -> Result<(), ThreadsError> {
    let dir = root.join(at);
    let failed = |e: std::io::Error| ThreadsError::Open { path: dir.display().to_string(), message: e.to_string() };
    for entry in std::fs::read_dir(&dir).map_err(failed)? {
        let entry = entry.map_err(failed)?;
        let name = at.join(entry.file_name());
        let kind = entry.file_type().map_err(failed)?;
        if kind.is_dir() && depth < MAX_WALK_DEPTH {
            walk(root, &name, depth + 1, out)?;
        } else if kind.is_file() && out.len() < MAX_WALK_FILES {
            out.push(name.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// Each path its own model (`analyze --each`: a dictionary per layer, or any models side by side),
/// analysed one after another, each exactly as [`analyze_paths`] would alone; the first that fails
/// ends the run, named.
pub fn analyze_each(paths: &[PathBuf], request: &PassRequest) -> Result<Vec<Report>, ThreadsError> {
    paths
        .iter()
        .map(|path| {
            analyze_paths(std::slice::from_ref(path), request)
                .map_err(|e| ThreadsError::Each { path: path.display().to_string(), source: Box::new(e) })
        })
        .collect()
}

/// The pass on one thread with the GPU driving the Gram sums ([`crate::pass::analysis::Analysis`]
/// declines it where the CPU must run the pass, and the Report then says why).
#[cfg(feature = "gpu")]
fn on_gpu(files: &[PathBuf], request: &PassRequest, started: Instant) -> Result<Report, ThreadsError> {
    use crate::pass::gpu::block_on;
    let ctx = Rc::new(crate::pass::gpu::GpuContext::acquire(request.gpu).map_err(Error::Gpu)?);
    let options = crate::run::job::JobOptions { tensor_bytes_only: false, gpu: Some(Rc::clone(&ctx)) };
    let (mut job, _) = Job::open_with(open_files(files)?, request.tensor.as_deref(), request.config.clone(), options)?;
    while !job.step()? {
        block_on(job.embedding_mut().settle_gpu())?;
        if request.lose_gpu_after_rows.is_some_and(|rows| job.progress().rows_seen >= rows) {
            ctx.lose_device_for_test();
        }
    }
    block_on(job.finish_gpu())?;
    finish(job, request, started, threads_asked(request))
}

#[cfg(not(feature = "gpu"))]
fn on_gpu(_: &[PathBuf], _: &PassRequest, _: Instant) -> Result<Report, ThreadsError> {
    Err(Error::Gpu(crate::pass::gpu::GpuError::NoAdapter("this build has no GPU support".into())).into())
}

fn open_files(files: &[PathBuf]) -> Result<Vec<Rc<dyn ByteSource>>, ThreadsError> {
    let mut sources: Vec<Rc<dyn ByteSource>> = Vec::with_capacity(files.len());
    for f in files {
        sources.push(Rc::new(FileSource::open(f)?));
    }
    Ok(sources)
}

/// The report with its spectrum (the eigen step on `threads` threads, at most one per core: each
/// Lanczos step starts its threads afresh) and, when asked, the centred statistics.
fn finish(job: Job, request: &PassRequest, started: Instant, threads: usize) -> Result<Report, ThreadsError> {
    let threads = threads.min(std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut report = job.report_with_geometry_on(started.elapsed().as_secs_f64() * 1000.0, threads)?;
    if request.centred {
        report.centred = Some(centred(job.matrix())?);
    }
    Ok(report)
}

/// The pass shared by up to `request.threads` threads.
fn on_threads(files: &[PathBuf], request: &PassRequest, started: Instant) -> Result<Report, ThreadsError> {
    let open = || open_files(files);
    let config = request.config.clone();
    let (mut job, opened) = Job::open(open()?, request.tensor.as_deref(), config.clone())?;
    let requested = threads_asked(request);
    // By rows while whole accumulators fit the memory budget and d < 8192, else by columns
    // (`shares::split_for`), unless asked otherwise.
    let requested = u32::try_from(requested).unwrap_or(u32::MAX);
    let gram = job.embedding().route() == Route::Gram;
    let (of, columns) = choose_split(request.split, requested, job.embedding().accumulator_bytes(), gram, None);
    if columns {
        job.split_columns(of);
    } else {
        job.split(of);
    }
    let share_of = move |index| if columns { Share::columns(index, of) } else { Share::new(index, of) };
    // The histogram's sample once, its pairs on every thread, before the shares start: each share
    // then skips it (it took every share as long as ~0.6 s at d = 4096, all of them at once, in a
    // pass that 16 threads finish in ~1 s).
    let verdict = if of > 1 {
        job.finish_sample_with(|units, d, blocks| sample_dots(of as usize, units, d, blocks))?
    } else {
        None
    };
    // Sources are not Send: each pool thread opens the files itself, and reads a deflated member
    // through the checkpoints the lead's sample made (deflate has no index).
    let checkpoints = job.checkpoints().clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads((of as usize).saturating_sub(1).max(1))
        .build()
        .map_err(|e| ThreadsError::Pool { threads: of, message: e.to_string() })?;
    let partials = Mutex::new(Vec::new());
    let mut lead = None;
    pool.in_place_scope(|scope| {
        for index in 1..of {
            let (partials, chosen, config, open) = (&partials, &opened.chosen, config.clone(), &open);
            let checkpoints = &checkpoints;
            let verdict = verdict.as_ref();
            scope.spawn(move |_| {
                let partial = open().and_then(|sources| {
                    let share = share_of(index).ok_or(ThreadsError::Panicked)?;
                    let mut analysis = Job::open_share_sharing(sources, chosen, config, share, checkpoints)?;
                    if let Some(verdict) = verdict {
                        analysis.skip_sample(verdict);
                    }
                    Ok(analysis.run()?.into_partial())
                });
                if let Ok(mut all) = partials.lock() {
                    all.push(partial);
                }
            });
        }
        lead = Some(job.run());
    });
    let mut job = lead.ok_or(ThreadsError::Panicked)??;
    let partials = partials.into_inner().map_err(|_| ThreadsError::Panicked)?;
    if partials.len() + 1 != of as usize {
        return Err(ThreadsError::Panicked);
    }
    for partial in partials {
        job.embedding_mut().absorb(&partial?)?;
    }
    // The eigen step on every thread asked for, even where the memory budget ran fewer shares.
    finish(job, request, started, threads_asked(request))
}

/// `--threads`, or every core.
fn threads_asked(request: &PassRequest) -> usize {
    request.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1)
}

/// The dot products of the histogram's sample pairs (`Analysis::finish_sample_pairs_with`) on
/// `threads` threads, this one included: block i of `blocks` (rows i0..i1 of `units`, against
/// rows i0..n) on thread i mod `threads`, each by `sample_block_dots`, so every value is the one a
/// step computes. A thread that fails or cannot start leaves its blocks empty, which the caller
/// refuses (the lead then pairs the sample by steps).
fn sample_dots(threads: usize, units: &[f32], d: usize, blocks: &[std::ops::Range<usize>]) -> Vec<Vec<f32>> {
    let one = |rows: &std::ops::Range<usize>| sample_block_dots(units, d, rows);
    let threads = threads.clamp(1, blocks.len().max(1));
    let mut products = vec![Vec::new(); blocks.len()];
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads)
            .filter_map(|t| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || {
                        blocks
                            .iter()
                            .enumerate()
                            .skip(t)
                            .step_by(threads)
                            .map(|(i, rows)| (i, one(rows)))
                            .collect::<Vec<_>>()
                    })
                    .ok()
            })
            .collect();
        for (i, rows) in blocks.iter().enumerate().step_by(threads) {
            products[i] = one(rows);
        }
        for done in others.into_iter().filter_map(|h| h.join().ok()) {
            for (i, values) in done {
                products[i] = values;
            }
        }
    });
    products
}

/// Opens every file named, a directory standing for the regular files directly in it, and an
/// ONNX model's external data files beside it.
pub fn open_paths(paths: &[PathBuf]) -> Result<Vec<FileSource>, ThreadsError> {
    expand_paths(paths)?.iter().map(|f| Ok(FileSource::open(f)?)).collect()
}

/// The files named, a directory replaced by the regular files directly in it (sorted, not
/// recursive; symbolic links to files count, as in the Hugging Face cache; a Llama Scope folder's
/// `checkpoints/final.safetensors` too), plus the external data an `.onnx` names beside it.
fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ThreadsError> {
    let failed = |path: &Path, e: std::io::Error| ThreadsError::Open {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let mut inside = Vec::new();
        for entry in std::fs::read_dir(path).map_err(|e| failed(path, e))? {
            let entry = entry.map_err(|e| failed(path, e))?;
            if entry.path().is_file() {
                inside.push(entry.path());
            }
        }
        // Llama Scope keeps its weights one folder down, beside its hyperparams.json.
        let checkpoint = path.join("checkpoints").join("final.safetensors");
        if inside.iter().any(|f| f.file_name().is_some_and(|n| n == "hyperparams.json")) && checkpoint.is_file() {
            inside.push(checkpoint);
        }
        if inside.is_empty() {
            return Err(ThreadsError::EmptyDirectory { path: path.display().to_string() });
        }
        inside.sort();
        files.extend(inside);
    }
    with_onnx_external_data(&mut files);
    Ok(files)
}

/// Adds the external-data files an `.onnx` among `files` names, when they lie beside it: a
/// model given alone opens as its folder would. The reader has refused locations outside the
/// folder (`..`, absolute paths); a file that is not there is reported when the model is opened.
fn with_onnx_external_data(files: &mut Vec<PathBuf>) {
    let models: Vec<PathBuf> =
        files.iter().filter(|f| f.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"))).cloned().collect();
    for model in models {
        let Ok(source) = FileSource::open(&model) else { continue };
        // Any error here is the open's to report, with the files as given.
        let Ok(info) = crate::read::format::read_model(&source, 0) else { continue };
        let folder = model.parent().map(Path::to_path_buf).unwrap_or_default();
        for ext in &info.external {
            let path = folder.join(&ext.location);
            let same = |f: &PathBuf| f == &path || f.file_name() == path.file_name();
            if path.is_file() && !files.iter().any(same) {
                files.push(path);
            }
        }
    }
}
