//! Our safetensors header reader (`src/read/format/safetensors.rs`) against the `safetensors` crate as
//! oracle (design.md, "format"), one test per hostile file of `synth::hostile_safetensors`, a
//! property test that no bytes make the reader or the analysis panic, and a tensor past 4 GiB read
//! through u64 offsets.

use std::collections::BTreeMap;
use std::ops::Range;

use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::fixtures::recording::Recording;
use orthoscope::fixtures::setup::analysis_of;
use orthoscope::fixtures::synth::{self, hostile_safetensors, safetensors_bytes, safetensors_header, TensorSpec};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin};
use orthoscope::read::format::sniff::ForeignKind;
use orthoscope::read::format::{read_model, DType, FormatError, ModelInfo, TensorInfo};
use orthoscope::read::locate::{choose, LocateError};
use orthoscope::read::source::{ByteSource, ReadError, SliceSource};
use orthoscope::run::report::ToReport;
use orthoscope::Error;
use proptest::prelude::*;
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

const EMBED: &str = "model.embed_tokens.weight";

fn read(name: &str, bytes: Vec<u8>) -> Result<ModelInfo, FormatError> {
    read_model(&SliceSource::new(name, bytes), 0)
}

/// Deterministic filler bytes.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Oracle: the safetensors crate
// ---------------------------------------------------------------------------------------------

/// One tensor as both readers should see it.
#[derive(Debug, PartialEq)]
struct Seen {
    dtype: String,
    shape: Vec<u64>,
    byte_range: (u64, u64),
}

/// What the crate says: relative data offsets made absolute (8 + header length + begin).
fn oracle(file: &[u8]) -> BTreeMap<String, Seen> {
    let (n, metadata) = SafeTensors::read_metadata(file).expect("the crate reads the file");
    let st = SafeTensors::deserialize(file).expect("the crate deserialises the file");
    let data_start = 8 + n as u64;
    let mut out = BTreeMap::new();
    for (name, view) in st.tensors() {
        let info = metadata.info(&name).expect("metadata entry");
        let (b, e) = info.data_offsets;
        // Cross-check the two ways the crate gives offsets: metadata and the view's slice.
        let from_ptr = view.data().as_ptr() as usize - file.as_ptr() as usize;
        if !view.data().is_empty() {
            assert_eq!(from_ptr as u64, data_start + b as u64, "crate: view pointer vs metadata for {name}");
        }
        assert_eq!(view.data().len(), e - b, "crate: view length vs metadata for {name}");
        out.insert(
            name,
            Seen {
                dtype: view.dtype().to_string(),
                shape: view.shape().iter().map(|&s| s as u64).collect(),
                byte_range: (data_start + b as u64, data_start + e as u64),
            },
        );
    }
    out
}

fn ours(model: &ModelInfo) -> BTreeMap<String, Seen> {
    model
        .tensors
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                Seen { dtype: t.dtype.name().to_string(), shape: t.shape.clone(), byte_range: t.byte_range },
            )
        })
        .collect()
}

/// Side by side on mismatch.
fn assert_same_tensors(case: &str, file: &[u8]) {
    let want = oracle(file);
    let model =
        read(case, file.to_vec()).unwrap_or_else(|e| panic!("{case}: our reader refused a file the crate reads: {e}"));
    assert_eq!(model.format, "safetensors", "{case}: format");
    let got = ours(&model);
    if want != got {
        let mut lines = Vec::new();
        let names: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
        for n in names {
            lines.push(format!("{n}:\n  crate: {:?}\n  ours:  {:?}", want.get(n), got.get(n)));
        }
        panic!("{case}: our reader disagrees with the safetensors crate:\n{}", lines.join("\n"));
    }
    // Our list is in file order.
    assert!(
        model.tensors.windows(2).all(|w| w[0].byte_range.0 <= w[1].byte_range.0),
        "{case}: tensors not in file order"
    );
}

struct Raw {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

fn raw(dtype: Dtype, shape: &[usize], seed: u64) -> Raw {
    let n: usize = shape.iter().product();
    Raw { dtype, shape: shape.to_vec(), data: bytes(n * dtype.bitsize() / 8, seed) }
}

fn crate_file(tensors: &[(&str, &Raw)], metadata: Option<&[(&str, &str)]>) -> Vec<u8> {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, r)| (n.to_string(), TensorView::new(r.dtype, r.shape.clone(), &r.data).expect("view")))
        .collect();
    let meta = metadata.map(|m| m.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    safetensors::serialize(views, meta).expect("serialize")
}

#[test]
fn reader_agrees_with_the_crate_on_a_mixed_dtype_file() {
    let f32_ = raw(Dtype::F32, &[17, 8], 1);
    let f16_ = raw(Dtype::F16, &[3, 5], 2);
    let bf16_ = raw(Dtype::BF16, &[64, 12], 3);
    let f64_ = raw(Dtype::F64, &[7], 4);
    let i64_ = raw(Dtype::I64, &[2, 3, 4], 5);
    let u8_ = raw(Dtype::U8, &[13], 6);
    let empty = raw(Dtype::F32, &[0, 8], 7);
    let scalar = raw(Dtype::F32, &[], 8);
    let file = crate_file(
        &[
            (EMBED, &bf16_),
            ("lm_head.weight", &f32_),
            ("norm.weight", &f16_),
            ("rope.freqs", &f64_),
            ("position_ids", &i64_),
            ("mask", &u8_),
            ("empty.weight", &empty),
            ("scalar", &scalar),
        ],
        Some(&[("format", "pt")]),
    );
    assert_same_tensors("mixed dtypes", &file);
}

#[test]
fn reader_agrees_with_the_crate_on_each_dtype_and_rank() {
    let dtypes = [Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64, Dtype::I64, Dtype::U8];
    let shapes: [&[usize]; 6] = [&[5], &[4, 3], &[2, 3, 5], &[0], &[3, 0, 2], &[1, 1, 1, 7]];
    for (i, dt) in dtypes.iter().enumerate() {
        for (j, shape) in shapes.iter().enumerate() {
            let a = raw(*dt, shape, (i * 10 + j) as u64);
            let b = raw(Dtype::F32, &[2, 2], 99);
            let file = crate_file(&[("t", &a), ("u", &b)], None);
            assert_same_tensors(&format!("{dt} {shape:?}"), &file);
        }
    }
}

#[test]
fn reader_agrees_with_the_crate_on_many_tensors() {
    let raws: Vec<(String, Raw)> = (0..60)
        .map(|i| {
            let dt = [Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64, Dtype::I64, Dtype::U8][i % 6];
            let shape = match i % 4 {
                0 => vec![i % 7 + 1],
                1 => vec![i % 5 + 1, 3],
                2 => vec![2, i % 3 + 1, 2],
                _ => vec![0, 4],
            };
            (format!("layers.{i}.weight"), raw(dt, &shape, i as u64))
        })
        .collect();
    let refs: Vec<(&str, &Raw)> = raws.iter().map(|(n, r)| (n.as_str(), r)).collect();
    assert_same_tensors("60 tensors", &crate_file(&refs, None));
}

#[test]
fn files_written_by_synth_are_read_alike_by_the_crate() {
    // Round trip: our fixture writer → the crate, and → our reader, agree on everything.
    let values = synth::trained_like(40, 24, 1);
    let tensors = [
        TensorSpec::matrix(EMBED, DType::BF16, 40, 24, &values),
        TensorSpec::matrix("lm_head.weight", DType::F32, 40, 24, &values),
        TensorSpec::matrix("half.weight", DType::F16, 10, 24, &values[..240]),
        TensorSpec::matrix("double.weight", DType::F64, 8, 12, &values[..96]),
    ];
    let file = safetensors_bytes(&tensors);
    assert_same_tensors("synth::safetensors_bytes", &file);
    // And the crate sees the same data bytes.
    let st = SafeTensors::deserialize(&file).unwrap();
    for t in &tensors {
        assert_eq!(st.tensor(&t.name).unwrap().data(), &t.data[..], "data of {}", t.name);
    }
    // The demo files too.
    let (name, demo) = synth::demo("class1-like").unwrap();
    assert_same_tensors(&name, &demo);
}

// ---------------------------------------------------------------------------------------------
// Hostile files (safetensors crate "attacks" idea, style.md)
// ---------------------------------------------------------------------------------------------

fn hostile(case: &str) -> Vec<u8> {
    hostile_safetensors()
        .into_iter()
        .find(|(n, _)| *n == case)
        .unwrap_or_else(|| panic!("synth::hostile_safetensors has no case {case}"))
        .1
}

/// read_model on the named hostile case (file name = case name + ".safetensors").
fn read_hostile(case: &str) -> Result<ModelInfo, FormatError> {
    read(&format!("{case}.safetensors"), hostile(case))
}

/// The file's embedding located, analysed and reported, as the CLI does.
fn analyse(name: &str, bytes: Vec<u8>) -> Result<orthoscope::Report, Error> {
    analysis_of(Box::new(SliceSource::new(name, bytes)), AnalysisConfig::default())?.run()?.report(0.0)
}

fn assert_mentions(message: &str, needles: &[&str]) {
    for n in needles {
        assert!(message.contains(n), "message should mention {n:?}:\n  {message}");
    }
}

#[test]
fn hostile_cases_are_all_covered_here() {
    let names: Vec<&str> = hostile_safetensors().iter().map(|(n, _)| *n).collect();
    let tested = [
        "not-safetensors",
        "truncated-header",
        "header-past-eof",
        "header-too-large",
        "invalid-json",
        "unknown-dtype",
        "size-mismatch",
        "offsets-past-eof",
        "not-2d",
        "zero-rows",
        "all-rows-zero",
        "offsets-overlap",
        "offsets-gap",
    ];
    // The foreign-* cases (other kinds of file under a model's name) are tested in tests/foreign_files.rs.
    for n in names.iter().filter(|n| !n.starts_with("foreign-")) {
        assert!(tested.contains(n), "hostile case {n:?} has no test in tests/safetensors_reader.rs");
    }
}

#[test]
fn hostile_not_safetensors_zip_file_is_refused_with_a_specific_message() {
    let err = read_hostile("not-safetensors").expect_err("a zip file must not parse");
    // "PK\x03\x04 thi" read as a length would be ~7.7e18: the zip magic is recognised first.
    match &err {
        FormatError::Foreign { file, kind: ForeignKind::Zip, .. } => assert_eq!(file, "not-safetensors.safetensors"),
        other => panic!("expected Foreign zip, got {other:?}"),
    }
    assert_mentions(&err.to_string(), &["not-safetensors.safetensors is a zip archive", "extract it"]);
}

/// The oracle: the `safetensors` crate's verdict on the same bytes.
fn crate_accepts(bytes: &[u8]) -> bool {
    safetensors::SafeTensors::deserialize(bytes).is_ok()
}

#[test]
fn hostile_overlapping_offsets_name_both_tensors() {
    let err = read_hostile("offsets-overlap").expect_err("tensors sharing bytes");
    assert_eq!(
        err,
        FormatError::OffsetsOverlap {
            file: "offsets-overlap.safetensors".into(),
            first: EMBED.into(),
            first_offsets: (0, 128),
            second: "lm_head.weight".into(),
            second_offsets: (64, 192),
        }
    );
    assert_mentions(&err.to_string(), &[EMBED, "[0, 128]", "lm_head.weight", "[64, 192]", "overlap"]);
    assert!(!crate_accepts(&hostile("offsets-overlap")));
}

#[test]
fn hostile_gapped_offsets_name_the_gap_and_its_neighbours() {
    let err = read_hostile("offsets-gap").expect_err("bytes no tensor covers");
    assert!(
        matches!(&err, FormatError::OffsetsGap { start: 128, end: 160, between, .. }
            if between.contains(EMBED) && between.contains("lm_head.weight")),
        "{err:?}"
    );
    assert_mentions(&err.to_string(), &["[128, 160)", EMBED, "(0, 128)", "lm_head.weight", "(160, 288)"]);
    assert!(!crate_accepts(&hostile("offsets-gap")));
}

/// Offsets laid out every way (back to back, a gap before, between or after, overlaps, a tensor
/// inside another, zero-sized tensors): this reader accepts exactly what the `safetensors` crate
/// accepts.
#[test]
fn offset_tiling_agrees_with_the_safetensors_crate() {
    // (start, end) of three U8 tensors, and the data section's length.
    let layouts: &[([(u64, u64); 3], u64)] = &[
        ([(0, 4), (4, 10), (10, 16)], 16),
        ([(10, 16), (0, 4), (4, 10)], 16),
        ([(0, 4), (4, 4), (4, 16)], 16),
        ([(0, 0), (0, 8), (8, 16)], 16),
        ([(0, 4), (4, 10), (10, 16)], 20),
        ([(2, 4), (4, 10), (10, 16)], 16),
        ([(0, 4), (6, 10), (10, 16)], 16),
        ([(0, 4), (3, 10), (10, 16)], 16),
        ([(0, 16), (4, 10), (10, 16)], 16),
        ([(0, 8), (0, 8), (8, 16)], 16),
        ([(0, 4), (4, 10), (10, 12)], 16),
        ([(0, 4), (4, 4), (4, 4)], 4),
    ];
    for (offsets, data_len) in layouts {
        let entries: Vec<String> = offsets
            .iter()
            .enumerate()
            .map(|(i, (s, e))| {
                format!("\"t{i}\":{{\"dtype\":\"U8\",\"shape\":[{}],\"data_offsets\":[{s},{e}]}}", e - s)
            })
            .collect();
        let json = format!("{{{}}}", entries.join(","));
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(json.as_bytes());
        bytes.resize(bytes.len() + *data_len as usize, 7);
        let ours = read("t.safetensors", bytes.clone());
        assert_eq!(ours.is_ok(), crate_accepts(&bytes), "{offsets:?} in {data_len} bytes: {ours:?}");
        if let Err(e) = ours {
            assert!(
                matches!(e, FormatError::OffsetsOverlap { .. } | FormatError::OffsetsGap { .. }),
                "{offsets:?}: {e:?}"
            );
        }
    }
}

#[test]
fn hostile_truncated_header_is_too_short() {
    let err = read_hostile("truncated-header").expect_err("5 bytes cannot be a file");
    assert_eq!(
        err,
        FormatError::TooShort { file: "truncated-header.safetensors".into(), format: "safetensors", len: 5 }
    );
    assert_mentions(&err.to_string(), &["truncated-header.safetensors", "5 bytes"]);
}

#[test]
fn hostile_header_past_eof_names_both_lengths() {
    let err = read_hostile("header-past-eof").expect_err("header longer than file");
    assert_eq!(
        err,
        FormatError::HeaderPastEof { file: "header-past-eof.safetensors".into(), header_len: 5000, file_len: 15 }
    );
    assert_mentions(&err.to_string(), &["5000", "15 bytes"]);
}

#[test]
fn hostile_header_too_large_is_refused_before_reading_it() {
    let err = read_hostile("header-too-large").expect_err("200 MB header");
    assert_eq!(
        err,
        FormatError::HeaderTooLarge { file: "header-too-large.safetensors".into(), len: 200_000_000, max: 100_000_000 }
    );
    assert_mentions(&err.to_string(), &["200000000", "100000000"]);
}

#[test]
fn hostile_invalid_json_is_invalid_json() {
    let err = read_hostile("invalid-json").expect_err("cut-off JSON");
    assert!(matches!(&err, FormatError::InvalidJson { file, .. } if file == "invalid-json.safetensors"), "got {err:?}");
    assert_mentions(&err.to_string(), &["invalid-json.safetensors", "JSON"]);
}

#[test]
fn hostile_unknown_dtype_is_listed_but_refused_for_analysis() {
    let model = read_hostile("unknown-dtype").expect("an unknown dtype is listed, not fatal");
    assert_eq!(model.tensors.len(), 1);
    let t = &model.tensors[0];
    assert_eq!(t.dtype, DType::Other("Q7".into()));
    assert_eq!(t.shape, vec![4, 8]);
    // choose: the only tensor has a known embedding name but cannot be decoded.
    let err = choose(&model, None, "unknown-dtype.safetensors").expect_err("Q7 cannot be analysed");
    assert!(matches!(&err, LocateError::Decode { tensor, .. } if tensor == EMBED), "choose: got {err:?}");
    assert_mentions(&err.to_string(), &[EMBED, "Q7"]);
    // Analysis::new on the tensor directly (user override) says the same.
    let err = Analysis::new(
        Box::new(SliceSource::new("unknown-dtype.safetensors", hostile("unknown-dtype"))),
        t.clone(),
        Origin::default(),
        AnalysisConfig::default(),
    )
    .err()
    .expect("Analysis::new must refuse Q7");
    assert!(matches!(&err, Error::Decode { tensor, .. } if tensor == EMBED), "Analysis::new: got {err:?}");
    assert_mentions(&err.to_string(), &[EMBED, "Q7"]);
}

#[test]
fn hostile_size_mismatch_names_tensor_shape_and_both_sizes() {
    let err = read_hostile("size-mismatch").expect_err("4×8 F32 is 128 bytes, not 100");
    match &err {
        FormatError::SizeMismatch { tensor, shape, dtype, expected, actual, .. } => {
            assert_eq!((tensor.as_str(), shape.as_slice(), dtype.as_str()), (EMBED, &[4u64, 8][..], "F32"));
            assert_eq!((expected.as_str(), *actual), ("128", 100));
        }
        other => panic!("expected SizeMismatch, got {other:?}"),
    }
    assert_mentions(&err.to_string(), &[EMBED, "128", "100"]);
}

#[test]
fn hostile_offsets_past_eof_names_tensor_and_end_offset() {
    let bytes = hostile("offsets-past-eof");
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let file_len = bytes.len() as u64;
    let err = read_hostile("offsets-past-eof").expect_err("1280 bytes of data claimed, 128 present");
    let end = 8 + header_len + 1280;
    assert_eq!(
        err,
        FormatError::PastEof { file: "offsets-past-eof.safetensors".into(), tensor: EMBED.into(), end, file_len }
    );
    assert_mentions(&err.to_string(), &[EMBED, &end.to_string(), &file_len.to_string()]);
}

#[test]
fn hostile_three_d_tensor_is_not_a_matrix() {
    let model = read_hostile("not-2d").expect("a 3-D tensor is a valid file");
    let err = choose(&model, None, "not-2d.safetensors").expect_err("no matrix to analyse");
    assert_eq!(err, LocateError::NotAMatrix { tensor: EMBED.into(), shape: vec![2, 4, 4] });
    assert_mentions(&err.to_string(), &[EMBED, "[2, 4, 4]"]);
    let err = Analysis::new(
        Box::new(SliceSource::new("not-2d.safetensors", hostile("not-2d"))),
        model.tensors[0].clone(),
        Origin::default(),
        AnalysisConfig::default(),
    )
    .err()
    .expect("Analysis::new must refuse a 3-D tensor");
    assert_eq!(err, Error::Locate(LocateError::NotAMatrix { tensor: EMBED.into(), shape: vec![2, 4, 4] }));
}

#[test]
fn hostile_zero_rows_is_empty_when_analysed_directly() {
    let model = read_hostile("zero-rows").expect("a 0×8 tensor is a valid file");
    let err = Analysis::new(
        Box::new(SliceSource::new("zero-rows.safetensors", hostile("zero-rows"))),
        model.tensors[0].clone(),
        Origin::default(),
        AnalysisConfig::default(),
    )
    .err()
    .expect("Analysis::new must refuse a 0×8 tensor");
    assert_eq!(err, Error::Locate(LocateError::Empty { tensor: EMBED.into(), shape: vec![0, 8] }));
    assert_mentions(&err.to_string(), &[EMBED, "[0, 8]"]);
}

#[test]

fn hostile_zero_rows_is_empty_through_choose() {
    let model = read_hostile("zero-rows").expect("a 0×8 tensor is a valid file");
    let err = choose(&model, None, "zero-rows.safetensors").expect_err("nothing to analyse");
    assert_eq!(err, LocateError::Empty { tensor: EMBED.into(), shape: vec![0, 8] });
}

#[test]
fn hostile_all_rows_zero_fails_at_report_with_too_few_rows() {
    // §1: zero rows are dropped; with all 16 dropped no pair is left. Reading succeeds, the report fails.
    let err = analyse("all-rows-zero.safetensors", hostile("all-rows-zero")).expect_err("ε needs two usable rows");
    assert_eq!(err, Error::TooFewRows { tensor: EMBED.into(), rows: 16, kept: 0, zero: 16, nonfinite: 0 });
    assert_mentions(&err.to_string(), &[EMBED, "16 all-zero"]);
}

/// A hostile case's name and the check its error must pass.
type ErrorCase = (&'static str, fn(&Error) -> bool);

#[test]
fn hostile_files_fail_the_whole_chain_with_the_same_error_as_each_step() {
    // The CLI's path (read_model → choose → Analysis → report) surfaces each step's error unchanged.
    let cases: [ErrorCase; 8] = [
        ("truncated-header", |e| matches!(e, Error::Format(FormatError::TooShort { .. }))),
        ("header-past-eof", |e| matches!(e, Error::Format(FormatError::HeaderPastEof { .. }))),
        ("header-too-large", |e| matches!(e, Error::Format(FormatError::HeaderTooLarge { .. }))),
        ("invalid-json", |e| matches!(e, Error::Format(FormatError::InvalidJson { .. }))),
        ("size-mismatch", |e| matches!(e, Error::Format(FormatError::SizeMismatch { .. }))),
        ("offsets-past-eof", |e| matches!(e, Error::Format(FormatError::PastEof { .. }))),
        ("unknown-dtype", |e| matches!(e, Error::Locate(LocateError::Decode { .. }))),
        ("not-2d", |e| matches!(e, Error::Locate(LocateError::NotAMatrix { .. }))),
    ];
    let mut bad = Vec::new();
    for (case, ok) in cases {
        match analyse(&format!("{case}.safetensors"), hostile(case)) {
            Ok(r) => bad.push(format!("{case}: expected an error, got a report with ε = {}", r.epsilon)),
            Err(e) if !ok(&e) => bad.push(format!("{case}: unexpected error {e:?}")),
            Err(_) => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// No bytes make the reader or the analysis panic
// ---------------------------------------------------------------------------------------------

/// Reads, and when that succeeds analyses, whatever the bytes are. Errors are fine; panics are not.
fn read_and_analyse(bytes: Vec<u8>) {
    let name = "fuzz.safetensors";
    let source = SliceSource::new(name, bytes.clone());
    let Ok(model) = read_model(&source, 0) else { return };
    // Every listed tensor lies inside the file.
    for t in &model.tensors {
        assert!(
            t.byte_range.0 <= t.byte_range.1 && t.byte_range.1 <= bytes.len() as u64,
            "{t:?} outside {} bytes",
            bytes.len()
        );
    }
    let mut candidates: Vec<TensorInfo> = model.tensors.clone();
    if let Ok((t, _)) = choose(&model, None, name) {
        candidates.insert(0, t);
    }
    for t in candidates.into_iter().take(3) {
        if let Ok(a) = Analysis::new(
            Box::new(SliceSource::new(name, bytes.clone())),
            t,
            Origin::default(),
            AnalysisConfig::default(),
        ) {
            if let Ok(done) = a.run() {
                let _ = done.report(0.0);
            }
        }
    }
}

fn valid_file() -> Vec<u8> {
    let values = synth::random_init(12, 8, 5);
    safetensors_bytes(&[
        TensorSpec::matrix(EMBED, DType::F32, 12, 8, &values),
        TensorSpec::matrix("lm_head.weight", DType::BF16, 6, 8, &values[..48]),
        TensorSpec { name: "ids".into(), dtype: DType::I64, shape: vec![3], data: vec![1; 24] },
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_and_analyse(bytes);
    }

    #[test]
    fn random_bytes_after_a_plausible_length_never_panic(len in 0u64..400, tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend(tail);
        read_and_analyse(bytes);
    }

    #[test]
    fn mutated_valid_files_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        insert in proptest::option::of((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..16))),
    ) {
        let mut bytes = valid_file();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        if let Some((at, extra)) = insert {
            let i = at.index(bytes.len());
            bytes.splice(i..i, extra);
        }
        if let Some(at) = cut {
            let i = at.index(bytes.len());
            bytes.truncate(i);
        }
        read_and_analyse(bytes);
    }

    #[test]
    fn mutated_header_text_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), prop::sample::select(b"{}[]\",:0123456789-e. abFIU_".to_vec())), 1..6),
    ) {
        // Edits inside the JSON only, keeping the length prefix: hits the entry checks, not the framing.
        let mut bytes = valid_file();
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        for (at, c) in edits {
            let i = 8 + at.index(header_len);
            bytes[i] = c;
        }
        read_and_analyse(bytes);
    }
}

#[test]
fn header_offsets_near_u64_max_are_past_eof_not_an_overflow() {
    let json = format!(
        "{{\"{EMBED}\":{{\"dtype\":\"U8\",\"shape\":[1,1],\"data_offsets\":[{},{}]}}}}",
        u64::MAX - 1,
        u64::MAX
    );
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    let err = read("huge.safetensors", bytes).expect_err("offsets near 2^64");
    assert!(matches!(err, FormatError::PastEof { .. }), "got {err:?}");
    let json =
        format!("{{\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}}}");
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    bytes.extend_from_slice(&[0; 16]);
    let err = read("huge-shape.safetensors", bytes).expect_err("2^64 elements");
    assert!(matches!(&err, FormatError::SizeMismatch { expected, .. } if expected == "more than 2^64"), "got {err:?}");
}

// ---------------------------------------------------------------------------------------------
// Past 4 GiB: u64 offsets all the way (the safetensors crate keeps them in usize)
// ---------------------------------------------------------------------------------------------

const GIB: u64 = 1 << 30;

/// A 5 GiB "file" that holds only its header in memory; every byte past the header is computed
/// from its offset.
struct HugeSource {
    header: Vec<u8>,
    len: u64,
}

/// The f32 stored at byte offset `o` (a multiple of 4): a pseudo-random value in (−1, 1) drawn from
/// the offset, so rows read from any other offset hold different numbers.
fn value_at(o: u64) -> f32 {
    let mut z = o.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

impl ByteSource for HugeSource {
    fn name(&self) -> &str {
        "huge.safetensors"
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        orthoscope::read::source::check_range(self.name(), offset, buf.len() as u64, self.len)?;
        for (i, b) in buf.iter_mut().enumerate() {
            let o = offset + i as u64;
            *b = if o < self.header.len() as u64 {
                self.header[o as usize]
            } else {
                let word = o & !3;
                value_at(word).to_le_bytes()[(o - word) as usize]
            };
        }
        Ok(())
    }
}

#[test]
fn tensor_past_4_gib_has_u64_byte_range_and_its_rows_are_read_at_those_offsets() {
    let (rows, dim) = (96u64, 20u64);
    let row_bytes = dim * 4;
    // A header placing the embedding 4.5 GiB into the data section (a big tensor before it).
    let spec = TensorSpec {
        name: EMBED.into(),
        dtype: DType::F32,
        shape: vec![rows, dim],
        data: vec![0; (rows * row_bytes) as usize],
    };
    let gap = 4 * GIB + GIB / 2;
    let header = safetensors_header(&[spec], gap);
    let data_start = header.len() as u64; // length prefix included
    let start = data_start + gap;
    let end = start + rows * row_bytes;
    assert!(start > u32::MAX as u64 && end < 5 * GIB);
    // The file ends with the embedding: a safetensors data section is tiled exactly by its tensors
    // (the 4.5 GiB before it are a U8 tensor `synth::GAP_TENSOR`). Every read is logged.
    let source = Recording::new(HugeSource { header, len: end });
    let reads = source.reads();

    let model = read_model(&source, 0).expect("a ~4.5 GiB file with a tensor past 4 GiB parses");
    assert_eq!(model.tensors.len(), 2);
    assert_eq!(model.tensors[0].name, synth::GAP_TENSOR);
    let t = model.tensors[1].clone();
    assert_eq!(t.name, EMBED);
    assert_eq!(t.byte_range, (start, end), "absolute u64 byte range (start = 8 + header + 4.5 GiB)");
    assert_eq!(t.shape, vec![rows, dim]);
    assert!(
        reads.borrow().iter().all(|r| r.start < data_start),
        "the header reader read data bytes: {:?}",
        reads.borrow()
    );
    reads.borrow_mut().clear();

    let report = Analysis::new(Box::new(source), t, Origin::default(), AnalysisConfig::default())
        .expect("set up")
        .run()
        .expect("run")
        .report(0.0)
        .expect("report");

    // Every read lies inside the tensor and starts on a row boundary; every row was read.
    let mut row_reads = vec![0u32; rows as usize];
    for &Range { start: o, end: read_end } in reads.borrow().iter() {
        let n = read_end - o;
        assert!(o >= start && read_end <= end, "read of {n} bytes at {o} outside the tensor [{start}, {end})");
        assert_eq!((o - start) % row_bytes, 0, "read at {o} does not start on a row boundary");
        assert_eq!(n % row_bytes, 0, "read of {n} bytes is not whole rows");
        for r in (o - start) / row_bytes..(read_end - start) / row_bytes {
            row_reads[r as usize] += 1;
        }
    }
    assert!(
        row_reads.iter().all(|&c| c >= 1),
        "rows never read: {:?}",
        row_reads.iter().enumerate().filter(|(_, &c)| c == 0).map(|(i, _)| i).collect::<Vec<_>>()
    );

    // The statistics are those of the rows at those offsets (f64 all pairs, paper.md §1).
    let values: Vec<f32> =
        (0..rows).flat_map(|r| (0..dim).map(move |j| value_at(start + r * row_bytes + 4 * j))).collect();
    let AllPairs { mu, sigma, .. } = AllPairs::of(&values, dim as usize);
    assert_eq!((report.rows, report.dim, report.pairs), (rows, dim, rows * (rows - 1) / 2));
    assert!(report.exact);
    assert!(
        // μ comes from f64 unit rows on every path; σ from the default f32 Gram kernel.
        (report.mu - mu).abs() < 1e-9 && (report.sigma - sigma).abs() <= 1e-6 * sigma,
        "rows past 4 GiB: expected μ {mu:.12} σ {sigma:.12}, got μ {:.12} σ {:.12}",
        report.mu,
        report.sigma
    );
}

/// A header may claim any row count its byte range allows: a 1-column matrix of 2²⁷ rows is
/// refused by name before a visiting plan of that size is built.
#[test]
fn a_matrix_with_more_rows_than_any_vocabulary_is_refused() {
    let t = orthoscope::read::format::TensorInfo {
        name: "model.embed_tokens.weight".into(),
        dtype: orthoscope::read::format::DType::U8,
        shape: vec![1 << 27, 1],
        byte_range: (0, 1 << 27),
        file: 0,
        layout: Default::default(),
    };
    let t = orthoscope::read::format::TensorInfo { dtype: orthoscope::read::format::DType::F8E4M3, ..t };
    let src = orthoscope::read::source::SliceSource::new("x", vec![0u8; 8]);
    let err = orthoscope::pass::analysis::Analysis::new(Box::new(src), t, Default::default(), Default::default())
        .err()
        .expect("refused");
    assert!(matches!(err, orthoscope::Error::TooManyRows { rows, .. } if rows == 1 << 27), "{err}");
}

/// `__metadata__` is a map of strings to strings: the safetensors crate refuses any other value,
/// and so does our reader, naming the key.
#[test]
fn metadata_values_that_are_not_strings_are_refused_as_the_crate_refuses_them() {
    for (value, found) in
        [("1", "a number"), ("{\"a\": \"b\"}", "an object"), ("null", "null"), ("[\"x\"]", "an array")]
    {
        let json = format!(
            "{{\"__metadata__\":{{\"format\":\"pt\",\"step\":{value}}},\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}}}"
        );
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(json.as_bytes());
        file.extend_from_slice(&[0u8; 16]);
        assert!(SafeTensors::deserialize(&file).is_err(), "the crate accepts {value}");
        match read("m.safetensors", file) {
            Err(FormatError::MetadataNotString { key, found: f, .. }) => {
                assert_eq!((key.as_str(), f), ("step", found));
            }
            other => panic!("{value}: {other:?}"),
        }
    }
    // Strings stay fine.
    let json = format!("{{\"__metadata__\":{{\"format\":\"pt\"}},\"{EMBED}\":{{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}}}");
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json.as_bytes());
    file.extend_from_slice(&[0u8; 16]);
    assert!(SafeTensors::deserialize(&file).is_ok());
    assert!(read("m.safetensors", file).is_ok());
}
