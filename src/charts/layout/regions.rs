//! The regions of the plotters charts: title, wrapped legend rows and the frame, in whole device pixels.

use plotters::style::RGBColor;

use super::*;

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
