//! Sparse-autoencoder dictionaries (docs/method.md §10): one dictionary in each published layout,
//! written as its library saves it by `tests/oracle/sae_writer.py` (numpy's `savez` for Gemma
//! Scope, `torch_writer.py`'s torch zip for OpenAI's), with non-unit decoder rows and, for Llama
//! Scope and OpenAI, features in the decoder's columns. Each is analysed as `analyze` would: the
//! decoder is chosen (never the encoder), `Report.dictionary` says what the files say, and μ, σ,
//! ε equal numpy's f64 all-pairs statistics of the feature rows. SAELens's sparsity file sets
//! the dead latents aside exactly.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::locate::TensorRole;
use orthoscope::result::report::Report;
use orthoscope::run::threads::{analyze_paths, PassRequest};
use serde_json::Value;

/// The fixtures and numpy's manifest, written once for every test of this file.
fn oracle() -> &'static (PathBuf, Vec<Value>) {
    static ORACLE: OnceLock<(PathBuf, Vec<Value>)> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let root = env!("CARGO_MANIFEST_DIR");
        let venv = Command::new("bash").arg("scripts/oracle_venv.sh").current_dir(root).output().expect("bash runs");
        assert!(venv.status.success(), "scripts/oracle_venv.sh failed: {}", String::from_utf8_lossy(&venv.stderr));
        let python = String::from_utf8(venv.stdout).unwrap().trim().to_string();
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sae-dictionaries");
        let _ = std::fs::remove_dir_all(&out);
        let run = Command::new(&python)
            .arg("tests/oracle/sae_writer.py")
            .arg(&out)
            .current_dir(root)
            .output()
            .expect("the oracle's python runs");
        assert!(run.status.success(), "sae_writer.py failed: {}", String::from_utf8_lossy(&run.stderr));
        let cases: Vec<Value> = serde_json::from_slice(&run.stdout).expect("the oracle prints JSON");
        (out, cases)
    })
}

fn case(name: &str) -> &'static Value {
    oracle().1.iter().find(|c| c["case"] == name).unwrap_or_else(|| panic!("no case {name}"))
}

fn request(tensor: Option<&str>, dead_below: Option<f64>) -> PassRequest {
    let config =
        AnalysisConfig { precision: Precision::F64, dead_below_log10: dead_below, ..AnalysisConfig::default() };
    PassRequest { tensor: tensor.map(str::to_string), config, threads: Some(1), ..PassRequest::default() }
}

fn analyse(c: &Value, request: &PassRequest) -> Report {
    let path = PathBuf::from(c["path"].as_str().unwrap());
    analyze_paths(&[path], request).unwrap_or_else(|e| panic!("{}: {e}", c["case"]))
}

fn close(got: f64, want: &Value, what: &str) {
    let want = want.as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "{what}: {got} vs numpy's {want}");
}

#[test]
fn every_layout_gives_its_decoders_feature_statistics_and_says_what_it_is() {
    let names: Vec<&str> = oracle().1.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 10, "{names:?}");
    for c in &oracle().1 {
        let name = c["case"].as_str().unwrap();
        let r = analyse(c, &request(None, None));
        let want = &c["dictionary"];
        assert_eq!(r.tensor_role, TensorRole::SaeDecoder, "{name}");
        assert_eq!(r.tensor, want["decoder"].as_str().unwrap(), "{name}: the decoder, never the encoder");
        assert!(r.exact, "{name}");
        assert_eq!(r.rows, want["d_sae"].as_u64().unwrap(), "{name}: the rows are the features");
        let d = r.dictionary.as_ref().unwrap_or_else(|| panic!("{name}: no dictionary"));
        let json = serde_json::to_value(d).unwrap();
        for key in
            ["d_sae", "d_in", "layer", "hook", "architecture", "source_layout", "columns_are_features", "transcoder"]
        {
            assert_eq!(json[key], want[key], "{name}: dictionary.{key}");
        }
        assert_eq!(json["d_out"], want.get("d_out").cloned().unwrap_or(Value::Null), "{name}: d_out");
        assert_eq!(r.rows_used, c["rows_used"].as_u64().unwrap(), "{name}");
        close(r.mu, &c["mu"], &format!("{name}: μ"));
        close(r.sigma, &c["sigma"], &format!("{name}: σ"));
        close(r.epsilon, &c["epsilon"], &format!("{name}: ε"));
        // "Uses 10^x of the capacity its own ε allows": log10 d_sae − Eq. 7's log10 k at d.
        let used = d.log10_capacity_used.unwrap();
        assert!((used - ((r.rows as f64).log10() - r.log10_capacity.adjusted_full)).abs() < 1e-12, "{name}");
        // The JSON a page or `--json` gives names the role as the contract says.
        let report = serde_json::to_value(&r).unwrap();
        assert_eq!(report["tensor_role"], "sae_decoder", "{name}");
        assert_eq!(report["dictionary"]["source_layout"], want["source_layout"], "{name}");
    }
}

#[test]
fn the_encoder_is_analysed_only_when_named_and_then_is_not_a_dictionary() {
    for (name, encoder) in [("saelens", "W_enc"), ("llama_scope", "encoder.weight"), ("openai", "encoder.weight")] {
        let r = analyse(case(name), &request(Some(encoder), None));
        assert_eq!(r.tensor, encoder);
        assert_eq!(r.tensor_role, TensorRole::Other, "{name}");
        assert!(r.dictionary.is_none(), "{name}");
    }
}

#[test]
fn the_sparsity_file_sets_the_dead_latents_aside_exactly() {
    let c = case("saelens");
    for (below, want) in [(None, &c["dead_default"]), (Some(-9.0), &c["dead_below_9"])] {
        let r = analyse(c, &request(None, below));
        // The paper's numbers stay over every feature.
        close(r.epsilon, &c["epsilon"], "ε over all features");
        let t = r.trained.as_ref().expect("dead latents set aside");
        assert_eq!(t.rules.len(), 1);
        assert_eq!(t.rules[0].rule, "dead_latent");
        assert!(t.rules[0].enabled);
        assert_eq!(t.without.rows_excluded, want["rows_excluded"].as_u64().unwrap(), "{below:?}");
        assert_eq!(t.without.rows_used, want["rows_used"].as_u64().unwrap(), "{below:?}");
        assert!(t.without.exact);
        close(t.without.mu, &want["mu"], "μ without the dead latents");
        close(t.without.sigma, &want["sigma"], "σ without the dead latents");
        close(t.without.epsilon, &want["epsilon"], "ε without the dead latents");
        assert!(orthoscope::result::trained::summary(t).contains("dead latents of the dictionary"));
    }
    // Without the sparsity file nothing is set aside.
    let folder = PathBuf::from(c["path"].as_str().unwrap());
    let files = vec![folder.join("sae_weights.safetensors"), folder.join("cfg.json")];
    let r = analyze_paths(&files, &request(None, None)).unwrap();
    assert!(r.trained.is_none());
    assert_eq!(r.tensor_role, TensorRole::SaeDecoder);
}

#[test]
fn a_dictionary_survives_its_permalink() {
    for name in ["saelens", "llama_scope"] {
        let r = analyse(case(name), &request(None, None));
        let back = orthoscope::result::permalink::decode(&orthoscope::result::permalink::encode(&r)).unwrap();
        assert_eq!(back.tensor_role, TensorRole::SaeDecoder, "{name}");
        assert_eq!(back.dictionary, r.dictionary, "{name}");
    }
}

/// `analyze --each` over sparsify's three `layers.N/` folders: one Report per folder, in order,
/// each that folder's dictionary; `--json` prints them as one JSON array, the text as a table.
#[test]
fn each_layer_folder_is_its_own_model() {
    let cases: Vec<&Value> = (0..3).map(|l| case(&format!("sparsify_{l}"))).collect();
    let paths: Vec<PathBuf> = cases.iter().map(|c| PathBuf::from(c["path"].as_str().unwrap())).collect();
    let reports = orthoscope::run::threads::analyze_each(&paths, &request(None, None)).unwrap();
    assert_eq!(reports.len(), 3);
    for (layer, (r, c)) in reports.iter().zip(&cases).enumerate() {
        let d = &r.dictionary.as_ref().unwrap().dictionary;
        assert_eq!((d.layer, d.hook.as_deref()), (Some(layer as u64), Some(format!("layers.{layer}").as_str())));
        close(r.epsilon, &c["epsilon"], &format!("layer {layer}: ε"));
    }
    let cli = env!("CARGO_BIN_EXE_orthoscope");
    let run = |extra: &[&str]| {
        let out = Command::new(cli).arg("analyze").arg("--each").args(extra).args(&paths).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Vec<Value> = serde_json::from_str(&run(&["--json"])).unwrap();
    assert_eq!(json.len(), 3);
    for (layer, r) in json.iter().enumerate() {
        assert_eq!(r["tensor_role"], "sae_decoder");
        assert_eq!(r["dictionary"]["layer"], layer as u64);
        assert_eq!(r["dictionary"]["d_sae"], 128);
        assert_eq!(r["dictionary"]["d_in"], 20);
    }
    // Their parent folder alone stands for the three, in layer order, as the page reads it.
    let parent = paths[0].parent().unwrap().to_path_buf();
    assert_eq!(orthoscope::run::threads::each_model(std::slice::from_ref(&parent)).unwrap(), paths);
    let out = Command::new(cli).args(["analyze", "--each", "--json"]).arg(&parent).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let from_parent: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let epsilons = |v: &[Value]| v.iter().map(|r| r["epsilon"].as_f64().unwrap()).collect::<Vec<_>>();
    assert_eq!(epsilons(&from_parent), epsilons(&json));
    let table = run(&[]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].contains("layer") && lines[0].contains("d_sae") && lines[0].contains("class"), "{table}");
    for (layer, line) in lines[1..].iter().enumerate() {
        assert!(line.contains(&format!("layers.{layer}")) && line.contains(" 128 ") && line.contains("10^"), "{line}");
    }
    // One folder that is no model names itself.
    let mut bad = paths.clone();
    bad.push(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-folder"));
    let out = Command::new(cli).arg("analyze").arg("--each").args(&bad).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-folder"));
}
