//! The running estimate of a pass stopped early, on a matrix whose related rows sit next to each
//! other (as in real vocabularies): whole 64-row blocks are read, and the within/between-block
//! stratification must keep the estimate centred on the exact ε (`src/pass/analysis/`).

use orthoscope::fixtures::synth::{safetensors_bytes, trained_like, TensorSpec};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin};
use orthoscope::read::format::{read_model, DType};
use orthoscope::read::locate::choose;
use orthoscope::read::source::SliceSource;
use orthoscope::result::report::Report;
use orthoscope::run::report::ToReport;

fn run(file: &[u8], config: AnalysisConfig) -> Report {
    let source = SliceSource::new("m.safetensors", file.to_vec());
    let model = read_model(&source, 0).unwrap();
    let (t, why) = choose(&model, None, "m").unwrap();
    let origin = Origin { tensor_reason: why, ..Origin::default() };
    Analysis::new(Box::new(source), t, origin, config).unwrap().run().unwrap().report(0.0).unwrap()
}

#[test]
fn estimate_from_a_block_prefix_is_centred_on_the_exact_epsilon_despite_related_neighbours() {
    let (rows, dim) = (8000, 128);
    let values = trained_like(rows, dim, 17);
    let file = safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::F32, rows, dim, &values)]);
    let exact = run(&file, AnalysisConfig::default());
    assert!(exact.exact);
    let seeds = 20;
    let (mut covered, mut mean_error) = (0, 0.0);
    let mut lines = Vec::new();
    for seed in 0..seeds {
        let r = run(&file, AnalysisConfig { seed, stop_after_rows: Some(2000), ..AnalysisConfig::default() });
        let [lo, hi] = r.epsilon_ci.expect("an estimate carries its interval");
        covered += (lo <= exact.epsilon && exact.epsilon <= hi) as u32;
        mean_error += (r.epsilon - exact.epsilon) / seeds as f64;
        lines.push(format!("seed {seed:>2}: {:.5} [{lo:.5}, {hi:.5}]", r.epsilon));
    }
    let report = format!("exact ε {:.5}\n{}", exact.epsilon, lines.join("\n"));
    assert!(covered >= 16, "95 % interval covered the exact ε only {covered}/{seeds} times\n{report}");
    // Unstratified all-pairs statistics of the same prefixes sit ~10 % high (related neighbours).
    assert!(mean_error.abs() < 0.01 * exact.epsilon, "mean error {mean_error:.2e}\n{report}");
}

/// Between two running estimates the worker reposts the last one (`Job::progress_reusing`): the
/// fraction moves, the ε, its error and the rows it is labelled with stay those it was computed
/// from; a progress without an estimate (a helper's) carries none; and a new estimate is the one
/// a fresh progress gives.
#[test]
fn a_reposted_estimate_keeps_the_rows_it_was_computed_from() {
    use orthoscope::read::source::ByteSource;
    use orthoscope::run::job::Job;
    use std::rc::Rc;
    let (rows, dim) = (6000, 64);
    let values = trained_like(rows, dim, 4);
    let file = safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::F32, rows, dim, &values)]);
    let bytes = file;
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", bytes.clone()));
    let (mut job, _) = Job::open(vec![source], None, AnalysisConfig::default()).unwrap();
    while !job.embedding().has_estimate() {
        job.step().unwrap();
    }
    for _ in 0..10 {
        job.step().unwrap();
    }
    let last = job.progress();
    let eps = last.epsilon.expect("a running ε");
    assert!(last.epsilon_se.is_some());
    // A helper's progress: its rows, no ε.
    let helper_source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", bytes.clone()));
    let share = orthoscope::pass::shares::Share::new(1, 2).unwrap();
    let mut helper =
        Job::open_share(vec![helper_source], "model.embed_tokens.weight", AnalysisConfig::default(), share).unwrap();
    while !helper.has_estimate() {
        helper.step().unwrap();
    }
    let quiet = helper.progress_without_estimate();
    assert!(helper.progress().epsilon.is_some() && quiet.epsilon.is_none() && quiet.epsilon_se.is_none());
    assert_eq!(quiet.rows_seen, helper.progress().rows_seen);
    for _ in 0..20 {
        job.step().unwrap();
    }
    let reposted = job.progress_reusing(&last);
    let fresh = job.progress();
    assert!(fresh.rows_seen > last.rows_seen && fresh.fraction > last.fraction);
    assert_eq!(
        (reposted.epsilon, reposted.epsilon_se, reposted.rows_seen),
        (Some(eps), last.epsilon_se, last.rows_seen)
    );
    assert_eq!(reposted.fraction, fresh.fraction, "the bar moves");
    assert_ne!(fresh.epsilon, Some(eps), "a new estimate is computed from the rows since");
}
