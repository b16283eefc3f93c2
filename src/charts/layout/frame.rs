//! Axes and the plot frame: margins from the tick labels and axis titles, and data → pixel for linear
//! and log axes, with no plotters type in it so the hand-built SVG charts share it.

use super::*;

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
