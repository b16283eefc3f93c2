//! Result permalinks (`src/result/permalink/`): real reports from the whole chain (generated safetensors
//! file → read_model → choose → Analysis / Job → Report) survive encode → decode, every exact field
//! equal, derived fields recomputed to the original's, histograms within the documented
//! quantisation bound; a typical link stays under 2 KB; every damaged or foreign fragment gets its
//! own error, and no fragment at all makes decode panic.

use std::sync::OnceLock;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use orthoscope::fixtures::setup::{analysis_of, embedding_file, run_job, EMBEDDING};
use orthoscope::fixtures::synth::{self, class1_like, random_init, safetensors_bytes, trained_like, TensorSpec};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::stats::SampledHistogram;
use orthoscope::read::format::DType;
use orthoscope::read::source::SliceSource;
use orthoscope::result::permalink::{
    decode, encode, is_permalink, pack, Compact, PermalinkError, COUNT_LEVELS, FORMAT_VERSION, MAX_FRAGMENT_CHARS,
    MAX_INFLATED_BYTES, MAX_TEXT_CHARS,
};
use orthoscope::result::report::Report;
use orthoscope::run::report::ToReport;
use proptest::prelude::*;

fn analyse(file: &str, bytes: Vec<u8>, config: AnalysisConfig) -> Report {
    analysis_of(Box::new(SliceSource::new(file, bytes)), config)
        .expect("analysis set up")
        .run()
        .expect("analysis runs")
        .report(1234.567)
        .expect("report")
}

fn matrix_file(values: &[f32], rows: usize, dim: usize) -> Vec<u8> {
    embedding_file(&values[..rows * dim], dim, DType::F32)
}

/// The page's default demo (16384 × 1024 bf16), analysed exactly: the typical permalink.
fn typical() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let (name, bytes) = synth::demo("trained-like").expect("demo exists");
        analyse(&name, bytes, AnalysisConfig::default())
    })
}

/// A small real report for the many-case tests.
fn small() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        analyse("small.safetensors", matrix_file(&trained_like(600, 64, 5), 600, 64), AnalysisConfig::default())
    })
}

/// The bound documented on `permalink::quantise_counts`: |decoded − original| ≤ step/2 + 1 for a
/// count ≥ step/2, ≤ step for a smaller non-zero one (raised to the lowest level), with
/// step = largest / min(largest, 65535): exact while the largest bin is at most 65535.
fn histogram_within_bound(name: &str, got: &SampledHistogram, want: &SampledHistogram) {
    assert_eq!(got.counts.len(), want.counts.len(), "{name}: bin count");
    let largest = want.counts.iter().copied().max().unwrap_or(0);
    let step = largest as f64 / largest.clamp(1, COUNT_LEVELS) as f64;
    for (i, (&g, &w)) in got.counts.iter().zip(&want.counts).enumerate() {
        let error = (g as f64 - w as f64).abs();
        let bound = if w as f64 >= step / 2.0 { step / 2.0 + 1.0 } else { step };
        assert!(error <= bound, "{name} bin {i}: {w} came back as {g}, |diff| {error} > {bound} (largest {largest})");
        assert_eq!(
            g == 0,
            w == 0,
            "{name} bin {i}: {w} came back as {g} (an empty bin must stay empty and vice versa)"
        );
    }
    assert_eq!(got.edges, want.edges, "{name}: edges must be rebuilt bit for bit");
}

/// Encodes `original`, decodes it and checks every field; returns the fragment.
fn round_trip(case: &str, original: &Report) -> String {
    let fragment = encode(original);
    assert!(fragment.starts_with(&format!("r={FORMAT_VERSION}.")), "{case}: {fragment}");
    assert!(is_permalink(&fragment) && is_permalink(&format!("#{fragment}")));
    let decoded = decode(&fragment).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert_eq!(decode(&format!("#{fragment}")).as_ref(), Ok(&decoded), "{case}: a leading # changes nothing");

    // Derived fields, recomputed on decode, agree with the analysis' own.
    let near = |field: &str, g: f64, w: f64| assert!((g - w).abs() <= 1e-12, "{case}: {field} {g} vs {w}");
    near("epsilon", decoded.epsilon, original.epsilon);
    near("epsilon_3sigma", decoded.epsilon_3sigma, original.epsilon_3sigma);
    let (g, w) = (decoded.log10_capacity, original.log10_capacity);
    for (field, g, w) in [
        ("jl_c8", g.jl_c8, w.jl_c8),
        ("jl_c3029", g.jl_c3029, w.jl_c3029),
        ("adjusted_simple", g.adjusted_simple, w.adjusted_simple),
        ("adjusted_full", g.adjusted_full, w.adjusted_full),
    ] {
        near(field, g, w);
    }
    assert_eq!(decoded.capacity_determinate, original.capacity_determinate, "{case}");
    assert_eq!(decoded.class, original.class, "{case}");
    assert_eq!(decoded.caveat, original.caveat, "{case}");
    if let (Some(g), Some(w)) = (&decoded.unembedding, &original.unembedding) {
        near("unembedding.mu_plus_2sigma", g.mu_plus_2sigma, w.mu_plus_2sigma);
        near("unembedding.mu_plus_3sigma", g.mu_plus_3sigma, w.mu_plus_3sigma);
        assert_eq!(g.note, w.note);
    }
    histogram_within_bound(case, &decoded.histogram, &original.histogram);
    histogram_within_bound(&format!("{case} zoom"), &decoded.histogram_zoom, &original.histogram_zoom);
    assert_eq!(decoded.timing_ms, original.timing_ms as f32 as f64, "{case}: timing is kept as f32");

    // Everything else is exact: patch what was checked above and compare the whole struct.
    let mut patched = decoded.clone();
    patched.epsilon = original.epsilon;
    patched.epsilon_3sigma = original.epsilon_3sigma;
    patched.log10_capacity = original.log10_capacity;
    patched.histogram.counts = original.histogram.counts.clone();
    patched.histogram_zoom.counts = original.histogram_zoom.counts.clone();
    patched.timing_ms = original.timing_ms;
    // Not carried (see the permalink module): the kernel's speed and the reason for f64.
    assert_eq!(decoded.precision, original.precision, "{case}: precision, read back from the kernel's name");
    assert!(decoded.gram_gflops.is_none() && decoded.precision_reason.is_empty());
    patched.gram_gflops = original.gram_gflops;
    patched.precision_reason = original.precision_reason.clone();
    // Not carried: the tail explorer's pairs (both lists), the centred statistics, the unembedding's
    // histogram and per-token cosines.
    assert!(decoded.top_pairs.is_empty() && decoded.antipodal_pairs.is_empty() && decoded.centred.is_none(), "{case}");
    patched.top_pairs = original.top_pairs.clone();
    patched.antipodal_pairs = original.antipodal_pairs.clone();
    patched.centred = original.centred.clone();
    if let (Some(p), Some(w)) = (patched.unembedding.as_mut(), &original.unembedding) {
        assert!(p.histogram.is_none() && p.alignment.is_none(), "{case}");
        p.mu_plus_2sigma = w.mu_plus_2sigma;
        p.mu_plus_3sigma = w.mu_plus_3sigma;
        p.histogram = w.histogram.clone();
        p.alignment = w.alignment.clone();
    }
    assert_eq!(&patched, original, "{case}: a field other than the quantised/derived ones changed");
    eprintln!("{case}: {} characters", fragment.len());
    fragment
}

// ---------------------------------------------------------------------------------------------
// Round trips of real reports
// ---------------------------------------------------------------------------------------------

#[test]
fn permalink_of_the_default_demo_round_trips_in_under_2_kb() {
    let r = typical();
    assert!(r.exact);
    let nonzero = r.histogram.counts.iter().filter(|&&c| c > 0).count();
    let fragment = round_trip("trained-like 16384×1024", r);
    eprintln!("  ({nonzero} non-empty bins of {} in the full histogram)", r.histogram.counts.len());
    assert!(fragment.len() < 2000, "typical permalink is {} characters", fragment.len());
}

#[test]
fn permalink_of_class1_and_random_init_reports_round_trips() {
    let class1 =
        analyse("class1.safetensors", matrix_file(&class1_like(3000, 256, 2), 3000, 256), AnalysisConfig::default());
    assert_eq!(class1.class, orthoscope::pass::estimate::Class::One);
    round_trip("class1-like", &class1);
    let random =
        analyse("random.safetensors", matrix_file(&random_init(3000, 256, 3), 3000, 256), AnalysisConfig::default());
    round_trip("random-init", &random);
}

#[test]
fn permalink_of_an_early_stopped_run_keeps_its_interval_and_seed() {
    let config = AnalysisConfig { seed: 987_654_321, stop_after_rows: Some(1000), ..AnalysisConfig::default() };
    let r = analyse("early.safetensors", matrix_file(&trained_like(6000, 128, 9), 6000, 128), config);
    assert!(!r.exact);
    assert!(r.epsilon_ci.is_some() && r.epsilon_se.is_some(), "an early stop carries an interval");
    let decoded = decode(&round_trip("early stop", &r)).expect("decodes");
    assert_eq!(decoded.epsilon_ci, r.epsilon_ci);
    assert_eq!(decoded.epsilon_se, r.epsilon_se);
    assert_eq!(decoded.seed, 987_654_321);
    assert!(!decoded.exact && decoded.rows_seen < decoded.rows);
}

#[test]
fn permalink_of_a_url_analysis_carries_the_url_to_run_it_again() {
    let mut r = small().clone();
    r.source_url = Some("https://huggingface.co/org/model/resolve/main/model.safetensors?download=true".into());
    r.bytes_fetched = Some(12_345_678);
    let decoded = decode(&round_trip("opened by URL", &r)).expect("decodes");
    assert_eq!(decoded.source_url, r.source_url);
    assert_eq!(decoded.bytes_fetched, Some(12_345_678));
}

#[test]
fn permalink_of_a_model_with_an_unembedding_keeps_its_summary_and_the_tied_evidence() {
    let (rows, dim) = (1500, 96);
    let file = safetensors_bytes(&[
        TensorSpec::matrix(EMBEDDING, DType::F32, rows, dim, &trained_like(rows, dim, 11)),
        TensorSpec::matrix("lm_head.weight", DType::F32, rows, dim, &class1_like(rows, dim, 12)),
    ]);
    let job = run_job(vec![("two.safetensors", file)], None, AnalysisConfig::default()).expect("job runs");
    let r = job.report(55.0).expect("report");
    assert!(r.unembedding.is_some() && r.tied == Some(false) && !r.tied_evidence.is_empty());
    let decoded = decode(&round_trip("with unembedding", &r)).expect("decodes");
    assert_eq!(decoded.unembedding.as_ref().map(|u| u.mu), r.unembedding.as_ref().map(|u| u.mu));
    assert_eq!(decoded.tied_evidence, r.tied_evidence);
}

#[test]
fn permalink_cuts_long_names_and_drops_an_address_too_long_to_rerun() {
    let mut r = small().clone();
    r.file = format!("{}.safetensors", "very-long-name-".repeat(40));
    r.source_url = Some(format!("https://example.org/{}", "a".repeat(5000)));
    let decoded = decode(&encode(&r)).expect("decodes");
    assert_eq!(decoded.file.chars().count(), MAX_TEXT_CHARS);
    assert!(decoded.file.ends_with('…') && r.file.starts_with(decoded.file.trim_end_matches('…')));
    assert_eq!(decoded.source_url, None, "a cut URL could not be re-run, so it is left out");
}

// ---------------------------------------------------------------------------------------------
// Damaged and foreign fragments: each its own error
// ---------------------------------------------------------------------------------------------

/// The zlib bytes of a fragment made by `encode`.
fn packed_bytes(fragment: &str) -> Vec<u8> {
    let payload = fragment.split_once('.').expect("version dot").1;
    URL_SAFE_NO_PAD.decode(payload).expect("our own base64")
}

fn fragment_of_packed(bytes: &[u8]) -> String {
    format!("r=1.{}", URL_SAFE_NO_PAD.encode(bytes))
}

fn fragment_of_payload(bytes: &[u8]) -> String {
    fragment_of_packed(&miniz_oxide::deflate::compress_to_vec_zlib(bytes, 6))
}

#[test]
fn foreign_fragments_are_not_orthoscope_results() {
    for f in ["#section-2", "", "#", "r", "#rows=3", "x=1.AAAA", "r=abc.def", "r=1a.AAAA", "r=.AAAA", "r=-1.AAAA"] {
        assert_eq!(decode(f), Err(PermalinkError::NotOrthoscope), "{f:?}");
    }
    assert!(!is_permalink("#section-2") && !is_permalink(""));
}

#[test]
fn links_cut_short_are_reported_as_truncated() {
    for f in ["r=", "#r=", "r=1", "r=1.", "#r=1."] {
        assert_eq!(decode(f), Err(PermalinkError::Truncated), "{f:?}");
    }
    // Cut at every point of a real payload: always "incomplete", never another error or a result.
    let fragment = encode(small());
    for end in "r=1.".len() + 1..fragment.len() {
        assert_eq!(decode(&fragment[..end]), Err(PermalinkError::Truncated), "cut to {end} of {}", fragment.len());
    }
}

#[test]
fn an_unknown_version_names_the_version() {
    assert_eq!(decode("r=9.AAAA"), Err(PermalinkError::UnsupportedVersion(9)));
    assert_eq!(decode("#r=0.AAAA"), Err(PermalinkError::UnsupportedVersion(0)));
    let fragment = encode(small()).replacen("r=1.", "r=2.", 1);
    assert_eq!(decode(&fragment), Err(PermalinkError::UnsupportedVersion(2)));
    let message = PermalinkError::UnsupportedVersion(2).to_string();
    assert!(message.contains("newer") && message.contains("run the analysis yourself"), "{message}");
}

#[test]
fn characters_outside_base64url_are_bad_encoding() {
    for f in ["r=1.!!!!", "r=1.ab+/", "r=1.AAAA AAAA", "r=1.AAA=A"] {
        assert!(matches!(decode(f), Err(PermalinkError::BadEncoding(_))), "{f:?}: {:?}", decode(f));
    }
}

#[test]
fn a_flipped_byte_never_opens_a_different_result() {
    let original = small();
    let bytes = packed_bytes(&encode(original));
    // The checksum itself damaged: the data no longer matches it.
    let mut bad = bytes.clone();
    if let Some(last) = bad.last_mut() {
        *last ^= 0x40;
    }
    assert!(matches!(decode(&fragment_of_packed(&bad)), Err(PermalinkError::BadCompression(_))));
    // Every byte in turn, each of several bit patterns.
    let mut errors = 0;
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x10, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match decode(&fragment_of_packed(&b)) {
                Ok(r) => assert_eq!(&r, &decode(&encode(original)).expect("clean"), "byte {i} ^ {mask:#x}"),
                Err(_) => errors += 1,
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn a_deflate_bomb_or_an_overlong_fragment_is_refused_unread() {
    let bomb = fragment_of_payload(&vec![0u8; 4 * MAX_INFLATED_BYTES]);
    assert!(bomb.len() < 2 * 4096, "the bomb is small: {} characters", bomb.len());
    assert_eq!(decode(&bomb), Err(PermalinkError::TooLarge { limit: MAX_INFLATED_BYTES }));
    let long = format!("r=1.{}", "A".repeat(MAX_FRAGMENT_CHARS + 1));
    assert_eq!(decode(&long), Err(PermalinkError::TooLarge { limit: MAX_FRAGMENT_CHARS }));
}

#[test]
fn a_payload_that_is_not_a_result_layout_is_malformed() {
    assert!(matches!(decode(&fragment_of_payload(b"hello")), Err(PermalinkError::Malformed(_))));
    assert!(matches!(decode(&fragment_of_payload(&[])), Err(PermalinkError::Malformed(_))));
    let mut payload = postcard::to_allocvec(&Compact::from_report(small())).expect("serialises");
    payload.push(0);
    assert!(
        matches!(decode(&fragment_of_payload(&payload)), Err(PermalinkError::Malformed(m)) if m.contains("after")),
        "trailing bytes"
    );
}

#[test]
fn impossible_values_name_their_field() {
    let base = Compact::from_report(small());
    let field = |f: &dyn Fn(&mut Compact)| {
        let mut c = base.clone();
        f(&mut c);
        match decode(&pack(&c)) {
            Err(PermalinkError::Implausible { field, .. }) => field,
            other => panic!("expected Implausible, got {other:?}"),
        }
    };
    assert_eq!(field(&|c| c.mu = f64::NAN), "mu");
    assert_eq!(field(&|c| c.sigma = f64::INFINITY), "sigma");
    assert_eq!(field(&|c| c.sigma = -0.1), "sigma");
    assert_eq!(
        field(&|c| {
            c.rows_used = 1;
            c.rows_seen = 1 + c.rows_dropped_zero + c.rows_dropped_nonfinite;
            c.pairs = 0;
        }),
        "rows_used"
    );
    assert_eq!(field(&|c| c.rows_used += 1), "rows_seen");
    assert_eq!(field(&|c| c.rows_dropped_zero = u64::MAX), "rows_seen");
    assert_eq!(field(&|c| c.rows += 1), "rows_seen", "exact yet not every row seen");
    assert_eq!(field(&|c| c.pairs += 1), "pairs");
    assert_eq!(field(&|c| c.dim = 0), "dim");
    assert_eq!(field(&|c| c.epsilon_ci = Some([0.1, 0.2])), "epsilon_ci");
    assert_eq!(
        field(&|c| {
            c.exact = false;
            c.epsilon_ci = Some([0.2, f64::NAN]);
        }),
        "epsilon_ci"
    );
    assert_eq!(field(&|c| c.timing_ms = f32::NAN), "timing_ms");
    assert_eq!(field(&|c| c.histogram.bins = c.histogram.first + c.histogram.deltas.len() as u32 - 1), "histogram");
    assert_eq!(field(&|c| c.histogram.bins = u32::MAX), "histogram");
    assert_eq!(field(&|c| c.histogram_zoom.hi = c.histogram_zoom.lo), "histogram_zoom");
    assert_eq!(field(&|c| c.histogram.largest = c.histogram.pairs + 1), "histogram");
    assert_eq!(field(&|c| c.histogram.largest = 0), "histogram");
    assert_eq!(field(&|c| c.histogram.deltas[0] = -1), "histogram", "a negative level");
    assert_eq!(field(&|c| c.histogram.deltas[0] = i32::MAX), "histogram", "a level above the top");
    assert_eq!(field(&|c| c.histogram_zoom.below = c.histogram_zoom.pairs + 1), "histogram_zoom");
    // Every message ends with something to do.
    let message = PermalinkError::Implausible { field: "mu", value: "NaN".into() }.to_string();
    assert!(message.ends_with("run the analysis yourself"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// No fragment makes decode panic
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in any::<String>()) {
        let _ = decode(&s);
        let _ = decode(&format!("r=1.{s}"));
    }

    #[test]
    fn arbitrary_base64url_text_never_panics(s in "#?r=[0-9]{0,3}\\.?[A-Za-z0-9_=-]{0,400}") {
        let _ = decode(&s);
    }

    #[test]
    fn arbitrary_bytes_as_a_payload_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..800)) {
        prop_assert!(decode(&fragment_of_packed(&bytes)).is_err());
        // Through a valid zlib stream too, so the bytes reach the layout and the checks.
        let _ = decode(&fragment_of_payload(&bytes));
    }

    #[test]
    fn random_bit_flips_of_a_valid_link_never_panic_nor_open_a_different_result(
        flips in proptest::collection::vec(any::<(prop::sample::Index, u8)>(), 1..6),
    ) {
        let original = decode(&encode(small())).expect("clean");
        let mut bytes = packed_bytes(&encode(small()));
        for (at, bit) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << (bit % 8);
        }
        if let Ok(r) = decode(&fragment_of_packed(&bytes)) {
            prop_assert_eq!(r, original);
        }
    }

    #[test]
    fn random_edits_of_a_valid_layout_never_panic(
        edits in proptest::collection::vec(any::<(prop::sample::Index, u8)>(), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        // Edits inside the layout, recompressed, so the checksum holds and the checks are reached.
        let mut payload = postcard::to_allocvec(&Compact::from_report(small())).expect("serialises");
        for (at, value) in &edits {
            let i = at.index(payload.len());
            payload[i] = *value;
        }
        if let Some(c) = cut {
            payload.truncate(c.index(payload.len()));
        }
        if let Ok(r) = decode(&fragment_of_payload(&payload)) {
            // Whatever opens is self-consistent: its derived fields are the crate's own.
            prop_assert_eq!(r.epsilon, orthoscope::pass::estimate::epsilon(r.mu, r.sigma));
            prop_assert!(r.rows_used >= 2 && r.mu.is_finite() && r.sigma >= 0.0);
        }
    }
}
