//! Files of other kinds under a model's name: each is recognised by its first
//! bytes and gets a message that says what it is and what to do, through `read_model` (one file)
//! and `read_model_set` (a folder) alike. Valid safetensors, GGUF and .npy files still open.

use orthoscope::fixtures::synth::{foreign_files, safetensors_bytes, TensorSpec};
use orthoscope::fixtures::writers::{gguf_bytes, npy_bytes, GgufTensor};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::format::sniff::{sniff, ForeignKind};
use orthoscope::read::format::{read_model, DType, FormatError};
use orthoscope::read::source::{ByteSource, SliceSource};

/// Expected kind and a phrase of the message for each generated case.
fn expectations() -> Vec<(&'static str, ForeignKind, &'static str)> {
    let image = |format| ForeignKind::Image { format };
    vec![
        ("foreign-empty", ForeignKind::Empty, "did not finish"),
        ("foreign-git-lfs-pointer", ForeignKind::GitLfsPointer { size: Some(4_965_799_096) }, "git lfs pull"),
        ("foreign-pytorch-zip", ForeignKind::PyTorchZip, "safetensors.torch import save_file"),
        ("foreign-pytorch-legacy", ForeignKind::PyTorchLegacy, "never unpickles"),
        ("foreign-pickle", ForeignKind::Pickle, "Python pickle"),
        ("foreign-keras", ForeignKind::Keras, "get_weights()"),
        ("foreign-npz", ForeignKind::Npz, ".npy of the embedding"),
        ("foreign-zip", ForeignKind::Zip, "extract it"),
        ("foreign-gzip", ForeignKind::Gzip, "tar xzf"),
        ("foreign-zstd", ForeignKind::Zstd, "zstd -d"),
        ("foreign-xz", ForeignKind::Xz, "xz -d"),
        ("foreign-tar", ForeignKind::Tar, "tar xf"),
        ("foreign-hdf5", ForeignKind::Hdf5, "h5py"),
        ("foreign-onnx", ForeignKind::Onnx, "probably an ONNX model"),
        ("foreign-tf-saved-model", ForeignKind::TfSavedModel, "TensorFlow SavedModel"),
        ("foreign-png", image("PNG image"), "a PNG image"),
        ("foreign-jpeg", image("JPEG image"), "a JPEG image"),
        ("foreign-gif", image("GIF image"), "a GIF image"),
        ("foreign-webp", image("WebP image"), "a WebP image"),
        ("foreign-pdf", image("PDF document"), "a PDF document"),
        ("foreign-html", ForeignKind::Html, "an HTML page"),
        ("foreign-xml", ForeignKind::Xml, "an XML document"),
        ("foreign-json", ForeignKind::Json, "it starts \"{\"error\":\"Entry not found\"}\""),
        (
            "foreign-text",
            ForeignKind::Text,
            "a text file, not model weights: it starts \"Invalid username or password.\"",
        ),
    ]
}

fn case_bytes(case: &str) -> Vec<u8> {
    foreign_files()
        .into_iter()
        .find(|(n, _)| *n == case)
        .unwrap_or_else(|| panic!("synth::foreign_files has no case {case}"))
        .1
}

#[test]
fn every_generated_case_has_an_expectation() {
    let expected: Vec<&str> = expectations().iter().map(|(n, ..)| *n).collect();
    let generated: Vec<&str> = foreign_files().iter().map(|(n, _)| *n).collect();
    assert_eq!(expected, generated);
}

#[test]
fn each_foreign_kind_is_named_with_what_to_do() {
    let mut bad = Vec::new();
    for (case, kind, phrase) in expectations() {
        let file = format!("{case}.safetensors");
        let source = SliceSource::new(file.clone(), case_bytes(case));
        match read_model(&source, 0) {
            Err(FormatError::Foreign { file: f, kind: k, advice }) if f == file && k == kind => {
                let message = FormatError::Foreign { file: f, kind: k, advice }.to_string();
                if !message.starts_with(&format!("{file} is ")) || !message.contains(phrase) {
                    bad.push(format!("{case}: message lacks {phrase:?}: {message}"));
                }
            }
            other => bad.push(format!("{case}: expected Foreign {kind:?}, got {other:?}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_pytorch_advice_names_the_file_in_its_command() {
    let source = SliceSource::new("models/pytorch_model.bin", case_bytes("foreign-pytorch-zip"));
    let message = read_model(&source, 0).expect_err("a PyTorch zip is refused").to_string();
    assert!(message.starts_with("models/pytorch_model.bin is a PyTorch checkpoint (zip archive with data.pkl)"));
    assert!(message.contains("torch.load('pytorch_model.bin'"), "{message}");
}

#[test]
fn a_git_lfs_pointer_says_how_big_the_real_file_is() {
    let message = read_model(&SliceSource::new("model.safetensors", case_bytes("foreign-git-lfs-pointer")), 0)
        .expect_err("a pointer is not weights")
        .to_string();
    assert!(message.contains("4965799096-byte file"), "{message}");
    assert!(message.contains("git lfs install && git lfs pull"), "{message}");
}

/// Valid model files are never taken for foreign ones, even when their first bytes happen to be a
/// foreign magic: a safetensors header of 0x0280 = 640 bytes starts `\x80\x02`, like a pickle.
#[test]
fn valid_model_files_still_open() {
    let t = TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 4, 8, &[0.5; 32]);
    let st = safetensors_bytes(&[t]);
    assert_eq!(read_model(&SliceSource::new("m.safetensors", st), 0).unwrap().format, "safetensors");

    let gguf = gguf_bytes(3, &[GgufTensor::new("token_embd.weight", DType::F32, &[4, 8], vec![0; 128])], &[]);
    assert_eq!(read_model(&SliceSource::new("m.gguf", gguf), 0).unwrap().format, "gguf");

    let npy = npy_bytes(1, "<f4", false, &[4, 8], &[0; 128]);
    assert_eq!(read_model(&SliceSource::new("m.npy", npy), 0).unwrap().format, "npy");

    // A header padded to exactly 640 bytes: its length prefix reads "\x80\x02\0\0\0\0\0\0".
    let json = r#"{"e":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
    let mut header = json.as_bytes().to_vec();
    header.resize(640, b' ');
    let mut bytes = 640u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&[0; 16]);
    assert!(bytes.starts_with(b"\x80\x02"));
    assert!(sniff(&bytes, bytes.len() as u64).is_some(), "sniffed alone, the prefix looks like a pickle");
    let info = read_model(&SliceSource::new("p.safetensors", bytes), 0).expect("read as safetensors");
    assert_eq!(info.tensors.len(), 1);
}

/// Unrecognised bytes keep the safetensors reader's own errors.
#[test]
fn unrecognised_bytes_keep_the_safetensors_errors() {
    let src = SliceSource::new("x.bin", b"GGUG\x03\0\0\0\0\0\0\0\0\0\0\0".to_vec());
    assert!(matches!(read_model(&src, 0), Err(FormatError::HeaderTooLarge { .. })));
    let src = SliceSource::new("x.bin", vec![5, 0, 0]);
    assert!(matches!(read_model(&src, 0), Err(FormatError::TooShort { .. })));
}

fn set_of(files: &[(&str, Vec<u8>)]) -> Result<orthoscope::read::format::set::ModelSet, FormatError> {
    let sources: Vec<SliceSource> = files.iter().map(|(n, b)| SliceSource::new(*n, b.clone())).collect();
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    read_model_set(&refs)
}

#[test]
fn in_a_folder_a_lone_pytorch_bin_is_named_not_just_ignored() {
    let config = br#"{"vocab_size": 4}"#.to_vec();
    let readme = b"# My model\n".to_vec();
    let err = set_of(&[
        ("config.json", config.clone()),
        ("README.md", readme.clone()),
        ("pytorch_model.bin", case_bytes("foreign-pytorch-zip")),
    ])
    .expect_err("no model file Orthoscope reads");
    assert!(matches!(&err, FormatError::Foreign { kind: ForeignKind::PyTorchZip, .. }), "{err:?}");

    // A README alone is just ignored, as before.
    let err = set_of(&[("config.json", config.clone()), ("README.md", readme.clone()), ("notes.txt", readme.clone())])
        .expect_err("no model file");
    assert!(matches!(err, FormatError::NoModelFiles { .. }), "{err:?}");

    // Next to real safetensors, the pickled copy is ignored, as before.
    let t = TensorSpec::matrix("model.embed_tokens.weight", DType::F32, 4, 8, &[0.5; 32]);
    let set = set_of(&[
        ("model.safetensors", safetensors_bytes(&[t])),
        ("pytorch_model.bin", case_bytes("foreign-pytorch-zip")),
        ("config.json", config),
    ])
    .expect("the safetensors file is read");
    assert_eq!(set.ignored, vec!["pytorch_model.bin".to_string()]);
}

#[test]
fn an_lfs_pointer_shard_named_by_the_index_is_named() {
    let index = br#"{"weight_map": {"model.embed_tokens.weight": "model-00001-of-00001.safetensors"}}"#.to_vec();
    let err = set_of(&[
        ("model.safetensors.index.json", index),
        ("model-00001-of-00001.safetensors", case_bytes("foreign-git-lfs-pointer")),
    ])
    .expect_err("a pointer is not a shard");
    assert!(
        matches!(&err, FormatError::Foreign { file, kind: ForeignKind::GitLfsPointer { .. }, .. }
            if file == "model-00001-of-00001.safetensors"),
        "{err:?}"
    );
}
