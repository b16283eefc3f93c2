//! Why ε is what it is, against brute force computed here: the top-K pairs of
//! the histogram sample and its most opposed (antipodal) pairs, the exact nearest neighbours of one row, and the centred statistics
//! against an explicit centred all-pairs loop; token strings from a GGUF vocabulary and a
//! tokenizer.json.

use std::rc::Rc;

use orthoscope::explain::centred::centred;
use orthoscope::explain::neighbours::{nearest, NeighboursError};
use orthoscope::fixtures::synth::{class1_like, safetensors_bytes, trained_like, TensorSpec};
use orthoscope::fixtures::writers::gguf_model;
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::stats::{ANTIPODAL_PAIRS, TOP_PAIRS};
use orthoscope::read::format::DType;
use orthoscope::read::matrix::{MatrixError, Query};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;

const TENSOR: &str = "model.embed_tokens.weight";

fn job_of(sources: Vec<(&str, Vec<u8>)>) -> Job {
    let sources: Vec<Rc<dyn ByteSource>> =
        sources.into_iter().map(|(n, b)| Rc::new(SliceSource::new(n, b)) as Rc<dyn ByteSource>).collect();
    let (job, _) = Job::open(sources, None, AnalysisConfig::default()).expect("job opens");
    job.run().expect("job runs")
}

fn safetensors_job(values: &[f32], rows: usize, dim: usize) -> Job {
    let bytes = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, values)]);
    job_of(vec![("generated.safetensors", bytes)])
}

/// Unit rows in f64; `None` for zero or non-finite rows (kept in place so indices are row ids).
fn unit_rows(values: &[f32], rows: usize, dim: usize) -> Vec<Option<Vec<f64>>> {
    (0..rows)
        .map(|r| {
            let row = &values[r * dim..(r + 1) * dim];
            let norm = row.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
            (row.iter().all(|x| x.is_finite()) && norm > 0.0).then(|| row.iter().map(|&x| x as f64 / norm).collect())
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn top_pairs_of_the_sample_are_the_most_similar_pairs_by_brute_force() {
    // 700 rows < the histogram's 2048: the sample is the whole matrix, every pair is in it.
    let (rows, dim) = (700, 24);
    let values = class1_like(rows, dim, 5);
    let report = safetensors_job(&values, rows, dim).report(0.0).expect("report");
    assert_eq!(report.top_pairs.len(), TOP_PAIRS);
    let units = unit_rows(&values, rows, dim);
    let mut all: Vec<(f64, u64, u64)> = Vec::new();
    for i in 0..rows {
        for j in i + 1..rows {
            if let (Some(a), Some(b)) = (&units[i], &units[j]) {
                all.push((dot(a, b), i as u64, j as u64));
            }
        }
    }
    all.sort_by(|x, y| y.0.total_cmp(&x.0));
    for (k, (p, want)) in report.top_pairs.iter().zip(&all).enumerate() {
        // The sample's cosines come from the f32 kernel: agree to f32 rounding.
        assert!((p.cosine - want.0).abs() < 1e-5, "pair {k}: {} vs {}", p.cosine, want.0);
        assert!(p.a < p.b);
        let true_cos = dot(units[p.a as usize].as_ref().unwrap(), units[p.b as usize].as_ref().unwrap());
        assert!((p.cosine - true_cos).abs() < 1e-5, "pair {k} names rows whose cosine is {true_cos}");
    }
    // The 20th is no less similar than the 21st of brute force (up to f32 rounding).
    assert!(report.top_pairs.last().unwrap().cosine >= all[TOP_PAIRS].0 - 1e-5);
    assert!(report.top_pairs.windows(2).all(|w| w[0].cosine >= w[1].cosine), "most similar first");
    assert!(report.top_pairs.iter().all(|p| p.a_token.is_none()), "no vocabulary, no strings");
}

#[test]
fn planted_antipodal_rows_lead_the_most_opposed_pairs_with_cos_near_minus_one() {
    // 700 rows < the histogram's 2048: every pair is in the sample. Two rows are planted as the
    // negatives of others, scaled off unit length (decoder rows are not unit): u and −2.5u, v and
    // −0.3v. At d = 128 random rows' cosines spread by ~0.09, so none other comes near −0.5.
    let (rows, dim) = (700, 128);
    let mut values = orthoscope::fixtures::synth::random_init(rows, dim, 8);
    for (from, to, scale) in [(3usize, 40usize, -2.5f32), (123, 500, -0.3)] {
        let source: Vec<f32> = values[from * dim..(from + 1) * dim].to_vec();
        for (v, x) in values[to * dim..(to + 1) * dim].iter_mut().zip(source) {
            *v = scale * x;
        }
    }
    let job = safetensors_job(&values, rows, dim);
    let report = job.report(0.0).expect("report");
    let opposed = &report.antipodal_pairs;
    assert_eq!(opposed.len(), ANTIPODAL_PAIRS);
    let mut planted: Vec<(u64, u64)> = opposed[..2].iter().map(|p| (p.a, p.b)).collect();
    planted.sort();
    assert_eq!(planted, vec![(3, 40), (123, 500)], "the planted pairs come first");
    assert!(opposed[..2].iter().all(|p| (p.cosine + 1.0).abs() < 1e-6), "{:?}", &opposed[..2]);
    // The rest are the most opposed pairs of brute force, most opposed first.
    let units = unit_rows(&values, rows, dim);
    let mut all: Vec<(f64, u64, u64)> = Vec::new();
    for i in 0..rows {
        for j in i + 1..rows {
            all.push((dot(units[i].as_ref().unwrap(), units[j].as_ref().unwrap()), i as u64, j as u64));
        }
    }
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    for (k, (p, want)) in opposed.iter().zip(&all).enumerate() {
        assert!((p.cosine - want.0).abs() < 1e-5, "pair {k}: {} vs {}", p.cosine, want.0);
        assert!(p.a < p.b);
        let true_cos = dot(units[p.a as usize].as_ref().unwrap(), units[p.b as usize].as_ref().unwrap());
        assert!((p.cosine - true_cos).abs() < 1e-5, "pair {k} names rows whose cosine is {true_cos}");
    }
    assert!(opposed.windows(2).all(|w| w[0].cosine <= w[1].cosine), "most opposed first");
    assert!(opposed.last().unwrap().cosine <= all[ANTIPODAL_PAIRS].0 + 1e-5);
    // The most similar pairs are untouched by the planted ones.
    assert!(report.top_pairs.iter().all(|p| p.cosine > 0.0));
    // The CLI's text names the most opposed pair, below −0.5.
    let text = orthoscope::result::text::report(&report);
    let line = text.lines().find(|l| l.starts_with("most opposed pair of the sample")).expect(&text);
    assert!(line.contains("(cos -1.0000)") && line.contains("2 of the 20 most opposed below -0.5"), "{line}");
    // Without a strongly opposed pair the line is left out.
    let plain =
        safetensors_job(&orthoscope::fixtures::synth::random_init(rows, dim, 8), rows, dim).report(0.0).unwrap();
    assert!(plain.antipodal_pairs.first().is_some_and(|p| p.cosine > -0.5 && p.cosine < 0.0));
    assert!(!orthoscope::result::text::report(&plain).contains("most opposed"));
    // An old Report without the field still reads, with no opposed pairs.
    let mut json = serde_json::to_value(&report).unwrap();
    json.as_object_mut().unwrap().remove("antipodal_pairs");
    let old: orthoscope::Report = serde_json::from_value(json).unwrap();
    assert!(old.antipodal_pairs.is_empty());
}

#[test]
fn nearest_neighbours_equal_brute_force_over_all_rows() {
    let (rows, dim) = (3000, 32);
    let mut values = trained_like(rows, dim, 9);
    // A zero row and a NaN row are skipped, never neighbours.
    values[17 * dim..18 * dim].fill(0.0);
    values[18 * dim] = f32::NAN;
    let job = safetensors_job(&values, rows, dim);
    let units = unit_rows(&values, rows, dim);
    for row in [0u64, 1234, 2999] {
        let got = nearest(job.matrix(), row, 10).expect("neighbours");
        let q = units[row as usize].as_ref().unwrap();
        let mut want: Vec<(f64, u64)> = units
            .iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 != row)
            .filter_map(|(i, u)| u.as_ref().map(|u| (dot(q, u), i as u64)))
            .collect();
        want.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(got.neighbours.len(), 10);
        assert_eq!(got.rows_compared, rows as u64 - 3);
        assert_eq!(got.rows_dropped, 2);
        for (n, w) in got.neighbours.iter().zip(&want) {
            assert_eq!(n.row, w.1, "row {row}");
            assert!((n.cosine - w.0).abs() < 1e-12, "{} vs {}", n.cosine, w.0);
        }
    }
    let m = job.matrix();
    assert!(matches!(nearest(m, 17, 5), Err(NeighboursError::Matrix(MatrixError::UnusableRow { row: 17, .. }))));
    assert!(matches!(
        nearest(m, 3000, 5),
        Err(NeighboursError::Matrix(MatrixError::RowOutOfRange { row: 3000, last: 2999 }))
    ));
    assert!(matches!(nearest(m, 0, 0), Err(NeighboursError::BadK { .. })));
    assert_eq!(m.resolve(&Query::Token("the".into())), Err(MatrixError::NoVocabulary));
}

#[test]
fn centred_statistics_equal_an_explicit_centred_all_pairs_loop() {
    for (rows, dim, values) in
        [(400, 16, class1_like(400, 16, 3)), (900, 40, trained_like(900, 40, 4)), (300, 8, class1_like(300, 8, 11))]
    {
        let job = safetensors_job(&values, rows, dim);
        let c = centred(job.matrix()).expect("centred");
        let units: Vec<Vec<f64>> = unit_rows(&values, rows, dim).into_iter().flatten().collect();
        let v = units.len() as f64;
        let m: Vec<f64> = (0..dim).map(|k| units.iter().map(|u| u[k]).sum::<f64>() / v).collect();
        let centred_rows: Vec<Vec<f64>> = units
            .iter()
            .map(|u| {
                let c: Vec<f64> = u.iter().zip(&m).map(|(x, m)| x - m).collect();
                let n = dot(&c, &c).sqrt();
                c.iter().map(|x| x / n).collect()
            })
            .collect();
        let (mut sum, mut sum_sq, mut pairs) = (0.0, 0.0, 0u64);
        for i in 0..centred_rows.len() {
            for j in i + 1..centred_rows.len() {
                let c = dot(&centred_rows[i], &centred_rows[j]);
                sum += c;
                sum_sq += c * c;
                pairs += 1;
            }
        }
        let mu = sum / pairs as f64;
        let sigma = (sum_sq / pairs as f64 - mu * mu).sqrt();
        assert_eq!(c.pairs, pairs);
        assert!((c.mu - mu).abs() < 1e-9, "μ {} vs {mu}", c.mu);
        assert!((c.sigma - sigma).abs() < 1e-9, "σ {} vs {sigma}", c.sigma);
        assert!((c.epsilon - (mu + 2.0 * sigma)).abs() < 1e-9);
        assert!((c.mean_norm - dot(&m, &m).sqrt()).abs() < 1e-12);
        // Centring removes the common direction: the mean centred cosine is −1/(V−1) exactly
        // (Σᵢ (uᵢ − m) = 0), far below the raw μ of a class-1-like matrix.
        let report = job.report(0.0).expect("report");
        assert!(c.mu < report.mu, "centred μ {} vs raw {}", c.mu, report.mu);
    }
}

#[test]
fn gguf_vocabulary_names_top_pairs_and_neighbours() {
    let (rows, dim) = (500, 32);
    let emb = class1_like(rows, dim, 7);
    let out = trained_like(rows, dim, 8);
    let files = gguf_model(&emb, &out, rows, dim, &DType::F32, 1).expect("gguf");
    let file = files.into_iter().next().expect("one file");
    let job = job_of(vec![("model.gguf", file)]);
    let report = job.report(0.0).expect("report");
    let p = report.top_pairs.first().expect("pairs");
    assert_eq!(p.a_token.as_deref(), Some(format!("tok{}", p.a).as_str()));
    assert_eq!(p.b_token.as_deref(), Some(format!("tok{}", p.b).as_str()));
    let m = job.matrix();
    assert_eq!(m.resolve(&Query::Token("tok42".into())), Ok(42));
    assert!(matches!(m.resolve(&Query::Token("nope".into())), Err(MatrixError::UnknownToken { .. })));
    let n = nearest(m, 42, 3).expect("neighbours");
    assert_eq!(n.token.as_deref(), Some("tok42"));
    assert!(n.neighbours.iter().all(|x| x.token == Some(format!("tok{}", x.row))));
}

#[test]
fn a_tokenizer_json_dropped_with_safetensors_names_the_rows() {
    let (rows, dim) = (300, 16);
    let values = class1_like(rows, dim, 2);
    let bytes = safetensors_bytes(&[TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &values)]);
    let vocab: serde_json::Map<String, serde_json::Value> =
        (0..rows).map(|i| (format!("w{i}"), serde_json::Value::from(i))).collect();
    let tokenizer = serde_json::json!({ "model": { "type": "BPE", "vocab": vocab }, "added_tokens": [] });
    let job = job_of(vec![("model.safetensors", bytes), ("tokenizer.json", tokenizer.to_string().into_bytes())]);
    assert_eq!(job.matrix().resolve(&Query::Token("w7".into())), Ok(7));
    let report = job.report(0.0).expect("report");
    let p = report.top_pairs.first().expect("pairs");
    assert_eq!(p.a_token, Some(format!("w{}", p.a)));
}

#[test]
fn per_token_cosines_of_embedding_and_unembedding_equal_brute_force() {
    let (rows, dim) = (800, 24);
    let emb = class1_like(rows, dim, 31);
    // The output rows: the input rows plus noise of growing size, so the cosines spread out.
    let noise = trained_like(rows, dim, 32);
    let mut out: Vec<f32> =
        emb.iter().zip(&noise).enumerate().map(|(i, (e, n))| e + n * (i / dim) as f32 / 200.0).collect();
    out[5 * dim..6 * dim].fill(0.0); // token 5 has no output direction: left out
    let file = safetensors_bytes(&[
        TensorSpec::matrix(TENSOR, DType::F32, rows, dim, &emb),
        TensorSpec::matrix("lm_head.weight", DType::F32, rows, dim, &out),
    ]);
    let report = job_of(vec![("two.safetensors", file)]).report(0.0).expect("report");
    let u = report.unembedding.expect("a separate unembedding");
    assert!(u.histogram.as_ref().is_some_and(|h| h.pairs_in_histogram > 0), "Fig. 10: its own pairwise histogram");
    let a = u.alignment.expect("per-token cosines");
    let (eu, ou) = (unit_rows(&emb, rows, dim), unit_rows(&out, rows, dim));
    let cos: Vec<f64> =
        eu.iter().zip(&ou).filter_map(|(e, o)| Some(dot(e.as_ref()?, o.as_ref()?).clamp(-1.0, 1.0))).collect();
    let n = cos.len() as f64;
    let mean = cos.iter().sum::<f64>() / n;
    let sigma = (cos.iter().map(|c| c * c).sum::<f64>() / n - mean * mean).sqrt();
    assert_eq!(a.tokens, rows as u64 - 1);
    assert_eq!(a.tokens_dropped, 1);
    assert!((a.mean - mean).abs() < 1e-12 && (a.sigma - sigma).abs() < 1e-12, "{} {}", a.mean, a.sigma);
    // To rounding: the norms here are summed in another order than the reader's (`lane_sum`).
    assert!((a.min - cos.iter().copied().fold(f64::INFINITY, f64::min)).abs() < 1e-15, "{}", a.min);
    assert!((a.max - cos.iter().copied().fold(f64::NEG_INFINITY, f64::max)).abs() < 1e-15, "{}", a.max);
    assert_eq!(a.histogram.counts.iter().sum::<u64>(), a.tokens);
    assert!(
        a.max > 0.999 && a.min < 0.9,
        "the cosines spread from the first tokens to the last: {} … {}",
        a.min,
        a.max
    );
}
