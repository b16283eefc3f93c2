//! ONNX exports written by onnx's own helpers (tests/oracle/onnx_writer.py, in the pinned venv of
//! scripts/oracle_venv.sh): the embedding found by the Gather that reads `input_ids`, float32 /
//! float16 / bfloat16 raw_data, packed float_data, external data, int8 with DequantizeLinear; μ, σ,
//! ε of the exact f64 pass against numpy's all-pairs cosines of the dequantised matrix; refusals
//! that name what is wrong; and opening reads only the header.

use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use std::sync::OnceLock;

use orthoscope::fixtures::recording::{bytes_read, Recording};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{read_model, DType, FormatError};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;
use serde_json::Value;

/// The oracle's output directory and its JSON, written once per test process. The tests fail
/// (never skip) when the oracle cannot run.
fn oracle() -> &'static (PathBuf, Value) {
    static ORACLE: OnceLock<(PathBuf, Value)> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let root = env!("CARGO_MANIFEST_DIR");
        let venv = Command::new("bash").arg("scripts/oracle_venv.sh").current_dir(root).output().expect("run bash");
        assert!(venv.status.success(), "scripts/oracle_venv.sh failed: {}", String::from_utf8_lossy(&venv.stderr));
        let python = String::from_utf8(venv.stdout).unwrap().trim().to_string();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("onnx_oracle_{}", std::process::id()));
        let out = Command::new(&python)
            .arg("tests/oracle/onnx_writer.py")
            .arg(&dir)
            .current_dir(root)
            .output()
            .expect("run the oracle's python");
        assert!(out.status.success(), "onnx_writer.py failed: {}", String::from_utf8_lossy(&out.stderr));
        (dir, serde_json::from_slice(&out.stdout).expect("oracle JSON"))
    })
}

fn case(name: &str) -> &'static Value {
    &oracle().1[name]
}

fn bytes(file: &str) -> Vec<u8> {
    std::fs::read(oracle().0.join(file)).unwrap()
}

fn sources_of(files: &[&str]) -> Vec<Rc<dyn ByteSource>> {
    files.iter().map(|f| Rc::new(SliceSource::new(*f, bytes(f))) as Rc<dyn ByteSource>).collect()
}

fn case_files(name: &str) -> Vec<String> {
    case(name)["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect()
}

fn exact() -> AnalysisConfig {
    AnalysisConfig { precision: Precision::F64, ..Default::default() }
}

fn open_error(files: &[&str]) -> String {
    match Job::open(sources_of(files), None, exact()) {
        Ok(_) => panic!("{files:?} opened"),
        Err(e) => e.to_string(),
    }
}

/// Opens the case, runs the exact pass and checks μ, σ, ε against numpy to 1e-9.
fn check_statistics(name: &str, files: &[&str]) -> orthoscope::result::report::Report {
    let want = case(name);
    let (job, _) = Job::open(sources_of(files), None, exact()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let report = job.run().unwrap().report(0.0).unwrap();
    assert_eq!(report.tensor, want["tensor"].as_str().unwrap(), "{name}");
    for (ours, key) in [(report.mu, "mu"), (report.sigma, "sigma"), (report.epsilon, "eps")] {
        let theirs = want[key].as_f64().unwrap();
        assert!((ours - theirs).abs() <= 1e-9, "{name}: {key} {ours} vs numpy {theirs}");
    }
    report
}

#[test]
fn float32_raw_data_under_an_opaque_name_is_found_by_its_gather() {
    let report = check_statistics("f32_raw", &["f32_raw.onnx"]);
    assert_eq!(report.tensor_reason, "the data input of the Gather that reads input_ids");
    assert_eq!(report.dtype, "F32");
    assert_eq!(report.format, "onnx");
}

#[test]
fn float16_and_bfloat16_raw_data() {
    assert_eq!(check_statistics("f16_raw", &["f16_raw.onnx"]).dtype, "F16");
    assert_eq!(check_statistics("bf16_raw", &["bf16_raw.onnx"]).dtype, "BF16");
}

#[test]
fn packed_float_data_is_read_in_place() {
    let info = read_model(&SliceSource::new("float_data.onnx", bytes("float_data.onnx")), 0).unwrap();
    let t = &info.tensors[0];
    assert_eq!((t.dtype.clone(), t.shape.clone()), (DType::F32, vec![150, 12]));
    assert_eq!(t.byte_range.1 - t.byte_range.0, 150 * 12 * 4);
    check_statistics("float_data", &["float_data.onnx"]);
}

#[test]
fn float16_in_int32_data_is_listed_and_refused_with_why() {
    let info = read_model(&SliceSource::new("f16_int32_data.onnx", bytes("f16_int32_data.onnx")), 0).unwrap();
    assert!(matches!(&info.tensors[0].dtype, DType::Other(s) if s.contains("int32_data")));
    let message = open_error(&["f16_int32_data.onnx"]);
    assert!(message.contains("emb_int32") && message.contains("int32_data"), "{message}");
}

#[test]
fn external_data_in_one_file_at_offsets() {
    let files = case_files("external");
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    // Given in either order, the data file is the tensors' bytes, never a model or an ignored file.
    for order in [names.clone(), names.iter().rev().copied().collect()] {
        let sources = sources_of(&order);
        let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s.as_ref()).collect();
        let set = read_model_set(&refs).unwrap();
        let data = order.iter().position(|n| *n == "external.onnx_data").unwrap();
        assert!(set.ignored.is_empty(), "{:?}", set.ignored);
        assert_eq!(set.external_data, vec!["external.onnx_data".to_string()]);
        assert_eq!(set.format, "onnx");
        let offsets = case("external")["offsets"].as_object().unwrap();
        assert_eq!(set.tensors.len(), 3);
        for t in &set.tensors {
            assert_eq!(t.file, data, "{}", t.name);
            assert_eq!(t.byte_range.0, offsets[&t.name].as_u64().unwrap(), "{}", t.name);
        }
        check_statistics("external", &order);
    }
}

#[test]
fn the_cli_opens_external_data_beside_a_lone_onnx() {
    let path = oracle().0.join("external.onnx");
    let opened = orthoscope::run::threads::open_paths(&[path]).unwrap();
    let names: Vec<String> = opened.iter().map(|s| s.name().to_string()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let sources: Vec<Rc<dyn ByteSource>> = opened.into_iter().map(|s| Rc::new(s) as Rc<dyn ByteSource>).collect();
    let report = Job::open(sources, None, exact()).unwrap().0.run().unwrap().report(0.0).unwrap();
    assert!((report.epsilon - case("external")["eps"].as_f64().unwrap()).abs() <= 1e-9);
}

#[test]
fn a_missing_external_file_is_named() {
    let message = open_error(&["external.onnx"]);
    assert!(message.contains("external.onnx_data") && message.contains("model.embed_tokens.weight"), "{message}");
}

#[test]
fn external_data_outside_the_folder_is_refused() {
    let error = read_model(&SliceSource::new("escape.onnx", bytes("escape.onnx")), 0).unwrap_err();
    assert!(matches!(&error, FormatError::OnnxExternalPath { location, .. } if location == "../secret.bin"), "{error}");
    assert!(error.to_string().contains("emb_escape"), "{error}");
}

#[test]
fn int8_with_dequantize_linear_is_decoded_affine() {
    let want = case("int8_dq");
    let info = read_model(&SliceSource::new("int8_dq.onnx", bytes("int8_dq.onnx")), 0).unwrap();
    let q = info.tensors.iter().find(|t| t.name == "emb_q").unwrap();
    assert_eq!(
        q.dtype,
        DType::I8Affine {
            scale_bits: want["scale_bits"].as_u64().unwrap() as u32,
            zero_point: want["zero_point"].as_i64().unwrap() as i32
        }
    );
    let report = check_statistics("int8_dq", &["int8_dq.onnx"]);
    assert_eq!(report.dtype, "int8 (DequantizeLinear)");
    assert!(report.tensor_reason.contains("DequantizeLinear"), "{}", report.tensor_reason);
}

#[test]
fn per_axis_dequantize_linear_is_refused_naming_the_axis() {
    let message = open_error(&["uint8_per_axis.onnx"]);
    assert!(message.contains("emb_u8") && message.contains("per axis 0"), "{message}");
}

#[test]
fn a_truncated_onnx_is_an_error_never_a_panic() {
    let whole = bytes("f32_raw.onnx");
    for len in (1..whole.len()).step_by(37).chain([whole.len() - 1, whole.len() / 2]) {
        let source = SliceSource::new("f32_raw.onnx", whole[..len].to_vec());
        match read_model(&source, 0) {
            Err(FormatError::OnnxTruncated { file, .. }) => assert_eq!(file, "f32_raw.onnx"),
            Err(FormatError::OnnxMalformed { .. } | FormatError::OnnxNoGraph { .. }) => {}
            other => panic!("{len} of {} bytes: {other:?}", whole.len()),
        }
    }
    // Cut inside the embedding's raw_data: its length runs past the end.
    let source = SliceSource::new("f32_raw.onnx", whole[..whole.len() / 2].to_vec());
    let message = read_model(&source, 0).unwrap_err().to_string();
    assert!(message.contains("truncated") && message.contains("f32_raw.onnx"), "{message}");
}

#[test]
fn mutated_onnx_files_are_errors_or_tensors_inside_the_file() {
    let whole = bytes("int8_dq.onnx");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let mut b = whole.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % b.len() as u64) as usize;
            b[i] = next() as u8;
        }
        if let Ok(info) = read_model(&SliceSource::new("m.onnx", b.clone()), 0) {
            for t in info.tensors.iter().filter(|t| !info.external.iter().any(|e| e.tensor == t.name)) {
                assert!(t.byte_range.0 <= t.byte_range.1 && t.byte_range.1 <= b.len() as u64, "{t:?}");
            }
        }
    }
}

#[test]
fn opening_reads_only_the_header() {
    let raw = case("big")["raw_bytes"].as_u64().unwrap();
    let source = Recording::new(SliceSource::new("big.onnx", bytes("big.onnx")));
    let reads = source.reads();
    let sources: Vec<Rc<dyn ByteSource>> = vec![Rc::new(source)];
    let (job, opened) = Job::open(sources, None, exact()).unwrap();
    let _ = opened;
    let read = bytes_read(&reads);
    assert!(read < raw / 16, "{read} bytes read to open a model of {raw} bytes of raw_data");
    drop(job);
}
