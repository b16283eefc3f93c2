//! Histograms of pairwise cosines as in the paper's Fig. 1/2 (`docs/method.md` §6): step outline,
//! y = % of pairs per bin, μ and ε as vertical lines, several series overlaid, a dashed random-init
//! reference.

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend};

use super::layout::{
    self, dedup_pixels, draw_centred_message, draw_frame, draw_furniture, draw_off_range_arrow, fitting_ticks,
    zero_based_axis, Frame, LegendItem, Pen, Side, Sizes, Swatch, BAND_ALPHA,
};
use super::{canvas_sizes, fill_background, ChartError, ChartText, Theme};
use crate::pass::stats::SampledHistogram;
use crate::result::paper::random_init_bin_fractions;
use crate::result::report::{significant, Report};

/// One histogram of an overlay.
#[derive(Clone, Debug)]
pub struct HistogramSeries<'a> {
    pub label: String,
    pub hist: &'a SampledHistogram,
}

/// A vertical marker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MarkerKind {
    /// Mean cosine μ: dashed line.
    Mu(f64),
    /// ε = μ + 2σ: solid line.
    Epsilon(f64),
    /// A band, e.g. ε's 95 % interval.
    Interval(f64, f64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub label: String,
    pub kind: MarkerKind,
    /// Draw in this series' colour (overlays, one μ/ε per model); None: the theme's μ/ε colour.
    pub series: Option<usize>,
}

/// A value for a label: 4 significant digits, "n/a" when there is none.
fn value(x: f64) -> String {
    if x.is_finite() {
        significant(x, 4)
    } else {
        "n/a".to_string()
    }
}

impl Marker {
    pub fn mu(mu: f64) -> Self {
        Marker { label: format!("μ = {}", value(mu)), kind: MarkerKind::Mu(mu), series: None }
    }
    pub fn epsilon(epsilon: f64) -> Self {
        Marker { label: format!("ε = {}", value(epsilon)), kind: MarkerKind::Epsilon(epsilon), series: None }
    }
    pub fn interval(lo: f64, hi: f64) -> Self {
        Marker {
            label: format!("95 % interval of ε: {} to {}", value(lo), value(hi)),
            kind: MarkerKind::Interval(lo, hi),
            series: None,
        }
    }
}

/// What one count of a histogram is: most charts count pairs of rows; the embedding–unembedding
/// chart (paper Fig. 9) counts tokens, one cosine per token. The text alternative and the y axis
/// say which, so a screen reader does not hear "pairs" for tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Counted {
    #[default]
    Pairs,
    Tokens,
}

impl Counted {
    /// The plural noun: "pairs", "tokens".
    pub fn noun(self) -> &'static str {
        match self {
            Counted::Pairs => "pairs",
            Counted::Tokens => "tokens",
        }
    }

    /// What the x axis measures, for the text alternative.
    fn quantity(self) -> &'static str {
        match self {
            Counted::Pairs => "pairwise cosine similarity",
            Counted::Tokens => "the cosine similarity of each token's two rows",
        }
    }
}

/// Everything one histogram chart shows.
#[derive(Clone, Debug)]
pub struct HistogramChart<'a> {
    pub title: String,
    /// Drawn in palette order; the first sets the x range and bins.
    pub series: Vec<HistogramSeries<'a>>,
    pub markers: Vec<Marker>,
    /// A reference curve (label, probability mass per bin of the first series), drawn dashed.
    pub reference: Option<(String, Vec<f64>)>,
    pub counted: Counted,
}

impl<'a> HistogramChart<'a> {
    /// The report's histogram over [−1, 1] (or its zoom on [−0.2, 0.2]) with μ, ε and, for an
    /// estimate, ε's 95 % interval.
    pub fn from_report(report: &'a Report, zoom: bool) -> Self {
        let hist = if zoom { &report.histogram_zoom } else { &report.histogram };
        let title = if zoom {
            format!("Pairwise cosines, zoom on [{}, {}]", plain(hist.lo), plain(hist.hi))
        } else {
            "Pairwise cosines".to_string()
        };
        let mut markers = vec![Marker::mu(report.mu), Marker::epsilon(report.epsilon)];
        if let Some([lo, hi]) = report.epsilon_ci {
            markers.push(Marker::interval(lo, hi));
        }
        let label = format!("{} ({} rows sampled)", report.tensor, hist.rows_in_histogram);
        HistogramChart {
            title,
            series: vec![HistogramSeries { label, hist }],
            markers,
            reference: None,
            counted: Counted::Pairs,
        }
    }

    /// Adds the random-init reference of Fig. 1/2 for dimension `d`: the cosine of two independent
    /// isotropic vectors, on the first series' bins (`paper::random_init_bin_fractions`).
    pub fn with_random_init(mut self, d: u64) -> Self {
        if let Some(first) = self.series.first() {
            let fractions = random_init_bin_fractions(d, &first.hist.edges);
            self.reference = Some((format!("random init, d = {d}"), fractions));
        }
        self
    }

    fn range(&self) -> (f64, f64) {
        match self.series.first() {
            Some(s) if s.hist.lo.is_finite() && s.hist.hi.is_finite() && s.hist.lo < s.hist.hi => {
                (s.hist.lo, s.hist.hi)
            }
            _ => (-1.0, 1.0),
        }
    }
}

/// A number as typed: "−0.2", "0.0645".
fn plain(x: f64) -> String {
    format!("{x}").replacen('-', "−", 1)
}

/// % of the histogram's pairs in each bin (all zero when it holds no pairs).
fn percents(h: &SampledHistogram) -> Vec<f64> {
    let total = h.pairs_in_histogram;
    h.counts.iter().map(|&c| if total == 0 { 0.0 } else { 100.0 * c as f64 / total as f64 }).collect()
}

/// The reference as % per bin, when it has one value per bin of the first series.
fn reference_percents(chart: &HistogramChart) -> Option<Vec<f64>> {
    let (_, fractions) = chart.reference.as_ref()?;
    let bins = chart.series.first()?.hist.counts.len();
    (fractions.len() == bins).then(|| fractions.iter().map(|f| 100.0 * f).collect())
}

/// Where a value lies relative to the range.
fn side_of(x: f64, (lo, hi): (f64, f64)) -> Option<Side> {
    if x < lo {
        Some(Side::Left)
    } else if x > hi {
        Some(Side::Right)
    } else {
        None
    }
}

/// Where a marker can be drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// In the range (for an interval: overlapping it).
    Visible,
    Off(Side),
    /// No value to draw (NaN, an empty interval).
    Missing,
}

fn placement(m: &Marker, range: (f64, f64)) -> Placement {
    match m.kind {
        MarkerKind::Mu(x) | MarkerKind::Epsilon(x) if x.is_nan() => Placement::Missing,
        MarkerKind::Mu(x) | MarkerKind::Epsilon(x) => side_of(x, range).map_or(Placement::Visible, Placement::Off),
        MarkerKind::Interval(lo, hi) if lo.is_nan() || hi.is_nan() || lo > hi => Placement::Missing,
        MarkerKind::Interval(_, hi) if hi < range.0 => Placement::Off(Side::Left),
        MarkerKind::Interval(lo, _) if lo > range.1 => Placement::Off(Side::Right),
        MarkerKind::Interval(..) => Placement::Visible,
    }
}

fn range_text(range: (f64, f64)) -> String {
    format!("[{}, {}]", plain(range.0), plain(range.1))
}

/// The chart in words: what is plotted, each series' pairs and highest bin, the markers, what lies
/// off the range. Also what [`draw_histogram`] returns.
pub fn histogram_text(chart: &HistogramChart) -> ChartText {
    let range = chart.range();
    let mut notes = Vec::new();
    let bins = chart.series.first().map_or(0, |s| s.hist.counts.len());
    let noun = chart.counted.noun();
    let mut alt = format!(
        "{}: histogram of {} (unitless) over {} in {bins} bins; the height is the percentage of {noun} in each bin.",
        chart.title,
        chart.counted.quantity(),
        range_text(range)
    );
    let empty = chart.series.iter().all(|s| s.hist.pairs_in_histogram == 0);
    if empty {
        alt.push_str(&format!(" There are no {noun} to show."));
        notes.push(format!("No {noun} to show: the histogram is empty."));
    }
    for s in &chart.series {
        let h = s.hist;
        if h.pairs_in_histogram == 0 {
            if chart.series.len() > 1 {
                alt.push_str(&format!(" {}: no {noun}.", s.label));
            }
            continue;
        }
        let p = percents(h);
        let outside = h.below + h.above;
        match chart.counted {
            Counted::Pairs => alt
                .push_str(&format!(" {}: {} pairs among {} rows", s.label, h.pairs_in_histogram, h.rows_in_histogram)),
            Counted::Tokens => alt.push_str(&format!(" {}: {} tokens", s.label, h.pairs_in_histogram)),
        }
        let peak = p.iter().enumerate().fold(None, |best: Option<(usize, f64)>, (i, &v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        });
        match peak {
            Some((i, v)) if v > 0.0 => {
                let (a, b) = (h.edges.get(i).copied().unwrap_or(h.lo), h.edges.get(i + 1).copied().unwrap_or(h.hi));
                alt.push_str(&format!(
                    "; the highest bin, {} to {}, holds {} % of them",
                    significant(a, 3),
                    significant(b, 3),
                    significant(v, 3)
                ));
            }
            _ => {}
        }
        alt.push('.');
        if outside > 0 {
            let share = 100.0 * outside as f64 / h.pairs_in_histogram as f64;
            let line = if outside == h.pairs_in_histogram {
                format!(
                    "All {} {noun} of {} lie outside {} ({} below, {} above).",
                    h.pairs_in_histogram,
                    s.label,
                    range_text(range),
                    h.below,
                    h.above
                )
            } else {
                format!(
                    "{} % of the {noun} of {} lie outside {} ({} below, {} above).",
                    significant(share, 3),
                    s.label,
                    range_text(range),
                    h.below,
                    h.above
                )
            };
            alt.push(' ');
            alt.push_str(&line);
            notes.push(line);
        }
    }
    if let Some((label, fractions)) = &chart.reference {
        if reference_percents(chart).is_some() {
            alt.push_str(&format!(" Dashed: {label}."));
        } else {
            notes.push(format!(
                "The reference \"{label}\" has {} values for {bins} bins and is not drawn.",
                fractions.len()
            ));
        }
    }
    let marks: Vec<String> = chart.markers.iter().map(|m| m.label.clone()).collect();
    if !marks.is_empty() {
        alt.push_str(&format!(" Marked: {}.", marks.join(", ")));
    }
    for m in &chart.markers {
        match placement(m, range) {
            Placement::Off(side) => {
                let where_ = if side == Side::Right { "right" } else { "left" };
                notes.push(format!("{} lies {where_} of this range {}.", m.label, range_text(range)));
            }
            Placement::Missing => notes.push(format!("{}: no value to mark.", m.label)),
            Placement::Visible => {}
        }
    }
    ChartText { alt, notes }
}

/// Draws the histogram chart on `area` (device pixels; `scale` = device pixels per CSS pixel).
pub fn draw_histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &HistogramChart,
    theme: &Theme,
    scale: f64,
) -> Result<ChartText, ChartError> {
    draw(area, chart, theme, canvas_sizes(scale))
}

pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &HistogramChart,
    theme: &Theme,
    s: Sizes,
) -> Result<ChartText, ChartError> {
    let text = histogram_text(chart);
    fill_background(area, theme)?;
    let pen = Pen { area, s };
    let range = chart.range();
    let series: Vec<Vec<f64>> = chart.series.iter().map(|x| percents(x.hist)).collect();
    let reference = reference_percents(chart);
    let max = series.iter().chain(reference.iter()).flatten().copied().filter(|v| v.is_finite()).fold(0.0, f64::max);
    let (top, y_ticks) = zero_based_axis(max);

    let marker_colour = |m: &Marker| match (m.series, m.kind) {
        (Some(i), _) => theme.series_colour(i),
        (None, MarkerKind::Mu(_)) => theme.mu,
        (None, _) => theme.epsilon,
    };
    let mut legend: Vec<LegendItem> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, x)| LegendItem { swatch: Swatch::Line(theme.series_colour(i)), label: x.label.clone() })
        .collect();
    if let (Some((label, _)), Some(_)) = (&chart.reference, &reference) {
        legend.push(LegendItem { swatch: Swatch::Dashed(theme.reference), label: label.clone() });
    }
    for m in &chart.markers {
        let c = marker_colour(m);
        let swatch = match m.kind {
            MarkerKind::Mu(_) => Swatch::Dashed(c),
            MarkerKind::Epsilon(_) => Swatch::Line(c),
            MarkerKind::Interval(..) => Swatch::Band(if m.series.is_some() { c } else { theme.interval }),
        };
        let label = match placement(m, range) {
            Placement::Off(Side::Right) => format!("{} → right of range", m.label),
            Placement::Off(Side::Left) => format!("← {} left of range", m.label),
            Placement::Visible | Placement::Missing => m.label.clone(),
        };
        legend.push(LegendItem { swatch, label });
    }

    let (width, height) = area.dim_in_pixel();
    let y_labels: Vec<String> = y_ticks.iter().map(|(_, l)| l.clone()).collect();
    // The right margin must hold half the last x label; the labels depend on the frame's width, so
    // lay out, tick, and lay out again if a wider label came up.
    let mut end_label = layout::format_tick(range.1, 1);
    let mut l = layout::layout(width, height, &s, &legend, &y_labels, &end_label, (range, (0.0, top)))?;
    let mut x_ticks = fitting_ticks(range.0, range.1, l.frame.right - l.frame.left, &s);
    if let Some(widest) = x_ticks.iter().map(|(_, t)| t).max_by_key(|t| t.chars().count()) {
        if widest.chars().count() > end_label.chars().count() {
            end_label = widest.clone();
            l = layout::layout(width, height, &s, &legend, &y_labels, &end_label, (range, (0.0, top)))?;
            x_ticks = fitting_ticks(range.0, range.1, l.frame.right - l.frame.left, &s);
        }
    }
    let f = l.frame;

    // Bands first, under everything.
    for m in &chart.markers {
        if let MarkerKind::Interval(lo, hi) = m.kind {
            if placement(m, range) == Placement::Visible {
                let colour = if m.series.is_some() { marker_colour(m) } else { theme.interval };
                let (a, b) = (f.px(lo.max(range.0)), f.px(hi.min(range.1)));
                pen.fill_rect((a, f.top), (b.max(a + 1), f.bottom), colour, BAND_ALPHA)?;
            }
        }
    }
    draw_furniture(
        &pen,
        &l,
        theme,
        &chart.title,
        &legend,
        &x_ticks,
        &y_ticks,
        "cosine similarity (unitless)",
        &format!("% of {} per bin", chart.counted.noun()),
    )?;
    for (i, (x, p)) in chart.series.iter().zip(&series).enumerate() {
        if x.hist.pairs_in_histogram == 0 {
            continue;
        }
        pen.path(step_pixels(&f, &x.hist.edges, p), theme.series_colour(i), 1.5)?;
    }
    if let (Some(r), Some(first)) = (&reference, chart.series.first()) {
        pen.dashed(step_pixels(&f, &first.hist.edges, r), theme.reference, 1.5)?;
    }
    let mut slots = [0i32; 2];
    for m in &chart.markers {
        let c = marker_colour(m);
        match (m.kind, placement(m, range)) {
            (_, Placement::Missing) | (MarkerKind::Interval(..), Placement::Visible) => {}
            (_, Placement::Off(side)) => {
                let slot = &mut slots[usize::from(side == Side::Right)];
                draw_off_range_arrow(&pen, &f, side, *slot, c)?;
                *slot += 1;
            }
            (MarkerKind::Mu(x), Placement::Visible) => {
                pen.dashed(vec![(f.px(x), f.bottom), (f.px(x), f.top)], c, 1.5)?
            }
            (MarkerKind::Epsilon(x), Placement::Visible) => {
                pen.path(vec![(f.px(x), f.bottom), (f.px(x), f.top)], c, 2.0)?
            }
        }
    }
    draw_frame(&pen, &f, theme)?;
    if chart.series.iter().all(|x| x.hist.pairs_in_histogram == 0) {
        draw_centred_message(&pen, &f, theme, &format!("no {}", chart.counted.noun()))?;
    } else if max <= 0.0 {
        draw_centred_message(&pen, &f, theme, &format!("all {} lie outside this range", chart.counted.noun()))?;
    }
    Ok(text)
}

/// The step outline of one histogram in pixels: down to 0 at both ends, flat across each bin. Bins
/// beyond the frame (an overlay with other edges) are pinned to its edge.
fn step_pixels(f: &Frame, edges: &[f64], percent: &[f64]) -> Vec<(i32, i32)> {
    let px = |x: f64| f.px(x).clamp(f.left, f.right);
    let mut pts = Vec::with_capacity(percent.len() * 2 + 2);
    if let Some(&e0) = edges.first() {
        pts.push((px(e0), f.py(0.0)));
    }
    for (i, &p) in percent.iter().enumerate() {
        if let (Some(&a), Some(&b)) = (edges.get(i), edges.get(i + 1)) {
            pts.push((px(a), f.py(p)));
            pts.push((px(b), f.py(p)));
        }
    }
    if let Some(&e) = edges.get(percent.len()) {
        pts.push((px(e), f.py(0.0)));
    }
    dedup_pixels(pts)
}
