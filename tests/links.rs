//! The links a result gives its reader: JavaScript's `encodeURIComponent`, the query that runs a
//! result again from its model's address, the permalink and the `<iframe>` snippet.

use std::sync::OnceLock;

use orthoscope::fixtures::setup::{analysis_of, embedding_file};
use orthoscope::fixtures::synth::trained_like;
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::DType;
use orthoscope::read::source::SliceSource;
use orthoscope::result::links::{
    embed_snippet, encode_uri_component, page_base, permalink_href, rerun_href, rerun_query,
};
use orthoscope::result::report::Report;
use orthoscope::run::report::ToReport;

const BASE: &str = "https://example.org/orthoscope/";

/// A small real report, read from a local file (no `source_url`).
fn local() -> Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let file = "tiny-model.safetensors";
            let (rows, dim) = (200, 16);
            let values = trained_like(rows, dim, 7);
            let source = SliceSource::new(file, embedding_file(&values, dim, DType::F32));
            analysis_of(Box::new(source), AnalysisConfig::default())
                .expect("analysis set up")
                .run()
                .expect("analysis runs")
                .report(0.0)
                .expect("report")
        })
        .clone()
}

fn opened_from(source_url: &str) -> Report {
    let mut r = local();
    r.source_url = Some(source_url.into());
    r
}

#[test]
fn encoding_matches_javascripts_encode_uri_component() {
    // Right-hand sides: what `encodeURIComponent` returns in a browser for the left-hand side.
    let cases = [
        ("hf:org/name@main", "hf%3Aorg%2Fname%40main"),
        ("a b&c=d/é", "a%20b%26c%3Dd%2F%C3%A9"),
        ("☃", "%E2%98%83"),
        ("😀", "%F0%9F%98%80"),
        ("#?+$,;:[]", "%23%3F%2B%24%2C%3B%3A%5B%5D"),
        ("100%\"<>\\^`{|}", "100%25%22%3C%3E%5C%5E%60%7B%7C%7D"),
        ("\t\n\u{7f}", "%09%0A%7F"),
        ("", ""),
    ];
    for (input, javascript) in cases {
        assert_eq!(encode_uri_component(input), javascript, "encodeURIComponent({input:?})");
    }
}

#[test]
fn unreserved_characters_pass_unescaped() {
    let unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()";
    assert_eq!(encode_uri_component(unreserved), unreserved);
}

#[test]
fn every_other_ascii_byte_is_escaped_in_uppercase_hex() {
    for b in 0u8..0x80 {
        let c = char::from(b);
        if c.is_ascii_alphanumeric() || "-_.!~*'()".contains(c) {
            continue;
        }
        assert_eq!(encode_uri_component(&c.to_string()), format!("%{b:02X}"), "byte {b:#04x}");
    }
}

#[test]
fn the_page_base_is_origin_and_path() {
    assert_eq!(page_base("https://example.org", "/orthoscope/"), BASE);
    assert_eq!(page_base("http://localhost:8080", "/"), "http://localhost:8080/");
}

#[test]
fn a_local_result_has_no_rerun_query() {
    let r = local();
    assert_eq!(r.source_url, None);
    assert_eq!(rerun_query(&r), None);
    assert_eq!(rerun_href(BASE, &r), None);
}

#[test]
fn a_hugging_face_id_reruns_with_hf() {
    let r = opened_from("hf:org/name@main");
    assert_eq!(rerun_query(&r).as_deref(), Some("?hf=org%2Fname%40main"));
    assert_eq!(rerun_href(BASE, &r).as_deref(), Some("https://example.org/orthoscope/?hf=org%2Fname%40main"));
}

#[test]
fn any_other_address_reruns_with_url() {
    let r = opened_from("https://huggingface.co/org/model/resolve/main/model.safetensors?download=true");
    assert_eq!(
        rerun_query(&r).as_deref(),
        Some("?url=https%3A%2F%2Fhuggingface.co%2Forg%2Fmodel%2Fresolve%2Fmain%2Fmodel.safetensors%3Fdownload%3Dtrue")
    );
}

#[test]
fn the_permalink_is_the_base_the_rerun_query_and_the_fragment() {
    let fragment = "r=1.abc_DEF-09";
    assert_eq!(permalink_href(BASE, &local(), fragment), "https://example.org/orthoscope/#r=1.abc_DEF-09");
    assert_eq!(
        permalink_href(BASE, &opened_from("hf:org/name@main"), fragment),
        "https://example.org/orthoscope/?hf=org%2Fname%40main#r=1.abc_DEF-09"
    );
    assert_eq!(
        permalink_href(BASE, &opened_from("https://host.example/m.safetensors"), fragment),
        "https://example.org/orthoscope/?url=https%3A%2F%2Fhost.example%2Fm.safetensors#r=1.abc_DEF-09"
    );
}

#[test]
fn the_iframe_snippet_embeds_the_compact_card() {
    let fragment = "r=1.xyz";
    assert_eq!(
        embed_snippet(BASE, &local(), fragment),
        "<iframe src=\"https://example.org/orthoscope/?embed=1#r=1.xyz\" width=\"640\" height=\"420\" \
         style=\"border:0;max-width:100%\" title=\"Orthoscope: ε of tiny-model\" loading=\"lazy\"></iframe>"
    );
    assert_eq!(
        embed_snippet(BASE, &opened_from("hf:org/name@main"), fragment),
        "<iframe src=\"https://example.org/orthoscope/?hf=org%2Fname%40main&embed=1#r=1.xyz\" width=\"640\" \
         height=\"420\" style=\"border:0;max-width:100%\" title=\"Orthoscope: ε of org/name\" loading=\"lazy\"></iframe>"
    );
}

#[test]
fn double_quotes_in_the_title_become_single_ones() {
    let mut r = local();
    r.file = "my \"best\" model.safetensors".into();
    let snippet = embed_snippet(BASE, &r, "r=1.q");
    assert!(snippet.contains("title=\"Orthoscope: ε of my 'best' model\""), "{snippet}");
    assert_eq!(snippet.matches('"').count(), 12, "six attributes, each quoted once: {snippet}");
}
