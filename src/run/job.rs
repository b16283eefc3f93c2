//! One job as a user asks for it: a set of files → the chosen tensor's analysis, then (when the
//! model has a separate one) the unembedding's, and whether the two are tied. Shared by the CLI and
//! the browser worker so both print the same [`Report`].
//!
//! The unembedding is not what the paper measures (`docs/method.md` §1, §6 Fig. 9/10); it is
//! estimated from a uniform sample of [`UNEMBEDDING_ROWS`] rows (exact when the matrix is smaller)
//! so that it never doubles the time of the job, and its interval is reported.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::explain::geometry::{self, GeometryTiming};
use crate::pass::accumulate::rows_within;
use crate::pass::analysis::{
    planned_accumulator_bytes, Analysis, AnalysisConfig, Origin, Phase, Progress, SampleVerdict,
};
use crate::pass::error::Error;
use crate::pass::gpu::GpuContext;
use crate::pass::kernel::MAX_CHUNK_ROWS;
use crate::pass::shares::Share;
use crate::read::dictionary::{dead_latents, Dictionary, NEVER_FIRED_LOG10, SPARSITY_TENSOR};
use crate::read::format::set::{read_model_set, ModelSet};
use crate::read::format::{ModelInfo, TensorInfo};
use crate::read::inflate::SharedCheckpoints;
use crate::read::layout::tensor_source_sharing;
use crate::read::locate::{choose_in_set, locate, role_by_name, role_of_choice, LocateError, Located, TensorRole};
use crate::read::matrix::Matrix;
use crate::read::source::ByteSource;
use crate::read::untrained::{SetAside, UntrainedRule};
use crate::result::report::{DictionaryReport, Report, UnembeddingReport};
use crate::run::error::ReportError;
use crate::run::report::ToReport;
use crate::run::trained::{suspected_rows, trained_report};

/// Rows sampled from the unembedding.
pub const UNEMBEDDING_ROWS: u64 = 8192;
/// Rows compared byte for byte to decide whether a separate unembedding equals the embedding.
pub const TIED_CHECK_ROWS: u64 = 64;

/// What the job found in the files, before any arithmetic (for the tensor picker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Opened {
    pub files: Vec<String>,
    pub format: String,
    pub tensors: Vec<TensorInfo>,
    /// Indices of the 2-D floating-point tensors a user may pick.
    pub candidates: Vec<usize>,
    /// What each candidate is, by its name (parallel to `candidates`): the picker labels the
    /// output matrix and other tensors as not the paper's ε.
    pub roles: Vec<TensorRole>,
    pub chosen: String,
    pub reason: String,
    pub unembedding: Option<String>,
    /// Shards the index names that were not given, and given files the index does not name.
    pub missing: Vec<String>,
    pub ignored: Vec<String>,
}

/// What a job may read besides the chosen tensor's rows, and where its pass may run.
#[derive(Clone, Default)]
pub struct JobOptions {
    /// Read the headers and the chosen tensor's rows only: no sampled unembedding pass and no
    /// byte comparison for the tied check. For models opened by URL, where every byte read is
    /// downloaded and the user asked for the embedding alone.
    pub tensor_bytes_only: bool,
    /// A GPU for the embedding's Gram pass ([`Analysis::set_gpu`]): the caller then awaits
    /// [`Analysis::settle_gpu`] after each step and [`Analysis::refresh_gpu_estimate`] before a
    /// progress message (through [`Job::embedding_mut`]) and [`Job::finish_gpu`] before the report,
    /// and reruns the job on the CPU if any of them (or a step) ends in [`Error::Gpu`].
    pub gpu: Option<Rc<GpuContext>>,
}

impl std::fmt::Debug for JobOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobOptions")
            .field("tensor_bytes_only", &self.tensor_bytes_only)
            .field("gpu", &self.gpu.as_ref().map(|g| g.info()))
            .finish()
    }
}

/// Whether the unembedding is the embedding.
#[derive(Clone, Debug, PartialEq)]
struct Tied {
    tied: Option<bool>,
    evidence: String,
}

pub struct Job {
    embedding: Analysis,
    unembedding: Option<Analysis>,
    tied: Tied,
    stopped: bool,
    /// The embedding and the vocabulary, for requests after the result (neighbours, centred pass).
    matrix: Matrix,
    /// The separate unembedding, when its rows may be read (per-token cosines, paper Fig. 9).
    unembedding_matrix: Option<Matrix>,
    /// The model's name from its config.json, for `Report::model`.
    name: Option<String>,
    /// The checkpoints of every deflated member the job reads, shared by all its sources of that
    /// member and by the shares of a pass split over threads ([`Job::open_share_sharing`]).
    checkpoints: SharedCheckpoints,
    /// The sparse-autoencoder dictionary whose decoder is analysed, for `Report::dictionary`.
    dictionary: Option<Dictionary>,
}

impl Opened {
    fn new(set: &ModelSet, model: &ModelInfo, located: &Located, chosen: &str, reason: &str) -> Opened {
        let unembedding = located.unembedding.and_then(|i| model.tensors.get(i)).filter(|u| u.name != chosen);
        Opened {
            files: set.files.clone(),
            format: set.format.clone(),
            tensors: model.tensors.clone(),
            candidates: located.candidates.clone(),
            roles: located
                .candidates
                .iter()
                .map(|&i| match model.tensors.get(i) {
                    _ if located.embedding == Some(i) && model.dictionary.is_some() => TensorRole::SaeDecoder,
                    _ if located.embedding == Some(i) => TensorRole::InputEmbedding,
                    Some(t) => role_by_name(&t.name),
                    None => TensorRole::Other,
                })
                .collect(),
            chosen: chosen.to_string(),
            reason: reason.to_string(),
            unembedding: unembedding.map(|u| u.name.clone()),
            missing: set.missing.clone(),
            ignored: set.ignored.clone(),
        }
    }

    /// The files' tensors for the picker when nothing was chosen ([`LocateError::NoInputEmbedding`]):
    /// `chosen` is empty and `reason` says why.
    pub fn survey(sources: &[Rc<dyn ByteSource>]) -> Result<Opened, Error> {
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s.as_ref()).collect();
        let set = read_model_set(&refs)?;
        let model = set.model_info();
        let located = locate(&model);
        Ok(Opened::new(&set, &model, &located, "", &located.reason))
    }
}

impl Job {
    /// Reads the headers of `sources`, chooses the tensor (`tensor`, or the located embedding) and
    /// prepares its analysis. No tensor data is read yet, except a few rows for the tied check.
    pub fn open(
        sources: Vec<Rc<dyn ByteSource>>,
        tensor: Option<&str>,
        config: AnalysisConfig,
    ) -> Result<(Job, Opened), Error> {
        Self::open_with(sources, tensor, config, JobOptions::default())
    }

    /// [`Job::open`] with [`JobOptions`].
    pub fn open_with(
        sources: Vec<Rc<dyn ByteSource>>,
        tensor: Option<&str>,
        config: AnalysisConfig,
        options: JobOptions,
    ) -> Result<(Job, Opened), Error> {
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s.as_ref()).collect();
        let set = read_model_set(&refs)?;
        let (info, reason) = choose_in_set(&set, tensor)?;
        let model = set.model_info();
        let located = locate(&model);
        let unembedding_info =
            located.unembedding.and_then(|i| model.tensors.get(i)).filter(|u| u.name != info.name).cloned();
        let checkpoints = SharedCheckpoints::default();
        let source_of = |t: &TensorInfo| -> Result<Rc<dyn ByteSource>, Error> {
            if sources.get(t.file).is_none() {
                return Err(Error::from(LocateError::TensorNotFound { name: t.name.clone(), file: set.describe() }));
            }
            Ok(tensor_source_sharing(&sources, t, &checkpoints)?)
        };
        let origin = |t: &TensorInfo, reason: &str, tensor_role: TensorRole| Origin {
            file: set.files.get(t.file).cloned().unwrap_or_default(),
            format: set.format.clone(),
            tensor_reason: reason.to_string(),
            tensor_role,
        };
        let role = role_of_choice(&model, &info.name);
        let opened = Opened::new(&set, &model, &located, &info.name, &reason);
        // The shape checks come first: nothing below reads or allocates for a tensor they refuse.
        let mut embedding =
            Analysis::new(Box::new(source_of(&info)?), info.clone(), origin(&info, &reason, role), config.clone())?;
        if let Some(gpu) = options.gpu.clone() {
            embedding.set_gpu(gpu);
        }
        let vocab = if model.vocab.is_empty() {
            crate::read::vocab::from_sources(&sources, &set.files)
        } else {
            model.vocab.clone()
        };
        // Rows never trained are named by the vocabulary, which only a token matrix has.
        let token_matrix = |role: TensorRole| matches!(role, TensorRole::InputEmbedding | TensorRole::OutputMatrix);
        let set_aside =
            |t: &TensorInfo| Rc::new(SetAside::find(t.matrix().map_or(0, |m| m.0), &vocab, model.vocab_size));
        if token_matrix(role) {
            embedding.set_aside(set_aside(&info));
        }
        let dictionary = set.dictionary.clone().filter(|d| role == TensorRole::SaeDecoder && d.decoder == info.name);
        if let Some(d) = &dictionary {
            // Latents that never fired (SAELens's sparsity file dropped alongside) are set aside
            // exactly, as a token matrix's untrained rows are (docs/method.md §10).
            if let Some(sparsity) = set.tensors.iter().find(|t| t.name == SPARSITY_TENSOR) {
                let below = config.dead_below_log10.unwrap_or(NEVER_FIRED_LOG10);
                let dead = dead_latents(source_of(sparsity)?.as_ref(), sparsity, d.d_sae, below)?;
                let rows = info.matrix().map_or(0, |m| m.0);
                let set = SetAside { rows, rules: Vec::new() }.with_rule(UntrainedRule::DeadLatent, dead);
                embedding.set_aside(Rc::new(set));
            }
        }
        let unembedding_set = unembedding_info.as_ref().map(set_aside);
        let matrix = Matrix::new(source_of(&info)?, info.clone(), Rc::new(vocab));
        let tied = match &set.dictionary {
            Some(_) => Tied { tied: None, evidence: "a sparse autoencoder's dictionary has no output matrix".into() },
            None => {
                tied_check(&sources, &set, &info, unembedding_info.as_ref(), !options.tensor_bytes_only, &checkpoints)
            }
        };
        // A broken unembedding must not cost the user the embedding's result: it is left out.
        let unembedding_matrix = match &unembedding_info {
            Some(u) if !options.tensor_bytes_only => {
                source_of(u).ok().map(|s| Matrix::new(s, u.clone(), matrix.vocab.clone()))
            }
            _ => None,
        };
        let unembedding = match &unembedding_info {
            Some(_) if options.tensor_bytes_only => None,
            Some(u) => {
                let config = unembedding_config(u, &config, embedding.accumulator_bytes());
                source_of(u).ok().zip(config).and_then(|(s, config)| {
                    let mut a = Analysis::new(
                        Box::new(s),
                        u.clone(),
                        origin(u, "unembedding", TensorRole::OutputMatrix),
                        config,
                    )
                    .ok()?;
                    if let Some(set) = unembedding_set {
                        a.set_aside(set);
                    }
                    Some(a)
                })
            }
            None => None,
        };
        let name = set.name.clone();
        let job = Job {
            embedding,
            unembedding,
            tied,
            stopped: false,
            matrix,
            unembedding_matrix,
            name,
            checkpoints,
            dictionary,
        };
        Ok((job, opened))
    }

    /// A helper's part of a pass split over workers (`pass`): the tensor `tensor` of `sources`
    /// (the name the lead's [`Opened::chosen`] gave), `share` of its pass and nothing else. Its
    /// [`Analysis::into_partial`] goes to the lead's [`Analysis::absorb`] ([`Job::embedding_mut`]).
    pub fn open_share(
        sources: Vec<Rc<dyn ByteSource>>,
        tensor: &str,
        config: AnalysisConfig,
        share: Share,
    ) -> Result<Analysis, Error> {
        Self::open_share_sharing(sources, tensor, config, share, &SharedCheckpoints::default())
    }

    /// [`Job::open_share`] on a thread of the lead's process: a deflated member's rows are read
    /// through the lead's checkpoints ([`Job::checkpoints`]), made as the histogram's sample
    /// inflated its way to its far rows, so the share never inflates the member from its start.
    pub fn open_share_sharing(
        sources: Vec<Rc<dyn ByteSource>>,
        tensor: &str,
        config: AnalysisConfig,
        share: Share,
        checkpoints: &SharedCheckpoints,
    ) -> Result<Analysis, Error> {
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s.as_ref()).collect();
        let set = read_model_set(&refs)?;
        let (info, reason) = choose_in_set(&set, Some(tensor))?;
        if sources.get(info.file).is_none() {
            return Err(Error::from(LocateError::TensorNotFound { name: info.name.clone(), file: set.describe() }));
        }
        let source = tensor_source_sharing(&sources, &info, checkpoints)?;
        let tensor_role = role_of_choice(&set.model_info(), &info.name);
        let origin = Origin { file: String::new(), format: set.format.clone(), tensor_reason: reason, tensor_role };
        let mut analysis = Analysis::new(Box::new(source), info, origin, config)?;
        analysis.set_share(share);
        Ok(analysis)
    }

    /// Splits the embedding's pass over `of` workers: this job (the lead) keeps share 0 and the
    /// histogram's sample; the others run [`Job::open_share`]. Call before the pass's first step.
    pub fn split(&mut self, of: u32) {
        if let Some(share) = Share::new(0, of) {
            self.embedding.set_share(share);
        }
    }

    /// Splits the embedding's pass by columns over `of` workers (`pass::shares::split_for`): this
    /// job keeps band 0, the sample and the within-block pairs; the others run
    /// [`Job::open_share`] with `Share::columns(i, of)`. Call before the pass's first step.
    pub fn split_columns(&mut self, of: u32) {
        if let Some(share) = Share::columns(0, of) {
            self.embedding.set_share(share);
        }
    }

    /// The checkpoints of the deflated members the job reads (none for other layouts), for the
    /// shares of its pass on other threads ([`Job::open_share_sharing`]), and what inflating cost.
    pub fn checkpoints(&self) -> &SharedCheckpoints {
        &self.checkpoints
    }

    /// One bounded piece of work; true when the job is finished.
    pub fn step(&mut self) -> Result<bool, Error> {
        if self.stopped {
            return Ok(true);
        }
        if self.embedding.phase() != Phase::Done {
            self.embedding.step()?;
            return Ok(self.embedding.phase() == Phase::Done && self.unembedding.is_none());
        }
        match self.unembedding.as_mut() {
            Some(u) if u.phase() != Phase::Done => {
                // An unreadable unembedding ends its part of the job, not the job.
                if u.step().is_err() {
                    self.unembedding = None;
                    return Ok(true);
                }
                Ok(u.phase() == Phase::Done)
            }
            _ => Ok(true),
        }
    }

    /// What the next steps will read, at most `n` ranges: the file's index and its byte ranges in
    /// reading order ([`Analysis::upcoming_reads`]), the embedding's until its pass is done, then
    /// the unembedding's. A worker reads them ahead of the steps.
    pub fn upcoming_reads(&self, n: usize) -> (usize, Vec<(u64, u64)>) {
        let analysis = self.reading();
        if self.stopped {
            return (analysis.file(), Vec::new());
        }
        (analysis.file(), analysis.upcoming_reads(n))
    }

    /// How many of [`Job::upcoming_reads`] the next step takes ([`Analysis::step_reads`]).
    pub fn step_reads(&self) -> usize {
        self.reading().step_reads()
    }

    /// The analysis the next step reads for: the embedding's until its pass is done, then the
    /// unembedding's.
    fn reading(&self) -> &Analysis {
        match &self.unembedding {
            Some(u) if self.embedding.phase() == Phase::Done => u,
            _ => &self.embedding,
        }
    }

    /// Ends the job where it stands: the report then carries estimates with their intervals.
    /// False, and nothing changes, when it cannot stop yet: the lead of a pass split by columns
    /// before its bands' first common checkpoint ([`Analysis::stop_at_checkpoint`]) steps on.
    pub fn stop(&mut self) -> bool {
        if self.embedding.phase() != Phase::Done && !self.embedding.stop_at_checkpoint() {
            return false;
        }
        self.stopped = true;
        true
    }

    /// *Stop here* while the lead of a pass split by columns, its own band done, waits for slower
    /// bands: true when it stopped at their last common checkpoint ([`Analysis::stop_at_checkpoint`];
    /// the helpers' partials are then not taken in); false, nothing changed, before there is one
    /// or where the pass is not so split.
    pub fn stop_while_waiting(&mut self) -> bool {
        if self.embedding.stop_at_checkpoint() && self.embedding.stopped_at_estimate() {
            self.stopped = true;
            return true;
        }
        false
    }

    /// Runs to the end (CLI, tests). Natively a GPU pass is waited for on this thread; in a
    /// browser the caller awaits [`Analysis::settle_gpu`] and [`Job::finish_gpu`] instead.
    pub fn run(mut self) -> Result<Self, Error> {
        while !self.step()? {
            #[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
            crate::pass::gpu::block_on(self.embedding.settle_gpu())?;
        }
        #[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
        crate::pass::gpu::block_on(self.finish_gpu())?;
        Ok(self)
    }

    /// [`Analysis::finish_gpu`] of the embedding, except after *Stop here* ([`Job::stop`]), when
    /// the estimate on screen is the result at once: await once `step` says done or after
    /// [`Job::stop`], before [`Job::report`] (nothing on the CPU).
    pub async fn finish_gpu(&mut self) -> Result<(), Error> {
        // Stopped (*Stop here*): the estimate on screen is the result, at once.
        if self.stopped && self.embedding.stop_gpu_at_estimate() {
            return Ok(());
        }
        self.embedding.finish_gpu().await
    }

    /// Reads the histogram's sample of the embedding and takes in its pairs, their dot products
    /// computed by `dots_of` (natively on every core: [`Analysis::finish_sample_pairs_with`]), and
    /// returns what the sample decided, for the shares of a split pass ([`Analysis::skip_sample`]).
    /// Call before the first step. Should `dots_of` fail, the pairs are taken by steps instead.
    pub fn finish_sample_with(
        &mut self,
        dots_of: impl FnOnce(&[f32], usize, &[std::ops::Range<usize>]) -> Vec<Vec<f32>>,
    ) -> Result<Option<SampleVerdict>, Error> {
        while self.embedding.phase() == Phase::Sample {
            self.embedding.step()?;
        }
        self.embedding.finish_sample_pairs_with(dots_of)?;
        while self.embedding.phase() == Phase::SamplePairs {
            self.embedding.step()?;
        }
        Ok(self.embedding.sample_verdict().cloned())
    }

    /// Progress of the whole job: the unembedding's sample counts as a small last stretch.
    pub fn progress(&self) -> Progress {
        self.progress_with(true)
    }

    /// [`Job::progress`] carrying `last`'s running ε (and the rows it is over) instead of a new
    /// one, while the pass is in the phase `last` was: the ε costs a pass over G (d²/2 values,
    /// ~0.6 s at d = 16384), so the worker computes it only as often as that stays a small part
    /// of the time, and the rows it is labelled with stay the rows it was computed from.
    pub fn progress_reusing(&self, last: &Progress) -> Progress {
        let mut p = self.progress_with(false);
        if p.phase == last.phase && last.epsilon.is_some() {
            p.epsilon = last.epsilon;
            p.epsilon_se = last.epsilon_se;
            p.rows_seen = last.rows_seen;
        }
        p
    }

    fn progress_with(&self, estimate: bool) -> Progress {
        let mut p = if estimate { self.embedding.progress() } else { self.embedding.progress_without_estimate() };
        if let Some(u) = self.unembedding.as_ref() {
            if self.embedding.phase() == Phase::Done {
                let q = u.progress();
                p.fraction = 0.9 + 0.1 * q.fraction;
                p.phase = q.phase;
            } else {
                p.fraction *= 0.9;
            }
        }
        p
    }

    /// The chosen tensor's analysis (the paper's ε), asked directly for what the job adds nothing
    /// to: where the pass runs and how it is split, the sample's verdict and pairs, the running ε,
    /// the geometry. The job's own methods are for what it adds: the unembedding's pass after it
    /// ([`Job::step`], [`Job::progress`], [`Job::upcoming_reads`]), *Stop here* ([`Job::stop`],
    /// [`Job::finish_gpu`]) and the Report's other parts ([`Job::report`]).
    pub fn embedding(&self) -> &Analysis {
        &self.embedding
    }

    /// [`Job::embedding`] to drive: the GPU offered and awaited, a helper's sample pairs, bands and
    /// partials taken in by the lead of a split pass. Stepping it here bypasses the job's
    /// unembedding and *Stop here*: steps go through [`Job::step`].
    pub fn embedding_mut(&mut self) -> &mut Analysis {
        &mut self.embedding
    }

    /// The embedding matrix and its vocabulary, for the tail explorer and the centred pass.
    pub fn matrix(&self) -> &Matrix {
        &self.matrix
    }

    /// [`Job::report`] with the geometry filled in: for callers that can wait for the eigen step.
    pub fn report_with_geometry(&self, timing_ms: f64) -> Result<Report, ReportError> {
        self.report_with_geometry_on(timing_ms, 1)
    }

    /// [`Job::report_with_geometry`] with the eigen step on up to `threads` threads (natively).
    pub fn report_with_geometry_on(&self, timing_ms: f64, threads: usize) -> Result<Report, ReportError> {
        let mut report = self.report(timing_ms)?;
        report.geometry = geometry::of_analysis(&self.embedding, GeometryTiming::WithTheResult, threads)?;
        Ok(report)
    }

    pub fn report(&self, timing_ms: f64) -> Result<Report, Error> {
        let mut report = self.embedding.report(timing_ms)?;
        // The rows never trained are a second number beside the paper's: rows that cannot be
        // read again cost the user that number, not the result.
        // The suspected rule reads every row once more: after an exact pass only, as the
        // alignment below (an early stop means the user wanted an answer now).
        let exact = self.embedding.is_exact();
        let untied = self.tied.tied == Some(false);
        let suspected = if exact { suspected_rows(&self.embedding, &self.matrix, true, untied) } else { None };
        report.trained = trained_report(&self.embedding, &self.matrix, suspected).ok().flatten();
        report.unembedding = self.unembedding.as_ref().and_then(|u| {
            let mut r = u.report(0.0).ok()?;
            r.trained = match self.unembedding_matrix.as_ref() {
                Some(m) => {
                    // The output matrix's pass is a sample: its principal direction comes from rows read.
                    let suspected = if exact { suspected_rows(u, m, u.is_exact(), false) } else { None };
                    trained_report(u, m, suspected).ok().flatten()
                }
                None => None,
            };
            Some(UnembeddingReport::from_report(&r))
        });
        // Per-token cosines of the two matrices (paper Fig. 9): one O(V·d) read of both, after an
        // exact pass only (an early stop means the user wanted an answer now).
        if let (Some(u), Some(w), true) = (report.unembedding.as_mut(), self.unembedding_matrix.as_ref(), report.exact)
        {
            u.alignment = crate::explain::alignment::token_alignment(&self.matrix, w).ok();
        }
        let name = |p: &mut crate::pass::stats::TopPair| {
            p.a_token = self.matrix.token(p.a);
            p.b_token = self.matrix.token(p.b);
        };
        report.top_pairs.iter_mut().chain(report.antipodal_pairs.iter_mut()).for_each(name);
        if let Some(t) = report.trained.as_mut() {
            t.without.top_pairs.iter_mut().chain(t.without.antipodal_pairs.iter_mut()).for_each(name);
            t.variants
                .iter_mut()
                .flat_map(|v| v.top_pairs.iter_mut().chain(v.antipodal_pairs.iter_mut()))
                .for_each(name);
        }
        report.tied = self.tied.tied;
        report.model.clone_from(&self.name);
        report.dictionary = self.dictionary.clone().map(|d| DictionaryReport::new(d, &report));
        report.tied_evidence = self.tied.evidence.clone();
        Ok(report)
    }
}

/// The unembedding's sample: [`UNEMBEDDING_ROWS`] rows, fewer when their accumulator would hold
/// more than the embedding's `budget` bytes (the unembedding pass never needs more memory
/// than the embedding pass), none when not even two rows fit.
fn unembedding_config(u: &TensorInfo, config: &AnalysisConfig, budget: u64) -> Option<AnalysisConfig> {
    let sampled = AnalysisConfig { stop_after_rows: Some(UNEMBEDDING_ROWS), ..config.clone() };
    if planned_accumulator_bytes(u, &sampled)? <= budget {
        return Some(sampled);
    }
    let (_, dim) = u.matrix()?;
    // Whole blocks: the pass rounds its row target up to one.
    let block = config.block_rows.clamp(1, MAX_CHUNK_ROWS as u64);
    let rows = rows_within(budget, dim as usize) / block * block;
    let fewer = AnalysisConfig { stop_after_rows: Some(rows), ..config.clone() };
    (rows >= 2 && planned_accumulator_bytes(u, &fewer)? <= budget).then_some(fewer)
}

/// Rows of a tensor compared per read in the tied check: the check's memory stays at two such
/// buffers however wide a header says the rows are.
const TIED_CHECK_CHUNK_BYTES: u64 = 1 << 16;

/// Decides whether input and output embeddings are tied: no separate output tensor, or a separate
/// one whose bytes equal the embedding's on [`TIED_CHECK_ROWS`] rows spread over the matrix. Without
/// `compare_bytes`, only what the headers decide is said.
fn tied_check(
    sources: &[Rc<dyn ByteSource>],
    set: &ModelSet,
    embedding: &TensorInfo,
    unembedding: Option<&TensorInfo>,
    compare_bytes: bool,
    checkpoints: &SharedCheckpoints,
) -> Tied {
    let Some(u) = unembedding else {
        let missing = ["lm_head.weight", "output.weight"].iter().find_map(|n| set.missing_shard_for(n));
        return match missing {
            Some(shard) => {
                Tied { tied: None, evidence: format!("unknown: the output matrix is in {shard}, which was not given") }
            }
            None => Tied {
                tied: Some(true),
                evidence: "no separate output matrix: the input embedding doubles as the unembedding".into(),
            },
        };
    };
    if u.shape != embedding.shape || u.dtype != embedding.dtype {
        return Tied { tied: Some(false), evidence: format!("separate {} of shape {:?} {}", u.name, u.shape, u.dtype) };
    }
    if !compare_bytes {
        return Tied {
            tied: None,
            evidence: format!(
                "unknown: a separate {} of the same shape; its rows were not compared, to save downloading them",
                u.name
            ),
        };
    }
    // Byte for byte in the views' coordinates (an inflated member, assembled quantised rows).
    let (Some((rows, _)), Ok(es), Ok(us)) = (
        embedding.matrix(),
        tensor_source_sharing(sources, embedding, checkpoints),
        tensor_source_sharing(sources, u, checkpoints),
    ) else {
        return Tied { tied: None, evidence: "unknown".into() };
    };
    let row_bytes = (embedding.byte_range.1 - embedding.byte_range.0).checked_div(rows).unwrap_or(0);
    let checks = TIED_CHECK_ROWS.min(rows);
    let chunk = row_bytes.min(TIED_CHECK_CHUNK_BYTES) as usize;
    let (mut a, mut b) = (vec![0u8; chunk], vec![0u8; chunk]);
    for i in 0..checks {
        let r = i * rows / checks.max(1);
        let mut at = 0u64;
        while at < row_bytes {
            let n = (row_bytes - at).min(chunk as u64) as usize;
            let (a, b) = (&mut a[..n], &mut b[..n]);
            let ok = es.read_at(embedding.byte_range.0 + r * row_bytes + at, a).is_ok()
                && us.read_at(u.byte_range.0 + r * row_bytes + at, b).is_ok();
            if !ok {
                return Tied { tied: None, evidence: "unknown: rows could not be read".into() };
            }
            if a != b {
                return Tied {
                    tied: Some(false),
                    evidence: format!("separate {} with different values (row {r} differs)", u.name),
                };
            }
            at += n as u64;
        }
    }
    Tied { tied: Some(true), evidence: format!("separate {} with equal values on the {checks} rows compared", u.name) }
}
