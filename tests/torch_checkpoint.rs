//! PyTorch zip checkpoints: files written as `torch.save` writes them (tests/oracle/torch_writer.py,
//! without torch: the exact globals, persistent ids and member layout) are read in place and give
//! numpy's f64 all-pairs μ, σ, ε; hostile pickles are refused with the offset, and nothing in
//! them is ever run.

use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;

use orthoscope::fixtures::synth::{encode, safetensors_bytes, trained_like, TensorSpec};
use orthoscope::fixtures::writers::{torch_zip_bytes, zip_bytes, TorchWrap, ZipMember};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::format::pickle::{parse, Value};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::{read_model, DType, FormatError};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;
use orthoscope::{Error, Report};

fn report_of(files: Vec<(String, Vec<u8>)>) -> Result<Report, Error> {
    let sources: Vec<Rc<dyn ByteSource>> =
        files.into_iter().map(|(n, b)| Rc::new(SliceSource::new(n, b)) as Rc<dyn ByteSource>).collect();
    let config = AnalysisConfig { precision: Precision::F64, ..Default::default() };
    Job::open(sources, None, config)?.0.run()?.report(0.0)
}

/// Runs the oracle writer into a fresh folder; the test fails when it cannot run.
fn oracle_files() -> PathBuf {
    let root = env!("CARGO_MANIFEST_DIR");
    let venv = Command::new("bash").arg("scripts/oracle_venv.sh").current_dir(root).output().expect("bash runs");
    assert!(venv.status.success(), "oracle venv: {}", String::from_utf8_lossy(&venv.stderr));
    let python = String::from_utf8(venv.stdout).unwrap().trim().to_string();
    let out = std::env::temp_dir().join(format!("orthoscope-torch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(&python)
        .arg("tests/oracle/torch_writer.py")
        .arg(&out)
        .current_dir(root)
        .output()
        .expect("the oracle's python runs");
    assert!(run.status.success(), "torch_writer.py: {}", String::from_utf8_lossy(&run.stderr));
    out
}

#[test]
fn checkpoints_written_as_torch_save_does_give_numpys_statistics() {
    let dir = oracle_files();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let cases = manifest.as_array().unwrap();
    assert!(cases.len() >= 8);
    for case in cases {
        let file = case["file"].as_str().unwrap();
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let expect = &case["expect"];
        let listed = read_model(&SliceSource::new(file, bytes.clone()), 0);
        if let Some(words) = expect["error"].as_array() {
            let message = match listed {
                Ok(info) => {
                    let names: Vec<&str> = info.tensors.iter().map(|t| t.name.as_str()).collect();
                    let want: Vec<&str> =
                        case["tensors"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
                    assert_eq!(names, want, "{file}");
                    report_of(vec![(file.to_string(), bytes)]).expect_err(file).to_string()
                }
                Err(e) => e.to_string(),
            };
            for w in words {
                assert!(message.contains(w.as_str().unwrap()), "{file}: {message}");
            }
            continue;
        }
        let info = listed.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(info.format, "pytorch");
        let names: Vec<&str> = info.tensors.iter().map(|t| t.name.as_str()).collect();
        let want: Vec<&str> = case["tensors"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(names, want, "{file}");
        for t in &info.tensors {
            assert!(t.byte_range.1 <= bytes.len() as u64 && t.layout.is_contiguous());
        }
        if let Some(global) = expect["skipped"].as_str() {
            assert!(info.skipped.iter().any(|s| s.reason.contains(global)), "{file}: {:?}", info.skipped);
        }
        let report = report_of(vec![(file.to_string(), bytes)]).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(report.tensor, expect["tensor"].as_str().unwrap(), "{file}");
        for (got, key) in [(report.mu, "mu"), (report.sigma, "sigma"), (report.epsilon, "epsilon")] {
            let want = expect[key].as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{file}: {key} {got} vs numpy {want}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!std::path::Path::new("/tmp/orthoscope-pwned").exists(), "a pickled os.system ran");
}

#[test]
fn the_rust_writer_gives_the_same_report_as_safetensors_of_the_same_values() {
    let (rows, dim) = (500, 32);
    let values = trained_like(rows, dim, 3);
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let data = encode(&values, &dtype);
        let shape = [rows as u64, dim as u64];
        let pt = torch_zip_bytes(&[("embed_tokens.weight", dtype.clone(), &shape, &data)], TorchWrap::Model);
        let st =
            safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", dtype.clone(), rows, dim, &values)]);
        let a = report_of(vec![("model.pt".into(), pt)]).unwrap();
        let b = report_of(vec![("model.safetensors".into(), st)]).unwrap();
        assert_eq!(a.tensor, "model.embed_tokens.weight");
        assert_eq!((a.mu, a.sigma, a.epsilon), (b.mu, b.sigma, b.epsilon), "{dtype}");
    }
}

fn sources(files: &[(&str, Vec<u8>)]) -> Vec<SliceSource> {
    files.iter().map(|(n, b)| SliceSource::new(*n, b.clone())).collect()
}

/// A torch zip around a hand-written pickle.
fn pickle_zip(pickle: &[u8]) -> Vec<u8> {
    let member = ZipMember { name: "archive/data.pkl".into(), data: pickle.to_vec(), deflate: false };
    zip_bytes(&[member], false, 64)
}

#[test]
fn in_a_folder_the_checkpoint_is_read_unless_safetensors_are_there() {
    let data = encode(&trained_like(64, 8, 1), &DType::F32);
    let pt = torch_zip_bytes(&[("model.embed_tokens.weight", DType::F32, &[64, 8], &data)], TorchWrap::StateDict);
    let args = pickle_zip(b"\x80\x02ctransformers.training_args\nTrainingArguments\n)\x81}b.");
    let set = sources(&[
        ("config.json", br#"{"vocab_size": 64}"#.to_vec()),
        ("pytorch_model.bin", pt.clone()),
        ("training_args.bin", args),
        ("optimizer.pt", b"\x80\x02}.".to_vec()),
    ]);
    let refs: Vec<&dyn ByteSource> = set.iter().map(|s| s as &dyn ByteSource).collect();
    let set = read_model_set(&refs).unwrap();
    assert_eq!(set.format, "pytorch");
    assert_eq!(set.tensors.len(), 1);
    assert!(
        set.ignored.contains(&"training_args.bin".to_string()) && set.ignored.contains(&"optimizer.pt".to_string())
    );

    let st = safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 4, 8, &[0.5; 32])]);
    let set = sources(&[("model.safetensors", st), ("pytorch_model.bin", pt)]);
    let refs: Vec<&dyn ByteSource> = set.iter().map(|s| s as &dyn ByteSource).collect();
    let set = read_model_set(&refs).unwrap();
    assert_eq!(set.format, "safetensors");
    assert_eq!(set.ignored, vec!["pytorch_model.bin".to_string()]);
}

#[test]
fn a_checkpoint_that_is_one_hostile_object_names_its_global() {
    for (pickle, global) in [
        (&b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R."[..], "os.system"),
        (b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1\x85R.", "builtins.eval"),
        (b"\x80\x04\x8c\nsubprocess\x8c\x05Popen\x93]\x85R.", "subprocess.Popen"),
    ] {
        let err = read_model(&SliceSource::new("evil.pt", pickle_zip(pickle)), 0).unwrap_err();
        assert!(matches!(&err, FormatError::TorchUnreadable { global: g, .. } if g == global), "{err:?}");
        assert!(err.to_string().contains(global), "{err}");
    }
    // Beside other values, an unknown global is a value, not an error.
    let v =
        parse("t", b"\x80\x02}(X\x01\x00\x00\x00acbuiltins\neval\nX\x01\x00\x00\x001\x85RX\x01\x00\x00\x00bK\x07u.")
            .unwrap();
    let Value::Dict(items) = v else { panic!("{v:?}") };
    assert_eq!(items[0].1, Value::Unreadable { global: "builtins.eval".into() });
    assert_eq!(items[1].1, Value::Int(7));
}

fn over_limit(bytes: &[u8]) -> String {
    match parse("t.pkl", bytes) {
        Err(e @ FormatError::PickleOverLimit { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bombs_are_refused_before_they_allocate() {
    // A memo index far past any real memo.
    assert!(over_limit(b"\x80\x02Nr\xff\xff\xff\xff.").contains("memo index"));
    // A million and more memo entries.
    let mut many = b"\x80\x04N".to_vec();
    many.extend(std::iter::repeat_n(0x94u8, 2 << 20));
    assert!(over_limit(&many).contains("memo"));
    // 100 000 nested lists, and 100 000 nested tuples of one value.
    let mut deep = b"\x80\x02".to_vec();
    deep.extend(std::iter::repeat_n(b']', 100_000));
    deep.extend(std::iter::repeat_n(b'a', 99_999));
    deep.push(b'.');
    assert!(over_limit(&deep).contains("nesting depth"));
    let mut tuples = b"\x80\x02K\x01".to_vec();
    tuples.extend(std::iter::repeat_n(0x85u8, 100_000));
    assert!(over_limit(&tuples).contains("nesting depth"));
    let mut marks = b"\x80\x02".to_vec();
    marks.extend(std::iter::repeat_n(b'(', 100_000));
    assert!(over_limit(&marks).contains("nesting depth"));
    // A string of 2⁶⁴ − 1 bytes.
    let mut huge = b"\x80\x04\x8d".to_vec();
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(over_limit(&huge).contains("string length"));
    // A length within the limit but past the end is a truncation at the opcode.
    let err = parse("t.pkl", b"\x80\x04\x8d\x00\x10\x00\x00\x00\x00\x00\x00abc").unwrap_err();
    assert!(matches!(err, FormatError::PickleTruncated { offset: 2, .. }), "{err:?}");
}

#[test]
fn a_truncated_pickle_is_an_error_at_every_offset() {
    let data = encode(&trained_like(4, 4, 1), &DType::F32);
    let full = torch_zip_bytes(&[("w", DType::F32, &[4, 4], &data)], TorchWrap::Lightning);
    let source = SliceSource::new("m.pt", full.clone());
    let entries = orthoscope::read::format::zip::read_entries(&source).unwrap();
    let pkl = &entries[0];
    let start = orthoscope::read::format::zip::data_start(&source, pkl).unwrap() as usize;
    let pickle = &full[start..start + pkl.compressed_size as usize];
    assert!(parse("p", pickle).is_ok());
    for cut in 0..pickle.len() {
        let err = parse("p", &pickle[..cut]).unwrap_err();
        assert!(matches!(err, FormatError::PickleTruncated { .. }), "{cut}: {err:?}");
        assert!(err.to_string().contains("offset"), "{err}");
    }
    // Cut inside the zip as a whole: never a panic, never a tensor outside the file.
    for cut in (0..full.len()).step_by(7) {
        if let Ok(info) = read_model(&SliceSource::new("m.pt", full[..cut].to_vec()), 0) {
            assert!(info.tensors.iter().all(|t| t.byte_range.1 <= cut as u64));
        }
    }
}
