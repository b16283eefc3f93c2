//! What a result carries when it leaves the page: the histogram as CSV (one line per bin, both
//! ranges) and the file names of every export (the model's file name and the tensor).

use orthoscope::fixtures::setup::{analysis_of, embedding_file};
use orthoscope::fixtures::synth::trained_like;
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::DType;
use orthoscope::read::source::SliceSource;
use orthoscope::result::report::{export_stem, histogram_csv, Report};
use orthoscope::run::report::ToReport;

fn report_of(file: &str, rows: usize, dim: usize) -> Report {
    let values = trained_like(rows, dim, 3);
    let source = SliceSource::new(file, embedding_file(&values, dim, DType::F32));
    let analysis = analysis_of(Box::new(source), AnalysisConfig::default()).expect("analysis set up");
    analysis.run().expect("analysis runs").report(0.0).expect("report")
}

#[test]
fn histogram_csv_has_one_line_per_bin_of_both_ranges_and_its_counts_add_up() {
    let r = report_of("Llama-2-7b.safetensors", 600, 48);
    let csv = histogram_csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "histogram,bin_lo,bin_hi,count,percent_of_pairs");
    assert_eq!(lines.len(), 1 + r.histogram.counts.len() + r.histogram_zoom.counts.len());
    let full: u64 = lines
        .iter()
        .filter(|l| l.starts_with("full,"))
        .map(|l| l.split(',').nth(3).expect("count column").parse::<u64>().expect("integer count"))
        .sum();
    assert_eq!(full, r.histogram.counts.iter().sum::<u64>());
    assert_eq!(full, r.histogram.pairs_in_histogram, "the full range holds every pair");
    let percent: f64 = lines
        .iter()
        .filter(|l| l.starts_with("full,"))
        .map(|l| l.split(',').nth(4).expect("percent column").parse::<f64>().expect("number"))
        .sum();
    assert!((percent - 100.0).abs() < 1e-9, "{percent}");
}

#[test]
fn export_names_carry_the_models_file_name_and_the_tensor() {
    let r = report_of("Llama-2-7b.safetensors", 200, 16);
    assert_eq!(export_stem(&r), "orthoscope-Llama-2-7b-model.embed_tokens.weight");
    let r = report_of("model-00001-of-00002.safetensors", 200, 16);
    assert_eq!(export_stem(&r), "orthoscope-model-model.embed_tokens.weight");
}
