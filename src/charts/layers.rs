//! A model's dictionaries layer by layer (`docs/method.md` §10): ε of each dictionary's feature
//! directions against the layer it reads, one point per dictionary, with the model's embedding ε as
//! a dashed horizontal reference when it is known, and the gap between the classes (§3) shaded
//! where it falls inside the plotted range.

use plotters::coord::Shift;
use plotters::element::Circle;
use plotters::prelude::{DrawingArea, DrawingBackend};
use plotters::style::Color;

use super::layout::{
    self, draw_centred_message, draw_frame, draw_furniture, fitting_ticks, format_tick, nice_step, ticks_in,
    LegendItem, Pen, Sizes, Swatch, BAND_ALPHA,
};
use super::{canvas_sizes, fill_background, ChartError, ChartText, Theme};
use crate::pass::estimate::{class, CLASS_1_ABOVE, FINITE_CAPACITY_BELOW};
use crate::read::locate::TensorRole;
use crate::result::report::{significant, Report};

/// One dictionary: the layer it reads and ε of its feature directions.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerPoint {
    pub layer: u64,
    pub epsilon: f64,
    /// What names it in the text and the CSV (its hook or folder, `layers.3`).
    pub label: String,
}

/// The chart: its points (any order: drawn and listed in layer order) and the embedding's ε.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerChart {
    pub title: String,
    pub points: Vec<LayerPoint>,
    /// The model's input embedding: (what names it, its ε).
    pub reference: Option<(String, f64)>,
}

impl LayerChart {
    /// The points in layer order (a layer's several dictionaries in the order given).
    pub fn ordered(&self) -> Vec<&LayerPoint> {
        let mut points: Vec<&LayerPoint> = self.points.iter().collect();
        points.sort_by_key(|p| p.layer);
        points
    }

    /// The points as CSV (`layer,label,epsilon,class`), then the reference as a row of its own.
    pub fn csv(&self) -> String {
        let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        let mut out = String::from("layer,label,epsilon,class\n");
        for p in self.ordered() {
            out.push_str(&format!("{},{},{},{}\n", p.layer, quote(&p.label), p.epsilon, class(p.epsilon).label()));
        }
        if let Some((label, eps)) = &self.reference {
            out.push_str(&format!(",{},{},{}\n", quote(&format!("embedding: {label}")), eps, class(*eps).label()));
        }
        out
    }
}

/// The chart of a session's reports (oldest first): the dictionaries with a known layer that read
/// the same stream as the last one analysed (same width d_in, same layout and side: one model's
/// dictionaries, not another's of the same session), and as reference the last input embedding
/// whose width is that d_in (the stream the dictionaries read). None without such a dictionary.
pub fn layer_chart_of<'a>(reports: impl IntoIterator<Item = &'a Report>) -> Option<LayerChart> {
    let reports: Vec<&Report> = reports.into_iter().collect();
    let key = |r: &Report| {
        r.dictionary.as_ref().filter(|d| d.dictionary.layer.is_some()).map(|d| {
            let d = &d.dictionary;
            (d.d_in, d.source_layout.clone(), d.transcoder)
        })
    };
    let last = reports.iter().rev().find_map(|r| key(r))?;
    let points = reports
        .iter()
        .filter(|r| key(r).as_ref() == Some(&last))
        .filter_map(|r| {
            let d = &r.dictionary.as_ref()?.dictionary;
            let layer = d.layer?;
            let label = d.hook.clone().unwrap_or_else(|| format!("layer {layer}"));
            Some(LayerPoint { layer, epsilon: r.epsilon, label })
        })
        .collect();
    let reference = reports
        .iter()
        .rev()
        .find(|r| r.dictionary.is_none() && r.tensor_role == TensorRole::InputEmbedding && r.dim == last.0)
        .map(|r| (r.tensor.clone(), r.epsilon));
    let side = if last.2 { ", output side" } else { "" };
    Some(LayerChart {
        // Short enough for a phone's width; the panel's heading says what the points are.
        title: format!("ε by layer: d_in = {}, {}{side}", last.0, last.1),
        points,
        reference,
    })
}

/// The chart in words: every point in layer order, and the reference.
pub fn layer_chart_text(chart: &LayerChart) -> ChartText {
    let points = chart.ordered();
    let mut alt = match points.as_slice() {
        [] => "ε of dictionary features against the layer: no dictionary with a known layer.".to_string(),
        _ => format!(
            "ε of dictionary features against the layer, {} dictionaries: {}.",
            points.len(),
            points
                .iter()
                .map(|p| format!("layer {} ({}) ε = {}", p.layer, p.label, significant(p.epsilon, 4)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    if let Some((label, eps)) = &chart.reference {
        alt.push_str(&format!(" The dashed line is the input embedding's ε = {} ({label}).", significant(*eps, 4)));
    }
    let mut notes = Vec::new();
    let hidden = points.iter().filter(|p| !p.epsilon.is_finite()).count();
    if hidden > 0 {
        notes.push(format!("{hidden} dictionaries have no finite ε and are not drawn."));
    }
    ChartText { alt, notes }
}

/// The y range and its ticks: every finite ε (points and reference) with a margin, on nice steps.
fn y_axis(values: &[f64]) -> ((f64, f64), Vec<(f64, String)>) {
    let (mut lo, mut hi) = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let span = (hi - lo).max(hi.abs() * 0.05).max(1e-3);
    let (step, decimals) = nice_step(span / 4.0);
    let a = ((lo - span * 0.1) / step).floor() * step;
    let b = ((hi + span * 0.1) / step).ceil() * step;
    let ticks = ticks_in(a, b, step).into_iter().map(|t| (t, format_tick(t, decimals))).collect();
    ((a, b), ticks)
}

/// Draws the chart on a canvas-like backend at `scale` device pixels per CSS pixel.
pub fn draw_layers<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &LayerChart,
    theme: &Theme,
    scale: f64,
) -> Result<ChartText, ChartError> {
    draw(area, chart, theme, canvas_sizes(scale))
}

pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &LayerChart,
    theme: &Theme,
    s: Sizes,
) -> Result<ChartText, ChartError> {
    let text = layer_chart_text(chart);
    fill_background(area, theme)?;
    let pen = Pen { area, s };
    let points: Vec<&LayerPoint> = chart.ordered().into_iter().filter(|p| p.epsilon.is_finite()).collect();
    let (first, last) = match (points.first(), points.last()) {
        (Some(a), Some(b)) => (a.layer as f64, b.layer as f64),
        _ => (0.0, 1.0),
    };
    // Half a layer of room either side, so the end points sit off the frame.
    let x_range = (first - 0.5, last + 0.5);
    let mut values: Vec<f64> = points.iter().map(|p| p.epsilon).collect();
    values.extend(chart.reference.as_ref().map(|r| r.1));
    let (y_range, y_ticks) = y_axis(&values);
    let gap = (FINITE_CAPACITY_BELOW.max(y_range.0), CLASS_1_ABOVE.min(y_range.1));
    let shade = gap.0 < gap.1;

    let features = theme.series_colour(0);
    let mut legend = vec![LegendItem { swatch: Swatch::Line(features), label: "features: ε per dictionary".into() }];
    // The embedding's tensor is named in the text; the legend stays short enough for a phone.
    if let Some((_, eps)) = &chart.reference {
        legend.push(LegendItem {
            swatch: Swatch::Dashed(theme.mu),
            label: format!("embedding: ε = {}", significant(*eps, 4)),
        });
    }
    if shade {
        legend.push(LegendItem {
            swatch: Swatch::Band(theme.indeterminate),
            label: "between the classes (0.1–0.2)".into(),
        });
    }

    let (width, height) = area.dim_in_pixel();
    let y_labels: Vec<String> = y_ticks.iter().map(|(_, l)| l.clone()).collect();
    let end = format!("{}", last as u64);
    let l = layout::layout(width, height, &s, &legend, &y_labels, &end, (x_range, y_range))?;
    let f = l.frame;
    // Layers are whole numbers: only whole ticks, printed without decimals.
    let x_ticks: Vec<(f64, String)> = fitting_ticks(x_range.0, x_range.1, f.right - f.left, &s)
        .into_iter()
        .filter(|(t, _)| t.fract() == 0.0 && *t >= 0.0)
        .map(|(t, _)| (t, format!("{}", t as u64)))
        .collect();
    if shade {
        pen.fill_rect((f.left, f.py(gap.1)), (f.right, f.py(gap.0)), theme.indeterminate, BAND_ALPHA)?;
    }
    draw_furniture(&pen, &l, theme, &chart.title, &legend, &x_ticks, &y_ticks, "layer", "ε of the features")?;
    if let Some((_, eps)) = chart.reference.as_ref().filter(|r| r.1.is_finite()) {
        let y = f.py(*eps);
        pen.dashed(vec![(f.left, y), (f.right, y)], theme.mu, 1.5)?;
    }
    let pixels: Vec<(i32, i32)> = points.iter().map(|p| (f.px(p.layer as f64), f.py(p.epsilon))).collect();
    pen.path(pixels.clone(), features, 1.5)?;
    let radius = s.len(4.0).max(2);
    for &at in &pixels {
        area.draw(&Circle::new(at, radius, features.filled())).map_err(|e| ChartError::Backend(e.to_string()))?;
    }
    draw_frame(&pen, &f, theme)?;
    if points.is_empty() {
        draw_centred_message(&pen, &f, theme, "no dictionary with a known layer")?;
    }
    Ok(text)
}
