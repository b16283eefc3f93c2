//! Several files as one model (`src/read/format/set/`, ARCHITECTURE.md, "read"): sharded
//! safetensors with and without `model.safetensors.index.json`, split GGUF, stray and missing
//! shards, config.json's vocabulary size, and the CLI on a generated folder.

// FormatError is large by design (errors end a read; see src/read/format/gguf.rs).
#![allow(clippy::result_large_err)]

use orthoscope::fixtures::recording::{Reads, Recording};
use orthoscope::fixtures::synth::{self, safetensors_bytes, TensorSpec};
use orthoscope::fixtures::writers::gguf_model;
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin};
use orthoscope::read::format::set::{read_model_set, ModelSet};
use orthoscope::read::format::sniff::ForeignKind;
use orthoscope::read::format::{DType, FormatError};
use orthoscope::read::locate::{choose_in_set, LocateError};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::report::ToReport;
use orthoscope::Report;

const EMBED: &str = "model.embed_tokens.weight";
const INDEX: &str = "model.safetensors.index.json";

fn shard(k: usize, n: usize) -> String {
    synth::shard_name("model", k, n, "safetensors")
}

/// Every range read from a source, shared with the test after the source is handed on.
fn sources(files: &[(String, Vec<u8>)]) -> Vec<SliceSource> {
    files.iter().map(|(n, b)| SliceSource::new(n.clone(), b.clone())).collect()
}

fn read_set(sources: &[SliceSource]) -> Result<ModelSet, FormatError> {
    let refs: Vec<&dyn ByteSource> = sources.iter().map(|s| s as &dyn ByteSource).collect();
    read_model_set(&refs)
}

/// What the CLI does: read the set, choose, analyse the source holding the tensor (exactly).
fn analyze(sources: Vec<SliceSource>, tensor: Option<&str>) -> Report {
    let set = read_set(&sources).expect("set reads");
    let (info, reason) = choose_in_set(&set, tensor).expect("tensor chosen");
    let origin = Origin {
        file: set.files[info.file].clone(),
        format: set.format.clone(),
        tensor_reason: reason,
        ..Origin::default()
    };
    let source = sources.into_iter().nth(info.file).expect("chosen file among the sources");
    Analysis::new(Box::new(source), info, origin, AnalysisConfig::default())
        .expect("analysis set up")
        .run()
        .expect("analysis runs")
        .report(0.0)
        .expect("report")
}

fn file_of<'a>(files: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &files.iter().find(|(n, _)| n == name).expect("generated file").1
}

/// End of a safetensors header: 8 + its declared length.
fn header_end(bytes: &[u8]) -> u64 {
    8 + u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

// ---------------------------------------------------------------------------------------------
// With an index

#[test]
fn index_locates_the_embedding_shard_and_only_headers_of_named_shards_are_read() {
    let (rows, dim) = (200, 32);
    let values = synth::trained_like(rows, dim, 7);
    let mut files = synth::sharded_safetensors(&values, rows, dim, &DType::F32, 3, 7, true);
    // A stray shard of another model revision holding an embedding of the same name, and a README:
    // neither is named by the index, so neither may be read.
    let stray = TensorSpec::matrix(EMBED, DType::F32, rows, dim, &synth::random_init(rows, dim, 99));
    files.push(("model-00001-of-00004.safetensors".into(), safetensors_bytes(&[stray])));
    files.push(("README.md".into(), b"# a model card".to_vec()));
    // Paths, as the CLI gives them: matched by base name.
    let counting: Vec<Recording<SliceSource>> =
        files.iter().map(|(n, b)| Recording::new(SliceSource::new(format!("folder/sub/{n}"), b.clone()))).collect();
    let reads: Vec<Reads> = counting.iter().map(Recording::reads).collect();
    let refs: Vec<&dyn ByteSource> = counting.iter().map(|s| s as &dyn ByteSource).collect();
    let set = read_model_set(&refs).expect("set reads");

    let pos = |name: &str| files.iter().position(|(n, _)| n == name).unwrap();
    assert_eq!(set.index, Some(pos(INDEX)));
    assert!(set.missing.is_empty(), "{:?}", set.missing);
    assert_eq!(set.ignored, vec!["model-00001-of-00004.safetensors".to_string(), "README.md".to_string()]);
    assert_eq!(set.format, "safetensors (3 shards)");
    assert_eq!(set.vocab_size, Some(rows as u64), "from config.json");
    assert_eq!(set.shards, vec![pos(&shard(1, 3)), pos(&shard(2, 3)), pos(&shard(3, 3))]);
    // Exactly one embedding, from the shard the index names.
    let embeds: Vec<_> = set.tensors.iter().filter(|t| t.name == EMBED).collect();
    assert_eq!(embeds.len(), 1);
    assert_eq!(embeds[0].file, pos(&shard(1, 3)));
    assert_eq!(set.tensors.len(), set.weight_map.len(), "every indexed tensor, once");

    let (chosen, reason) = choose_in_set(&set, None).expect("embedding chosen");
    assert_eq!((chosen.name.as_str(), chosen.file), (EMBED, pos(&shard(1, 3))));
    assert_eq!(reason, "known embedding name");

    for (k, (name, bytes)) in files.iter().enumerate() {
        let got = reads[k].borrow();
        if name.ends_with(".safetensors") && k != pos("model-00001-of-00004.safetensors") {
            let end = header_end(bytes);
            assert!(!got.is_empty(), "{name} not read");
            assert!(got.iter().all(|r| r.end <= end), "{name}: read past its header (ends at {end}): {got:?}");
        } else if name == INDEX || name == "config.json" {
            assert!(!got.is_empty(), "{name} not read");
        } else {
            assert!(got.is_empty(), "{name} is not named by the index but was read: {got:?}");
        }
    }
}

#[test]
fn two_files_with_the_name_of_one_shard_are_refused() {
    let values = synth::trained_like(64, 16, 1);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 1, true);
    let copy = files[0].1.clone();
    files.push((format!("other/{}", shard(1, 2)), copy));
    files[0].0 = format!("this/{}", shard(1, 2));
    let err = read_set(&sources(&files)).unwrap_err();
    match &err {
        FormatError::DuplicateFile { name, first, second } => {
            assert_eq!(name, &shard(1, 2));
            assert_eq!(
                (first.as_str(), second.as_str()),
                ("this/model-00001-of-00002.safetensors", "other/model-00001-of-00002.safetensors")
            );
        }
        other => panic!("expected DuplicateFile, got {other:?}"),
    }
    assert!(err.to_string().contains("give only one"), "{err}");
}

#[test]
fn a_shard_named_by_the_index_but_not_given_is_missing_and_its_embedding_is_named() {
    let values = synth::trained_like(100, 16, 2);
    let mut files = synth::sharded_safetensors(&values, 100, 16, &DType::F32, 4, 2, true);
    files.retain(|(n, _)| n != &shard(1, 4));
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.missing, vec![shard(1, 4)]);
    assert_eq!(set.format, "safetensors (3 of 4 shards)");
    assert!(set.tensors.iter().all(|t| t.name != EMBED), "a tensor of a missing shard cannot be read");
    assert_eq!(set.missing_shard_for(EMBED), Some(shard(1, 4).as_str()));
    assert_eq!(set.missing_shard_for("lm_head.weight"), None);

    // Not a guess among the shards given (lm_head, layers), but the file to add.
    let err = choose_in_set(&set, None).unwrap_err();
    assert_eq!(err, LocateError::MissingShard { tensor: EMBED.into(), shard: shard(1, 4) });
    let message = err.to_string();
    assert!(
        message.contains(EMBED) && message.contains("model-00001-of-00004.safetensors") && message.contains("add it"),
        "{message}"
    );
    // Asked for by name: the same.
    assert_eq!(choose_in_set(&set, Some(EMBED)).unwrap_err(), err);
    // A tensor of a shard that was given is still there.
    let (t, reason) = choose_in_set(&set, Some("lm_head.weight")).expect("lm_head present");
    assert_eq!((t.name.as_str(), reason.as_str()), ("lm_head.weight", "chosen by you"));
    // A name in no file at all is "not found", naming the files read.
    match choose_in_set(&set, Some("nope")).unwrap_err() {
        LocateError::TensorNotFound { name, file } => {
            assert_eq!(name, "nope");
            assert!(file.contains(&shard(2, 4)), "{file}");
        }
        other => panic!("expected TensorNotFound, got {other:?}"),
    }
}

#[test]
fn an_index_with_no_shard_given_lists_them_all_as_missing() {
    let values = synth::trained_like(64, 16, 3);
    let files: Vec<_> = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 3, true)
        .into_iter()
        .filter(|(n, _)| n.ends_with(".json"))
        .collect();
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.missing, vec![shard(1, 2), shard(2, 2)]);
    assert!(set.tensors.is_empty());
    assert!(matches!(choose_in_set(&set, None), Err(LocateError::MissingShard { .. })));
}

#[test]
fn bad_index_json_is_refused_naming_the_file() {
    let values = synth::trained_like(64, 16, 4);
    let base = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 4, true);
    let with_index = |index: &[u8]| {
        let mut files = base.clone();
        for f in files.iter_mut().filter(|(n, _)| n == INDEX) {
            f.1 = index.to_vec();
        }
        read_set(&sources(&files))
    };
    for (case, index, needle) in [
        ("truncated", &b"{\"weight_map\": {\"a\": "[..], "invalid JSON"),
        ("not UTF-8", &b"{\"weight_map\": {\"\xff\": \"x\"}}"[..], "UTF-8"),
        ("no weight_map", &b"{\"metadata\": {}}"[..], "weight_map"),
        ("number shard", &b"{\"weight_map\": {\"model.embed_tokens.weight\": 3}}"[..], "model.embed_tokens.weight"),
    ] {
        match with_index(index) {
            Err(e @ FormatError::InvalidIndex { .. }) => {
                let message = e.to_string();
                assert!(message.contains(INDEX) && message.contains(needle), "{case}: {message}");
            }
            other => panic!("{case}: expected InvalidIndex, got {other:?}"),
        }
    }
}

#[test]
fn an_index_putting_a_tensor_in_a_shard_without_it_is_refused() {
    let values = synth::trained_like(64, 16, 5);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 5, true);
    let index = serde_json::json!({"weight_map": {EMBED: shard(2, 2), "lm_head.weight": shard(2, 2)}});
    for f in files.iter_mut().filter(|(n, _)| n == INDEX) {
        f.1 = serde_json::to_vec(&index).unwrap();
    }
    match read_set(&sources(&files)) {
        Err(e @ FormatError::ShardLacksTensor { .. }) => {
            let message = e.to_string();
            assert!(message.contains(EMBED) && message.contains(&shard(2, 2)) && message.contains(INDEX), "{message}");
        }
        other => panic!("expected ShardLacksTensor, got {other:?}"),
    }
}

#[test]
fn tensors_a_shard_holds_but_the_index_puts_elsewhere_are_left_out() {
    let values = synth::trained_like(64, 16, 6);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 6, true);
    // The index only knows lm_head: the embedding in shard 1 is not the index's, so not read.
    let index = serde_json::json!({"weight_map": {"lm_head.weight": shard(2, 2)}});
    for f in files.iter_mut().filter(|(n, _)| n == INDEX) {
        f.1 = serde_json::to_vec(&index).unwrap();
    }
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.tensors.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["lm_head.weight"]);
    assert_eq!(set.ignored, vec![shard(1, 2)]);
}

#[test]
fn a_pickle_index_beside_the_safetensors_index_is_ignored() {
    let values = synth::trained_like(64, 16, 8);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 8, true);
    let pickle = serde_json::json!({"weight_map": {EMBED: "pytorch_model-00001-of-00002.bin"}});
    files.push(("pytorch_model.bin.index.json".into(), serde_json::to_vec(&pickle).unwrap()));
    files.push(("pytorch_model-00001-of-00002.bin".into(), b"PK\x03\x04 pickled".to_vec()));
    files.push(("tokenizer.json".into(), b"{not even json".to_vec()));
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.index, files.iter().position(|(n, _)| n == INDEX));
    assert_eq!(
        set.ignored,
        vec![
            "pytorch_model.bin.index.json".to_string(),
            "pytorch_model-00001-of-00002.bin".into(),
            "tokenizer.json".into()
        ]
    );
    // Two usable indexes are ambiguous.
    let mut two = files.clone();
    let second = file_of(&files, INDEX).to_vec();
    two.push(("other/model.safetensors.index.json".into(), second));
    assert!(matches!(read_set(&sources(&two)), Err(FormatError::SeveralIndexes { .. })));
}

// ---------------------------------------------------------------------------------------------
// Without an index

#[test]
fn without_an_index_the_files_are_united() {
    let values = synth::trained_like(120, 16, 9);
    let mut files = synth::sharded_safetensors(&values, 120, 16, &DType::BF16, 3, 9, false);
    files.push(("notes.txt".into(), b"hello".to_vec()));
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.index, None);
    assert_eq!(set.format, "safetensors (3 shards)");
    assert_eq!(set.ignored, vec!["notes.txt".to_string()]);
    assert!(set.missing.is_empty());
    assert_eq!(set.vocab_size, Some(120));
    // embedding, lm_head, and a 2-D + 1-D tensor per shard.
    assert_eq!(set.tensors.len(), 2 + 2 * 3);
    for t in &set.tensors {
        assert!(files[t.file].0.ends_with(".safetensors"), "{} from {}", t.name, files[t.file].0);
    }
    let (t, _) = choose_in_set(&set, None).unwrap();
    assert_eq!((t.name.as_str(), files[t.file].0.as_str()), (EMBED, shard(1, 3).as_str()));
}

#[test]
fn without_an_index_a_part_missing_from_a_split_name_is_listed() {
    let values = synth::trained_like(64, 16, 10);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 3, 10, false);
    files.retain(|(n, _)| n != &shard(2, 3));
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!(set.missing, vec![shard(2, 3)]);
    assert_eq!(set.format, "safetensors (2 of 3 shards)");
}

#[test]
fn without_an_index_a_tensor_in_two_files_is_refused_naming_both() {
    let values = synth::trained_like(64, 16, 11);
    let mut files = synth::sharded_safetensors(&values, 64, 16, &DType::F32, 2, 11, false);
    let stray = TensorSpec::matrix(EMBED, DType::F32, 64, 16, &synth::random_init(64, 16, 12));
    files.push(("old/model-00001-of-00002 (1).safetensors".into(), safetensors_bytes(&[stray])));
    match read_set(&sources(&files)) {
        Err(FormatError::DuplicateTensor { tensor, first, second }) => {
            assert_eq!(tensor, EMBED);
            assert_eq!(first, shard(1, 2));
            assert_eq!(second, "model-00001-of-00002 (1).safetensors");
        }
        other => panic!("expected DuplicateTensor, got {other:?}"),
    }
}

#[test]
fn non_model_files_are_ignored_but_a_broken_model_file_fails_with_its_own_error() {
    let good = safetensors_bytes(&[TensorSpec::matrix(EMBED, DType::F32, 8, 4, &synth::random_init(8, 4, 1))]);
    let files =
        vec![("a.safetensors".to_string(), good.clone()), ("b.safetensors".to_string(), b"PK\x03\x04 zip".to_vec())];
    let err = read_set(&sources(&files)).unwrap_err();
    assert!(err.to_string().contains("b.safetensors"), "{err}");
    // Its zip magic names what it is.
    assert!(matches!(err, FormatError::Foreign { kind: ForeignKind::Zip, .. }), "{err:?}");

    // A model file without an extension is recognised by its first bytes.
    let files = vec![("weights".to_string(), good), ("LICENSE".to_string(), b"MIT License ...".to_vec())];
    let set = read_set(&sources(&files)).expect("set reads");
    assert_eq!((set.tensors.len(), set.ignored.clone()), (1, vec!["LICENSE".to_string()]));
    assert_eq!(set.format, "safetensors");

    let files = vec![
        ("README.md".to_string(), b"# card".to_vec()),
        ("config.json".to_string(), b"{\"vocab_size\": 3}".to_vec()),
    ];
    match read_set(&sources(&files)) {
        Err(e @ FormatError::NoModelFiles { .. }) => assert!(e.to_string().contains("README.md"), "{e}"),
        other => panic!("expected NoModelFiles, got {other:?}"),
    }

    let files =
        vec![("m.safetensors".to_string(), safetensors_bytes(&[])), ("config.json".to_string(), b"{vocab".to_vec())];
    match read_set(&sources(&files)) {
        Err(e @ FormatError::InvalidConfig { .. }) => assert!(e.to_string().contains("config.json"), "{e}"),
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn a_single_file_reads_as_before() {
    let values = synth::trained_like(50, 8, 13);
    let bytes = safetensors_bytes(&[TensorSpec::matrix(EMBED, DType::F32, 50, 8, &values)]);
    let set = read_set(&sources(&[("dir/one.safetensors".to_string(), bytes.clone())])).unwrap();
    let single = orthoscope::read::format::read_model(&SliceSource::new("one.safetensors", bytes), 0).unwrap();
    assert_eq!((set.format.as_str(), &set.tensors, set.vocab_size), ("safetensors", &single.tensors, None));
    assert_eq!(set.describe(), "one.safetensors");
    // A lone file of unknown kind still gets the reader's own error.
    let err = read_set(&sources(&[("x.bin".to_string(), b"PK\x03\x04 zip file".to_vec())])).unwrap_err();
    assert!(!matches!(err, FormatError::NoModelFiles { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------------------------
// Same answer as one file

#[test]
fn epsilon_of_a_sharded_set_equals_the_single_file_to_1e_12() {
    let (rows, dim) = (600, 48);
    let values = synth::trained_like(rows, dim, 21);
    for index in [true, false] {
        let files = synth::sharded_safetensors(&values, rows, dim, &DType::BF16, 3, 21, index);
        let sharded = analyze(sources(&files), None);
        let single = safetensors_bytes(&[TensorSpec::matrix(EMBED, DType::BF16, rows, dim, &values)]);
        let one = analyze(vec![SliceSource::new("model.safetensors", single)], None);
        assert_eq!(sharded.tensor, EMBED);
        assert_eq!(sharded.file, shard(1, 3));
        assert_eq!(sharded.format, "safetensors (3 shards)");
        assert_eq!(one.format, "safetensors");
        assert!(sharded.exact && one.exact);
        assert!((sharded.epsilon - one.epsilon).abs() < 1e-12, "index {index}: {} vs {}", sharded.epsilon, one.epsilon);
        assert!((sharded.mu - one.mu).abs() < 1e-12 && (sharded.sigma - one.sigma).abs() < 1e-12);
    }
}

#[test]
fn split_gguf_unites_and_gives_the_unsplit_epsilon() {
    let (rows, dim) = (300, 64);
    let values = synth::trained_like(rows, dim, 31);
    let output = synth::random_init(rows, dim, 32);
    let whole = gguf_model(&values, &output, rows, dim, &DType::Q8_0, 1).expect("Q8_0 rows of 64");
    let one = analyze(vec![SliceSource::new("m.gguf", whole[0].clone())], None);
    for split in [2, 3] {
        let parts = gguf_model(&values, &output, rows, dim, &DType::Q8_0, split).unwrap();
        assert_eq!(parts.len(), split);
        let files: Vec<(String, Vec<u8>)> =
            parts.into_iter().enumerate().map(|(k, b)| (synth::shard_name("m", k + 1, split, "gguf"), b)).collect();
        let set = read_set(&sources(&files)).expect("split set reads");
        assert_eq!(set.format, format!("gguf ({split} shards)"));
        assert_eq!(set.vocab_size, Some(rows as u64), "from tokenizer.ggml.tokens of the first part");
        assert_eq!(set.tensors.len(), 3 + split, "token_embd, output, output_norm, one attn_norm per part");
        let token_embd = set.tensors.iter().find(|t| t.name == "token_embd.weight").unwrap();
        assert_eq!((token_embd.file, token_embd.shape.clone()), (0, vec![rows as u64, dim as u64]));
        assert_eq!(set.tensors.iter().find(|t| t.name == "output.weight").unwrap().file, split - 1);

        let report = analyze(sources(&files), None);
        assert_eq!(report.tensor, "token_embd.weight");
        assert!((report.epsilon - one.epsilon).abs() < 1e-12, "split {split}: {} vs {}", report.epsilon, one.epsilon);

        // Without the last part: listed as missing by its name.
        let set = read_set(&sources(&files[..split - 1])).unwrap();
        assert_eq!(set.missing, vec![synth::shard_name("m", split, split, "gguf")]);
    }
}

#[test]
fn config_vocab_size_feeds_the_shape_heuristic() {
    // Neither name is known: without a vocabulary size nothing is guessed; with config.json's
    // vocab_size the matrix with that many rows is the embedding.
    let a = TensorSpec::matrix("enc.a", DType::F32, 100, 16, &synth::random_init(100, 16, 1));
    let b = TensorSpec::matrix("enc.b", DType::F32, 300, 16, &synth::random_init(300, 16, 2));
    let model = ("weights.safetensors".to_string(), safetensors_bytes(&[a, b]));
    let alone = read_set(&sources(std::slice::from_ref(&model))).unwrap();
    assert!(matches!(choose_in_set(&alone, None), Err(LocateError::NoInputEmbedding { .. })));

    for config in
        [&b"{\"vocab_size\": 100}"[..], &b"{\"model_type\": \"x\", \"text_config\": {\"vocab_size\": 100}}"[..]]
    {
        let files = vec![model.clone(), ("config.json".to_string(), config.to_vec())];
        let set = read_set(&sources(&files)).unwrap();
        assert_eq!(set.vocab_size, Some(100));
        let (t, reason) = choose_in_set(&set, None).unwrap();
        assert_eq!(t.name, "enc.a");
        assert!(reason.contains("vocabulary size 100"), "{reason}");
    }
}

// ---------------------------------------------------------------------------------------------
// The command line

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("orthoscope-shards-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The CLI; the fixture writers (`generate-*`) from the fixture binary, which ships nowhere.
fn cli(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let fixture = args.first().and_then(|a| a.to_str()).is_some_and(|a| a.starts_with("generate-"));
    let bin = if fixture { env!("CARGO_BIN_EXE_orthoscope-fixtures") } else { env!("CARGO_BIN_EXE_orthoscope") };
    std::process::Command::new(bin).args(args).output().expect("orthoscope runs")
}

fn ok(out: std::process::Output) -> String {
    assert!(out.status.success(), "orthoscope failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_analyzes_a_generated_sharded_folder_like_the_single_file() {
    let dir = temp_dir("cli");
    let shards = dir.join("model");
    let single = dir.join("single.safetensors");
    let os = |s: &str| std::ffi::OsString::from(s);
    let size = [os("--rows"), os("300"), os("--dim"), os("32"), os("--dtype"), os("BF16")];
    let mut args = vec![os("generate-shards"), shards.clone().into(), os("--shards"), os("3")];
    args.extend(size.iter().cloned());
    ok(cli(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>()));
    let mut args = vec![os("generate"), single.clone().into()];
    args.extend(size.iter().cloned());
    ok(cli(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>()));
    std::fs::write(shards.join("README.md"), "# card").unwrap();

    let report: Report =
        serde_json::from_str(&ok(cli(&[os("analyze").as_os_str(), shards.as_os_str(), os("--json").as_os_str()])))
            .unwrap();
    assert_eq!(report.tensor, EMBED);
    assert_eq!(report.file, shard(1, 3));
    assert_eq!(report.format, "safetensors (3 shards)");
    let one: Report =
        serde_json::from_str(&ok(cli(&[os("analyze").as_os_str(), single.as_os_str(), os("--json").as_os_str()])))
            .unwrap();
    assert_eq!(one.file, "single.safetensors");
    assert!((report.epsilon - one.epsilon).abs() < 1e-12, "{} vs {}", report.epsilon, one.epsilon);

    // Files named one by one work too, and --tensor picks across shards.
    let lm: Report = serde_json::from_str(&ok(cli(&[
        os("analyze").as_os_str(),
        shards.join(shard(3, 3)).as_os_str(),
        shards.join(INDEX).as_os_str(),
        shards.join(shard(1, 3)).as_os_str(),
        shards.join(shard(2, 3)).as_os_str(),
        os("--tensor").as_os_str(),
        os("lm_head.weight").as_os_str(),
        os("--json").as_os_str(),
    ])))
    .unwrap();
    assert_eq!((lm.tensor.as_str(), lm.file.as_str()), ("lm_head.weight", shard(3, 3).as_str()));

    let listing = ok(cli(&[os("inspect").as_os_str(), shards.as_os_str()]));
    assert!(listing.contains("<- embedding") && listing.contains("ignored: README.md"), "{listing}");

    // Without the embedding's shard: a failure naming the file to add.
    std::fs::remove_file(shards.join(shard(1, 3))).unwrap();
    let out = cli(&[os("analyze").as_os_str(), shards.as_os_str()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(EMBED) && stderr.contains(&shard(1, 3)) && stderr.contains("add it"), "{stderr}");
    let listing = ok(cli(&[os("inspect").as_os_str(), shards.as_os_str()]));
    assert!(listing.contains(&format!("missing: {}", shard(1, 3))), "{listing}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_generates_split_gguf_whose_epsilon_equals_the_unsplit_file() {
    let dir = temp_dir("gguf");
    let os = |s: &str| std::ffi::OsString::from(s);
    let run = |out: &std::path::Path, split: &str| {
        let args = [
            os("generate-gguf"),
            out.into(),
            os("--rows"),
            os("256"),
            os("--dim"),
            os("256"),
            os("--type"),
            os("Q6_K"),
            os("--split"),
            os(split),
        ];
        ok(cli(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>()));
    };
    run(&dir.join("whole.gguf"), "1");
    std::fs::create_dir_all(dir.join("split")).unwrap();
    run(&dir.join("split").join("m.gguf"), "3");
    let names: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("split"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names, (1..=3).map(|k| synth::shard_name("m", k, 3, "gguf")).collect::<Vec<_>>());
    let analyze = |p: &std::path::Path| -> Report {
        serde_json::from_str(&ok(cli(&[os("analyze").as_os_str(), p.as_os_str(), os("--json").as_os_str()]))).unwrap()
    };
    let whole = analyze(&dir.join("whole.gguf"));
    let split = analyze(&dir.join("split"));
    assert_eq!((whole.tensor.as_str(), split.tensor.as_str()), ("token_embd.weight", "token_embd.weight"));
    assert_eq!(
        (whole.dtype.as_str(), whole.format.as_str(), split.format.as_str()),
        ("Q6_K", "gguf", "gguf (3 shards)")
    );
    assert!((whole.epsilon - split.epsilon).abs() < 1e-12, "{} vs {}", whole.epsilon, split.epsilon);
    let _ = std::fs::remove_dir_all(&dir);
}

/// GGUF's `tokenizer.ggml.tokens` travels with the model set (keep the vocabulary).
#[test]
fn gguf_vocabulary_is_kept_in_the_model_set() {
    let files = orthoscope::fixtures::writers::gguf_model(
        &orthoscope::fixtures::synth::random_init(300, 64, 1),
        &orthoscope::fixtures::synth::random_init(300, 64, 2),
        300,
        64,
        &orthoscope::read::format::DType::F32,
        1,
    )
    .expect("gguf fixture");
    let sources: Vec<orthoscope::read::source::SliceSource> = files
        .into_iter()
        .enumerate()
        .map(|(i, b)| orthoscope::read::source::SliceSource::new(format!("m{i}.gguf"), b))
        .collect();
    let refs: Vec<&dyn orthoscope::read::source::ByteSource> =
        sources.iter().map(|s| s as &dyn orthoscope::read::source::ByteSource).collect();
    let set = orthoscope::read::format::set::read_model_set(&refs).expect("set");
    assert_eq!(set.vocab.len(), 300);
    assert_eq!(set.vocab_size, Some(300));
}

/// A safetensors shard of `names` F32 scalars (`shape [1]`), written directly (a JSON of 10⁶
/// entries through serde_json would dominate the test's time).
fn scalar_shard(names: &[String]) -> Vec<u8> {
    let mut json = String::with_capacity(names.len() * 64);
    json.push('{');
    for (k, name) in names.iter().enumerate() {
        if k > 0 {
            json.push(',');
        }
        json.push_str(&format!(r#""{name}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}"#, 4 * k, 4 * k + 4));
    }
    json.push('}');
    while !json.len().is_multiple_of(8) {
        json.push(' ');
    }
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    bytes.resize(bytes.len() + 4 * names.len(), 0);
    bytes
}

/// Time this thread spent on a CPU (Linux's schedstat), so the printed time means something on a
/// machine shared with other work.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// An index of 10⁶ entries over a few shards opens, and every tensor lands in
/// its shard (100 000 entries took 10.7 s before: a quadratic step). The time is printed, not
/// asserted (the machine is shared); the issue asks for under 2 s.
#[test]
fn an_index_of_a_million_entries_opens() {
    const ENTRIES: usize = 1_000_000;
    const SHARDS: usize = 4;
    let names: Vec<String> = (0..ENTRIES).map(|i| format!("model.layers.{}.w{}", i / 16, i % 16)).collect();
    let mut files = Vec::new();
    let mut weight_map = String::from("{\"metadata\":{},\"weight_map\":{");
    for (k, chunk) in names.chunks(ENTRIES / SHARDS).enumerate() {
        let shard = shard(k + 1, SHARDS);
        for (j, name) in chunk.iter().enumerate() {
            if k > 0 || j > 0 {
                weight_map.push(',');
            }
            weight_map.push_str(&format!("\"{name}\":\"{shard}\""));
        }
        files.push((shard, scalar_shard(chunk)));
    }
    weight_map.push_str("}}");
    files.push(("model.safetensors.index.json".to_string(), weight_map.into_bytes()));
    let sources = sources(&files);

    let started = std::time::Instant::now();
    let cpu_started = thread_cpu_ns();
    let set = read_set(&sources).expect("a million-entry index opens");
    let seconds = started.elapsed().as_secs_f64();
    let cpu = thread_cpu_ns().zip(cpu_started).map(|(b, a)| format!(", {:.2} s on the CPU", (b - a) as f64 / 1e9));
    println!(
        "read_model_set over a {ENTRIES}-entry index and {SHARDS} shards: {seconds:.2} s{}",
        cpu.unwrap_or_default()
    );

    assert_eq!(set.tensors.len(), ENTRIES);
    assert_eq!(set.weight_map.len(), ENTRIES);
    assert!(set.missing.is_empty() && set.ignored.is_empty());
    assert_eq!(set.shards, (0..SHARDS).collect::<Vec<_>>());
    // Each tensor is in the file the index names, at its offset there.
    for t in set.tensors.iter().step_by(9973) {
        let i = names.iter().position(|n| *n == t.name).expect("a generated name");
        let (k, j) = (i / (ENTRIES / SHARDS), i % (ENTRIES / SHARDS));
        assert_eq!(t.file, k, "{}", t.name);
        let data_start = files[k].1.len() as u64 - 4 * (ENTRIES / SHARDS) as u64;
        assert_eq!(t.byte_range, (data_start + 4 * j as u64, data_start + 4 * j as u64 + 4), "{}", t.name);
    }
}

/// An index naming more entries or shard files than the reader's limits is
/// refused with a message naming the limit, before any shard is read.
#[test]
fn an_index_over_the_limits_names_the_limit() {
    use orthoscope::read::format::set::{MAX_INDEX_ENTRIES, MAX_INDEX_SHARDS};
    let index = |entries: u64, shards: u64| {
        let mut json = String::from("{\"weight_map\":{");
        for i in 0..entries {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&format!("\"t{i}\":\"s{}.safetensors\"", i % shards));
        }
        json.push_str("}}");
        vec![("model.safetensors.index.json".to_string(), json.into_bytes())]
    };
    let err = read_set(&sources(&index(MAX_INDEX_ENTRIES + 1, 3))).expect_err("too many entries");
    assert_eq!(
        err,
        FormatError::IndexOverLimit {
            file: "model.safetensors.index.json".into(),
            what: "entries",
            limit: MAX_INDEX_ENTRIES
        }
    );
    assert!(err.to_string().contains(&format!("more than {MAX_INDEX_ENTRIES} entries")), "{err}");

    let err = read_set(&sources(&index(MAX_INDEX_SHARDS + 1, MAX_INDEX_SHARDS + 1))).expect_err("too many shards");
    assert!(
        matches!(&err, FormatError::IndexOverLimit { what: "shard files", limit, .. } if *limit == MAX_INDEX_SHARDS)
    );
    assert!(err.to_string().contains(&format!("more than {MAX_INDEX_SHARDS} shard files")), "{err}");

    // A non-string shard name keeps its own message.
    let bad = vec![("model.safetensors.index.json".to_string(), br#"{"weight_map":{"a":1}}"#.to_vec())];
    let err = read_set(&sources(&bad)).expect_err("not a file name");
    assert!(err.to_string().contains("entry for tensor 'a' is not a file name string"), "{err}");
}
