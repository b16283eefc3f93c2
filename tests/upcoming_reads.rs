//! `Analysis::upcoming_reads` lists exactly the byte ranges the next steps read, in their order
//! (checked against a source that records every read), for a whole pass, a share of a split pass
//! and a pass stopped early; and blocks whose bytes are all zero are counted as zero rows without
//! being decoded, with the same result as decoding them.

use orthoscope::fixtures::recording::{Reads, Recording};
use orthoscope::fixtures::setup::{embedding_file, locate_embedding, GENERATED};
use orthoscope::fixtures::synth::trained_like;
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Phase};
use orthoscope::pass::error::Error;
use orthoscope::pass::kernel::Precision;
use orthoscope::pass::shares::Share;
use orthoscope::read::format::DType;
use orthoscope::read::source::SliceSource;
use orthoscope::run::report::ToReport;

/// Each read's (offset, length), in order.
fn analysis(values: &[f32], dim: usize, dtype: DType, config: AnalysisConfig) -> (Analysis, Reads) {
    let source = SliceSource::new(GENERATED, embedding_file(values, dim, dtype));
    let (tensor, origin) = locate_embedding(&source).expect("embedding located");
    let recording = Recording::new(source);
    let log = recording.reads();
    (Analysis::new(Box::new(recording), tensor, origin, config).expect("analysis set up"), log)
}

/// Steps `a` to the end; before each step, the reads it makes must be the first of those
/// `upcoming_reads` listed, and a short list must be a prefix of a long one. Returns every read.
fn step_checking(mut a: Analysis, log: &Reads) -> Vec<(u64, u64)> {
    let first = a.upcoming_reads(usize::MAX);
    let mut all = Vec::new();
    while a.phase() != Phase::Done {
        let listed = a.upcoming_reads(usize::MAX);
        assert_eq!(a.upcoming_reads(3), listed.iter().copied().take(3).collect::<Vec<_>>());
        log.borrow_mut().clear();
        a.step().expect("step");
        // As the listing gives them: (offset, length).
        let made: Vec<(u64, u64)> = log.borrow().iter().map(|r| (r.start, r.end - r.start)).collect();
        assert!(made.len() <= listed.len(), "{} reads made, {} listed", made.len(), listed.len());
        assert_eq!(made, listed[..made.len()], "a step read what was listed next, in order");
        all.extend(made);
    }
    assert!(a.upcoming_reads(usize::MAX).is_empty(), "nothing is listed once the pass is done");
    assert_eq!(all, first, "the list before the first step is every read of the analysis");
    all
}

#[test]
fn upcoming_reads_are_the_reads_of_the_next_steps() {
    let dim = 48;
    let values = trained_like(1000, dim, 3);
    let config = AnalysisConfig { block_rows: 16, histogram_rows: 100, ..AnalysisConfig::default() };
    let (a, log) = analysis(&values, dim, DType::BF16, config.clone());
    let reads = step_checking(a, &log);
    // The sample's 7 blocks, then every block of the pass once: 63 blocks of 16 rows (the last 8).
    assert_eq!(reads.len(), 7 + 63);
    let row_bytes = (dim * 2) as u64;
    let mut pass: Vec<_> = reads[7..].to_vec();
    pass.sort();
    let rows: u64 = pass.iter().map(|&(_, len)| len / row_bytes).sum();
    assert_eq!(rows, 1000);
    assert!(pass.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0), "the pass covers the tensor once");
}

#[test]
fn upcoming_reads_of_a_share_and_of_a_pass_stopped_early() {
    let dim = 40;
    let values = trained_like(904, dim, 5);
    let config = AnalysisConfig { block_rows: 8, histogram_rows: 64, ..AnalysisConfig::default() };
    for index in 0..3 {
        let (mut a, log) = analysis(&values, dim, DType::F32, config.clone());
        a.set_share(Share::new(index, 3).expect("a share"));
        let reads = step_checking(a, &log);
        // 8 sample blocks (every share reads the sample), then every third of the 113 blocks.
        let own = (113 - index as usize).div_ceil(3);
        assert_eq!(reads.len(), 8 + own, "share {index}");
    }
    let stopped = AnalysisConfig { stop_after_rows: Some(200), ..config };
    let (a, log) = analysis(&values, dim, DType::F32, stopped);
    assert_eq!(step_checking(a, &log).len(), 8 + 25);
}

#[test]
fn all_zero_blocks_count_as_zero_rows_with_the_same_result() {
    let dim = 32;
    let mut values = trained_like(640, dim, 9);
    // Blocks 2 and 5 (rows 128..192 and 320..384) all zero, and one zero row inside block 7.
    for r in (128..192).chain(320..384).chain(460..461) {
        values[r * dim..(r + 1) * dim].fill(0.0);
    }
    let kept: Vec<f32> = values.chunks_exact(dim).filter(|r| r.iter().any(|&x| x != 0.0)).flatten().copied().collect();
    // f64 throughout: the two passes sum in different orders, and only rounding may differ.
    let config =
        AnalysisConfig { block_rows: 64, histogram_rows: 128, precision: Precision::F64, ..AnalysisConfig::default() };
    let (a, _) = analysis(&values, dim, DType::BF16, config.clone());
    let with_zeros = a.run().expect("runs").report(0.0).expect("report");
    let (b, _) = analysis(&kept, dim, DType::BF16, config);
    let without = b.run().expect("runs").report(0.0).expect("report");
    assert_eq!(with_zeros.rows_dropped_zero, 129);
    assert_eq!(with_zeros.rows_dropped, 129);
    assert!((with_zeros.epsilon - without.epsilon).abs() < 1e-12, "{} vs {}", with_zeros.epsilon, without.epsilon);
}

#[test]
fn an_all_zero_tensor_is_refused_with_every_row_counted() {
    let dim = 64;
    let values = vec![0.0f32; 300 * dim];
    let (a, _) = analysis(&values, dim, DType::BF16, AnalysisConfig::default());
    match a.run().expect("runs").report(0.0) {
        Err(Error::TooFewRows { rows, kept, zero, nonfinite, .. }) => {
            assert_eq!((rows, kept, zero, nonfinite), (300, 0, 300, 0));
        }
        other => panic!("expected TooFewRows, got {:?}", other.map(|r| r.epsilon)),
    }
}
