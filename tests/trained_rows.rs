//! The rows a model never trained (`read::untrained`, `pass::set_aside`, `Report::trained`): the
//! statistics without them, removed from the pass's own s and G, against a fresh pass over the
//! rows kept and against the f64 all-pairs definition; the sample's pairs kept apart; every
//! choice of rules; estimates; the permalink; the unembedding.

use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::fixtures::setup::run_job;
use orthoscope::fixtures::synth::{bert_like, safetensors_bytes, Normal, TensorSpec};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::format::DType;
use orthoscope::result::permalink;
use orthoscope::result::report::{histogram_csv, Report};

const TENSOR: &str = "model.embed_tokens.weight";

fn report_of(files: Vec<(&str, Vec<u8>)>, config: AnalysisConfig) -> Report {
    run_job(files, None, config).expect("job runs").report(0.0).expect("report")
}

fn f64_config() -> AnalysisConfig {
    AnalysisConfig { precision: Precision::F64, ..AnalysisConfig::default() }
}

/// The paper's definition over the rows `keep` keeps, in f64 by brute force: (rows, μ, σ).
fn all_pairs(values: &[f32], dim: usize, keep: impl Fn(usize) -> bool) -> (u64, f64, f64) {
    let a = AllPairs::of_kept(values, dim, keep);
    (a.kept, a.mu, a.sigma)
}

/// The kept rows alone, as their own file: what a fresh pass over them gives.
fn fresh(values: &[f32], rows: usize, dim: usize, keep: impl Fn(usize) -> bool, config: AnalysisConfig) -> Report {
    let kept: Vec<f32> =
        values.chunks_exact(dim).enumerate().filter(|(r, _)| keep(*r)).flat_map(|(_, row)| row.to_vec()).collect();
    let n = kept.len() / dim;
    assert!(n < rows);
    let bytes = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, n, dim, &kept)]);
    report_of(vec![("kept.safetensors", bytes)], config)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

#[test]
fn removal_equals_a_fresh_pass_over_the_kept_rows_for_any_set() {
    let (rows, dim) = (700, 48);
    let mut n = Normal::new(5);
    let random: Vec<usize> = (0..rows).filter(|_| n.sample() > 1.2).collect();
    let cases: Vec<(&str, Vec<usize>, usize)> = vec![
        ("random subset", random, rows),
        ("a range at the start", (0..40).collect(), rows),
        ("a range in the middle", (300..377).collect(), rows),
        ("rows past the vocabulary only", vec![], 650),
        ("both rules, overlapping nothing", (10..20).collect(), 690),
        ("all rows but two", (2..rows).collect(), rows),
    ];
    for (what, unused, vocab) in cases {
        let (values, tokenizer) = bert_like(rows, dim, vocab, &unused, 11);
        let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
        let keep = |r: usize| r < vocab && !unused.contains(&r);
        for config in [f64_config(), AnalysisConfig::default()] {
            let precision = config.precision;
            let report = report_of(
                vec![("model.safetensors", file.clone()), ("tokenizer.json", tokenizer.clone().into_bytes())],
                config.clone(),
            );
            let t = report.trained.as_ref().unwrap_or_else(|| panic!("{what}: rows set aside"));
            let w = &t.without;
            assert!(w.exact, "{what}");
            assert_eq!(w.rows_excluded, (rows - (0..rows).filter(|&r| keep(r)).count()) as u64, "{what}");
            let (kept, mu, sigma) = all_pairs(&values, dim, keep);
            assert_eq!(w.rows_used, kept, "{what}");
            assert_eq!(w.pairs, kept * (kept - 1) / 2, "{what}");
            // f64: the subtraction is exact to rounding; f32: within the f32 kernel's documented
            // 1e-6 of σ (the removed rows' own terms are f64, the pass's G rounded rows to f32).
            let (mu_tol, sigma_tol) = if precision == Precision::F64 { (1e-12, 1e-12) } else { (1e-7, 1e-5) };
            assert!((w.mu - mu).abs() <= mu_tol * mu.abs().max(1.0), "{what} {precision:?}: μ {} vs {mu}", w.mu);
            if kept > 2 {
                assert!(rel(w.sigma, sigma) <= sigma_tol, "{what} {precision:?}: σ {} vs {sigma}", w.sigma);
                let fresh = fresh(&values, rows, dim, keep, config);
                assert!(rel(w.sigma, fresh.sigma) <= sigma_tol, "{what}: σ against a fresh pass");
                assert!((w.mu - fresh.mu).abs() <= mu_tol * fresh.mu.abs().max(1.0), "{what}: μ against a fresh pass");
            } else {
                assert_eq!(w.pairs, 1);
            }
            // The paper's ε stays that of every row.
            let (_, all_mu, _) = all_pairs(&values, dim, |_| true);
            assert!((report.mu - all_mu).abs() < 1e-7, "{what}: the headline counts every row");
            assert!(
                w.top_pairs.iter().all(|p| keep(p.a as usize) && keep(p.b as usize)),
                "{what}: pairs of kept rows only"
            );
        }
    }
}

#[test]
fn the_row_route_of_few_rows_removes_exactly_too() {
    // V < d/2: the pass keeps the rows themselves, no G.
    let (rows, dim) = (40, 160);
    let unused = vec![3, 4, 30];
    let (values, tokenizer) = bert_like(rows, dim, 36, &unused, 3);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let w = &report.trained.expect("set aside").without;
    let (kept, mu, sigma) = all_pairs(&values, dim, |r| r < 36 && !unused.contains(&r));
    assert_eq!(w.rows_used, kept);
    assert!((w.mu - mu).abs() < 1e-12 && rel(w.sigma, sigma) < 1e-12, "{} {} vs {mu} {sigma}", w.mu, w.sigma);
}

#[test]
fn each_rule_is_counted_and_every_choice_of_rules_is_measured() {
    let (rows, dim) = (600, 32);
    let unused: Vec<usize> = (100..130).collect();
    let (values, tokenizer) = bert_like(rows, dim, 560, &unused, 8);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let t = report.trained.clone().expect("set aside");
    let rules: Vec<(&str, u64, bool)> = t.rules.iter().map(|r| (r.rule.as_str(), r.rows, r.enabled)).collect();
    assert_eq!(rules, vec![("past_vocabulary", 40, true), ("unused_token", 30, true)]);
    assert_eq!(t.without.excluded, vec![[100, 130], [560, 600]]);
    assert_eq!(t.without.rules_enabled, vec!["past_vocabulary", "unused_token"]);
    // The other choices: each rule alone.
    let mut choices: Vec<Vec<String>> = t.variants.iter().map(|v| v.rules_enabled.clone()).collect();
    choices.sort();
    assert_eq!(choices, vec![vec!["past_vocabulary".to_string()], vec!["unused_token".to_string()]]);
    for v in &t.variants {
        let past = v.rules_enabled.iter().any(|r| r == "past_vocabulary");
        let keep = |r: usize| if past { r < 560 } else { !unused.contains(&r) };
        let (kept, mu, sigma) = all_pairs(&values, dim, keep);
        assert_eq!(v.rows_used, kept);
        assert!((v.mu - mu).abs() < 1e-12 && rel(v.sigma, sigma) < 1e-12, "{:?}", v.rules_enabled);
        assert!(v.top_pairs.iter().all(|p| keep(p.a as usize) && keep(p.b as usize)));
    }
    // The near-duplicate unused rows fill the paper's list of most similar pairs; the list without
    // them holds none, and the overlay counts their pairs.
    assert!(report.top_pairs.iter().all(|p| p.a >= 100 && p.b >= 100 && (p.a < 130 || p.a >= 560)));
    assert!(!t.without.top_pairs.is_empty());
    assert_eq!(t.without.aside_counts.len(), report.histogram.counts.len());
    let aside: u64 = t.without.aside_counts.iter().sum();
    assert!(aside > 0 && aside < report.histogram.pairs_in_histogram);
    // Tokens name the pairs of the list without them too.
    assert!(t.without.top_pairs.iter().all(|p| p.a_token == Some(format!("w{}", p.a))));
    // The histogram's CSV splits the full range's pairs the same way; the zoom's cells stay empty.
    let csv = histogram_csv(&report);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("histogram,bin_lo,bin_hi,count,percent_of_pairs,count_trained_rows,count_with_set_aside_row")
    );
    let (mut kept, mut with_aside) = (0u64, 0u64);
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 7, "{line}");
        if cells[0] == "full" {
            let (c, k, a): (u64, u64, u64) =
                (cells[3].parse().unwrap(), cells[5].parse().unwrap(), cells[6].parse().unwrap());
            assert_eq!(c, k + a, "{line}");
            kept += k;
            with_aside += a;
        } else {
            assert_eq!((cells[5], cells[6]), ("", ""));
        }
    }
    assert_eq!((kept + with_aside, with_aside), (report.histogram.pairs_in_histogram, aside));
    // The CLI's text names both numbers' classes as the card does ("Class 1", never "class One").
    let text = orthoscope::result::text::report(&report);
    assert!(text.contains("without the 70 rows the model never trained"), "{text}");
    assert!(!text.contains("class One") && !text.contains("class Two") && !text.contains("class Between"), "{text}");
    assert!(text.lines().any(|l| l.starts_with(report.class.label())), "{text}");
}

#[test]
fn nothing_is_set_aside_without_a_vocabulary_or_for_a_fully_named_one() {
    let (rows, dim) = (200, 16);
    let (values, tokenizer) = bert_like(rows, dim, rows, &[], 2);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    assert!(report_of(vec![("m.safetensors", file.clone())], f64_config()).trained.is_none());
    let named = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    assert!(named.trained.is_none());
    let json = serde_json::to_value(&named).expect("json");
    assert!(json.get("trained").is_some_and(|t| t.is_null()), "the contract's null");
}

#[test]
fn an_early_stop_estimates_from_the_sample_and_says_so() {
    let (rows, dim) = (4000, 32);
    let unused: Vec<usize> = (0..4000).filter(|r| r % 50 == 7).collect();
    let (values, tokenizer) = bert_like(rows, dim, rows, &unused, 4);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let config = AnalysisConfig { stop_after_rows: Some(1024), histogram_rows: 1024, ..f64_config() };
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], config);
    assert!(!report.exact);
    let w = &report.trained.expect("set aside").without;
    assert!(!w.exact);
    let (_, mu, sigma) = all_pairs(&values, dim, |r| !unused.contains(&r));
    let eps = mu + 2.0 * sigma;
    assert!((w.epsilon - eps).abs() < 0.02, "the sample's ε {} near {eps}", w.epsilon);
    assert!(w.epsilon < report.epsilon, "the unused rows' shared direction raises the paper's ε");
}

#[test]
fn a_permalink_carries_the_numbers_without_the_untrained_rows() {
    let (rows, dim) = (500, 24);
    let unused: Vec<usize> = (40..60).collect();
    let (values, tokenizer) = bert_like(rows, dim, 480, &unused, 6);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let fragment = permalink::encode(&report);
    let back = permalink::decode(&fragment).expect("decodes");
    let (a, b) = (report.trained.clone().expect("set aside"), back.trained.clone().expect("carried"));
    assert_eq!(b.without.excluded, a.without.excluded);
    assert_eq!(b.without.rows_excluded, a.without.rows_excluded);
    assert_eq!(b.rules, a.rules);
    assert_eq!((b.without.mu, b.without.sigma, b.without.epsilon), (a.without.mu, a.without.sigma, a.without.epsilon));
    assert_eq!(b.without.class, a.without.class);
    // A link of a report with nothing set aside decodes without it.
    let mut plain = back.clone();
    plain.trained = None;
    assert!(permalink::decode(&permalink::encode(&plain)).expect("decodes").trained.is_none());
}

#[test]
fn the_unembedding_sets_aside_the_same_rules() {
    let (rows, dim) = (400, 24);
    let unused: Vec<usize> = (10..30).collect();
    let (values, tokenizer) = bert_like(rows, dim, 380, &unused, 9);
    let (out, _) = bert_like(rows, dim, 380, &unused, 10);
    let file = safetensors_bytes(&[
        TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values),
        TensorSpec::matrix("lm_head.weight", DType::F32, rows, dim, &out),
    ]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let u = report.unembedding.expect("separate unembedding");
    let w = &u.trained.expect("its rows set aside").without;
    let (kept, mu, sigma) = all_pairs(&out, dim, |r| r < 380 && !unused.contains(&r));
    assert_eq!(w.rows_used, kept);
    assert!((w.mu - mu).abs() < 1e-12 && rel(w.sigma, sigma) < 1e-12);
}

#[test]
fn a_folder_s_config_names_the_model_in_the_report_and_its_link() {
    // Not the rows never trained, but the same card: a folder's generic `model.safetensors` is
    // named by its config.json, and the name travels in the link beside `trained`.
    let (rows, dim) = (300, 16);
    let (values, tokenizer) = bert_like(rows, dim, 290, &[], 9);
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let config = br#"{"_name_or_path": "sentence-transformers/all-MiniLM-L6-v2", "vocab_size": 300}"#.to_vec();
    let report = report_of(
        vec![("model.safetensors", file.clone()), ("config.json", config), ("tokenizer.json", tokenizer.into_bytes())],
        f64_config(),
    );
    assert_eq!(report.model.as_deref(), Some("sentence-transformers/all-MiniLM-L6-v2"));
    assert_eq!(report.model_name(), "sentence-transformers/all-MiniLM-L6-v2");
    assert!(orthoscope::result::report::export_stem(&report).contains("all-MiniLM-L6-v2"));
    let back = permalink::decode(&permalink::encode(&report)).expect("decodes");
    assert_eq!(back.model, report.model);
    assert_eq!(back.trained.map(|t| t.without.rows_excluded), Some(10));
    // Without a config the file names it, as before.
    let plain = report_of(vec![("model.safetensors", file)], f64_config());
    assert_eq!((plain.model.clone(), plain.model_name()), (None, "model".to_string()));
}

/// Rows no name sets aside but whose weights look like the unused rows': in the direction the
/// unused rows share (any model), and short where the model is untied (an input row is updated
/// only when its token is read).
#[test]
fn the_suspected_rule_names_rows_that_look_like_the_unused_ones_and_is_off_by_default() {
    let (rows, dim) = (500, 32);
    let unused: Vec<usize> = (200..230).collect();
    let (mut values, tokenizer) = bert_like(rows, dim, rows, &unused, 11);
    // Three ordinary-named rows that training never reached either: the unused rows' drift.
    let hidden = [7usize, 64, 450];
    let mut n = Normal::new(0x6869);
    // Their drift: the unused rows' mean (their shared part), plus noise as large as theirs.
    let drift: Vec<f64> = (0..dim)
        .map(|c| unused.iter().map(|&r| values[r * dim + c] as f64).sum::<f64>() / unused.len() as f64)
        .collect();
    for &r in &hidden {
        for (c, v) in values[r * dim..(r + 1) * dim].iter_mut().enumerate() {
            *v = (drift[c] + 0.02 * n.sample()) as f32;
        }
    }
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let t = report.trained.clone().expect("set aside");
    let rules: Vec<(&str, u64, bool)> = t.rules.iter().map(|r| (r.rule.as_str(), r.rows, r.enabled)).collect();
    // Suspected rows are shown and counted, but not set aside until the user asks.
    assert_eq!(rules, vec![("unused_token", 30, true), ("suspected", 3, false)]);
    assert_eq!(t.without.rules_enabled, vec!["unused_token"]);
    let both = t.variants.iter().find(|v| v.rules_enabled.len() == 2).expect("both rules measured");
    assert_eq!(both.excluded, vec![[7, 8], [64, 65], [200, 230], [450, 451]]);
    let (kept, mu, sigma) = all_pairs(&values, dim, |r| !unused.contains(&r) && !hidden.contains(&r));
    assert_eq!(both.rows_used, kept);
    assert!((both.mu - mu).abs() < 1e-12 && rel(both.sigma, sigma) < 1e-12);
    // The suspected rows alone, as a choice of their own, are the three hidden rows.
    let alone = t.variants.iter().find(|v| v.rules_enabled == ["suspected"]).expect("suspected alone");
    assert_eq!(alone.rows_excluded, 3);
    let text = orthoscope::result::text::report(&report);
    assert!(text.contains("not set aside: 3 suspected from the weights alone"), "{text}");
}

#[test]
fn an_untied_input_embedding_also_suspects_rows_as_short_as_the_unused_ones() {
    let (rows, dim) = (400, 24);
    let unused: Vec<usize> = (10..40).collect();
    let mut values = orthoscope::fixtures::synth::trained_like(rows, dim, 12);
    let norm = |v: &[f32]| v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    let typical = norm(&values[0..dim]);
    // The unused rows and three unnamed ones: random directions, a fifth of a trained row's length.
    let hidden = [100usize, 101, 399];
    for (i, r) in unused.iter().chain(&hidden).copied().enumerate() {
        let length = if hidden.contains(&r) { 0.15 } else { 0.15 + 0.1 * i as f64 / unused.len() as f64 };
        let scale = (length * typical / norm(&values[r * dim..(r + 1) * dim])) as f32;
        values[r * dim..(r + 1) * dim].iter_mut().for_each(|x| *x *= scale);
    }
    let tokens: serde_json::Map<String, serde_json::Value> = (0..rows)
        .map(|i| {
            (if unused.contains(&i) { format!("[unused{i}]") } else { format!("w{i}") }, serde_json::Value::from(i))
        })
        .collect();
    let tokenizer = serde_json::json!({ "model": { "type": "WordPiece", "vocab": tokens }, "added_tokens": [] });
    let out = orthoscope::fixtures::synth::trained_like(rows, dim, 13);
    let with_head = |head: bool| {
        let mut specs = vec![TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)];
        if head {
            specs.push(TensorSpec::matrix("lm_head.weight", DType::F32, rows, dim, &out));
        }
        let file = safetensors_bytes(&specs);
        report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.to_string().into_bytes())], f64_config())
    };
    let untied = with_head(true);
    let t = untied.trained.expect("set aside");
    let suspected = t.rules.iter().find(|r| r.rule == "suspected").expect("the norm names rows");
    assert_eq!(suspected.rows, 3);
    let alone = t.variants.iter().find(|v| v.rules_enabled == ["suspected"]).expect("suspected alone");
    assert_eq!(alone.excluded, vec![[100, 102], [399, 400]]);
    // Tied (no output matrix of its own): every row is updated through the softmax, so the norm
    // says nothing and random directions share none.
    let tied = with_head(false).trained.expect("set aside");
    assert!(tied.rules.iter().all(|r| r.rule != "suspected"), "{:?}", tied.rules);
}

#[test]
fn the_most_opposed_pairs_without_set_aside_rows_are_those_of_the_kept_rows() {
    // Two antipodal pairs planted: one between trained rows, one with a row past the vocabulary.
    let (rows, dim) = (600, 32);
    let unused: Vec<usize> = (100..130).collect();
    let (mut values, tokenizer) = bert_like(rows, dim, 560, &unused, 8);
    for (from, to) in [(5usize, 200usize), (7, 580)] {
        let source: Vec<f32> = values[from * dim..(from + 1) * dim].iter().map(|x| -3.0 * x).collect();
        values[to * dim..(to + 1) * dim].copy_from_slice(&source);
    }
    let file = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let report = report_of(vec![("m.safetensors", file), ("tokenizer.json", tokenizer.into_bytes())], f64_config());
    let pairs = |list: &[orthoscope::pass::stats::TopPair]| list.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>();
    let all = pairs(&report.antipodal_pairs[..2]);
    assert!(all.contains(&(5, 200)) && all.contains(&(7, 580)), "{all:?}");
    let keep = |r: u64| r < 560 && !(100..130).contains(&r);
    let t = report.trained.as_ref().expect("set aside");
    for w in std::iter::once(&t.without).chain(&t.variants) {
        let listed = &w.antipodal_pairs;
        assert!(!listed.is_empty(), "{:?}", w.rules_enabled);
        assert!(listed.iter().all(|p| !w.is_aside(p.a) && !w.is_aside(p.b)), "{:?}", w.rules_enabled);
        assert!(listed.windows(2).all(|x| x[0].cosine <= x[1].cosine), "most opposed first");
    }
    let w = &t.without;
    assert_eq!(pairs(&w.antipodal_pairs[..1]), vec![(5, 200)]);
    assert!((w.antipodal_pairs[0].cosine + 1.0).abs() < 1e-6);
    assert!(w.antipodal_pairs.iter().all(|p| keep(p.a) && keep(p.b)));
    // Against brute force over the kept rows (the sample is the whole matrix).
    let unit = |r: usize| {
        let row = &values[r * dim..(r + 1) * dim];
        let n = row.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
        row.iter().map(|&x| x as f64 / n).collect::<Vec<f64>>()
    };
    let kept: Vec<usize> = (0..rows).filter(|&r| keep(r as u64)).collect();
    let units: Vec<Vec<f64>> = kept.iter().map(|&r| unit(r)).collect();
    let mut cosines: Vec<f64> = Vec::new();
    for i in 0..units.len() {
        for j in i + 1..units.len() {
            cosines.push(units[i].iter().zip(&units[j]).map(|(a, b)| a * b).sum());
        }
    }
    cosines.sort_by(f64::total_cmp);
    for (p, want) in w.antipodal_pairs.iter().zip(&cosines) {
        assert!((p.cosine - want).abs() < 1e-5, "{} vs {want}", p.cosine);
    }
    // Tokens name them, as they name the most similar pairs.
    assert!(w.antipodal_pairs.iter().all(|p| p.a_token == Some(format!("w{}", p.a))));
}
