//! A helper worker's loop: its share of the lead's pass, split by rows or by columns, then the
//! partial for the lead.

use super::analyze::Task;
use super::crash::{crash_if_asked, helper_pause_ms};
use super::pacer::{sleep_ms, Pacer};
use super::sources::open_sources;
use super::{post, post_partial, post_sample_dots, stop_early_asked, take_verdict};
use crate::pass::analysis::Phase;
use crate::pass::shares::Share;
use crate::run::job::Job;
use crate::worker::protocol::Response;

/// How often a helper looks for the lead's verdict on the sample (it comes tens of ms after the
/// helper's own blocks of the sample's pairs; a few ms late costs nothing).
const WAIT_VERDICT_MS: i32 = 2;

/// A helper worker: its share of the lead's pass, then the partial for the lead.
pub(super) async fn run_share(task: Task, tensor: String, share: Share) -> Result<(), String> {
    let Task { run, source, files, settings } = task;
    let opened = open_sources(&source, files).await?;
    let mut pacer = Pacer::new(run);
    if pacer.superseded() {
        return Ok(());
    }
    let mut ahead = opened.read_ahead();
    let mut analysis = Job::open_share(opened.sources, &tensor, settings.config(), share).map_err(|e| e.to_string())?;
    // The helper reads the histogram's sample and computes its blocks of the sample's pairs for
    // the lead (`pair_sample_with_helpers`), which sends what they decided: the share's pass starts
    // with that. Stopped before it comes, the share ends with nothing summed.
    while analysis.phase() == Phase::Sample {
        ahead.before_step(analysis.step_reads(), |n| (analysis.file(), analysis.upcoming_reads(n))).await;
        if pacer.superseded() {
            return Ok(());
        }
        analysis.step().map_err(|e| e.to_string())?;
        if stop_early_asked() {
            post_partial(run, Response::Partial, analysis.into_partial());
            return Ok(());
        }
        pacer.pause().await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    let blocks = analysis.sample_pair_blocks();
    let mut mine = Vec::new();
    let mut values = Vec::new();
    for (k, rows) in blocks.iter().enumerate().filter(|(k, _)| share.pairs_sample_block(*k)) {
        mine.push(k as u32);
        values.push(analysis.sample_pair_dots(rows));
        pacer.pause().await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    if !mine.is_empty() {
        post_sample_dots(run, mine, &values);
    }
    drop(values);
    loop {
        if let Some(verdict) = take_verdict(run) {
            analysis.skip_sample(&verdict);
            break;
        }
        if stop_early_asked() {
            post_partial(run, Response::Partial, analysis.into_partial());
            return Ok(());
        }
        sleep_ms(WAIT_VERDICT_MS).await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    while analysis.phase() != Phase::Done {
        ahead.before_step(analysis.step_reads(), |n| (analysis.file(), analysis.upcoming_reads(n))).await;
        if pacer.superseded() {
            return Ok(());
        }
        analysis.step().map_err(|e| e.to_string())?;
        if let Some((step, frobenius)) = analysis.band_part() {
            post(run, Response::BandPart { step, frobenius });
        }
        if let Some(ms) = helper_pause_ms(settings.crash) {
            sleep_ms(ms).await;
            if pacer.superseded() {
                return Ok(());
            }
        }
        if stop_early_asked() {
            break;
        }
        if pacer.progress_due(false) {
            // The page shows the lead's running ε, not a helper's: no pass over G for it.
            let progress = analysis.progress_without_estimate();
            crash_if_asked(settings.crash, progress.rows_seen);
            post(run, Response::Progress(progress));
        }
        pacer.pause().await;
        if pacer.superseded() {
            return Ok(());
        }
    }
    post(run, Response::Progress(analysis.progress_without_estimate()));
    post_partial(run, Response::Partial, analysis.into_partial());
    Ok(())
}
