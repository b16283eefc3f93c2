//! A narrow matrix's pass sweeps its tail in file order after a random phase (`src/pass/plan.rs`):
//! the result is still exact, each share reads its part of the tail as one run of the file, and
//! into the sweep the running estimate, a *Stop here* and a split stopped early are all the random
//! phase's: the same numbers as a pass asked to stop where the random phase ends.

use orthoscope::fixtures::synth::{safetensors_bytes, trained_like, TensorSpec};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin, Phase};
use orthoscope::pass::kernel::Precision;
use orthoscope::pass::plan::RANDOM_PHASE_BLOCKS;
use orthoscope::pass::shares::{PassPartial, Share};
use orthoscope::read::format::{read_model, DType};
use orthoscope::read::locate::choose;
use orthoscope::read::source::SliceSource;
use orthoscope::run::report::ToReport;

const NAME: &str = "model.embed_tokens.weight";
/// 1500 blocks of 8 rows: more than the random phase's 1024, so the last 476 (3808 rows, a few
/// steps of the sweep) are swept.
const ROWS: usize = 12000;
const DIM: usize = 40;
const BLOCK_ROWS: u64 = 8;
/// Rows of the random phase: its 1024 blocks of 8.
const RANDOM_ROWS: u64 = RANDOM_PHASE_BLOCKS as u64 * BLOCK_ROWS;

fn model() -> Vec<u8> {
    let mut values = trained_like(ROWS, DIM, 11);
    values[7 * DIM..8 * DIM].fill(0.0);
    safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, ROWS, DIM, &values)])
}

fn config() -> AnalysisConfig {
    AnalysisConfig { block_rows: BLOCK_ROWS, precision: Precision::F64, ..AnalysisConfig::default() }
}

fn analysis(file: &[u8], config: AnalysisConfig) -> Analysis {
    let source = SliceSource::new("m.safetensors", file.to_vec());
    let model = read_model(&source, 0).unwrap();
    let (t, why) = choose(&model, None, "m").unwrap();
    Analysis::new(Box::new(source), t, Origin { tensor_reason: why, ..Origin::default() }, config).unwrap()
}

/// Steps `a` until it has read more than `rows` rows of its pass.
fn step_past(a: &mut Analysis, rows: u64) {
    while a.phase() != Phase::Pass || a.progress().rows_read <= rows {
        assert_ne!(a.step().unwrap(), Phase::Done, "the pass ended before {rows} rows");
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs())
}

/// The pass asked to stop where the random phase ends: no sweep, the same first 1024 blocks.
fn random_phase_only(file: &[u8]) -> orthoscope::result::report::Report {
    let config = AnalysisConfig { stop_after_rows: Some(RANDOM_ROWS), ..config() };
    analysis(file, config).run().unwrap().report(0.0).unwrap()
}

#[test]
fn a_swept_pass_is_exact_and_reads_its_tail_in_file_order() {
    let file = model();
    let swept = analysis(&file, config()).run().unwrap().report(0.0).unwrap();
    // Blocks of 16 rows: 750 blocks, all in the shuffled order.
    let shuffled = analysis(&file, AnalysisConfig { block_rows: 16, ..config() }).run().unwrap().report(0.0).unwrap();
    assert!(swept.exact && shuffled.exact);
    assert_eq!((swept.rows_seen, swept.rows_used), (ROWS as u64, ROWS as u64 - 1));
    assert!(close(swept.mu, shuffled.mu, 1e-12), "μ {} vs {}", swept.mu, shuffled.mu);
    assert!(close(swept.sigma, shuffled.sigma, 1e-12), "σ {} vs {}", swept.sigma, shuffled.sigma);

    // Into the sweep, the reads listed next follow one another in the file.
    let mut a = analysis(&file, config());
    step_past(&mut a, RANDOM_ROWS);
    let next = a.upcoming_reads(64);
    assert_eq!(next.len(), 64);
    assert!(next.windows(2).all(|w| w[1].0 > w[0].0), "ascending: {next:?}");
    // Gaps only where the random phase took a block (1024 of 1500 blocks are spread over the file).
    let row_bytes = (DIM * 2) as u64;
    let spread = next.last().unwrap().0 - next[0].0;
    assert!(spread < 64 * 8 * BLOCK_ROWS * row_bytes, "{spread} bytes for 64 blocks");
}

#[test]
fn into_the_sweep_the_estimate_and_stop_here_are_the_random_phases() {
    let file = model();
    let reference = random_phase_only(&file);
    assert!(!reference.exact);
    assert_eq!(reference.rows_seen, RANDOM_ROWS);

    let mut a = analysis(&file, config());
    step_past(&mut a, RANDOM_ROWS + 10);
    let first = a.progress();
    assert_eq!(first.rows_seen, RANDOM_ROWS, "the estimate's rows: the random phase's");
    assert!(first.rows_read > RANDOM_ROWS + 10, "the rows read move on: {}", first.rows_read);
    step_past(&mut a, first.rows_read);
    let later = a.progress();
    assert_eq!((later.epsilon, later.epsilon_se, later.rows_seen), (first.epsilon, first.epsilon_se, first.rows_seen));
    assert!(later.rows_read > first.rows_read);

    // Stopped here, the result is that estimate, and it is the pass stopped after the random phase.
    let stopped = a.report(0.0).unwrap();
    assert!(!stopped.exact);
    assert_eq!(stopped.rows_seen, RANDOM_ROWS);
    assert_eq!(Some(stopped.epsilon), first.epsilon);
    assert!(close(stopped.epsilon, reference.epsilon, 1e-12), "ε {} vs {}", stopped.epsilon, reference.epsilon);
    assert!(close(stopped.sigma, reference.sigma, 1e-12));
    let (se, reference_se) = (stopped.epsilon_se.unwrap(), reference.epsilon_se.unwrap());
    assert!(se > 0.0 && close(se, reference_se, 1e-9), "se {se} vs {reference_se}");
}

/// A share's partial as the page sends it (`PassPartial::into_frame`), read back: the partial and
/// its G's values, apart.
fn through_a_message(partial: PassPartial) -> (PassPartial, Vec<f64>) {
    let (head, values) = partial.into_frame();
    let mut bytes = head;
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    PassPartial::from_frame(&bytes).unwrap()
}

#[test]
fn a_split_by_rows_is_exact_when_every_share_ends_and_the_random_phase_when_one_stops() {
    let file = model();
    let whole = analysis(&file, config()).run().unwrap().report(0.0).unwrap();
    let reference = random_phase_only(&file);
    for of in [2u32, 3] {
        let share = |i: u32| {
            let mut a = analysis(&file, config());
            a.set_share(Share::new(i, of).unwrap());
            a
        };
        // Every share to its end: exact, the one-pass answer.
        let mut lead = share(0).run().unwrap();
        for i in 1..of {
            let (partial, values) = through_a_message(share(i).run().unwrap().into_partial());
            lead.absorb_from(&partial, Some(&values.as_slice())).unwrap();
        }
        let merged = lead.report(0.0).unwrap();
        assert!(merged.exact, "of={of}");
        assert!(close(merged.epsilon, whole.epsilon, 1e-12), "of={of}: ε {} vs {}", merged.epsilon, whole.epsilon);

        // The last share stopped inside its sweep: the others' swept blocks are left out too, and
        // the result is the random phase of all of them, i.e. the pass stopped after it.
        let mut lead = share(0).run().unwrap();
        for i in 1..of {
            let mut a = share(i);
            if i == of - 1 {
                step_past(&mut a, RANDOM_ROWS / of as u64 + 50);
            } else {
                a = a.run().unwrap();
            }
            let (partial, values) = through_a_message(a.into_partial());
            lead.absorb_from(&partial, Some(&values.as_slice())).unwrap();
        }
        let stopped = lead.report(0.0).unwrap();
        assert!(!stopped.exact, "of={of}");
        assert_eq!(stopped.rows_seen, RANDOM_ROWS, "of={of}");
        assert!(
            close(stopped.epsilon, reference.epsilon, 1e-12),
            "of={of}: ε {} vs {}",
            stopped.epsilon,
            reference.epsilon
        );
        assert!(close(stopped.mu, reference.mu, 1e-12) && close(stopped.sigma, reference.sigma, 1e-12));
    }
}

#[test]
fn a_pass_that_does_not_sweep() {
    let file = model();
    // Too few blocks (750 of 16 rows), or a width past the sweep's: every position stays shuffled,
    // so the estimate moves with every row.
    for (block_rows, rows, dim) in [(16u64, ROWS, DIM), (2, 2100, 1100)] {
        let file = if dim == DIM {
            file.clone()
        } else {
            let values = trained_like(rows, dim, 5);
            safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, rows, dim, &values)])
        };
        let mut a = analysis(&file, AnalysisConfig { block_rows, ..config() });
        step_past(&mut a, rows as u64 / 2);
        let p = a.progress();
        assert_eq!(p.rows_seen, p.rows_read, "block_rows={block_rows} d={dim}");
    }
}

/// A wide matrix whose sample shows a pass bound by its reads (`Analysis::read_bound`): 9000 rows
/// of d = 2048 in blocks of 8 of which only the first 40 rows are non-zero, like a vocabulary
/// padded with unused rows. The whole pass sweeps its tail, keeping only the random phase's
/// estimate; a share by rows (which would keep a copy of G) does not, nor does a matrix with a
/// row kept in every block (each costs the kernel a whole chunk).
#[test]
fn a_wide_matrix_of_mostly_zero_rows_sweeps_when_whole() {
    const WIDE: usize = 2048;
    const N: usize = 9000;
    const REAL: usize = 40;
    let mut values = vec![0.0f32; N * WIDE];
    values[..REAL * WIDE].copy_from_slice(&trained_like(REAL, WIDE, 3));
    let padded = safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, N, WIDE, &values)]);
    // Seed 1: no block of the sample holds a real row (with seed 0 one does).
    let config = AnalysisConfig { histogram_rows: 256, seed: 1, ..config() };
    let random_rows = RANDOM_PHASE_BLOCKS as u64 * BLOCK_ROWS;

    // Known only once the sample's rows are read.
    let mut a = analysis(&padded, config.clone());
    assert!(!a.read_bound() && !a.sample_is_read());
    while !a.sample_is_read() {
        a.step().unwrap();
    }
    assert!(a.read_bound(), "read-bound");
    assert!(a.reads_whole(), "reads whole: {:?}", a.progress());
    step_past(&mut a, random_rows + 20);
    let first = a.progress();
    assert_eq!(first.rows_seen, random_rows, "the estimate's rows: the random phase's");
    let next = a.upcoming_reads(64);
    assert!(next.windows(2).all(|w| w[1].0 > w[0].0), "the tail in file order: {next:?}");
    step_past(&mut a, first.rows_read + 50);
    assert_eq!(a.progress().epsilon, first.epsilon, "the estimate stays the random phase's");

    // Stopped in the sweep: the pass asked to stop where the random phase ends.
    let stopped = a.report(0.0).unwrap();
    let stop_config = AnalysisConfig { stop_after_rows: Some(random_rows), ..config.clone() };
    let reference = analysis(&padded, stop_config).run().unwrap().report(0.0).unwrap();
    assert!(!stopped.exact && !reference.exact);
    assert_eq!((stopped.rows_seen, stopped.rows_used), (reference.rows_seen, reference.rows_used));
    assert!((2..=REAL as u64).contains(&stopped.rows_used), "{} rows used", stopped.rows_used);
    assert!(close(stopped.epsilon, reference.epsilon, 1e-12), "ε {} vs {}", stopped.epsilon, reference.epsilon);
    // The interval comes from the histogram's sample, here too few kept rows for one: none either way.
    assert_eq!(stopped.epsilon_se, reference.epsilon_se);

    // To its end: exact, the answer of a pass that does not sweep (563 blocks of 16).
    let swept = analysis(&padded, config.clone()).run().unwrap().report(0.0).unwrap();
    let shuffled =
        analysis(&padded, AnalysisConfig { block_rows: 16, ..config.clone() }).run().unwrap().report(0.0).unwrap();
    assert!(swept.exact && shuffled.exact);
    assert_eq!((swept.rows_seen, swept.rows_used), (N as u64, REAL as u64));
    assert!(close(swept.mu, shuffled.mu, 1e-12), "μ {} vs {}", swept.mu, shuffled.mu);
    assert!(close(swept.sigma, shuffled.sigma, 1e-12), "σ {} vs {}", swept.sigma, shuffled.sigma);

    // A share by rows, or a row kept in every block: every position stays shuffled.
    let mut a = analysis(&padded, config.clone());
    a.set_share(Share::new(0, 2).unwrap());
    step_past(&mut a, random_rows / 2 + 20);
    assert!(a.read_bound() && a.reads_whole());
    assert_eq!(a.progress().rows_seen, a.progress().rows_read);
    let mut every_block = vec![0.0f32; N * WIDE];
    let rows = trained_like(N / 8, WIDE, 4);
    for (i, row) in rows.chunks(WIDE).enumerate() {
        every_block[i * 8 * WIDE..(i * 8 + 1) * WIDE].copy_from_slice(row);
    }
    let every_block = safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, N, WIDE, &every_block)]);
    let mut a = analysis(&every_block, config.clone());
    step_past(&mut a, random_rows + 20);
    assert!(!a.read_bound() && !a.reads_whole());
    assert_eq!(a.progress().rows_seen, a.progress().rows_read);
}
