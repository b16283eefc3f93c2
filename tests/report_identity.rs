//! Nothing observable changes when the code inside changes: the Reports of a fixed set of
//! analyses (every route a pass can take, as the CLI runs them) are compared field by field with
//! the ones recorded in `tests/golden/reports.json`. A refactor that moves code must leave this
//! test green; a change that means to change a result re-records the file
//! (`ORTHOSCOPE_BLESS=1 cargo test --test report_identity`) and says why in its commit.
//!
//! Left out of the comparison: wall-clock times (`*_ms`, `gram_gflops`, which differ per run) and
//! `kernel` (the name of the SIMD kernel the CPU offers). Numbers are compared to a relative 1e-6:
//! far below what any change to the statistics moves, and above the last-bit differences an f32
//! kernel's fused multiply-adds may show on another CPU.

use std::path::{Path, PathBuf};

use orthoscope::fixtures::setup::embedding_file;
use orthoscope::fixtures::synth::{bert_like, safetensors_bytes, trained_like, TensorSpec};
use orthoscope::fixtures::writers::{gguf_model, npy_bytes, npz_bytes};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::pass::shares::Split;
use orthoscope::read::format::DType;
use orthoscope::run::threads::{analyze_paths, PassRequest};
use serde_json::{Map, Value};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/reports.json");

/// One analysis: its files (name, bytes) and how it is run.
struct Case {
    name: &'static str,
    files: Vec<(String, Vec<u8>)>,
    request: PassRequest,
}

fn f64_request() -> PassRequest {
    let config = AnalysisConfig { precision: Precision::F64, ..AnalysisConfig::default() };
    PassRequest { config, threads: Some(1), ..PassRequest::default() }
}

fn one(name: &str, bytes: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    vec![(name.to_string(), bytes)]
}

fn cases() -> Vec<Case> {
    let (rows, dim) = (1500, 64);
    let values = trained_like(rows, dim, 21);
    let st = |dtype| one("model.safetensors", embedding_file(&values, dim, dtype));
    let mut cases = vec![
        Case { name: "f32, exact, f64 arithmetic", files: st(DType::F32), request: f64_request() },
        Case {
            name: "f32, exact, the default arithmetic",
            files: st(DType::F32),
            request: PassRequest { threads: Some(1), ..PassRequest::default() },
        },
        Case { name: "bf16, exact", files: st(DType::BF16), request: f64_request() },
        Case {
            name: "an estimate stopped after 400 rows, seed 7",
            files: st(DType::F32),
            request: {
                let mut r = f64_request();
                r.config.seed = 7;
                r.config.stop_after_rows = Some(400);
                r
            },
        },
        Case {
            name: "two threads by rows",
            files: st(DType::F32),
            request: PassRequest { threads: Some(2), split: Split::Rows, ..f64_request() },
        },
        Case {
            name: "two threads by columns",
            files: st(DType::F32),
            request: PassRequest { threads: Some(2), split: Split::Columns, ..f64_request() },
        },
        Case { name: "centred too", files: st(DType::F32), request: PassRequest { centred: true, ..f64_request() } },
        Case {
            name: "wider than it is tall (the rows accumulator)",
            files: one("wide.safetensors", embedding_file(&trained_like(40, 256, 22), 256, DType::F32)),
            request: f64_request(),
        },
    ];
    if let Some(files) = gguf_model(&values, &trained_like(rows, dim, 23), rows, dim, &DType::Q8_0, 1) {
        let files = files.into_iter().enumerate().map(|(i, b)| (format!("model-{i}.gguf"), b)).collect();
        cases.push(Case { name: "Q8_0 GGUF", files, request: f64_request() });
    }
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let npy = npy_bytes(1, "<f4", false, &[rows as u64, dim as u64], &bytes);
    cases.push(Case {
        name: "deflated .npz",
        files: one("embeddings.npz", npz_bytes(&[("embed_tokens.npy", npy)], true)),
        request: f64_request(),
    });
    let unused: Vec<usize> = (0..600).step_by(7).collect();
    let (bert, tokenizer) = bert_like(640, 48, 620, &unused, 24);
    cases.push(Case {
        name: "unused tokens and rows past the vocabulary set aside",
        files: vec![
            ("model.safetensors".into(), embedding_file(&bert, 48, DType::F32)),
            ("tokenizer.json".into(), tokenizer.into_bytes()),
        ],
        request: f64_request(),
    });
    cases.push(Case { name: "a SAELens dictionary with dead latents", files: saelens(), request: f64_request() });
    cases
}

/// A SAELens folder: decoder rows of norms 0.05 to 20, an encoder that must not be chosen, and a
/// sparsity file in which every ninth latent never fired.
fn saelens() -> Vec<(String, Vec<u8>)> {
    let (d_sae, d_in) = (900, 32);
    let mut w_dec = trained_like(d_sae, d_in, 25);
    for (r, row) in w_dec.chunks_exact_mut(d_in).enumerate() {
        let scale = 0.05 + 19.95 * ((r * 7919) % 1000) as f32 / 1000.0;
        row.iter_mut().for_each(|x| *x *= scale);
    }
    let w_enc = trained_like(d_in, d_sae, 26);
    let weights = safetensors_bytes(&[
        TensorSpec::matrix("W_enc", DType::F32, d_in, d_sae, &w_enc),
        TensorSpec::matrix("W_dec", DType::F32, d_sae, d_in, &w_dec),
    ]);
    let sparsity: Vec<f32> = (0..d_sae).map(|i| if i % 9 == 0 { -10.0 } else { -3.0 + (i % 5) as f32 * 0.3 }).collect();
    let spec =
        TensorSpec { shape: vec![d_sae as u64], ..TensorSpec::matrix("sparsity", DType::F32, 1, d_sae, &sparsity) };
    let cfg = serde_json::json!({
        "architecture": "standard", "d_in": d_in, "d_sae": d_sae,
        "hook_name": "blocks.3.hook_resid_pre", "hook_layer": 3, "model_name": "tiny",
    });
    vec![
        ("sae_weights.safetensors".into(), weights),
        ("cfg.json".into(), cfg.to_string().into_bytes()),
        ("sparsity.safetensors".into(), safetensors_bytes(&[spec])),
    ]
}

/// The Report as JSON, without what differs from run to run or machine to machine, and with the
/// test's own folder written as `<dir>`.
fn normalised(value: Value, dir: &str) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !k.ends_with("_ms") && k != "gram_gflops" && k != "kernel")
                .map(|(k, v)| (k, normalised(v, dir)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalised(v, dir)).collect()),
        Value::String(s) => Value::String(s.replace(dir, "<dir>")),
        other => other,
    }
}

fn run(case: &Case, root: &Path) -> Value {
    let dir = root.join(case.name.replace([' ', ',', '(', ')', '.'], "_"));
    std::fs::create_dir_all(&dir).expect("the test's folder is made");
    for (name, bytes) in &case.files {
        std::fs::write(dir.join(name), bytes).expect("fixture written");
    }
    let report =
        analyze_paths(std::slice::from_ref(&dir), &case.request).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    normalised(serde_json::to_value(&report).expect("a Report serialises"), &dir.display().to_string())
}

/// Where `got` differs from `want`, as "path: got vs want" lines.
fn differences(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for key in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                let (a, b) = (g.get(key).unwrap_or(&Value::Null), w.get(key).unwrap_or(&Value::Null));
                differences(&format!("{path}.{key}"), a, b, out);
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                differences(&format!("{path}[{i}]"), a, b, out);
            }
        }
        (Value::Number(a), Value::Number(b)) if !(a.is_f64() || b.is_f64()) && a != b => {
            out.push(format!("{path}: {a} vs {b}"));
        }
        (Value::Number(a), Value::Number(b)) if !(a.is_f64() || b.is_f64()) => {}
        (Value::Number(a), Value::Number(b)) => {
            let (x, y) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            if (x - y).abs() > 1e-6 * x.abs().max(y.abs()).max(1e-12) {
                out.push(format!("{path}: {x} vs {y}"));
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {} vs {}", short(a), short(b))),
        _ => {}
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        format!("{}…", &s[..s.char_indices().nth(120).map_or(s.len(), |(i, _)| i)])
    } else {
        s
    }
}

#[test]
fn every_report_is_the_recorded_one_field_by_field() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-identity");
    let _ = std::fs::remove_dir_all(&root);
    let got: Map<String, Value> = cases().iter().map(|c| (c.name.to_string(), run(c, &root))).collect();
    if std::env::var_os("ORTHOSCOPE_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&got).expect("JSON") + "\n";
        std::fs::write(GOLDEN, text).expect("golden file written");
        return;
    }
    let want: Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(GOLDEN)
            .unwrap_or_else(|e| panic!("{GOLDEN}: {e} (record it with ORTHOSCOPE_BLESS=1)")),
    )
    .expect("the golden file is JSON");
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "the cases are the recorded ones");
    let mut diffs = Vec::new();
    for (name, report) in &got {
        differences(name, report, &want[name], &mut diffs);
    }
    assert!(diffs.is_empty(), "{} fields differ from tests/golden/reports.json:\n{}", diffs.len(), diffs.join("\n"));
}
