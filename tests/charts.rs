//! `orthoscope::charts` rendered to SVG and read back: markers and their colours, legends outside the
//! plot, no overlapping text at phone and HiDPI sizes, off-range markers noted, degenerate data
//! (identical rows, empty histograms) drawn sensibly, themes, overlays, alt text; the sensitivity
//! charts (`docs/method.md` §2, §7) monotone and naming their formulas; the plot frame every chart
//! shares (the plotters ones and the page's hand-built SVG ones) leaving room for its labels and
//! mapping data to its edges. Histograms come from real
//! analyses of generated matrices. Set ORTHOSCOPE_CHART_DIR=some/dir to also write the SVGs there
//! for a look.

use std::collections::HashMap;

use orthoscope::charts::layout::{CHAR_EM, FONT_AXIS, FONT_TICK, LINE_EM, MIN_PLOT_HEIGHT, MIN_PLOT_WIDTH};
use orthoscope::charts::{
    capacity_vs_dim_svg, capacity_vs_epsilon_svg, draw_histogram, hex, histogram_svg, layer_chart_of, layers_svg, Axis,
    ChartError, ChartText, Counted, FrameSpec, HistogramChart, HistogramSeries, LayerChart, LayerPoint, Marker,
    PlotFrame, Scale, Sizes, Theme, YTitle, FORMULA_NAMES,
};
use orthoscope::fixtures::setup::embedding_report;
use orthoscope::fixtures::synth::{class1_like, random_init, trained_like};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::stats::SampledHistogram;
use orthoscope::result::paper::random_init_bin_fractions;
use orthoscope::result::report::{significant, Report};
use plotters::prelude::{IntoDrawingArea, SVGBackend};

// ---------------------------------------------------------------------------------------------
// Real reports
// ---------------------------------------------------------------------------------------------

fn report_with(values: &[f32], rows: usize, dim: usize, config: AnalysisConfig) -> Report {
    embedding_report(&values[..rows * dim], dim, config).expect("report")
}

fn report(values: &[f32], rows: usize, dim: usize) -> Report {
    report_with(values, rows, dim, AnalysisConfig::default())
}

fn trained() -> Report {
    report(&trained_like(1200, 64, 7), 1200, 64)
}

/// Every row the same vector: every cosine is 1.
fn identical_rows() -> Report {
    let row: Vec<f32> = (0..32).map(|j| (j as f32 * 0.37).sin() + 0.1).collect();
    let values: Vec<f32> = (0..300).flat_map(|_| row.iter().copied()).collect();
    report(&values, 300, 32)
}

fn empty_histogram() -> SampledHistogram {
    let edges: Vec<f64> = (0..=300).map(|i| -1.0 + 2.0 * i as f64 / 300.0).collect();
    SampledHistogram {
        lo: -1.0,
        hi: 1.0,
        edges,
        counts: vec![0; 300],
        below: 0,
        above: 0,
        pairs_in_histogram: 0,
        rows_in_histogram: 1,
    }
}

// ---------------------------------------------------------------------------------------------
// Reading SVG back
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct El {
    tag: String,
    attrs: HashMap<String, String>,
    text: String,
}

impl El {
    fn f(&self, key: &str) -> f64 {
        self.attrs.get(key).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    }
    fn a(&self, key: &str) -> &str {
        self.attrs.get(key).map(String::as_str).unwrap_or("")
    }
    fn points(&self) -> Vec<(f64, f64)> {
        self.a("points")
            .split_whitespace()
            .filter_map(|p| p.split_once(','))
            .map(|(x, y)| (x.parse().unwrap_or(f64::NAN), y.parse().unwrap_or(f64::NAN)))
            .collect()
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The elements of a plotters SVG (one tag per `<`, attributes `key="value"`, text content).
fn parse(svg: &str) -> Vec<El> {
    let mut out = Vec::new();
    for chunk in svg.split('<').skip(1) {
        if chunk.starts_with('/') {
            continue;
        }
        let (head, rest) = chunk.split_once('>').unwrap_or((chunk, ""));
        let head = head.trim_end_matches('/');
        let (tag, mut attrs_src) = head.split_once(char::is_whitespace).unwrap_or((head, ""));
        let mut attrs = HashMap::new();
        while let Some((k, after)) = attrs_src.split_once("=\"") {
            let (v, after) = after.split_once('"').unwrap_or((after, ""));
            attrs.insert(k.trim().to_string(), unescape(v));
            attrs_src = after;
        }
        out.push(El { tag: tag.to_string(), attrs, text: unescape(rest.trim()) });
    }
    out
}

/// A text's box from its anchor, as the charts' layout estimates it (0.6 em per character, 1.2 em
/// line): (x0, y0, x1, y1).
fn text_box(e: &El) -> (f64, f64, f64, f64) {
    let (x, y, fs) = (e.f("x"), e.f("y"), e.f("font-size"));
    let w = e.text.chars().count() as f64 * 0.6 * fs;
    let (x0, x1) = match e.a("text-anchor") {
        "middle" => (x - w / 2.0, x + w / 2.0),
        "end" => (x - w, x),
        _ => (x, x + w),
    };
    let (y0, y1) = match e.a("dy") {
        "0.76em" => (y, y + 1.2 * fs),
        "0.5ex" => (y - 0.6 * fs, y + 0.6 * fs),
        _ => (y - 1.2 * fs, y),
    };
    (x0, y0, x1, y1)
}

fn overlap(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// The plot frame: the one unfilled rectangle in the frame colour.
fn frame(els: &[El], theme: &Theme) -> (f64, f64, f64, f64) {
    let frames: Vec<&El> =
        els.iter().filter(|e| e.tag == "rect" && e.a("fill") == "none" && e.a("stroke") == hex(theme.frame)).collect();
    assert_eq!(frames.len(), 1, "expected one plot frame, found {}", frames.len());
    let f = frames[0];
    (f.f("x"), f.f("y"), f.f("x") + f.f("width"), f.f("y") + f.f("height"))
}

fn texts(els: &[El]) -> Vec<&El> {
    els.iter().filter(|e| e.tag == "text").collect()
}

/// Polylines in a colour.
fn lines_in<'a>(els: &'a [El], colour: &str) -> Vec<&'a El> {
    els.iter().filter(|e| e.tag == "polyline" && e.a("stroke") == colour).collect()
}

/// Every polyline of this colour on the plot (legend swatches excluded) is one vertical segment at
/// the same x: returns that x.
fn vertical_x(els: &[El], colour: &str, fr: (f64, f64, f64, f64)) -> Option<f64> {
    let lines: Vec<&El> =
        lines_in(els, colour).into_iter().filter(|l| l.points().iter().all(|p| p.1 >= fr.1 - 0.5)).collect();
    let xs: Vec<f64> = lines.iter().flat_map(|l| l.points()).map(|p| p.0).collect();
    let first = *xs.first()?;
    xs.iter().all(|&x| x == first).then_some(first)
}

/// Checks that hold for every chart: inside the canvas, no two texts overlap, no text inside the
/// frame except `inside_ok`, fonts at least `min_font`, no NaN anywhere.
fn assert_clean(svg: &str, theme: &Theme, size: (f64, f64), min_font: f64, inside_ok: &[&str]) {
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "SVG holds NaN/inf:\n{svg}");
    let els = parse(svg);
    let fr = frame(&els, theme);
    let ts = texts(&els);
    assert!(!ts.is_empty(), "no text drawn");
    for (i, a) in ts.iter().enumerate() {
        let ba = text_box(a);
        assert!(a.f("font-size") >= min_font, "text {:?} at {} px, below {min_font}", a.text, a.f("font-size"));
        assert!(
            ba.0 >= -0.5 && ba.1 >= -0.5 && ba.2 <= size.0 + 0.5 && ba.3 <= size.1 + 0.5,
            "text {:?} box {ba:?} leaves the {size:?} canvas",
            a.text
        );
        if !inside_ok.contains(&a.text.as_str()) {
            let inner = (fr.0 + 1.0, fr.1 + 1.0, fr.2 - 1.0, fr.3 - 1.0);
            assert!(!overlap(ba, inner), "text {:?} box {ba:?} lies on the plot {fr:?}", a.text);
        }
        for b in ts.iter().skip(i + 1) {
            assert!(!overlap(ba, text_box(b)), "texts overlap: {:?} {ba:?} and {:?} {:?}", a.text, b.text, text_box(b));
        }
    }
}

fn write_for_eyes(name: &str, svg: &str) {
    if let Ok(dir) = std::env::var("ORTHOSCOPE_CHART_DIR") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(format!("{dir}/{name}.svg"), svg);
    }
}

fn svg_of(chart: &HistogramChart, theme: &Theme, w: u32, h: u32, name: &str) -> (String, ChartText) {
    let (svg, text) = histogram_svg(chart, theme, w, h).expect("histogram draws");
    write_for_eyes(name, &svg);
    (svg, text)
}

/// y tick labels: right-aligned texts left of the frame.
fn y_tick_labels(els: &[El], fr: (f64, f64, f64, f64)) -> Vec<String> {
    texts(els).into_iter().filter(|t| t.a("text-anchor") == "end" && t.f("x") < fr.0).map(|t| t.text.clone()).collect()
}

// ---------------------------------------------------------------------------------------------
// Histograms
// ---------------------------------------------------------------------------------------------

#[test]
fn mu_and_epsilon_are_vertical_lines_in_their_colours_at_their_values() {
    let r = trained();
    let theme = Theme::light();
    let chart = HistogramChart::from_report(&r, false);
    let (svg, _) = svg_of(&chart, &theme, 520, 320, "trained_full_light");
    let els = parse(&svg);
    let fr = frame(&els, &theme);
    let map = |x: f64| fr.0 + (x + 1.0) / 2.0 * (fr.2 - fr.0);
    let eps_x = vertical_x(&els, &hex(theme.epsilon), fr).expect("ε drawn as one vertical line");
    let mu_x = vertical_x(&els, &hex(theme.mu), fr).expect("μ drawn as vertical dashes");
    assert!((eps_x - map(r.epsilon)).abs() <= 1.0, "ε line at x = {eps_x}, expected {}", map(r.epsilon));
    assert!((mu_x - map(r.mu)).abs() <= 1.0, "μ line at x = {mu_x}, expected {}", map(r.mu));
    assert!(lines_in(&els, &hex(theme.mu)).len() > 3, "μ is dashed: several segments");
    // ε spans the frame from bottom to top.
    let eps: Vec<&El> =
        lines_in(&els, &hex(theme.epsilon)).into_iter().filter(|l| l.points().iter().all(|p| p.1 >= fr.1)).collect();
    let ys: Vec<f64> = eps.iter().flat_map(|l| l.points()).map(|p| p.1).collect();
    let (lo, hi) = ys.iter().fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
    assert!((lo - fr.1).abs() <= 1.0 && (hi - fr.3).abs() <= 1.0, "ε line spans {lo}..{hi}, frame {fr:?}");
    // The series is one step polyline in palette colour 0.
    let steps = lines_in(&els, &hex(theme.series[0])).into_iter().filter(|l| l.points().len() > 10).count();
    assert_eq!(steps, 1, "one step outline");
}

#[test]
fn legend_entries_sit_above_the_plot_and_nothing_overlaps() {
    let r = trained();
    let theme = Theme::light();
    let chart = HistogramChart::from_report(&r, false).with_random_init(r.dim);
    let (svg, _) = svg_of(&chart, &theme, 520, 320, "trained_full_reference");
    let els = parse(&svg);
    let fr = frame(&els, &theme);
    let labels = [chart.series[0].label.clone(), chart.markers[0].label.clone(), chart.markers[1].label.clone()];
    for label in &labels {
        let t =
            texts(&els).into_iter().find(|t| &t.text == label).unwrap_or_else(|| panic!("legend {label:?} missing"));
        let b = text_box(t);
        assert!(b.3 <= fr.1, "legend {label:?} box {b:?} reaches into the plot starting at y = {}", fr.1);
    }
    assert!(texts(&els).iter().any(|t| t.text.starts_with("random init, d = 64")), "reference legend");
    assert_clean(&svg, &theme, (520.0, 320.0), 11.0, &[]);
}

#[test]
fn readable_and_overlap_free_at_375_px_and_on_hidpi() {
    let r = trained();
    let theme = Theme::light();
    for zoom in [false, true] {
        let chart = HistogramChart::from_report(&r, zoom).with_random_init(r.dim);
        // Phone width, CSS pixels (the SVG export).
        let (svg, _) = svg_of(&chart, &theme, 375, 280, &format!("phone_zoom_{zoom}"));
        assert_clean(&svg, &theme, (375.0, 280.0), 11.0, &[]);
        // The same on a 3× screen through the generic entry point (device pixels, scale 3). plotters'
        // SVG backend writes font-size = size/1.24, so 12 CSS px × 3 shows as 29 here (36 on canvas).
        let (w, h) = (375 * 3, 280 * 3);
        let mut svg = String::new();
        {
            let area = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
            draw_histogram(&area, &chart, &theme, 3.0).expect("draws at scale 3");
            area.present().expect("present");
        }
        write_for_eyes(&format!("phone_x3_zoom_{zoom}"), &svg);
        assert_clean(&svg, &theme, (w as f64, h as f64), 11.0 * 3.0 / 1.24, &[]);
    }
}

#[test]
fn x_axis_title_sits_below_the_tick_labels() {
    let r = trained();
    let theme = Theme::light();
    for (w, h) in [(375, 260), (520, 300), (900, 500)] {
        let (svg, _) = svg_of(&HistogramChart::from_report(&r, false), &theme, w, h, "x_title");
        let els = parse(&svg);
        let title = texts(&els).into_iter().find(|t| t.text == "cosine similarity (unitless)").expect("x title");
        let fr = frame(&els, &theme);
        let ticks: Vec<&El> = texts(&els)
            .into_iter()
            .filter(|t| t.a("text-anchor") == "middle" && t.f("y") > fr.3 && t.text != title.text)
            .collect();
        assert!(ticks.len() >= 3, "{w}×{h}: x tick labels {ticks:?}");
        assert!(ticks.iter().any(|t| t.text == "0" || t.text == "0.0"), "{w}×{h}: a 0 tick: {ticks:?}");
        let lowest_tick = ticks.iter().map(|t| text_box(t).3).fold(f64::MIN, f64::max);
        assert!(text_box(title).1 >= lowest_tick, "{w}×{h}: x title overlaps the tick labels");
    }
}

#[test]
fn markers_off_the_zoom_range_are_noted_with_an_arrow() {
    // Class 1-like: μ ≈ 0.3 and ε further right, both outside the zoom [−0.2, 0.2].
    let r = report(&class1_like(800, 48, 3), 800, 48);
    assert!(r.mu > 0.2 && r.epsilon > 0.2, "fixture: μ = {}, ε = {}", r.mu, r.epsilon);
    let theme = Theme::light();
    let chart = HistogramChart::from_report(&r, true);
    let (svg, text) = svg_of(&chart, &theme, 520, 320, "class1_zoom");
    let eps_note = text.notes.iter().find(|n| n.starts_with("ε = ") && n.contains("right of this range"));
    assert!(eps_note.is_some(), "notes: {:?}", text.notes);
    assert!(text.notes.iter().any(|n| n.starts_with("μ = ") && n.contains("right of this range")), "{:?}", text.notes);
    let els = parse(&svg);
    assert!(texts(&els).iter().any(|t| t.text.contains("→ right of range")), "legend says where ε went");
    let fr = frame(&els, &theme);
    let arrows: Vec<&El> = els.iter().filter(|e| e.tag == "polygon" && e.a("fill") == hex(theme.epsilon)).collect();
    assert_eq!(arrows.len(), 1, "one ε arrowhead at the edge");
    let tip = arrows[0].points();
    assert!(tip.iter().all(|p| p.1 < fr.1 && p.0 <= fr.2 && p.0 > fr.0), "arrow above the frame's corner: {tip:?}");
    // μ, the first marker, takes the corner; ε sits just inwards of it, pointing the same way.
    let mu: Vec<&El> = els.iter().filter(|e| e.tag == "polygon" && e.a("fill") == hex(theme.mu)).collect();
    assert_eq!(mu.len(), 1, "one μ arrowhead");
    assert!(mu[0].points().iter().any(|p| p.0 == fr.2), "μ arrow points at the right edge: {:?}", mu[0].points());
    let tip_x = tip.iter().map(|p| p.0).fold(f64::MIN, f64::max);
    assert!(tip.iter().filter(|p| p.0 == tip_x).count() == 1, "ε arrow points right: {tip:?}");
    // Each arrow is clear of every text.
    for t in texts(&els) {
        let b = text_box(t);
        let (x0, y0) = tip.iter().fold((f64::MAX, f64::MAX), |a, p| (a.0.min(p.0), a.1.min(p.1)));
        let (x1, y1) = tip.iter().fold((f64::MIN, f64::MIN), |a, p| (a.0.max(p.0), a.1.max(p.1)));
        assert!(!overlap(b, (x0, y0, x1, y1)), "arrow {tip:?} on text {:?}", t.text);
    }
    assert!(vertical_x(&els, &hex(theme.epsilon), fr).is_none(), "no ε line inside the zoom");
    assert_clean(&svg, &theme, (520.0, 320.0), 11.0, &[]);
}

#[test]
fn identical_rows_give_distinct_y_ticks_and_an_explained_empty_zoom() {
    let r = identical_rows();
    assert!((r.mu - 1.0).abs() < 1e-6, "fixture: every cosine is 1, μ = {}", r.mu);
    let theme = Theme::light();
    let (svg, _) = svg_of(&HistogramChart::from_report(&r, false), &theme, 520, 300, "identical_full");
    let els = parse(&svg);
    let labels = y_tick_labels(&els, frame(&els, &theme));
    let mut uniq = labels.clone();
    uniq.dedup();
    assert_eq!(uniq, labels, "repeated y tick labels: {labels:?}");
    assert!(labels.len() >= 3 && labels.contains(&"100".to_string()), "one spike at 100 %: {labels:?}");
    assert_clean(&svg, &theme, (520.0, 300.0), 11.0, &[]);

    let (svg, text) = svg_of(&HistogramChart::from_report(&r, true), &theme, 520, 300, "identical_zoom");
    assert!(text.notes.iter().any(|n| n.starts_with("All ") && n.contains("outside")), "notes: {:?}", text.notes);
    let els = parse(&svg);
    let labels = y_tick_labels(&els, frame(&els, &theme));
    let mut uniq = labels.clone();
    uniq.dedup();
    assert!(labels.len() >= 3 && uniq == labels, "empty zoom y ticks: {labels:?}");
    assert!(texts(&els).iter().any(|t| t.text == "all pairs lie outside this range"));
    assert_clean(&svg, &theme, (520.0, 300.0), 11.0, &["all pairs lie outside this range"]);
}

#[test]
fn an_empty_histogram_draws_axes_and_says_so() {
    let h = empty_histogram();
    let theme = Theme::dark();
    let chart = HistogramChart {
        title: "Pairwise cosines".into(),
        series: vec![HistogramSeries { label: "one row".into(), hist: &h }],
        markers: vec![Marker::mu(f64::NAN), Marker::epsilon(f64::NAN)],
        reference: None,
        counted: Counted::Pairs,
    };
    let (svg, text) = svg_of(&chart, &theme, 400, 260, "empty");
    assert!(text.notes.iter().any(|n| n.contains("No pairs")), "notes: {:?}", text.notes);
    assert!(text.notes.iter().any(|n| n == "μ = n/a: no value to mark."), "notes: {:?}", text.notes);
    let els = parse(&svg);
    assert!(texts(&els).iter().any(|t| t.text == "no pairs"), "message in the plot");
    assert!(y_tick_labels(&els, frame(&els, &theme)).len() >= 3, "axes still drawn");
    assert_clean(&svg, &theme, (400.0, 260.0), 11.0, &["no pairs"]);
    // No series at all: still a chart.
    let none = HistogramChart {
        title: "nothing".into(),
        series: vec![],
        markers: vec![],
        reference: None,
        counted: Counted::Pairs,
    };
    let (svg, text) = svg_of(&none, &theme, 400, 260, "no_series");
    assert!(text.alt.contains("no pairs"), "{}", text.alt);
    assert_clean(&svg, &theme, (400.0, 260.0), 11.0, &["no pairs"]);
}

#[test]
fn a_per_token_histogram_speaks_of_tokens_not_pairs() {
    // Fig. 9 counts one cosine per token: its text alternative and y axis must not say "pairs".
    let mut h = empty_histogram();
    h.counts[200] = 700;
    h.counts[210] = 300;
    h.pairs_in_histogram = 1000;
    h.rows_in_histogram = 1000;
    let theme = Theme::light();
    let chart = HistogramChart {
        title: "Per-token cosine".into(),
        series: vec![HistogramSeries { label: "embed vs lm_head".into(), hist: &h }],
        markers: vec![],
        reference: None,
        counted: Counted::Tokens,
    };
    let (svg, text) = svg_of(&chart, &theme, 480, 300, "tokens");
    assert!(text.alt.contains("embed vs lm_head: 1000 tokens;"), "{}", text.alt);
    assert!(text.alt.contains("percentage of tokens in each bin"), "{}", text.alt);
    assert!(!text.alt.contains("pair"), "{}", text.alt);
    let els = parse(&svg);
    assert!(texts(&els).iter().any(|t| t.text == "% of tokens per bin"), "the y axis says tokens");
    assert!(texts(&els).iter().all(|t| !t.text.contains("pairs")), "no 'pairs' drawn");
}

#[test]
fn light_and_dark_themes_paint_their_backgrounds() {
    let r = trained();
    let chart = HistogramChart::from_report(&r, false);
    let mut backgrounds = Vec::new();
    for theme in [Theme::light(), Theme::dark()] {
        let (svg, _) = svg_of(&chart, &theme, 400, 280, theme.name);
        let els = parse(&svg);
        let first = els.iter().find(|e| e.tag == "rect").expect("a background");
        assert_eq!(first.a("fill"), hex(theme.background), "{} background", theme.name);
        assert_eq!((first.f("width"), first.f("height")), (400.0, 280.0), "fills the canvas");
        assert!(texts(&els).iter().all(|t| t.a("fill") != hex(theme.background)), "text invisible on {}", theme.name);
        backgrounds.push(first.a("fill").to_string());
    }
    assert_ne!(backgrounds[0], backgrounds[1]);
}

#[test]
fn an_overlay_of_three_series_draws_three_step_lines_and_a_dashed_reference() {
    let reports: Vec<Report> = vec![
        report(&trained_like(600, 64, 1), 600, 64),
        report(&random_init(600, 64, 2), 600, 64),
        report(&class1_like(600, 64, 3), 600, 64),
    ];
    let theme = Theme::light();
    let names = ["trained-like", "random init", "class 1-like"];
    let chart = HistogramChart {
        title: "Three models".into(),
        series: reports
            .iter()
            .zip(names)
            .map(|(r, n)| HistogramSeries { label: n.into(), hist: &r.histogram })
            .collect(),
        markers: reports
            .iter()
            .enumerate()
            .map(|(i, r)| Marker { series: Some(i), ..Marker::epsilon(r.epsilon) })
            .collect(),
        reference: Some(("random init, d = 64".into(), random_init_bin_fractions(64, &reports[0].histogram.edges))),
        counted: Counted::Pairs,
    };
    let (svg, text) = svg_of(&chart, &theme, 600, 340, "overlay");
    let els = parse(&svg);
    let fr = frame(&els, &theme);
    for i in 0..3 {
        let lines = lines_in(&els, &hex(theme.series[i]));
        // One step outline and one vertical ε line per series.
        let steps: Vec<&&El> = lines.iter().filter(|l| l.points().len() > 10).collect();
        assert_eq!(steps.len(), 1, "series {i}: {} step polylines", steps.len());
        let pts = steps[0].points();
        assert!(pts.windows(2).all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1), "series {i} is a step line");
        assert!(pts.iter().all(|p| p.0 >= fr.0 && p.0 <= fr.2 && p.1 >= fr.1 && p.1 <= fr.3), "series {i} inside");
    }
    assert!(lines_in(&els, &hex(theme.reference)).len() > 10, "reference dashed in many segments");
    for n in names {
        assert!(text.alt.contains(n), "alt names {n}: {}", text.alt);
    }
    assert_clean(&svg, &theme, (600.0, 340.0), 11.0, &[]);
}

#[test]
fn alt_text_carries_mu_epsilon_and_the_pair_count() {
    let r = report_with(
        &trained_like(3000, 48, 11),
        3000,
        48,
        AnalysisConfig { stop_after_rows: Some(1200), ..AnalysisConfig::default() },
    );
    let ci = r.epsilon_ci.expect("an early stop has an interval");
    let chart = HistogramChart::from_report(&r, false);
    let theme = Theme::light();
    let (svg, text) = svg_of(&chart, &theme, 520, 320, "estimate");
    assert!(text.alt.contains(&format!("μ = {}", significant(r.mu, 4))), "{}", text.alt);
    assert!(text.alt.contains(&format!("ε = {}", significant(r.epsilon, 4))), "{}", text.alt);
    assert!(text.alt.contains(&r.histogram.pairs_in_histogram.to_string()), "{}", text.alt);
    assert!(text.alt.contains(&significant(ci[0], 4)) && text.alt.contains(&significant(ci[1], 4)), "{}", text.alt);
    // The interval is a translucent band in the interval colour.
    let els = parse(&svg);
    let band = els.iter().find(|e| e.tag == "rect" && e.a("fill") == hex(theme.interval) && e.f("opacity") < 1.0);
    assert!(band.is_some(), "interval band drawn");
    assert_clean(&svg, &theme, (520.0, 320.0), 11.0, &[]);
}

#[test]
fn too_small_an_area_is_an_error_not_a_mess() {
    let r = trained();
    let err = histogram_svg(&HistogramChart::from_report(&r, false), &Theme::light(), 120, 90).unwrap_err();
    assert!(matches!(err, ChartError::TooSmall { .. }), "{err}");
    assert!(err.to_string().contains("larger"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Sensitivity
// ---------------------------------------------------------------------------------------------

/// The four formula curves: each x-ascending with y (pixels, downwards) never rising in value.
fn assert_monotone_curves(svg: &str, theme: &Theme, what: &str) {
    let els = parse(svg);
    for k in 0..4 {
        let lines: Vec<&El> =
            lines_in(&els, &hex(theme.series[k])).into_iter().filter(|l| l.points().len() > 5).collect();
        assert_eq!(lines.len(), 1, "{what}: formula {k} drawn as one curve");
        let pts = lines[0].points();
        for w in pts.windows(2) {
            assert!(w[1].0 >= w[0].0, "{what}: formula {k} x goes back {w:?}");
            assert!(w[1].1 <= w[0].1, "{what}: formula {k} capacity falls {w:?}");
        }
        assert!(pts.first().map(|p| p.1) > pts.last().map(|p| p.1), "{what}: formula {k} rises overall");
    }
}

#[test]
fn capacity_against_epsilon_is_monotone_names_its_formulas_and_marks_epsilon() {
    let theme = Theme::light();
    // Llama 2 7B (§2 check values) with an interval.
    let (svg, text) = capacity_vs_epsilon_svg(4096, 0.0645, Some([0.063, 0.066]), &theme, 520, 360).expect("draws");
    write_for_eyes("cap_eps_llama2", &svg);
    assert_monotone_curves(&svg, &theme, "vs ε");
    for name in FORMULA_NAMES {
        assert!(text.alt.contains(name), "alt names {name}: {}", text.alt);
    }
    assert!(text.alt.contains("3.99 × 10⁷"), "Table 1's capacity for Llama 2 7B in the alt: {}", text.alt);
    let els = parse(&svg);
    assert!(vertical_x(&els, &hex(theme.epsilon), frame(&els, &theme)).is_some(), "ε line");
    for label in [
        "JL lower bound, C = 8",
        "JL lower bound, C = 3.029",
        "fit Eq. 6, C = 1.2934",
        "fit Eq. 7 (Table 1)",
        "proven, at least / at most",
    ] {
        assert!(texts(&els).iter().any(|t| t.text == label), "legend {label}");
    }
    // The proven interval, dashed: Kerdock's 8.39 × 10⁶ from ε = 1/64 on, Levenshtein's bound above.
    assert!(lines_in(&els, &hex(theme.reference)).len() > 10, "the proven lines dashed in many segments");
    assert!(text.alt.contains("Dashed, what is proven"), "{}", text.alt);
    assert!(text.alt.contains("at least 8.39 × 10⁶"), "{}", text.alt);
    // Window 0.032–0.103 crosses 0.1: the shaded "no finite capacity" region.
    let shaded = els.iter().any(|e| e.tag == "rect" && e.a("fill") == hex(theme.indeterminate) && e.f("opacity") < 1.0);
    assert!(shaded, "ε ≥ 0.1 shaded");
    assert!(texts(&els).iter().any(|t| t.text == "ε ≥ 0.1: the paper prints no finite capacity"));
    assert!(text.notes.is_empty(), "{:?}", text.notes);
    assert_clean(&svg, &theme, (520.0, 360.0), 11.0, &[]);
    // Phone width, dark.
    let dark = Theme::dark();
    let (svg, _) = capacity_vs_epsilon_svg(4096, 0.0645, Some([0.063, 0.066]), &dark, 375, 380).expect("draws");
    write_for_eyes("cap_eps_phone_dark", &svg);
    assert_monotone_curves(&svg, &dark, "vs ε, phone");
    assert_clean(&svg, &dark, (375.0, 380.0), 11.0, &[]);
}

#[test]
fn capacity_against_epsilon_notes_an_epsilon_off_range_and_class_1() {
    let theme = Theme::light();
    let (svg, text) = capacity_vs_epsilon_svg(3072, 1.3, None, &theme, 520, 360).expect("draws");
    write_for_eyes("cap_eps_off", &svg);
    assert!(text.notes.iter().any(|n| n.contains("right of this range")), "{:?}", text.notes);
    assert!(text.notes.iter().any(|n| n.contains("no finite capacity")), "{:?}", text.notes);
    assert_monotone_curves(&svg, &theme, "vs ε, Class 1");
    assert_clean(&svg, &theme, (520.0, 360.0), 11.0, &[]);
}

#[test]
fn capacity_against_d_is_monotone_and_marks_the_models_d() {
    let theme = Theme::light();
    let (svg, text) = capacity_vs_dim_svg(4096, 0.0645, &theme, 520, 360).expect("draws");
    write_for_eyes("cap_dim_llama2", &svg);
    assert_monotone_curves(&svg, &theme, "vs d");
    for name in FORMULA_NAMES {
        assert!(text.alt.contains(name), "alt names {name}: {}", text.alt);
    }
    let els = parse(&svg);
    let fr = frame(&els, &theme);
    let x = vertical_x(&els, &hex(theme.epsilon), fr).expect("a line at d");
    // d = 4096 on a log axis from 1024 to 16384 sits halfway.
    assert!((x - (fr.0 + fr.2) / 2.0).abs() <= 1.0, "d line at {x}, frame {fr:?}");
    for d in ["1024", "2048", "4096", "8192", "16384"] {
        assert!(texts(&els).iter().any(|t| t.text == d), "x tick {d}");
    }
    assert!(lines_in(&els, &hex(theme.reference)).len() > 10, "the proven lines dashed in many segments");
    assert!(text.alt.contains("at d = 4096: proven: at least 8.39 × 10⁶"), "{}", text.alt);
    assert_clean(&svg, &theme, (520.0, 360.0), 11.0, &[]);
    let (svg, _) = capacity_vs_dim_svg(4096, 0.0645, &theme, 375, 380).expect("draws");
    assert_clean(&svg, &theme, (375.0, 380.0), 11.0, &[]);
}

// ---------------------------------------------------------------------------------------------
// The shared plot frame
// ---------------------------------------------------------------------------------------------

fn labels(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|l| l.to_string()).collect()
}

/// A tick label's estimated width, as every chart estimates it (device pixels at `scale`).
fn label_width(l: &str, scale: f64) -> f64 {
    l.chars().count() as f64 * CHAR_EM * FONT_TICK * scale
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn the_plot_frame_leaves_room_for_its_tick_labels_and_axis_titles() {
    let (left, right, below) = (labels(&["0", "0.04", "0.125"]), labels(&["0 %", "100 %"]), labels(&["512", "16384"]));
    for scale in [1.0, 2.0] {
        let (w, h) = (600.0 * scale, 330.0 * scale);
        let (tick_line, axis_line) = (LINE_EM * FONT_TICK * scale, LINE_EM * FONT_AXIS * scale);
        for y_title in [YTitle::None, YTitle::Above, YTitle::Beside] {
            let spec = FrameSpec {
                left_labels: &left,
                right_labels: &right,
                x_labels: &below,
                x_title: true,
                y_title,
                ..FrameSpec::new(w, h, Sizes::new(scale, 1.0))
            };
            let f = PlotFrame::new(&spec).expect("a 600 × 330 frame fits");
            let at = format!("scale {scale}, {y_title:?}: {f:?}");
            assert!(0.0 < f.left && f.left < f.right && f.right < w, "{at}");
            assert!(0.0 < f.top && f.top < f.bottom && f.bottom < h, "{at}");
            for v in [f.left, f.top, f.right, f.bottom] {
                assert_eq!(v, v.round(), "edges on whole device pixels: {at}");
            }
            // Left: tick, gap, the longest label, and the turned y title's column before it.
            assert!(f.left_labels_end + f.tick <= f.left, "{at}");
            let column_end = match y_title {
                YTitle::Beside => {
                    let c = f.y_title.expect("a column for the y title");
                    assert!(c.start >= 0.0 && c.size >= axis_line, "{at}");
                    c.end()
                }
                _ => 0.0,
            };
            assert!(f.left_labels_end - label_width("0.125", scale) >= column_end, "{at}");
            // Right: the second axis's longest label ends inside the outer box.
            assert!(f.right_labels_start >= f.right + f.tick, "{at}");
            assert!(f.right_labels_start + label_width("100 %", scale) <= w, "{at}");
            // Below: tick, a line of x labels, then a line for the x title, inside the box.
            assert!(f.x_labels.start >= f.bottom + f.tick && f.x_labels.size >= tick_line, "{at}");
            assert!(f.x_title.start >= f.x_labels.end() && f.x_title.size >= axis_line && f.x_title.end() <= h, "{at}");
            // Half the widest x label may hang past either end of the frame and stays inside.
            let half = label_width("16384", scale) / 2.0;
            assert!(f.left - half >= 0.0 && f.right + half <= w, "{at}");
            // Above: half a label line over the top tick, below the y title's row when it is above.
            let ceiling = match y_title {
                YTitle::Above => {
                    let r = f.y_title.expect("a row for the y title");
                    assert!(r.start >= 0.0 && r.size >= axis_line, "{at}");
                    r.end()
                }
                _ => 0.0,
            };
            assert!(f.top - tick_line / 2.0 >= ceiling, "{at}");
        }
    }
    // What the caller draws above (title, legend) pushes the frame down by as much.
    let bare = PlotFrame::new(&FrameSpec::new(600.0, 330.0, Sizes::new(1.0, 1.0))).expect("fits");
    let headed = PlotFrame::new(&FrameSpec { header: 40.0, ..FrameSpec::new(600.0, 330.0, Sizes::new(1.0, 1.0)) })
        .expect("fits");
    assert_eq!(headed.top, bare.top + 40.0);
    assert_eq!(headed.bottom, bare.bottom);
}

#[test]
fn data_maps_the_axis_ends_to_the_frame_edges() {
    let f = PlotFrame::new(&FrameSpec::new(400.0, 300.0, Sizes::new(1.0, 1.0))).expect("fits");
    let axes = [
        Axis::linear(-1.0, 1.0),
        Axis::linear(0.035, 0.105),
        Axis::log10(512.0, 2f64.powf(14.5)),
        Axis::log10(1e-9, 0.1),
    ];
    for axis in axes {
        assert!(close(f.x(&axis, axis.lo), f.left) && close(f.x(&axis, axis.hi), f.right), "{axis:?}");
        assert!(close(f.y(&axis, axis.lo), f.bottom) && close(f.y(&axis, axis.hi), f.top), "{axis:?}");
        let middle = match axis.scale {
            Scale::Linear => (axis.lo + axis.hi) / 2.0,
            Scale::Log10 => (axis.lo * axis.hi).sqrt(),
        };
        assert!(close(f.x(&axis, middle), (f.left + f.right) / 2.0), "{axis:?}");
        assert!(close(f.y(&axis, middle), (f.top + f.bottom) / 2.0), "{axis:?}");
        // Not clamped: a value past the end lies past the edge, for the caller to pin or mark.
        let beyond = match axis.scale {
            Scale::Linear => axis.hi + (axis.hi - axis.lo),
            Scale::Log10 => axis.hi * 10.0,
        };
        assert!(f.x(&axis, beyond) > f.right && f.y(&axis, beyond) < f.top, "{axis:?}");
    }
    // d = 4096 on the Table-1 map's axis (512 to 2¹⁴·⁵) lies 3/5.5 of the way along, as on a log2 axis.
    let d = Axis::log10(512.0, 2f64.powf(14.5));
    assert!(close(d.fraction(4096.0), 3.0 / 5.5));
}

#[test]
fn a_log_axis_spaces_decades_evenly_and_ticks_them() {
    let f = PlotFrame::new(&FrameSpec::new(500.0, 300.0, Sizes::new(1.0, 1.0))).expect("fits");
    let axis = Axis::log10(1e-3, 1e5);
    let xs: Vec<f64> = (-3..=5).map(|k| f.x(&axis, 10f64.powi(k))).collect();
    let ys: Vec<f64> = (-3..=5).map(|k| f.y(&axis, 10f64.powi(k))).collect();
    let (dx, dy) = (f.plot_width() / 8.0, f.plot_height() / 8.0);
    for (x, y) in xs.windows(2).zip(ys.windows(2)) {
        assert!((x[1] - x[0] - dx).abs() < 1e-9, "{xs:?}");
        assert!((y[0] - y[1] - dy).abs() < 1e-9, "{ys:?}");
    }
    // Equal ratios, equal lengths, inside any decade.
    assert!((f.x(&axis, 2e-2) - f.x(&axis, 1e-2) - (f.x(&axis, 2e3) - f.x(&axis, 1e3))).abs() < 1e-9);
    let decades: Vec<f64> = (-3..=5).map(|k| 10f64.powi(k)).collect();
    assert_eq!(axis.ticks(8), decades);
    assert_eq!(axis.ticks(4), [-3, -1, 1, 3, 5].map(|k| 10f64.powi(k)));
    // Zero and negative values have no place on a log axis: the caller pins them (a floor).
    assert_eq!(axis.fraction(0.0), f64::NEG_INFINITY);
    assert!(axis.fraction(-1.0).is_nan());
    // A linear axis ticks at nice steps inside its range.
    assert_eq!(Axis::linear(0.0, 1.0).ticks(2), [0.0, 0.5, 1.0]);
    let ticks = Axis::linear(-1.0, 1.0).ticks(5);
    assert!(ticks.len() <= 6 && ticks.first() == Some(&-1.0) && ticks.last() == Some(&1.0), "{ticks:?}");
}

#[test]
fn a_frame_too_small_for_its_labels_says_so() {
    let (left, below) = (labels(&["0.125"]), labels(&["16384"]));
    for (w, h) in [(100.0, 330.0), (600.0, 70.0), (30.0, 20.0), (0.0, 0.0), (f64::NAN, 300.0)] {
        let spec = FrameSpec {
            left_labels: &left,
            x_labels: &below,
            x_title: true,
            y_title: YTitle::Beside,
            ..FrameSpec::new(w, h, Sizes::new(1.0, 1.0))
        };
        let err = PlotFrame::new(&spec).expect_err("too small");
        assert!(err.plot_width >= 0.0 && err.plot_height >= 0.0, "no negative sizes: {err:?}");
        assert!(err.plot_width < MIN_PLOT_WIDTH || err.plot_height < MIN_PLOT_HEIGHT, "{err:?}");
        assert!(err.to_string().contains("larger"), "{err}");
    }
}

#[test]
fn the_plotters_charts_frame_follows_the_shared_margins() {
    let r = trained();
    let theme = Theme::light();
    for (w, h) in [(600u32, 400u32), (375, 300)] {
        let (svg, _) = histogram_svg(&HistogramChart::from_report(&r, false), &theme, w, h).expect("draws");
        let fr = frame(&parse(&svg), &theme);
        let shared = PlotFrame::new(&FrameSpec {
            x_labels: &labels(&["1.0"]),
            x_title: true,
            y_title: YTitle::Above,
            ..FrameSpec::new(w as f64, h as f64, Sizes::new(1.0, 1.0))
        })
        .expect("fits");
        // Below the frame the histogram holds exactly the shared rows: tick, x labels, x title.
        assert_eq!(fr.3, shared.bottom, "{w}×{h}");
    }
}

// ---------------------------------------------------------------------------------------------
// ε against the layer (a model's dictionaries, docs/method.md §10)
// ---------------------------------------------------------------------------------------------

fn layer_chart(points: &[(u64, f64)], reference: Option<f64>) -> LayerChart {
    LayerChart {
        title: "Dictionary features, layer by layer".into(),
        points: points
            .iter()
            .map(|&(layer, epsilon)| LayerPoint { layer, epsilon, label: format!("layers.{layer}") })
            .collect(),
        reference: reference.map(|e| ("model.embed_tokens.weight".to_string(), e)),
    }
}

fn layers_svg_of(chart: &LayerChart, theme: &Theme, w: u32, h: u32, name: &str) -> (String, ChartText) {
    let (svg, text) = layers_svg(chart, theme, w, h).expect("layer chart draws");
    write_for_eyes(name, &svg);
    (svg, text)
}

/// The points' centres, left to right as drawn.
fn circles(els: &[El]) -> Vec<(f64, f64)> {
    els.iter().filter(|e| e.tag == "circle").map(|e| (e.f("cx"), e.f("cy"))).collect()
}

#[test]
fn layer_points_are_drawn_and_listed_in_layer_order() {
    let theme = Theme::light();
    // Given out of order; ε rises with the layer except at layer 9.
    let chart = layer_chart(&[(9, 0.21), (2, 0.12), (5, 0.30)], None);
    let (svg, text) = layers_svg_of(&chart, &theme, 640, 360, "layers");
    assert_clean(&svg, &theme, (640.0, 360.0), 11.0, &[]);
    let els = parse(&svg);
    let pts = circles(&els);
    assert_eq!(pts.len(), 3, "{svg}");
    let fr = frame(&els, &theme);
    // Every point inside the frame; drawn in layer order: x rises; higher ε is higher up.
    for p in &pts {
        assert!(p.0 > fr.0 && p.0 < fr.2 && p.1 > fr.1 && p.1 < fr.3, "{p:?} outside {fr:?}");
    }
    assert!(pts[0].0 < pts[1].0 && pts[1].0 < pts[2].0, "{pts:?}");
    assert!(pts[1].1 < pts[2].1 && pts[2].1 < pts[0].1, "{pts:?}");
    // Layer 5 sits 3/7 of the way from layer 2 to layer 9.
    let t = (pts[1].0 - pts[0].0) / (pts[2].0 - pts[0].0);
    assert!((t - 3.0 / 7.0).abs() < 0.02, "{t}");
    let at = |s: &str| text.alt.find(s).unwrap_or_else(|| panic!("{s} not in {}", text.alt));
    assert!(at("layer 2 (layers.2) ε = 0.12") < at("layer 5 (layers.5) ε = 0.3") && at("layer 5") < at("layer 9"));
    let csv = chart.csv();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "layer,label,epsilon,class");
    assert_eq!(rows[1..].iter().map(|r| r.split(',').next().unwrap()).collect::<Vec<_>>(), ["2", "5", "9"]);
    assert!(rows[1].contains("between the classes") && rows[2].contains("Class 1"), "{csv}");
    // The gap between the classes lies inside this range: shaded and in the legend.
    assert!(texts(&els).iter().any(|t| t.text.contains("between the classes")));
    // Whole layers only on the x axis.
    let below: Vec<&str> = texts(&els)
        .into_iter()
        .filter(|t| t.f("y") > fr.3 && t.a("text-anchor") == "middle")
        .map(|t| t.text.as_str())
        .collect();
    assert!(below.iter().all(|l| *l == "layer" || l.parse::<u64>().is_ok()), "{below:?}");
}

#[test]
fn the_embedding_reference_line_is_drawn_only_when_given() {
    for theme in [Theme::light(), Theme::dark()] {
        let mu = hex(theme.mu);
        let horizontal_in_plot = |svg: &str| -> Vec<f64> {
            let els = parse(svg);
            let fr = frame(&els, &theme);
            lines_in(&els, &mu)
                .into_iter()
                .flat_map(|l| l.points())
                .filter(|p| p.1 > fr.1 && p.1 < fr.3)
                .map(|p| p.1)
                .collect()
        };
        let without = layer_chart(&[(0, 0.05), (1, 0.07), (2, 0.06)], None);
        let (svg, text) = layers_svg_of(&without, &theme, 640, 360, &format!("layers-no-reference-{}", theme.name));
        assert!(horizontal_in_plot(&svg).is_empty(), "a reference line without an embedding");
        assert!(!text.alt.contains("embedding"), "{}", text.alt);
        assert!(!without.csv().contains("embedding"));
        let with = LayerChart { reference: Some(("model.embed_tokens.weight".into(), 0.04)), ..without };
        let (svg, text) = layers_svg_of(&with, &theme, 640, 360, &format!("layers-reference-{}", theme.name));
        assert_clean(&svg, &theme, (640.0, 360.0), 11.0, &[]);
        let ys = horizontal_in_plot(&svg);
        assert!(!ys.is_empty(), "no reference line");
        assert!(ys.iter().all(|&y| y == ys[0]), "the reference is not horizontal: {ys:?}");
        // Below every point (0.04 < every ε).
        let lowest = circles(&parse(&svg)).iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert!(ys[0] > lowest, "{} vs {lowest}", ys[0]);
        assert!(text.alt.contains("input embedding's ε = 0.04"), "{}", text.alt);
        assert!(with.csv().lines().last().unwrap().contains("embedding: model.embed_tokens.weight"));
    }
}

#[test]
fn no_point_one_point_and_a_phone_draw_without_panic() {
    let theme = Theme::light();
    let (svg, text) = layers_svg_of(&layer_chart(&[], None), &theme, 640, 360, "layers-empty");
    assert_clean(&svg, &theme, (640.0, 360.0), 11.0, &["no dictionary with a known layer"]);
    assert!(circles(&parse(&svg)).is_empty());
    assert!(text.alt.contains("no dictionary"));
    let (svg, _) = layers_svg_of(&layer_chart(&[(12, 0.08)], Some(0.08)), &theme, 640, 360, "layers-one");
    assert_clean(&svg, &theme, (640.0, 360.0), 11.0, &[]);
    assert_eq!(circles(&parse(&svg)).len(), 1);
    // Many layers at a phone's width, and a point with no finite ε left out and noted.
    let many: Vec<(u64, f64)> = (0..26).map(|l| (l, 0.05 + 0.004 * l as f64)).chain([(26, f64::NAN)]).collect();
    let (svg, text) = layers_svg_of(&layer_chart(&many, Some(0.03)), &theme, 375, 300, "layers-phone");
    assert_clean(&svg, &theme, (375.0, 300.0), 11.0, &[]);
    assert_eq!(circles(&parse(&svg)).len(), 26);
    assert_eq!(text.notes.len(), 1, "{:?}", text.notes);
}

/// A report of the generated matrix, made a dictionary's of `layer` (width `d_in`, layout `layout`).
fn dictionary_report(base: &Report, layer: Option<u64>, d_in: u64, layout: &str, epsilon: f64) -> Report {
    use orthoscope::read::dictionary::Dictionary;
    use orthoscope::result::report::DictionaryReport;
    let dictionary = Dictionary {
        d_sae: 512,
        d_in,
        layer,
        hook: layer.map(|l| format!("layers.{l}")),
        architecture: Some("topk".into()),
        source_layout: layout.into(),
        decoder: "W_dec".into(),
        columns_are_features: false,
        transcoder: false,
        d_out: None,
    };
    let mut r = base.clone();
    r.tensor_role = orthoscope::read::locate::TensorRole::SaeDecoder;
    r.epsilon = epsilon;
    r.dictionary = Some(DictionaryReport { dictionary, log10_capacity_used: None });
    r
}

#[test]
fn a_sessions_layer_chart_holds_the_last_models_dictionaries_and_its_embedding() {
    let embedding = report(&trained_like(300, 64, 3), 300, 64);
    assert_eq!(embedding.dim, 64);
    let narrow = report(&trained_like(300, 32, 4), 300, 32);
    let session = [
        embedding.clone(),
        // Another model's dictionary (another width) analysed earlier: not on this chart.
        dictionary_report(&embedding, Some(5), 32, "sparsify", 0.5),
        dictionary_report(&embedding, Some(2), 64, "sparsify", 0.09),
        dictionary_report(&embedding, None, 64, "sparsify", 0.4),
        dictionary_report(&embedding, Some(0), 64, "sparsify", 0.07),
        narrow,
    ];
    let chart = layer_chart_of(&session).expect("dictionaries with layers");
    let layers: Vec<u64> = chart.ordered().iter().map(|p| p.layer).collect();
    assert_eq!(layers, [0, 2]);
    assert_eq!(chart.ordered()[0].label, "layers.0");
    assert_eq!(chart.reference, Some(("model.embed_tokens.weight".to_string(), embedding.epsilon)));
    // No embedding of the dictionaries' width: no reference.
    let chart = layer_chart_of(&session[1..]).unwrap();
    assert_eq!(chart.reference, None);
    // No dictionary with a layer: no chart.
    assert!(layer_chart_of(&session[..1]).is_none());
    assert!(layer_chart_of(&[dictionary_report(&embedding, None, 64, "saelens", 0.1)]).is_none());
}
