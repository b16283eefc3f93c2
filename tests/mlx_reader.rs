//! MLX's quantised safetensors: a `U32` weight with its `.scales` and `.biases` is read as one
//! matrix, dequantised as `scale · q + bias`, for every bits and group size MLX writes; the exact
//! pass over it equals an all-pairs f64 loop over the formula applied to the stored values.

use std::rc::Rc;

use orthoscope::fixtures::mlx_writer::{self, Quantised};
use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::demo::{generate, safetensors_bytes};
use orthoscope::read::format::mlx::ScaleType;
use orthoscope::read::format::DType;
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::result::report::Report;
use orthoscope::run::job::Job;

fn sources(files: &[(String, Vec<u8>)]) -> Vec<Rc<dyn ByteSource>> {
    files.iter().map(|(n, b)| Rc::new(SliceSource::new(n.clone(), b.clone())) as Rc<dyn ByteSource>).collect()
}

fn report(files: &[(String, Vec<u8>)]) -> Report {
    let config = AnalysisConfig { precision: Precision::F64, ..AnalysisConfig::default() };
    let (job, _) = Job::open(sources(files), None, config).expect("opens");
    job.run().expect("runs").report(0.0).expect("reports")
}

/// μ, σ by the f64 all-pairs definition.
fn oracle(values: &[f32], dim: usize) -> (f64, f64) {
    let a = AllPairs::of(values, dim);
    (a.mu, a.sigma)
}

#[test]
fn every_bits_and_group_size_matches_the_formula() {
    let (rows, dim) = (300, 256);
    let values = generate("trained-like", rows, dim, 5).unwrap();
    for bits in [2u8, 3, 4, 5, 6, 8] {
        for group in [32usize, 64, 128] {
            let files = mlx_writer::model(&values, rows, dim, bits, group, true);
            let r = report(&files);
            assert_eq!(r.dtype, format!("mlx-q{bits}-g{group}"));
            assert_eq!((r.rows, r.dim), (rows as u64, dim as u64));
            assert!(r.quantised, "{bits}/{group}");
            let q: Quantised = mlx_writer::quantise(&values, dim, bits, group, ScaleType::BF16);
            let (mu, sigma) = oracle(&mlx_writer::dequantized(&q), dim);
            assert!((r.mu - mu).abs() < 1e-9, "{bits}/{group}: μ {} vs {mu}", r.mu);
            assert!((r.sigma - sigma).abs() < 1e-9 * sigma.max(1e-3), "{bits}/{group}: σ {} vs {sigma}", r.sigma);
            assert!((r.epsilon - (mu + 2.0 * sigma)).abs() < 1e-9);
        }
    }
}

#[test]
fn without_a_config_the_shapes_decide_and_the_name_says_so() {
    let (rows, dim) = (200, 512);
    let values = generate("trained-like", rows, dim, 9).unwrap();
    let files = mlx_writer::model(&values, rows, dim, 4, 64, false);
    let (_, opened) = Job::open(sources(&files), None, AnalysisConfig::default()).expect("opens");
    let t = opened.tensors.iter().find(|t| t.name == "model.embed_tokens.weight").unwrap();
    assert_eq!(t.shape, vec![rows as u64, dim as u64]);
    match &t.dtype {
        DType::MlxAffine(a) => assert!(a.inferred && a.bits == 4 && a.group == 64),
        other => panic!("{other:?}"),
    }
    assert_eq!(t.dtype.name(), "mlx-q4-g64, inferred");
    let config = AnalysisConfig { precision: Precision::F64, ..AnalysisConfig::default() };
    let (job, _) = Job::open(sources(&files), None, config).unwrap();
    let r = job.run().unwrap().report(0.0).unwrap();
    let note = orthoscope::result::text::quantised_note(&r).unwrap();
    assert!(note.contains("inferred from the tensors' shapes"), "{note}");
    // The scales and biases are part of the view, not tensors of their own.
    assert!(!opened.tensors.iter().any(|t| t.name.ends_with(".scales") || t.name.ends_with(".biases")));
}

#[test]
fn a_per_layer_entry_overrides_the_default() {
    let (rows, dim) = (128, 256);
    let values = generate("trained-like", rows, dim, 2).unwrap();
    let mut files = mlx_writer::model(&values, rows, dim, 8, 32, false);
    let config = serde_json::json!({
        "hidden_size": dim,
        "quantization": {"group_size": 64, "bits": 4, "model.embed_tokens": {"group_size": 32, "bits": 8}},
    });
    files.push(("config.json".into(), config.to_string().into_bytes()));
    assert_eq!(report(&files).dtype, "mlx-q8-g32");
}

#[test]
fn shapes_no_quantisation_fits_are_refused_by_name() {
    let (rows, dim) = (64, 256);
    let values = generate("trained-like", rows, dim, 3).unwrap();
    let q = mlx_writer::quantise(&values, dim, 4, 64, ScaleType::BF16);
    let mut specs = mlx_writer::tensors("model.embed_tokens", &q, rows, dim);
    // Scales for one row fewer than the weights.
    specs[1].shape[0] -= 1;
    let keep = specs[1].data.len() - 8;
    specs[1].data.truncate(keep);
    let files = vec![("model.safetensors".to_string(), safetensors_bytes(&specs))];
    let err = Job::open(sources(&files), Some("model.embed_tokens.weight"), AnalysisConfig::default()).err().unwrap();
    let text = err.to_string();
    assert!(text.contains("MLX-quantised") && text.contains("scales"), "{text}");
}
