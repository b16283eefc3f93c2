//! The layout every chart shares, computed by hand rather than by plotters' mesh: plotters measures
//! text through the DOM on wasm and by a byte-count guess natively, so its label areas cannot promise
//! "no overlap" on every backend. Here every box is sized from the font size alone, with widths
//! estimated generously (0.6 em per character; real sans-serif digits are ~0.56 em), and regions are
//! stacked so that nothing can collide:
//!
//! ```text
//!   title
//!   legend rows (wrapped)            ← outside the plot: never covers data
//!   y-axis title ("% of pairs per bin")
//!   ┌ y tick labels │ plot frame ┐
//!   └               └ x tick labels, then the x-axis title below them
//! ```
//!
//! The frame itself (margins from the tick labels and axis titles, data → pixel for linear and log
//! axes, tick values) is [`PlotFrame`], which has no plotters type in it: the page's hand-built SVG
//! charts (the Table-1 map, the spectrum) take their plot box and scales from it too, so every chart
//! on the page follows one set of margin rules.

use plotters::coord::Shift;
use plotters::element::{DashedPathElement, PathElement, Polygon, Rectangle};
use plotters::prelude::{DrawingArea, DrawingBackend};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, FontStyle, IntoFont, RGBColor, TextStyle};

use super::{ChartError, Theme};

/// Font sizes in CSS pixels: at 375 CSS px wide every label stays at least 11 px.
pub const FONT_TICK: f64 = 12.0;
pub const FONT_LEGEND: f64 = 12.0;
pub const FONT_AXIS: f64 = 12.0;
pub const FONT_TITLE: f64 = 13.0;
/// Estimated advance of one character, in em (generous so that estimates over-cover real text).
pub const CHAR_EM: f64 = 0.6;
/// Height of a line box, in em.
pub const LINE_EM: f64 = 1.2;
/// Outer padding, gaps and tick length, in CSS pixels.
const PAD: f64 = 8.0;
const GAP: f64 = 4.0;
const TICK: f64 = 4.0;
const SWATCH: f64 = 18.0;
const ITEM_SPACING: f64 = 14.0;
/// Off-range arrowheads: half-height, and the height of their centre above the frame (CSS px). The
/// strip above the frame is half a tick line plus a gap (≈ 11 px) tall.
const ARROW_HALF: f64 = 4.0;
const ARROW_ABOVE: f64 = 6.0;
/// The plot frame must be at least this big (CSS px), or the chart reports `TooSmall`.
pub const MIN_PLOT_WIDTH: f64 = 60.0;
pub const MIN_PLOT_HEIGHT: f64 = 40.0;
/// Opacity of filled bands (interval, "no finite capacity" region).
pub const BAND_ALPHA: f64 = 0.18;

/// How big things are on this backend.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Device pixels per CSS pixel.
    pub px: f64,
    /// Factor applied to font sizes handed to the backend: plotters' SVG backend writes
    /// `font-size = size / 1.24`, the canvas backend `size` px, so SVG output passes 1.24.
    pub font: f64,
}

impl Sizes {
    /// `scale` that is not a positive finite number is taken as 1.
    pub fn new(scale: f64, font: f64) -> Self {
        let px = if scale.is_finite() && scale > 0.0 { scale } else { 1.0 };
        Self { px, font }
    }
    /// A CSS length in device pixels.
    pub fn len(&self, css: f64) -> i32 {
        (css * self.px).round() as i32
    }
    /// Rendered text size in device pixels.
    pub fn text_px(&self, css: f64) -> f64 {
        css * self.px
    }
    /// Estimated width in device pixels of `text` at `css` size.
    pub fn text_width(&self, text: &str, css: f64) -> i32 {
        (text.chars().count() as f64 * CHAR_EM * self.text_px(css)).ceil() as i32
    }
    /// Height of one line of text at `css` size, in device pixels.
    pub fn line(&self, css: f64) -> i32 {
        (LINE_EM * self.text_px(css)).ceil() as i32
    }
    /// A stroke width in device pixels, at least 1.
    pub fn stroke(&self, css: f64) -> u32 {
        (css * self.px).round().max(1.0) as u32
    }
}

/// Drawing helpers over one area, mapping errors to [`ChartError`].
pub struct Pen<'a, DB: DrawingBackend> {
    pub area: &'a DrawingArea<DB, Shift>,
    pub s: Sizes,
}

fn backend_error<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Backend(e.to_string())
}

impl<DB: DrawingBackend> Pen<'_, DB> {
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &self,
        text: &str,
        (x, y): (i32, i32),
        css: f64,
        colour: RGBColor,
        h: HPos,
        v: VPos,
        bold: bool,
    ) -> Result<(), ChartError> {
        let size = self.s.text_px(css) * self.s.font;
        let font =
            if bold { ("sans-serif", size, FontStyle::Bold).into_font() } else { ("sans-serif", size).into_font() };
        let style = TextStyle::from(font).color(&colour).pos(Pos::new(h, v));
        self.area.draw_text(text, &style, (x, y)).map_err(backend_error)
    }

    pub fn path(&self, points: Vec<(i32, i32)>, colour: RGBColor, css_width: f64) -> Result<(), ChartError> {
        if points.len() < 2 {
            return Ok(());
        }
        self.area.draw(&PathElement::new(points, colour.stroke_width(self.s.stroke(css_width)))).map_err(backend_error)
    }

    pub fn dashed(&self, points: Vec<(i32, i32)>, colour: RGBColor, css_width: f64) -> Result<(), ChartError> {
        if points.len() < 2 {
            return Ok(());
        }
        let (dash, gap) = (self.s.len(5.0).max(2), self.s.len(3.5).max(2));
        self.area
            .draw(&DashedPathElement::new(points, dash, gap, colour.stroke_width(self.s.stroke(css_width))))
            .map_err(backend_error)
    }

    pub fn fill_rect(
        &self,
        (x0, y0): (i32, i32),
        (x1, y1): (i32, i32),
        colour: RGBColor,
        alpha: f64,
    ) -> Result<(), ChartError> {
        if x1 <= x0 || y1 <= y0 {
            return Ok(());
        }
        self.area.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.mix(alpha).filled())).map_err(backend_error)
    }

    pub fn stroke_rect(
        &self,
        (x0, y0): (i32, i32),
        (x1, y1): (i32, i32),
        colour: RGBColor,
        css_width: f64,
    ) -> Result<(), ChartError> {
        self.area
            .draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.stroke_width(self.s.stroke(css_width))))
            .map_err(backend_error)
    }

    pub fn triangle(&self, points: [(i32, i32); 3], colour: RGBColor) -> Result<(), ChartError> {
        self.area.draw(&Polygon::new(points.to_vec(), colour.filled())).map_err(backend_error)
    }
}

// ---------------------------------------------------------------------------------------------
// Ticks
// ---------------------------------------------------------------------------------------------

/// A "nice" step (1, 2, 2.5 or 5 × 10ⁿ) no smaller than `raw`, and the decimals that print its
/// multiples distinctly.
pub fn nice_step(raw: f64) -> (f64, usize) {
    let raw = if raw.is_finite() && raw > 0.0 { raw } else { 1.0 };
    let e = raw.log10().floor();
    for (mult, extra) in [(1.0, 0), (2.0, 0), (2.5, 1), (5.0, 0), (10.0, 0)] {
        let step = mult * 10f64.powf(e);
        if step >= raw * (1.0 - 1e-9) {
            let exp = if mult == 10.0 { e + 1.0 } else { e };
            let decimals = (-exp).max(0.0) as usize + if exp <= 0.0 { extra } else { 0 };
            return (step, decimals);
        }
    }
    (raw, 0)
}

/// Tick values at multiples of `step` inside [lo, hi].
pub fn ticks_in(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if step.is_nan() || step <= 0.0 || !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last.min(first + 1000)).map(|k| k as f64 * step).collect()
}

/// A number with a true minus sign ("−0.5"), and "0" never negative.
pub fn format_tick(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x);
    let zero = s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.');
    if zero {
        return s.trim_start_matches('-').to_string();
    }
    s.replacen('-', "−", 1)
}

/// A y axis from 0 to a nice top ≥ `max` with at most five intervals; an empty axis (max ≤ 0) reads
/// 0 to 1. Returns (top, ticks with labels).
pub fn zero_based_axis(max: f64) -> (f64, Vec<(f64, String)>) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let (step, decimals) = nice_step(max / 5.0);
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    let ticks = ticks_in(0.0, top, step).into_iter().map(|t| (t, format_tick(t, decimals))).collect();
    (top, ticks)
}

/// Ticks for [lo, hi] that fit `width` device pixels, given the widest label's estimate.
pub fn fitting_ticks(lo: f64, hi: f64, width: i32, s: &Sizes) -> Vec<(f64, String)> {
    let span = hi - lo;
    if span.is_nan() || span <= 0.0 {
        return vec![(lo, format_tick(lo, 3))];
    }
    // Try from dense to sparse; keep the densest whose labels leave two em between them.
    let mut intervals = 10usize;
    loop {
        let (step, decimals) = nice_step(span / intervals as f64);
        let ticks: Vec<(f64, String)> =
            ticks_in(lo, hi, step).into_iter().map(|t| (t, format_tick(t, decimals))).collect();
        let widest = ticks.iter().map(|(_, l)| s.text_width(l, FONT_TICK)).max().unwrap_or(0);
        let room = if ticks.len() > 1 { width / (ticks.len() as i32 - 1) } else { width };
        if intervals <= 2 || room >= widest + s.len(2.0 * FONT_TICK) {
            return ticks;
        }
        intervals -= 1;
    }
}

// ---------------------------------------------------------------------------------------------
// The plot frame: margins and scales, for the plotters charts and the hand-built SVG ones alike
// ---------------------------------------------------------------------------------------------

/// How an axis spaces the values between its ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Equal ratios take equal lengths; both ends must be positive. Every base spaces values alike,
    /// so this also serves an axis ticked at powers of two (whose ticks the caller then chooses).
    Log10,
}

/// A data range and how it is spaced along one side of a [`PlotFrame`]. `lo` maps to the left (or
/// bottom) edge, `hi` to the right (or top) edge; on a log axis both are data values, not their logs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub scale: Scale,
}

impl Axis {
    pub fn linear(lo: f64, hi: f64) -> Self {
        Self { lo, hi, scale: Scale::Linear }
    }

    pub fn log10(lo: f64, hi: f64) -> Self {
        Self { lo, hi, scale: Scale::Log10 }
    }

    /// Where `v` lies from `lo` (0) to `hi` (1), not clamped: a value off the range maps outside
    /// [0, 1], and on a log axis 0 maps to −∞ and a negative value to NaN, which the caller places
    /// (on a floor, as an arrow). A range of zero length maps everything to its middle.
    pub fn fraction(&self, v: f64) -> f64 {
        let (a, b, v) = match self.scale {
            Scale::Linear => (self.lo, self.hi, v),
            Scale::Log10 => (self.lo.log10(), self.hi.log10(), v.log10()),
        };
        let span = b - a;
        if span == 0.0 {
            0.5
        } else {
            (v - a) / span
        }
    }

    /// Tick values inside the range, at most `max_intervals` intervals apart from first to last.
    /// Linear: multiples of a nice step (1, 2, 2.5 or 5 × 10ⁿ). Log10: powers of ten, every decade
    /// or every few decades counted up from the lowest one in range.
    pub fn ticks(&self, max_intervals: usize) -> Vec<f64> {
        let n = max_intervals.max(1) as f64;
        let (lo, hi) = (self.lo.min(self.hi), self.lo.max(self.hi));
        match self.scale {
            Scale::Linear => ticks_in(lo, hi, nice_step((hi - lo) / n).0),
            Scale::Log10 => {
                if lo.is_nan() || lo <= 0.0 || !hi.is_finite() {
                    return Vec::new();
                }
                // log10(1e-3) is −2.9999999999999996: a hair of slack keeps exact decades in range.
                let a = (lo.log10() - 1e-9).ceil() as i32;
                let b = (hi.log10() + 1e-9).floor() as i32;
                if b < a {
                    return Vec::new();
                }
                let every = ((b - a) as f64 / n).ceil().max(1.0) as usize;
                (a..=b).step_by(every).map(|k| 10f64.powi(k)).collect()
            }
        }
    }
}

/// A band across the outer box: where it starts (x for a column, y for a row) and how deep it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strip {
    pub start: f64,
    pub size: f64,
}

impl Strip {
    pub fn end(&self) -> f64 {
        self.start + self.size
    }
    /// Where a line of text centred in the strip is anchored (SVG `dominant-baseline="central"`).
    pub fn middle(&self) -> f64 {
        self.start + self.size / 2.0
    }
}

/// Where the y axis is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YTitle {
    /// Not beside the plot: a caption or legend says what the y axis is.
    None,
    /// One line above the frame, aligned left: a long title stays level and readable.
    Above,
    /// Turned a quarter to the left, in a column left of the tick labels.
    Beside,
}

/// What a [`PlotFrame`] must leave room for.
#[derive(Clone, Copy, Debug)]
pub struct FrameSpec<'a> {
    /// Outer size in device pixels (a canvas) or user units (an SVG `viewBox`).
    pub width: f64,
    pub height: f64,
    pub sizes: Sizes,
    /// Height taken just inside the top padding by what the caller draws itself (title, legend).
    pub header: f64,
    /// Tick labels left of the frame, and right of it for a second y axis: the widest of each sets
    /// that side's margin.
    pub left_labels: &'a [String],
    pub right_labels: &'a [String],
    /// Tick labels below the frame, centred on their ticks: half the widest may hang past either end.
    pub x_labels: &'a [String],
    /// One line below the x tick labels naming the x axis.
    pub x_title: bool,
    pub y_title: YTitle,
}

impl FrameSpec<'_> {
    /// A bare frame of `width` × `height`: no labels, no titles, no header.
    pub fn new(width: f64, height: f64, sizes: Sizes) -> Self {
        FrameSpec {
            width,
            height,
            sizes,
            header: 0.0,
            left_labels: &[],
            right_labels: &[],
            x_labels: &[],
            x_title: false,
            y_title: YTitle::None,
        }
    }
}

/// Why a [`PlotFrame`] could not be placed: what is left for the plot, clamped at zero.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("the {width}×{height} area leaves only {plot_width}×{plot_height} for the plot after its labels and titles; make the chart larger")]
pub struct FrameTooSmall {
    pub width: f64,
    pub height: f64,
    pub plot_width: f64,
    pub plot_height: f64,
}

/// The plot box inside an outer box, and where its tick labels and axis titles go. Every margin is
/// sized from the font sizes alone ([`FONT_TICK`] labels at [`CHAR_EM`] per character, lines of
/// [`LINE_EM`]), with the padding, gap and tick length of the plotters charts, so labels never collide
/// whichever renderer draws them. Lengths are in the spec's units; every margin is a whole number of
/// device pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotFrame {
    pub width: f64,
    pub height: f64,
    /// The plot box.
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
    /// Where text aligned to the outer box's left starts (inside the padding).
    pub inset: f64,
    /// Length of a tick mark, drawn from the frame's edge outwards.
    pub tick: f64,
    /// Left tick labels end here (anchored at their end); right tick labels start here.
    pub left_labels_end: f64,
    pub right_labels_start: f64,
    /// Rows below the frame: the x tick labels (text tops at `start`), then the x-axis title. A row
    /// the spec does not ask for has size 0.
    pub x_labels: Strip,
    pub x_title: Strip,
    /// The y-axis title's line: a row above the frame ([`YTitle::Above`]) or a column left of the
    /// tick labels ([`YTitle::Beside`]).
    pub y_title: Option<Strip>,
}

impl PlotFrame {
    /// Places the frame, or says how little room the spec leaves (below [`MIN_PLOT_WIDTH`] ×
    /// [`MIN_PLOT_HEIGHT`] CSS px for the plot itself).
    pub fn new(spec: &FrameSpec) -> Result<Self, FrameTooSmall> {
        let s = &spec.sizes;
        let len = |css: f64| s.len(css) as f64;
        let (pad, gap, tick) = (len(PAD), len(GAP), len(TICK));
        let (tick_line, axis_line) = (s.line(FONT_TICK) as f64, s.line(FONT_AXIS) as f64);
        let widest = |labels: &[String]| labels.iter().map(|l| s.text_width(l, FONT_TICK)).max().unwrap_or(0);
        // Centred x labels reach half their width past the ticks at the frame's ends.
        let overhang = (widest(spec.x_labels) / 2) as f64;

        let mut top = pad + spec.header.max(0.0);
        let mut y_title = None;
        if spec.y_title == YTitle::Above {
            y_title = Some(Strip { start: top, size: axis_line });
            top += axis_line;
        }
        // Half a tick label sits above the top tick.
        top += (s.line(FONT_TICK) / 2) as f64 + gap;

        let mut left_room = widest(spec.left_labels) as f64 + gap + tick;
        if spec.y_title == YTitle::Beside {
            y_title = Some(Strip { start: pad, size: axis_line });
            left_room += axis_line + gap;
        }
        let left = pad + left_room.max(overhang);
        let right_room = if spec.right_labels.is_empty() { 0.0 } else { widest(spec.right_labels) as f64 + gap + tick };
        let right = spec.width - pad - right_room.max(overhang).max(gap);

        let mut edge = spec.height - pad;
        let mut row = |wanted: bool, size: f64| {
            if !wanted {
                return Strip { start: edge, size: 0.0 };
            }
            edge -= size;
            let strip = Strip { start: edge, size };
            edge -= gap;
            strip
        };
        let x_title = row(spec.x_title, axis_line);
        let x_labels = row(!spec.x_labels.is_empty(), tick_line);
        let bottom = edge - tick;

        let (plot_width, plot_height) = (right - left, bottom - top);
        // Written so that NaN sizes fail too.
        if !(plot_width >= len(MIN_PLOT_WIDTH) && plot_height >= len(MIN_PLOT_HEIGHT)) {
            return Err(FrameTooSmall {
                width: spec.width,
                height: spec.height,
                plot_width: plot_width.max(0.0),
                plot_height: plot_height.max(0.0),
            });
        }
        Ok(PlotFrame {
            width: spec.width,
            height: spec.height,
            left,
            top,
            right,
            bottom,
            inset: pad,
            tick,
            left_labels_end: left - tick - gap,
            right_labels_start: right + tick + gap,
            x_labels,
            x_title,
            y_title,
        })
    }

    pub fn plot_width(&self) -> f64 {
        self.right - self.left
    }

    pub fn plot_height(&self) -> f64 {
        self.bottom - self.top
    }

    /// The column at fraction `t` of the width (0: left edge, 1: right edge), not clamped.
    pub fn x_at(&self, t: f64) -> f64 {
        self.left + t * self.plot_width()
    }

    /// The row at fraction `t` of the height (0: bottom edge, 1: top edge), not clamped.
    pub fn y_at(&self, t: f64) -> f64 {
        self.bottom - t * self.plot_height()
    }

    /// The column of data value `v` on the horizontal axis `axis` (see [`Axis::fraction`]).
    pub fn x(&self, axis: &Axis, v: f64) -> f64 {
        self.x_at(axis.fraction(v))
    }

    /// The row of data value `v` on the vertical axis `axis`.
    pub fn y(&self, axis: &Axis, v: f64) -> f64 {
        self.y_at(axis.fraction(v))
    }
}

// ---------------------------------------------------------------------------------------------
// Regions of the plotters charts
// ---------------------------------------------------------------------------------------------

/// The plot frame in whole device pixels and the data ranges it maps.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
    pub x: Axis,
    pub y: Axis,
    pub plot: PlotFrame,
}

impl Frame {
    pub fn new(plot: PlotFrame, x: Axis, y: Axis) -> Self {
        let px = |v: f64| v.round() as i32;
        Frame { left: px(plot.left), top: px(plot.top), right: px(plot.right), bottom: px(plot.bottom), x, y, plot }
    }
    /// Pixel column of data x (not clamped).
    pub fn px(&self, x: f64) -> i32 {
        self.plot.x(&self.x, x).round() as i32
    }
    /// Pixel row of data y, clamped to the frame.
    pub fn py(&self, y: f64) -> i32 {
        let t = self.y.fraction(y);
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        self.plot.y_at(t).round() as i32
    }
    pub fn contains_x(&self, x: f64) -> bool {
        x >= self.x.lo.min(self.x.hi) && x <= self.x.hi.max(self.x.lo)
    }
}

/// What a legend entry shows before its label.
#[derive(Clone, Copy, Debug)]
pub enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Band(RGBColor),
}

#[derive(Clone, Debug)]
pub struct LegendItem {
    pub swatch: Swatch,
    pub label: String,
}

/// Where everything goes.
pub struct Layout {
    pub width: i32,
    pub height: i32,
    pub title: (i32, i32),
    /// Each legend item's top-left corner.
    pub legend: Vec<(i32, i32)>,
    pub y_title: (i32, i32),
    pub frame: Frame,
    /// Top of the x tick labels and of the x-axis title.
    pub x_labels_top: i32,
    pub x_title_top: i32,
}

/// Places the regions for a `width` × `height` device-pixel area with the given legend and y tick
/// labels (their widths set the left margin). `x_end_label` is the widest x tick label: half of it
/// must fit right of the frame. The frame maps data ranges (x, y).
pub fn layout(
    width: u32,
    height: u32,
    s: &Sizes,
    legend: &[LegendItem],
    y_labels: &[String],
    x_end_label: &str,
    (x, y): ((f64, f64), (f64, f64)),
) -> Result<Layout, ChartError> {
    let (w, h) = (width as i32, height as i32);
    let pad = s.len(PAD);
    let mut top = pad;
    let title = (pad, top);
    top += s.line(FONT_TITLE) + s.len(GAP);
    // Legend rows, wrapped to the width.
    let row_h = s.line(FONT_LEGEND) + s.len(GAP);
    let avail = w - 2 * pad;
    let mut at = Vec::with_capacity(legend.len());
    let (mut cx, mut rows) = (pad, 0);
    for item in legend {
        let iw = legend_item_width(item, s);
        if cx > pad && cx + iw > pad + avail {
            cx = pad;
            rows += 1;
        }
        at.push((cx, top + rows * row_h));
        cx += iw + s.len(ITEM_SPACING);
    }
    if !legend.is_empty() {
        top += (rows + 1) * row_h;
    }
    let x_end = [x_end_label.to_string()];
    let plot = PlotFrame::new(&FrameSpec {
        header: (top - pad) as f64,
        left_labels: y_labels,
        x_labels: &x_end,
        x_title: true,
        y_title: YTitle::Above,
        ..FrameSpec::new(width as f64, height as f64, *s)
    })
    .map_err(|e| ChartError::TooSmall {
        width,
        height,
        plot_width: e.plot_width.round() as i32,
        plot_height: e.plot_height.round() as i32,
    })?;
    let px = |v: f64| v.round() as i32;
    Ok(Layout {
        width: w,
        height: h,
        title,
        legend: at,
        y_title: (pad, plot.y_title.map_or(top, |r| px(r.start))),
        frame: Frame::new(plot, Axis::linear(x.0, x.1), Axis::linear(y.0, y.1)),
        x_labels_top: px(plot.x_labels.start),
        x_title_top: px(plot.x_title.start),
    })
}

fn legend_item_width(item: &LegendItem, s: &Sizes) -> i32 {
    s.len(SWATCH) + s.len(GAP) + s.text_width(&item.label, FONT_LEGEND)
}

/// Title, legend, axis titles, frame, grid, ticks and tick labels.
#[allow(clippy::too_many_arguments)]
pub fn draw_furniture<DB: DrawingBackend>(
    pen: &Pen<DB>,
    l: &Layout,
    theme: &Theme,
    title: &str,
    legend: &[LegendItem],
    x_ticks: &[(f64, String)],
    y_ticks: &[(f64, String)],
    x_title: &str,
    y_title: &str,
) -> Result<(), ChartError> {
    let s = pen.s;
    let f = l.frame;
    pen.text(title, l.title, FONT_TITLE, theme.text, HPos::Left, VPos::Top, true)?;
    for (item, &(x, y)) in legend.iter().zip(&l.legend) {
        let mid = y + s.line(FONT_LEGEND) / 2;
        let x1 = x + s.len(SWATCH);
        match item.swatch {
            Swatch::Line(c) => pen.path(vec![(x, mid), (x1, mid)], c, 2.0)?,
            Swatch::Dashed(c) => pen.dashed(vec![(x, mid), (x1, mid)], c, 2.0)?,
            Swatch::Band(c) => {
                let half = s.line(FONT_LEGEND) / 3;
                pen.fill_rect((x, mid - half), (x1, mid + half), c, (BAND_ALPHA * 2.0).min(1.0))?
            }
        }
        pen.text(&item.label, (x1 + s.len(GAP), y), FONT_LEGEND, theme.text, HPos::Left, VPos::Top, false)?;
    }
    pen.text(y_title, l.y_title, FONT_AXIS, theme.muted, HPos::Left, VPos::Top, false)?;
    for (v, label) in y_ticks {
        let y = f.py(*v);
        pen.path(vec![(f.left, y), (f.right, y)], theme.grid, 1.0)?;
        pen.path(vec![(f.left - s.len(TICK), y), (f.left, y)], theme.frame, 1.0)?;
        pen.text(
            label,
            (f.left - s.len(TICK) - s.len(GAP), y),
            FONT_TICK,
            theme.text,
            HPos::Right,
            VPos::Center,
            false,
        )?;
    }
    for (v, label) in x_ticks {
        let x = f.px(*v);
        pen.path(vec![(x, f.bottom), (x, f.bottom + s.len(TICK))], theme.frame, 1.0)?;
        pen.text(label, (x, l.x_labels_top), FONT_TICK, theme.text, HPos::Center, VPos::Top, false)?;
    }
    pen.text(x_title, ((f.left + f.right) / 2, l.x_title_top), FONT_AXIS, theme.muted, HPos::Center, VPos::Top, false)?;
    Ok(())
}

/// The frame outline, drawn last over the data so that its edges stay crisp.
pub fn draw_frame<DB: DrawingBackend>(pen: &Pen<DB>, f: &Frame, theme: &Theme) -> Result<(), ChartError> {
    pen.stroke_rect((f.left, f.top), (f.right, f.bottom), theme.frame, 1.0)
}

/// Which side of the frame an off-range value lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

/// A small arrowhead in the strip just above the frame, at its `side` corner pointing outwards (the
/// `slot`-th, moving inwards), for a marker whose value lies off the visible range. The strip holds
/// only the upper half of the top y tick label, which sits left of the frame, so the arrow covers
/// neither data nor text.
pub fn draw_off_range_arrow<DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    side: Side,
    slot: i32,
    colour: RGBColor,
) -> Result<(), ChartError> {
    let s = pen.s;
    let half = s.len(ARROW_HALF).max(2);
    let y = f.top - s.len(ARROW_ABOVE);
    let step = slot * (2 * half + s.len(3.0));
    let pts = match side {
        Side::Right => {
            let tip = f.right - step;
            [(tip, y), (tip - 2 * half, y - half), (tip - 2 * half, y + half)]
        }
        Side::Left => {
            let tip = f.left + step;
            [(tip, y), (tip + 2 * half, y - half), (tip + 2 * half, y + half)]
        }
    };
    pen.triangle(pts, colour)
}

/// A message centred in the frame (empty data).
pub fn draw_centred_message<DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    theme: &Theme,
    text: &str,
) -> Result<(), ChartError> {
    pen.text(
        text,
        ((f.left + f.right) / 2, (f.top + f.bottom) / 2),
        FONT_LEGEND,
        theme.muted,
        HPos::Center,
        VPos::Center,
        false,
    )
}

/// Removes consecutive duplicate pixels, which a 300-bin step line at a few hundred pixels is full of.
pub fn dedup_pixels(points: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for p in points {
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_their_decimals() {
        assert_eq!(nice_step(0.4), (0.5, 1));
        assert_eq!(nice_step(20.0), (20.0, 0));
        assert_eq!(nice_step(0.022), (0.025, 3));
        assert_eq!(nice_step(0.09), (0.1, 1));
        assert_eq!(nice_step(3.0), (5.0, 0));
    }

    #[test]
    fn zero_based_axis_labels_are_distinct() {
        for max in [100.0, 1e-9, 0.0, 0.37, 4.1, 12.5, 0.0031] {
            let (top, ticks) = zero_based_axis(max);
            assert!(top >= max, "top {top} < {max}");
            let mut labels: Vec<&String> = ticks.iter().map(|(_, l)| l).collect();
            let n = labels.len();
            labels.dedup();
            assert_eq!(labels.len(), n, "repeated labels for max {max}: {ticks:?}");
            assert!((2..=6).contains(&n), "{n} ticks for max {max}: {ticks:?}");
        }
    }

    #[test]
    fn ticks_print_a_true_minus_and_no_negative_zero() {
        assert_eq!(format_tick(-0.5, 1), "−0.5");
        assert_eq!(format_tick(-0.00001, 2), "0.00");
        assert_eq!(format_tick(0.25, 2), "0.25");
    }
}
