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
// Regions
// ---------------------------------------------------------------------------------------------

/// The plot frame in device pixels and the data ranges it maps.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
    pub x: (f64, f64),
    pub y: (f64, f64),
}

impl Frame {
    /// Pixel column of data x (not clamped).
    pub fn px(&self, x: f64) -> i32 {
        let t = (x - self.x.0) / (self.x.1 - self.x.0);
        (self.left as f64 + t * (self.right - self.left) as f64).round() as i32
    }
    /// Pixel row of data y, clamped to the frame.
    pub fn py(&self, y: f64) -> i32 {
        let t = ((y - self.y.0) / (self.y.1 - self.y.0)).clamp(0.0, 1.0);
        let t = if t.is_nan() { 0.0 } else { t };
        (self.bottom as f64 - t * (self.bottom - self.top) as f64).round() as i32
    }
    pub fn contains_x(&self, x: f64) -> bool {
        x >= self.x.0.min(self.x.1) && x <= self.x.1.max(self.x.0)
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
    let y_title = (pad, top);
    top += s.line(FONT_AXIS);
    // Half a tick label sits above the top tick.
    let frame_top = top + s.line(FONT_TICK) / 2 + s.len(GAP);
    let widest_y = y_labels.iter().map(|l| s.text_width(l, FONT_TICK)).max().unwrap_or(0);
    let frame_left = pad + widest_y + s.len(GAP) + s.len(TICK);
    let frame_right = w - pad - (s.text_width(x_end_label, FONT_TICK) / 2).max(s.len(GAP));
    let x_title_top = h - pad - s.line(FONT_AXIS);
    let x_labels_top = x_title_top - s.len(GAP) - s.line(FONT_TICK);
    let frame_bottom = x_labels_top - s.len(GAP) - s.len(TICK);
    if frame_right - frame_left < s.len(MIN_PLOT_WIDTH) || frame_bottom - frame_top < s.len(MIN_PLOT_HEIGHT) {
        return Err(ChartError::TooSmall {
            width,
            height,
            plot_width: (frame_right - frame_left).max(0),
            plot_height: (frame_bottom - frame_top).max(0),
        });
    }
    Ok(Layout {
        width: w,
        height: h,
        title,
        legend: at,
        y_title,
        frame: Frame { left: frame_left, top: frame_top, right: frame_right, bottom: frame_bottom, x, y },
        x_labels_top,
        x_title_top,
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
