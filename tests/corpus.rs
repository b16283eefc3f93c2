//! The malformed-file corpus (`src/fixtures/corpus.rs`), table-driven: every case gives its
//! own error variant (matched on the enum, not the message) with a message that names what is
//! wrong, or the report its usable rows give (against an all-pairs oracle).

use std::collections::BTreeSet;
use std::rc::Rc;

use orthoscope::fixtures::corpus::{corpus, CorpusCase, Expect};
use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::sniff::ForeignKind;
use orthoscope::read::format::FormatError;
use orthoscope::read::locate::LocateError;
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::error::ReportError;
use orthoscope::run::job::Job;
use orthoscope::{Error, Report};

type Outcome = Result<Report, ReportError>;
/// Whether an outcome is the one a case must give.
type Check = fn(&Outcome) -> bool;

/// `|r| matches!(r, Err(PATTERN))` as a fn pointer.
macro_rules! fails {
    ($p:pat) => {
        (|r: &Outcome| matches!(r, Err(ReportError::Analysis($p)))) as Check
    };
}
macro_rules! format_err {
    ($p:pat) => {
        fails!(Error::Format($p))
    };
}
macro_rules! foreign {
    ($k:pat) => {
        format_err!(FormatError::Foreign { kind: $k, .. })
    };
}
const REPORT: Check = |r| r.is_ok();

fn table() -> Vec<(&'static str, Check)> {
    use FormatError as F;
    vec![
        ("st-not-safetensors", foreign!(ForeignKind::Zip)),
        ("st-truncated-header", format_err!(F::TooShort { .. })),
        ("st-header-past-eof", format_err!(F::HeaderPastEof { .. })),
        ("st-header-too-large", format_err!(F::HeaderTooLarge { .. })),
        ("st-invalid-json", format_err!(F::InvalidJson { .. })),
        ("st-unknown-dtype", fails!(Error::Locate(LocateError::Decode { .. }))),
        ("st-size-mismatch", format_err!(F::SizeMismatch { .. })),
        ("st-offsets-past-eof", format_err!(F::PastEof { .. })),
        ("st-not-2d", fails!(Error::Locate(LocateError::NotAMatrix { .. }))),
        ("st-zero-rows", fails!(Error::Locate(LocateError::Empty { .. }))),
        ("st-offsets-overlap", format_err!(F::OffsetsOverlap { .. })),
        ("st-offsets-gap", format_err!(F::OffsetsGap { .. })),
        ("st-all-rows-zero", fails!(Error::TooFewRows { kept: 0, zero: 16, .. })),
        ("foreign-empty", foreign!(ForeignKind::Empty)),
        ("foreign-git-lfs-pointer", foreign!(ForeignKind::GitLfsPointer { size: Some(4965799096) })),
        ("foreign-pytorch-zip", foreign!(ForeignKind::PyTorchZip)),
        ("foreign-pytorch-legacy", foreign!(ForeignKind::PyTorchLegacy)),
        ("foreign-pickle", foreign!(ForeignKind::Pickle)),
        ("foreign-keras", foreign!(ForeignKind::Keras)),
        ("foreign-npz", foreign!(ForeignKind::Npz)),
        ("foreign-zip", foreign!(ForeignKind::Zip)),
        ("foreign-gzip", foreign!(ForeignKind::Gzip)),
        ("foreign-zstd", foreign!(ForeignKind::Zstd)),
        ("foreign-xz", foreign!(ForeignKind::Xz)),
        ("foreign-tar", foreign!(ForeignKind::Tar)),
        ("foreign-hdf5", foreign!(ForeignKind::Hdf5)),
        ("foreign-onnx", foreign!(ForeignKind::Onnx)),
        ("foreign-tf-saved-model", foreign!(ForeignKind::TfSavedModel)),
        ("foreign-png", foreign!(ForeignKind::Image { format: "PNG image" })),
        ("foreign-jpeg", foreign!(ForeignKind::Image { format: "JPEG image" })),
        ("foreign-gif", foreign!(ForeignKind::Image { format: "GIF image" })),
        ("foreign-webp", foreign!(ForeignKind::Image { format: "WebP image" })),
        ("foreign-pdf", foreign!(ForeignKind::Image { format: "PDF document" })),
        ("foreign-html", foreign!(ForeignKind::Html)),
        ("foreign-xml", foreign!(ForeignKind::Xml)),
        ("foreign-json", foreign!(ForeignKind::Json)),
        ("foreign-text", foreign!(ForeignKind::Text)),
        ("st-bad-utf8", format_err!(F::InvalidJson { .. })),
        ("st-duplicate-name", format_err!(F::InvalidEntry { .. })),
        ("st-reversed-offsets", format_err!(F::BadOffsets { start: 128, end: 0, .. })),
        ("st-overflowing-shape", format_err!(F::SizeMismatch { .. })),
        ("st-shape-not-numbers", format_err!(F::InvalidEntry { .. })),
        ("st-header-not-object", format_err!(F::InvalidJson { .. })),
        ("st-1d-embedding", fails!(Error::Locate(LocateError::NotAMatrix { .. }))),
        ("st-integer-embedding", fails!(Error::Locate(LocateError::Decode { .. }))),
        ("st-zero-columns", fails!(Error::Locate(LocateError::Empty { .. }))),
        ("st-truncated-data", format_err!(F::PastEof { .. })),
        ("rows-some-nan-inf", REPORT),
        ("rows-all-nan-inf", fails!(Error::TooFewRows { kept: 0, nonfinite: 8, .. })),
        ("rows-zero-and-nan", fails!(Error::TooFewRows { kept: 0, zero: 5, nonfinite: 1, .. })),
        ("rows-one", fails!(Error::TooFewRows { kept: 1, .. })),
        ("rows-d-1", REPORT),
        ("rows-two", REPORT),
        ("mem-wide-embedding-and-lm-head", REPORT),
        ("mem-two-rows-of-16384", REPORT),
        ("mem-fewer-rows-than-dims", REPORT),
        ("gguf-valid", REPORT),
        ("gguf-wrong-magic", format_err!(F::GgufBadMagic { .. })),
        ("gguf-version-1", format_err!(F::GgufUnsupportedVersion { version: 1, .. })),
        ("gguf-version-99", format_err!(F::GgufUnsupportedVersion { version: 99, .. })),
        ("gguf-truncated-fixed-header", format_err!(F::GgufTruncated { .. })),
        ("gguf-truncated-metadata", format_err!(F::GgufTooLarge { .. })),
        ("gguf-absurd-tensor-count", format_err!(F::GgufTooLarge { .. })),
        ("gguf-absurd-kv-count", format_err!(F::GgufTooLarge { .. })),
        ("gguf-string-past-eof", format_err!(F::GgufTooLarge { .. })),
        ("gguf-array-past-eof", format_err!(F::GgufTooLarge { .. })),
        ("gguf-unknown-value-type", format_err!(F::GgufBadValueType { value_type: 99, .. })),
        ("gguf-unknown-tensor-type", fails!(Error::Locate(LocateError::Decode { .. }))),
        ("gguf-bad-alignment", format_err!(F::GgufBadAlignment { alignment: 3, .. })),
        ("gguf-misaligned-offset", format_err!(F::GgufMisalignedTensor { offset: 4, alignment: 32, .. })),
        ("gguf-duplicate-tensor", format_err!(F::GgufDuplicateTensor { .. })),
        ("gguf-data-past-eof", format_err!(F::PastEof { .. })),
        ("gguf-overflowing-shape", format_err!(F::GgufBadShape { .. })),
        ("gguf-3d-embedding", fails!(Error::Locate(LocateError::NotAMatrix { .. }))),
        ("npy-valid", REPORT),
        ("npy-lying-shape", format_err!(F::PastEof { .. })),
        ("npy-fortran-order", format_err!(F::NpyFortranOrder { .. })),
        ("npy-big-endian", format_err!(F::NpyUnsupportedDtype { .. })),
        ("npy-object-dtype", format_err!(F::NpyUnsupportedDtype { .. })),
        ("npy-integer-dtype", format_err!(F::NpyUnsupportedDtype { .. })),
        ("npy-bad-magic", format_err!(F::NpyBadMagic { .. })),
        ("npy-version-9", format_err!(F::NpyUnsupportedVersion { major: 9, .. })),
        ("npy-header-past-eof", format_err!(F::NpyTruncated { .. })),
        ("npy-garbage-header", format_err!(F::NpyBadHeader { .. })),
        ("npy-3d", fails!(Error::Locate(LocateError::NoInputEmbedding { .. }))),
        ("npy-one-row", fails!(Error::TooFewRows { kept: 1, .. })),
        ("npy-truncated-preamble", format_err!(F::NpyTruncated { .. })),
        ("index-dotdot-path", REPORT),
        ("torch-valid", REPORT),
        ("torch-cut-short", foreign!(ForeignKind::PyTorchZip)),
        ("torch-os-system", format_err!(F::TorchUnreadable { .. })),
        ("npz-compressed-valid", REPORT),
        ("npz-cut-short", foreign!(ForeignKind::Npz)),
        ("mlx-scales-short", fails!(Error::Locate(LocateError::Decode { .. }))),
        ("onnx-not-protobuf", format_err!(F::OnnxMalformed { .. })),
        ("gguf-split-count-mismatches-name", format_err!(F::SplitCountMismatchesName { count: 3, name_count: 2, .. })),
        (
            "gguf-split-counts-disagree",
            format_err!(F::SplitCountMetadataDisagree { first_count: 2, second_count: 3, .. }),
        ),
        ("index-missing-shard", fails!(Error::Locate(LocateError::MissingShard { .. }))),
        ("index-invalid-json", format_err!(F::InvalidIndex { .. })),
        ("index-not-a-map", format_err!(F::InvalidIndex { .. })),
        ("index-shard-lacks-tensor", format_err!(F::ShardLacksTensor { .. })),
        ("index-valid", REPORT),
    ]
}

/// What the CLI and the page do with the files of one case.
fn analyse(files: &[(String, Vec<u8>)]) -> Outcome {
    let sources: Vec<Rc<dyn ByteSource>> =
        files.iter().map(|(n, b)| Rc::new(SliceSource::new(n.clone(), b.clone())) as Rc<dyn ByteSource>).collect();
    let (job, _) = Job::open(sources, None, AnalysisConfig::default())?;
    job.run()?.report_with_geometry(0.0)
}

/// Rows kept, μ, σ of the first `rows` rows by the f64 all-pairs definition.
fn oracle(rows: usize, dim: usize, values: &[f32]) -> (u64, f64, f64) {
    let a = AllPairs::of_kept(values, dim, |r| r < rows);
    (a.kept, a.mu, a.sigma)
}

#[test]
fn every_corpus_case_gives_its_own_error_or_the_right_report() {
    let cases = corpus();
    let table = table();
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    let listed: BTreeSet<&str> = table.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, listed, "every corpus case has one row in the table and no row is stale");
    assert!(cases.len() >= 40, "the issue asks for at least 40 inputs, got {}", cases.len());
    let mut failures = Vec::new();
    for CorpusCase { name, files, expect, mention, reference } in &cases {
        let outcome = analyse(files);
        let Some((_, check)) = table.iter().find(|(n, _)| n == name) else { continue };
        if !check(&outcome) {
            failures.push(format!("{name}: unexpected {outcome:?}"));
            continue;
        }
        match (&outcome, expect) {
            (Err(e), Expect::Error) => {
                let message = e.to_string();
                if !message.contains(mention.as_str()) {
                    failures.push(format!("{name}: message does not mention {mention:?}: {message}"));
                }
            }
            (Ok(report), Expect::Report) => {
                let Some((rows, dim, values)) = reference else {
                    failures.push(format!("{name}: a report case needs its reference matrix"));
                    continue;
                };
                let (kept, mu, sigma) = oracle(*rows, *dim, values);
                if report.rows_used != kept
                    || !report.exact
                    // μ comes from f64 sums; σ from the f32 Gram kernel: the f32 kernel's tolerances.
                    || (report.mu - mu).abs() > 1e-9
                    || (report.sigma - sigma).abs() > 1e-6 * sigma.max(1e-3)
                    || (report.epsilon - (mu + 2.0 * sigma)).abs() > 1e-7
                {
                    failures.push(format!(
                        "{name}: report rows {} μ {} σ {} vs oracle rows {kept} μ {mu} σ {sigma}",
                        report.rows_used, report.mu, report.sigma
                    ));
                }
            }
            (outcome, expect) => failures.push(format!("{name}: expected {expect:?}, got {outcome:?}")),
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn a_damaged_magic_under_a_gguf_or_npy_name_says_which_format_it_failed() {
    // Regression (found by the corpus): these read as safetensors and got "header claims 14165034823
    // bytes, more than the 100000000-byte limit".
    for (file, bytes) in
        [("m.gguf", b"GGML\x03\x00\x00\x00\x00\x00\x00\x00".to_vec()), ("a.NPY", b"\x93NUMPX\x01\x00\x10\x00".to_vec())]
    {
        let e = analyse(&[(file.to_string(), bytes)]).expect_err(file);
        assert!(
            matches!(
                e,
                ReportError::Analysis(Error::Format(
                    FormatError::GgufBadMagic { .. } | FormatError::NpyBadMagic { .. }
                ))
            ),
            "{file}: {e:?}"
        );
    }
}
