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
//!
//! The parts: `ticks` (nice steps and their labels), `frame` (axes, scales and the plot frame),
//! `regions` (the plotters charts' title, legend and frame in device pixels), `draw` (the pen and
//! everything it draws); this file holds the sizes every part measures with.

use super::{ChartError, Theme};

mod draw;
mod frame;
mod regions;
mod ticks;

pub use draw::*;
pub use frame::*;
pub use regions::*;
pub use ticks::*;

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
