//! A pass split over workers (`src/pass/shares.rs`): shares of the plan's blocks, merged in any order,
//! give the one-pass answer (G, s, μ, σ, ε to 1e-12 relative), and so do bands of G's columns, each
//! over every row (bit for bit: a band's entries are summed exactly as one pass sums them); the CLI
//! with 1 and N threads, by rows or by columns, prints the same ε.

use orthoscope::pass::accumulate::PairAccumulator;
use orthoscope::pass::kernel::Precision;
use orthoscope::run::report::ToReport;
use std::rc::Rc;

use orthoscope::fixtures::synth::{safetensors_bytes, trained_like, TensorSpec};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin, SampleVerdict};
use orthoscope::pass::shares::{PassPartial, Share};
use orthoscope::read::format::{read_model, DType};
use orthoscope::read::locate::choose;
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::result::report::Report;
use orthoscope::run::job::Job;

const NAME: &str = "model.embed_tokens.weight";

/// A trained-like matrix (related neighbours, μ > 0) with a zero and a NaN row, as safetensors.
fn model(rows: usize, dim: usize, seed: u64) -> Vec<u8> {
    let mut values = trained_like(rows, dim, seed);
    values[5 * dim..6 * dim].fill(0.0);
    values[17 * dim] = f32::NAN;
    safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, rows, dim, &values)])
}

fn analysis(file: &[u8], config: AnalysisConfig) -> Analysis {
    let source = SliceSource::new("m.safetensors", file.to_vec());
    let model = read_model(&source, 0).unwrap();
    let (t, why) = choose(&model, None, "m").unwrap();
    Analysis::new(Box::new(source), t, Origin { tensor_reason: why, ..Origin::default() }, config).unwrap()
}

fn share_partial(file: &[u8], config: &AnalysisConfig, share: Share) -> PassPartial {
    let mut a = analysis(file, config.clone());
    a.set_share(share);
    a.run().unwrap().into_partial()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300)
}

fn assert_same_sums(merged: &PassPartial, whole: &PassPartial, dim: usize, case: &str) {
    assert_eq!(merged.gram.counts(), whole.gram.counts(), "{case}: row counts");
    assert_eq!(merged.blocks_seen, whole.blocks_seen, "{case}: blocks");
    // Relative to the size of the terms summed (Cauchy–Schwarz: |G_ab| ≤ √(G_aa·G_bb),
    // |s_a| ≤ √(n·G_aa)), not to a sum that cancels to nearly 0, where only the order of the
    // additions differs.
    let entry = |p: &PassPartial, a: usize, b: usize| match &p.gram {
        PairAccumulator::Gram(g) => g.gram_entry(a, b),
        PairAccumulator::Rows(_) => panic!("{case}: these shapes take the Gram route"),
    };
    let n = whole.gram.counts().kept as f64;
    for (a, (x, y)) in merged.gram.sum().iter().zip(whole.gram.sum()).enumerate().take(dim) {
        let scale = (n * entry(whole, a, a)).sqrt();
        assert!((x - y).abs() <= 1e-12 * scale, "{case}: s[{a}] {x} vs {y}");
    }
    for a in 0..dim {
        for b in a..dim {
            let scale = (entry(whole, a, a) * entry(whole, b, b)).sqrt();
            let (x, y) = (entry(merged, a, b), entry(whole, a, b));
            assert!((x - y).abs() <= 1e-12 * scale, "{case}: G[{a},{b}] {x} vs {y}");
        }
    }
    let (m, w) = (merged.gram.moments().unwrap(), whole.gram.moments().unwrap());
    assert!(close(m.mu, w.mu, 1e-12), "{case}: μ {} vs {}", m.mu, w.mu);
    assert!(close(m.sigma, w.sigma, 1e-12), "{case}: σ {} vs {}", m.sigma, w.sigma);
}

#[test]
fn shares_merged_in_any_order_equal_one_pass() {
    let (rows, dim) = (3000, 72);
    let file = model(rows, dim, 3);
    // Blocks of 16 rows: a share packs other blocks into its 64-row kernel calls than one pass does.
    // The f32 kernel rounds each call's sums once, so only the f64 kernel makes the merge itself
    // visible at 1e-12 (with f32 the two groupings differ at f32 precision, ~1e-8 of G).
    let config = AnalysisConfig { block_rows: 16, precision: Precision::F64, ..AnalysisConfig::default() };
    let whole = analysis(&file, config.clone()).run().unwrap().into_partial();
    for of in [2u32, 3, 5] {
        let parts: Vec<PassPartial> =
            (0..of).map(|i| share_partial(&file, &config, Share::new(i, of).unwrap())).collect();
        // Every share got a part of the blocks, and together exactly all of them.
        assert!(parts.iter().all(|p| p.blocks_seen > 0), "{of} shares: an idle share");
        for (name, order) in [
            ("in order", (0..of as usize).collect::<Vec<_>>()),
            ("reversed", (0..of as usize).rev().collect()),
            ("rotated", (0..of as usize).map(|i| (i + 1) % of as usize).collect()),
        ] {
            let mut merged = PassPartial::empty(dim);
            for &i in &order {
                // Through the message bytes, as between workers.
                merged.merge(&PassPartial::from_bytes(&parts[i].to_bytes()).unwrap()).unwrap();
            }
            assert_same_sums(&merged, &whole, dim, &format!("{of} shares {name}"));
        }
    }
}

/// Bands of G's columns (any number, any width, f64 and f32 kernels), placed in any order, give
/// the one-pass G, s and moments exactly; each band holds only its part of the triangle.
#[test]
fn column_bands_placed_in_any_order_equal_one_pass_bit_for_bit() {
    for (rows, dim, precision) in
        [(1200, 72, Precision::F64), (900, 131, Precision::F32), (700, 515, Precision::F32), (300, 9, Precision::F64)]
    {
        let file = model(rows, dim, 13);
        let config = AnalysisConfig { block_rows: 16, precision, ..AnalysisConfig::default() };
        let whole = analysis(&file, config.clone()).run().unwrap().into_partial();
        for of in [2u32, 3, 5, 16] {
            let case = format!("{rows}×{dim} {precision:?}, {of} bands");
            let parts: Vec<PassPartial> =
                (0..of).map(|i| share_partial(&file, &config, Share::columns(i, of).unwrap())).collect();
            let sizes: Vec<usize> = parts.iter().map(|p| p.gram.bytes()).collect();
            assert!(
                sizes.iter().all(|&b| b < whole.gram.bytes() || of as usize > dim / 8),
                "{case}: a band holds all of G: {sizes:?}"
            );
            for order in [(0..of as usize).collect::<Vec<_>>(), (0..of as usize).rev().collect()] {
                let mut merged = PassPartial::empty(dim);
                for &i in &order {
                    merged.merge(&PassPartial::from_bytes(&parts[i].to_bytes()).unwrap()).unwrap();
                }
                assert_same_sums(&merged, &whole, dim, &case);
                let (PairAccumulator::Gram(m), PairAccumulator::Gram(w)) = (&merged.gram, &whole.gram) else {
                    panic!("{case}: the Gram route")
                };
                assert_eq!(m.gram(), w.gram(), "{case}: G bit for bit");
                assert_eq!(m.moments(), w.moments(), "{case}: moments bit for bit");
                // The bands' work adds up to one pass's (the Report's GFLOP/s per worker).
                assert!(
                    close(m.kernel_flops, w.kernel_flops, 1e-9),
                    "{case}: {} vs {} flops",
                    m.kernel_flops,
                    w.kernel_flops
                );
            }
        }
    }
}

/// A band of another pass (other rows) is refused with a message, not placed.
#[test]
fn a_band_of_another_pass_is_refused() {
    let config = AnalysisConfig::default();
    let file = model(800, 64, 4);
    let mut lead = share_partial(&file, &config, Share::columns(0, 2).unwrap());
    let other = share_partial(&model(700, 64, 4), &config, Share::columns(1, 2).unwrap());
    assert!(matches!(lead.merge(&other), Err(orthoscope::pass::shares::PassError::Band(_))));
}

/// The lead's job (share 0 with the histogram's sample) absorbing the helpers' partials reports
/// what one whole pass reports.
fn pooled_report(file: &[u8], config: &AnalysisConfig, of: u32) -> Report {
    pooled_report_split(file, config, of, false)
}

fn pooled_report_split(file: &[u8], config: &AnalysisConfig, of: u32, columns: bool) -> Report {
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", file.to_vec()));
    let (mut job, opened) = Job::open(vec![source], None, config.clone()).unwrap();
    if columns {
        job.split_columns(of);
    } else {
        job.split(of);
    }
    let share = |i| if columns { Share::columns(i, of) } else { Share::new(i, of) };
    let mut job = job.run().unwrap();
    // Helpers finish in any order; absorb them last-first.
    for i in (1..of).rev() {
        let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", file.to_vec()));
        let mut helper = Job::open_share(vec![source], &opened.chosen, config.clone(), share(i).unwrap()).unwrap();
        while helper.step().unwrap() != orthoscope::pass::analysis::Phase::Done {}
        // As the page sends it: one message, the band's values apart from the rest.
        let (partial, band) = PassPartial::from_frame(&frame_bytes(helper.into_partial())).unwrap();
        job.embedding_mut().absorb_from(&partial, Some(&band.as_slice())).unwrap();
    }
    job.report(0.0).unwrap()
}

/// A partial's message as a worker posts it ([`PassPartial::into_frame`]): the head, then the
/// band's values as little-endian f64.
fn frame_bytes(partial: PassPartial) -> Vec<u8> {
    let (mut bytes, values) = partial.into_frame();
    assert_eq!(bytes.len() % 8, 0, "the values start at a multiple of 8");
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    bytes
}

/// A band sent apart from its partial (the page's message) is placed exactly as the band itself,
/// bit for bit, and so is a whole G sent apart from a partial by rows; a message cut short, a band
/// or a G with a value too many or too few, and values sent beside a G that holds its own are
/// refused with a message, and the lead's sums are left as they were.
#[test]
fn a_band_sent_apart_is_placed_bit_for_bit_and_a_broken_message_is_refused() {
    use orthoscope::pass::shares::PassError;
    let (rows, dim) = (900, 96);
    let file = model(rows, dim, 8);
    for precision in [Precision::F32, Precision::F64] {
        let config = AnalysisConfig { precision, ..AnalysisConfig::default() };
        let lead = share_partial(&file, &config, Share::columns(0, 3).unwrap());
        let helpers: Vec<PassPartial> =
            (1..3).map(|i| share_partial(&file, &config, Share::columns(i, 3).unwrap())).collect();
        let mut inline = lead.clone();
        let mut apart = lead.clone();
        for helper in &helpers {
            inline.merge(helper).unwrap();
            let bytes = frame_bytes(helper.clone());
            let (partial, values) = PassPartial::from_frame(&bytes).unwrap();
            assert!(!values.is_empty(), "{precision:?}: the band's values travel apart");
            let PairAccumulator::Gram(g) = &partial.gram else { panic!("the Gram route") };
            assert!(g.gram().values().is_empty(), "{precision:?}: and not in the partial");
            apart.merge_from(&partial, Some(&values.as_slice())).unwrap();
        }
        assert_eq!(apart, inline, "{precision:?}: placed from apart, the same G bit for bit");
        assert!(!apart.gram.is_band());

        let bytes = frame_bytes(helpers[0].clone());
        let before = lead.clone();
        let mut target = lead.clone();
        // Cut short by one value: the band no longer fills its panels.
        let (p, v) = PassPartial::from_frame(&bytes[..bytes.len() - 8]).unwrap();
        assert!(matches!(target.merge_from(&p, Some(&v.as_slice())), Err(PassError::Band(_))));
        // Cut inside a value, inside the head, or with a length that runs past the message.
        assert!(matches!(PassPartial::from_frame(&bytes[..bytes.len() - 3]), Err(PassError::Unreadable(_))));
        assert!(matches!(PassPartial::from_frame(&bytes[..6]), Err(PassError::Unreadable(_))));
        let mut long = bytes.clone();
        long[..8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        assert!(matches!(PassPartial::from_frame(&long), Err(PassError::Unreadable(_))));
        // A value too many.
        let mut more = bytes.clone();
        more.extend_from_slice(&1.0f64.to_le_bytes());
        let (p, v) = PassPartial::from_frame(&more).unwrap();
        assert!(matches!(target.merge_from(&p, Some(&v.as_slice())), Err(PassError::Band(_))));
        assert_eq!(target, before, "{precision:?}: a refused band changes nothing");
        // A partial by rows in a message: its whole G's values travel apart too, and are added
        // bit for bit as the partial's own.
        let by_rows = share_partial(&file, &config, Share::new(1, 2).unwrap());
        let mut lead_rows = share_partial(&file, &config, Share::new(0, 2).unwrap());
        let (p, v) = PassPartial::from_frame(&frame_bytes(by_rows.clone())).unwrap();
        let PairAccumulator::Gram(g) = &p.gram else { panic!("the Gram route") };
        assert!(!v.is_empty() && g.gram().values().is_empty(), "{precision:?}: G's values travel apart");
        let mut whole = lead_rows.clone();
        whole.merge(&by_rows).unwrap();
        let before_rows = lead_rows.clone();
        // Values next to a partial that holds its own, or a value too many or too few: refused,
        // and nothing changed.
        assert!(matches!(lead_rows.merge_from(&by_rows, Some(&[1.0].as_slice())), Err(PassError::Values(_))));
        let mut more = v.clone();
        more.push(1.0);
        assert!(matches!(lead_rows.merge_from(&p, Some(&more.as_slice())), Err(PassError::Values(_))));
        assert!(matches!(lead_rows.merge_from(&p, Some(&&v[1..])), Err(PassError::Values(_))));
        assert_eq!(lead_rows, before_rows, "{precision:?}: a refused G changes nothing");
        lead_rows.merge_from(&p, Some(&v.as_slice())).unwrap();
        assert_eq!(lead_rows, whole, "{precision:?}: added from apart, the same G bit for bit");
    }
}

#[test]
fn a_lead_absorbing_its_helpers_reports_the_one_pass_result() {
    let (rows, dim) = (2500, 64);
    let file = model(rows, dim, 11);
    let config = AnalysisConfig::default();
    let one = pooled_report(&file, &config, 1);
    assert!(one.exact);
    assert_eq!(one.workers, 1);
    for of in [2, 4] {
        let r = pooled_report(&file, &config, of);
        assert!(r.exact, "{of} workers: exact");
        assert_eq!(r.workers, of);
        assert_eq!(r.rows_used, one.rows_used);
        assert_eq!(r.pairs, one.pairs);
        for (what, a, b) in [("μ", r.mu, one.mu), ("σ", r.sigma, one.sigma), ("ε", r.epsilon, one.epsilon)] {
            assert!(close(a, b, 1e-12), "{of} workers: {what} {a} vs {b}");
        }
        assert_eq!(r.histogram, one.histogram, "the histogram is the lead's sample, as before");
        let c = pooled_report_split(&file, &config, of, true);
        assert!(c.exact, "{of} bands: exact");
        assert_eq!((c.workers, c.rows_used, c.pairs), (of, one.rows_used, one.pairs));
        assert_eq!((c.epsilon, c.mu, c.sigma), (one.epsilon, one.mu, one.sigma), "{of} bands: bit for bit");
        assert_eq!(c.histogram, one.histogram);
    }
}

#[test]
fn an_early_stop_split_over_workers_estimates_what_one_worker_estimates() {
    let (rows, dim) = (4000, 48);
    let file = model(rows, dim, 5);
    let config = AnalysisConfig { stop_after_rows: Some(1500), ..AnalysisConfig::default() };
    let one = pooled_report(&file, &config, 1);
    let three = pooled_report(&file, &config, 3);
    assert!(!one.exact && !three.exact);
    assert_eq!(three.rows_seen, one.rows_seen, "the union of the shares is the one worker's prefix");
    assert!(close(three.epsilon, one.epsilon, 1e-12), "{} vs {}", three.epsilon, one.epsilon);
    assert!(three.epsilon_ci.is_some());
    // By columns every band reads the same prefix, and the estimate is the one worker's.
    let bands = pooled_report_split(&file, &config, 3, true);
    assert_eq!(bands.rows_seen, one.rows_seen);
    assert_eq!((bands.epsilon, bands.epsilon_ci), (one.epsilon, one.epsilon_ci));
}

/// Split by columns, no worker holds ‖G‖²_F: the lead's running estimate is the one at the last
/// checkpoint every band reached (`pass::bands`), and that is what one whole pass estimates after
/// the same steps (only ‖G‖²_F is summed band by band). Before the first checkpoint the lead has
/// no estimate and cannot stop; stopped at one, its report is that estimate. Also where three
/// blocks in four are zero rows, so that checkpoints often pass with no row entering G (a band
/// then sends its last part again without streaming its panels).
#[test]
fn a_split_by_columns_estimates_at_its_bands_checkpoints_what_one_pass_estimates() {
    use orthoscope::pass::analysis::Phase;
    let (rows, dim) = (6000, 72);
    let mut mostly_zero = trained_like(rows, dim, 7);
    for (k, block) in mostly_zero.chunks_mut(16 * dim).enumerate() {
        if k % 4 != 0 {
            block.fill(0.0);
        }
    }
    let mostly_zero = safetensors_bytes(&[TensorSpec::matrix(NAME, DType::BF16, rows, dim, &mostly_zero)]);
    for (file, precision) in [
        (model(rows, dim, 5), Precision::F32),
        (model(rows, dim, 5), Precision::F64),
        (mostly_zero.clone(), Precision::F32),
        (mostly_zero, Precision::F64),
    ] {
        let config = AnalysisConfig { block_rows: 16, precision, ..AnalysisConfig::default() };
        let of = 3;
        let band = |i| {
            let mut a = analysis(&file, config.clone());
            a.set_share(Share::columns(i, of).unwrap());
            a
        };
        let mut whole = analysis(&file, config.clone());
        let mut lead = band(0);
        let mut helpers: Vec<Analysis> = (1..of).map(band).collect();
        // The bands run a step ahead of the lead; their parts wait in the lead's tally.
        let mut parts = Vec::new();
        let mut checked = Vec::new();
        let mut stopped = None;
        while lead.phase() != Phase::Done {
            for (i, h) in helpers.iter_mut().enumerate() {
                if h.phase() != Phase::Done {
                    h.step().unwrap();
                    parts.extend(h.band_part().map(|(step, part)| (i as u32 + 1, step, part)));
                }
            }
            whole.step().unwrap();
            lead.step().unwrap();
            let at_checkpoint = lead.band_part().map(|(step, _)| step);
            if lead.phase() == Phase::Pass && at_checkpoint.is_none() && checked.is_empty() {
                assert!(!lead.has_estimate(), "{precision:?}: no estimate before the first checkpoint");
            }
            lead.note_checkpoint();
            // Out of order, as messages from several workers come.
            for (band, step, part) in parts.drain(..).rev() {
                lead.take_band_part(band, step, part).unwrap();
            }
            let Some(step) = at_checkpoint else { continue };
            let (mine, one) = (lead.progress(), whole.progress());
            match (mine.epsilon, one.epsilon) {
                (Some(e), Some(w)) => {
                    assert!(close(e, w, 1e-12), "{precision:?} step {step}: ε {e} vs one pass {w}");
                    let (a, b) = (mine.epsilon_se.unwrap(), one.epsilon_se.unwrap());
                    assert!(close(a, b, 1e-9), "{precision:?} step {step}: se");
                }
                // Fewer than two rows in G yet (the mostly zero file): no estimate either way.
                (None, None) => {}
                (e, w) => panic!("{precision:?} step {step}: ε {e:?} vs one pass {w:?}"),
            }
            assert_eq!(mine.rows_seen, one.rows_seen);
            checked.push(step);
            if step == 16 {
                assert!(lead.stop_at_checkpoint());
                stopped = Some((lead.report(0.0).unwrap(), one));
                break;
            }
        }
        assert_eq!(checked, [1, 2, 4, 8, 16], "{precision:?}");
        let (report, one) = stopped.unwrap();
        assert!(!report.exact && report.epsilon_ci.is_some());
        assert_eq!(report.rows_seen, one.rows_seen);
        assert!(close(report.epsilon, one.epsilon.unwrap(), 1e-12), "{precision:?}: stopped at step 16");
    }
}

/// Split by columns, a lead whose own band is done before a slower band keeps following that
/// band's checkpoints, and *Stop here* while it waits (`Job::stop_while_waiting`, as the page's
/// lead calls it) gives the estimate at their last common checkpoint, not a wait for the partial.
#[test]
fn a_lead_done_before_its_slower_band_estimates_and_stops_at_their_last_common_checkpoint() {
    let (rows, dim) = (6000, 72);
    let file = model(rows, dim, 5);
    let config = AnalysisConfig { block_rows: 16, ..AnalysisConfig::default() };
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", file.clone()));
    let (mut lead, _) = Job::open(vec![source], None, config.clone()).unwrap();
    lead.split_columns(2);
    while !lead.step().unwrap() {
        lead.embedding_mut().note_checkpoint();
    }
    assert!(!lead.embedding().has_estimate(), "no checkpoint of the other band yet");
    assert!(!lead.stop_while_waiting(), "nothing to stop at yet");
    let mut helper = analysis(&file, config.clone());
    helper.set_share(Share::columns(1, 2).unwrap());
    let mut whole = analysis(&file, config.clone());
    // The slower band gets as far as its sixth checkpoint (1, 2, 4, 8, 16, 24).
    let (mut last, mut seen) = (None, 0);
    while seen < 6 {
        helper.step().unwrap();
        whole.step().unwrap();
        if let Some((step, part)) = helper.band_part() {
            lead.embedding_mut().take_band_part(1, step, part).unwrap();
            last = Some((step, whole.progress()));
            seen += 1;
        }
    }
    let (step, one) = last.unwrap();
    assert_eq!(step, 24);
    let mine = lead.progress();
    assert_eq!(mine.rows_seen, one.rows_seen);
    assert!(close(mine.epsilon.unwrap(), one.epsilon.unwrap(), 1e-12));
    assert!(lead.stop_while_waiting() && lead.embedding().stopped_at_estimate());
    let report = lead.report(0.0).unwrap();
    assert!(!report.exact && report.epsilon_ci.is_some());
    assert_eq!(report.rows_seen, one.rows_seen);
    assert!(close(report.epsilon, one.epsilon.unwrap(), 1e-12));
}

#[test]
fn a_partial_of_another_width_or_a_block_counted_twice_is_refused() {
    let file = model(600, 32, 2);
    let config = AnalysisConfig::default();
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", file.clone()));
    let (mut job, _) = Job::open(vec![source], None, config.clone()).unwrap();
    job.split(2);
    let mut job = job.run().unwrap();
    let wrong = share_partial(&model(600, 40, 2), &config, Share::new(1, 2).unwrap());
    assert!(matches!(
        job.embedding_mut().absorb(&wrong),
        Err(orthoscope::Error::Pass(orthoscope::pass::shares::PassError::DimMismatch { .. }))
    ));
    let right = share_partial(&file, &config, Share::new(1, 2).unwrap());
    job.embedding_mut().absorb(&right).unwrap();
    assert!(job.report(0.0).unwrap().exact);
    assert!(matches!(
        job.embedding_mut().absorb(&right),
        Err(orthoscope::Error::Pass(orthoscope::pass::shares::PassError::TooManyBlocks { .. }))
    ));
}

#[test]
fn the_cli_with_one_and_three_threads_agrees() {
    let dir = std::env::temp_dir().join(format!("orthoscope-pool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.safetensors");
    std::fs::write(&path, model(5000, 96, 7)).unwrap();
    let run = |threads: &str| -> Report {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_orthoscope"))
            .args(["analyze", "--json", "--threads", threads])
            .arg(&path)
            .output()
            .expect("orthoscope runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (one, three) = (run("1"), run("3"));
    assert_eq!((one.workers, three.workers), (1, 3));
    assert!(one.exact && three.exact);
    assert!(close(one.epsilon, three.epsilon, 1e-12), "{} vs {}", one.epsilon, three.epsilon);
    assert!(close(one.sigma, three.sigma, 1e-12));
    assert_eq!(one.rows_used, three.rows_used);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_native_pass_gives_one_answer_for_any_number_of_threads_and_reads_a_folder() {
    use orthoscope::run::threads::{analyze_paths, PassRequest, Split, ThreadsError};
    let dir = std::env::temp_dir().join(format!("orthoscope-threads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("model")).unwrap();
    std::fs::write(dir.join("model").join("m.safetensors"), model(3000, 80, 11)).unwrap();
    let run = |threads: usize| {
        let request = PassRequest { threads: Some(threads), ..PassRequest::default() };
        analyze_paths(&[dir.join("model")], &request).expect("the folder's model analyses")
    };
    let one = run(1);
    for threads in [2, 4] {
        let many = run(threads);
        assert_eq!(many.workers, threads as u32);
        assert!(close(one.epsilon, many.epsilon, 1e-12), "{threads} threads: {} vs {}", many.epsilon, one.epsilon);
        assert!(close(one.sigma, many.sigma, 1e-12));
        assert_eq!((one.rows_used, one.pairs), (many.rows_used, many.pairs));
        // By columns (what the budget picks at d ≥ 8192 on many cores): the one-thread numbers.
        let request = PassRequest { threads: Some(threads), split: Split::Columns, ..PassRequest::default() };
        let bands = analyze_paths(&[dir.join("model")], &request).expect("the folder's model analyses by columns");
        assert_eq!(bands.workers, threads as u32);
        assert_eq!((bands.epsilon, bands.sigma, bands.pairs), (one.epsilon, one.sigma, one.pairs), "{threads} bands");
        let (g, g1) = (bands.geometry.expect("geometry"), one.geometry.clone().expect("geometry"));
        assert_eq!((g.eigenvalues, g.participation_ratio), (g1.eigenvalues, g1.participation_ratio), "{threads} bands");
    }
    // A folder with nothing in it says so instead of "no model".
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let err = analyze_paths(&[dir.join("empty")], &PassRequest::default()).expect_err("nothing to read");
    assert!(matches!(err, ThreadsError::EmptyDirectory { .. }), "{err:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A matrix whose rows share one large component (cosines near 1, σ inside the f32 noise): the
/// sample sends the pass to f64.
fn concentrated(rows: usize, dim: usize, seed: u64) -> Vec<u8> {
    let mut values = trained_like(rows, dim, seed);
    for row in values.chunks_exact_mut(dim) {
        row[0] += 300.0;
    }
    safetensors_bytes(&[TensorSpec::matrix(NAME, DType::F32, rows, dim, &values)])
}

/// The CLI's threads take the histogram's sample once: the lead reads it, its pairs are computed
/// outside the steps (on every core: `Analysis::finish_sample_pairs_with`), and every other share
/// starts its pass with the lead's verdict (`Analysis::skip_sample`). The report and each share's
/// partial are then the ones the steps give, bit for bit, for an f32 pass (with its centre) and an
/// f64 one.
#[test]
fn a_sample_paired_at_once_and_shares_given_the_leads_verdict_change_nothing() {
    use orthoscope::pass::analysis::Phase;
    use orthoscope::pass::kernel;
    for (file, f64) in [(model(3000, 80, 21), false), (concentrated(1500, 64, 22), true)] {
        let config = AnalysisConfig::default();
        let stepped = analysis(&file, config.clone()).run().unwrap();
        let mut at_once = analysis(&file, config.clone());
        while at_once.phase() == Phase::Sample {
            at_once.step().unwrap();
        }
        // The blocks computed last first, as threads may finish them.
        let done = at_once
            .finish_sample_pairs_with(|units, d, blocks| {
                let n = units.len() / d;
                let mut out: Vec<Vec<f32>> = blocks
                    .iter()
                    .rev()
                    .map(|b| {
                        let mut o = vec![0.0; b.len() * (n - b.start)];
                        kernel::dots(&units[b.start * d..b.end * d], &units[b.start * d..], d, &mut o);
                        o
                    })
                    .collect();
                out.reverse();
                out
            })
            .unwrap();
        assert!(done && at_once.phase() == Phase::Pass);
        let verdict = at_once.sample_verdict().cloned().expect("a verdict once the sample is done");
        assert_eq!(verdict.f64, f64, "the matrix sends the pass to f64: {f64}");
        assert_eq!(verdict.centre.is_some(), !f64, "an f32 pass has a centre");
        assert_eq!(Some(&verdict), stepped.sample_verdict());
        let at_once = at_once.run().unwrap();
        let report = |a: &Analysis| Report { gram_gflops: None, ..a.report(0.0).unwrap() };
        assert_eq!(report(&at_once), report(&stepped), "f64: {f64}");
        for share in [Share::new(1, 3).unwrap(), Share::new(2, 3).unwrap(), Share::columns(1, 2).unwrap()] {
            let own = share_partial(&file, &config, share);
            let mut given = analysis(&file, config.clone());
            given.set_share(share);
            assert!(given.skip_sample(&verdict));
            // Equal but for the kernel's timing.
            let untimed = |mut p: PassPartial| {
                if let PairAccumulator::Gram(g) = &mut p.gram {
                    g.kernel_ms = 0.0;
                }
                p
            };
            assert_eq!(untimed(given.run().unwrap().into_partial()), untimed(own), "{share:?}, f64: {f64}");
        }
        // Too late once a step was taken; and arrays of the wrong sizes are refused, the steps
        // then pair the sample as before.
        let mut late = analysis(&file, config.clone());
        late.step().unwrap();
        assert!(!late.skip_sample(&verdict));
        let mut refused = analysis(&file, config.clone());
        while refused.phase() == Phase::Sample {
            refused.step().unwrap();
        }
        assert!(!refused.finish_sample_pairs_with(|_, _, blocks| vec![Vec::new(); blocks.len()]).unwrap());
        assert_eq!(refused.phase(), Phase::SamplePairs);
        assert_eq!(report(&refused.run().unwrap()), report(&stepped));
    }
}

/// The page's helpers pair the histogram's sample with their lead: each reads the sample and
/// computes its blocks of the pairs (`Share::pairs_sample_block`), the lead computes the others
/// and takes every block in (`Analysis::finish_sample_pairs_with`), and each helper then starts its
/// pass with the lead's verdict (`Analysis::skip_sample` once the sample is read). Every block is
/// computed by exactly one share, and the report is the one of shares that each paired the whole
/// sample, bit for bit: by rows and by columns, f32 (with its centre) and f64.
#[test]
fn a_sample_paired_by_the_lead_and_its_helpers_together_changes_nothing() {
    use orthoscope::pass::analysis::Phase;
    for (file, f64) in [(model(3000, 80, 21), false), (concentrated(1500, 64, 22), true)] {
        let config = AnalysisConfig::default();
        for (of, columns) in [(2, false), (3, false), (5, false), (2, true)] {
            let case = format!("{of} shares, by columns: {columns}, f64: {f64}");
            let share = |i| if columns { Share::columns(i, of) } else { Share::new(i, of) }.unwrap();
            let read = |i| {
                let mut a = analysis(&file, config.clone());
                a.set_share(share(i));
                while a.phase() == Phase::Sample {
                    a.step().unwrap();
                }
                a
            };
            let mut lead = read(0);
            let mut helpers: Vec<Analysis> = (1..of).map(read).collect();
            let blocks = lead.sample_pair_blocks();
            assert!(blocks.len() > 2 * of as usize, "{case}: {} blocks", blocks.len());
            let mut dots: Vec<Option<Vec<f32>>> = vec![None; blocks.len()];
            for (k, rows) in blocks.iter().enumerate() {
                let owners: Vec<u32> = (0..of).filter(|&i| share(i).pairs_sample_block(k)).collect();
                assert_eq!(owners.len(), 1, "{case}: block {k} has one owner");
                let worker = if owners[0] == 0 { &lead } else { &helpers[owners[0] as usize - 1] };
                dots[k] = Some(worker.sample_pair_dots(rows));
            }
            // The blocks' work (rows × partners), dealt out evenly: no share above 1.5× its part.
            let n = blocks.last().map_or(0, |b| b.end);
            let work = |i: u32| -> usize {
                let mine = blocks.iter().enumerate().filter(|(k, _)| share(i).pairs_sample_block(*k));
                mine.map(|(_, b)| b.len() * (n - b.start)).sum()
            };
            let total: usize = (0..of).map(work).sum();
            assert!(
                (0..of).all(|i| work(i) * of as usize <= total * 3 / 2),
                "{case}: {:?}",
                (0..of).map(work).collect::<Vec<_>>()
            );
            let taken = lead
                .finish_sample_pairs_with(|_, _, _| dots.into_iter().map(Option::unwrap_or_default).collect())
                .unwrap();
            assert!(taken && lead.phase() == Phase::Pass, "{case}");
            let verdict = lead.sample_verdict().cloned().expect("a verdict once the sample is done");
            assert_eq!(verdict.f64, f64, "{case}");
            let mut lead = lead.run().unwrap();
            for helper in &mut helpers {
                assert!(helper.skip_sample(&verdict), "{case}: a helper that read the sample takes the verdict");
            }
            for helper in helpers {
                lead.absorb(&helper.run().unwrap().into_partial()).unwrap();
            }
            // As the shares ran before: each paired the whole sample itself.
            let mut before = analysis(&file, config.clone());
            before.set_share(share(0));
            let mut before = before.run().unwrap();
            for i in 1..of {
                before.absorb(&share_partial(&file, &config, share(i))).unwrap();
            }
            let report = |a: &Analysis| Report { gram_gflops: None, ..a.report(0.0).unwrap() };
            let (now, before) = (report(&lead), report(&before));
            // (Not assert_eq: a failure would print two whole reports.)
            assert!(now == before, "{case}: ε {} against {}", now.epsilon, before.epsilon);
            assert!(now.histogram.pairs_in_histogram > 0, "{case}");
        }
        // A helper that took in a block of pairs is past taking a verdict.
        let mut stepped = analysis(&file, config.clone());
        while stepped.phase() == Phase::Sample {
            stepped.step().unwrap();
        }
        stepped.step().unwrap();
        assert!(stepped.phase() != Phase::SamplePairs || !stepped.skip_sample(&SampleVerdict::default()));
    }
}

/// A helper stopped before the lead's verdict on the sample came (the page's *Stop here* in the
/// first second) posts a partial with nothing summed and no centre: taken in, it leaves the lead's
/// sums exactly as they were (it is not a reason to uncentre them).
#[test]
fn a_share_stopped_before_its_first_row_changes_nothing() {
    for dim in [96, 1100] {
        let file = model(700, dim, 5);
        let config = AnalysisConfig::default();
        let lead = share_partial(&file, &config, Share::new(0, 2).unwrap());
        let PairAccumulator::Gram(g) = &lead.gram else { panic!("the Gram route") };
        assert!(g.precision() == Precision::F32 && g.counts.seen > 0, "d = {dim}: a centred f32 pass");
        let mut idle = analysis(&file, config.clone());
        idle.set_share(Share::new(1, 2).unwrap());
        let idle = idle.into_partial();
        let mut merged = lead.clone();
        merged.merge(&idle).unwrap();
        // (Not assert_eq: a failure would print both G.)
        assert!(merged.gram == lead.gram, "d = {dim}: the same sums, bit for bit");
        assert_eq!((merged.within, merged.blocks_seen), (lead.within, lead.blocks_seen), "d = {dim}");
    }
}

/// The running estimate's within-block pairs are measured on every ⌈d/256⌉-th position of the
/// plan's order, whoever visits it: two and three shares measure the same blocks, and the merge
/// counts them, so the estimate scales the stratum by the blocks seen over the blocks measured.
#[test]
fn within_block_pairs_are_measured_on_the_same_positions_however_the_pass_is_shared() {
    for (dim, every) in [(72, 1), (1100, 5)] {
        let file = model(3000, dim, 9);
        let config = AnalysisConfig::default();
        let merged = |of: u32| {
            let mut all = share_partial(&file, &config, Share::new(0, of).unwrap());
            for index in 1..of {
                all.merge(&share_partial(&file, &config, Share::new(index, of).unwrap())).unwrap();
            }
            all
        };
        let (two, three) = (merged(2), merged(3));
        assert_eq!(two.blocks_seen, 47, "d = {dim}: 3000 rows in blocks of 64");
        assert_eq!(two.within.blocks, 47_u64.div_ceil(every), "d = {dim}: positions 0, {every}, …");
        assert_eq!((three.within.blocks, three.within.pairs), (two.within.blocks, two.within.pairs), "d = {dim}");
        assert!(close(three.within.sum, two.within.sum, 1e-12), "d = {dim}: Σ cos within");
    }
}
