//! The page's charts, drawn through plotters' backend trait so that one drawing serves the `<canvas>`
//! (plotters-canvas, wasm) and the SVG export (plotters' SVG backend, also what the native tests
//! render). No browser types here.
//!
//! - [`draw_histogram`]: pairwise cosines as in the paper's Fig. 1/2 (`docs/method.md` §6): step
//!   outline, y = % of pairs per bin, μ and ε as vertical lines, overlays and a dashed random-init
//!   reference.
//! - [`draw_layers`]: ε of a model's dictionaries against the layer (§10), the embedding's ε as a
//!   dashed reference.
//! - [`draw_capacity_vs_epsilon`], [`draw_capacity_vs_dim`]: the four capacity formulas around the
//!   model's ε and d (§2), showing how sensitive the capacity is (§7).
//!
//! Every chart returns a [`ChartText`]: a sentence with its numbers for screen readers, and notes
//! (e.g. a marker off the visible range) for the page to print under it. Colours are Okabe–Ito
//! (colour-blind safe), μ is dashed and ε solid so they differ without colour too, and every legend
//! sits above the plot so it never covers data.
//!
//! Margins and scales: [`PlotFrame`] (in [`layout`]) places the plot box from the font sizes of its
//! tick labels and axis titles and maps data to pixels on linear and log axes. The page's hand-built
//! SVG charts (the Table-1 map, the spectrum) use it too, so all charts share one set of margin rules.
//!
//! Sizes: `scale` is device pixels per CSS pixel (`window.devicePixelRatio`); the drawing area is in
//! device pixels; fonts (≥ 12 CSS px), strokes and margins scale with it. Text sizes assume the canvas
//! convention (size = pixels); the `*_svg` functions compensate for plotters' SVG backend, which writes
//! `font-size = size / 1.24`.

mod histogram;
mod layers;
pub mod layout;
mod sensitivity;

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend, IntoDrawingArea, SVGBackend};
use plotters::style::RGBColor;

pub use histogram::{draw_histogram, histogram_text, Counted, HistogramChart, HistogramSeries, Marker, MarkerKind};
pub use layers::{draw_layers, layer_chart_of, layer_chart_text, LayerChart, LayerPoint};
pub use layout::{Axis, FrameSpec, FrameTooSmall, PlotFrame, Scale, Sizes, Strip, YTitle};
pub use sensitivity::{
    capacity_vs_dim_text, capacity_vs_epsilon_text, draw_capacity_vs_dim, draw_capacity_vs_epsilon, FORMULA_NAMES,
};

/// Colours of one theme. Series colours are used in order for overlays (and for the four capacity
/// formulas); `interval` and `indeterminate` are drawn at [`layout::BAND_ALPHA`].
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: &'static str,
    pub background: RGBColor,
    pub text: RGBColor,
    /// Axis titles and messages.
    pub muted: RGBColor,
    /// Horizontal grid lines.
    pub grid: RGBColor,
    /// Plot frame and tick marks.
    pub frame: RGBColor,
    /// μ (drawn dashed).
    pub mu: RGBColor,
    /// ε and "this model" (drawn solid).
    pub epsilon: RGBColor,
    /// The 95 % interval band around ε.
    pub interval: RGBColor,
    /// The region ε ≥ 0.1 where the paper prints no finite capacity.
    pub indeterminate: RGBColor,
    /// The random-init reference curve (drawn dashed).
    pub reference: RGBColor,
    pub series: [RGBColor; 8],
}

/// Okabe–Ito palette (Okabe & Ito 2008), safe for the common colour-vision deficiencies.
mod okabe_ito {
    use plotters::style::RGBColor;
    pub const ORANGE: RGBColor = RGBColor(0xE6, 0x9F, 0x00);
    pub const SKY_BLUE: RGBColor = RGBColor(0x56, 0xB4, 0xE9);
    pub const BLUISH_GREEN: RGBColor = RGBColor(0x00, 0x9E, 0x73);
    pub const YELLOW: RGBColor = RGBColor(0xF0, 0xE4, 0x42);
    pub const BLUE: RGBColor = RGBColor(0x00, 0x72, 0xB2);
    pub const VERMILLION: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
    pub const REDDISH_PURPLE: RGBColor = RGBColor(0xCC, 0x79, 0xA7);
    pub const BLACK: RGBColor = RGBColor(0x00, 0x00, 0x00);
}

impl Theme {
    pub fn light() -> Self {
        use okabe_ito::*;
        Theme {
            name: "light",
            background: RGBColor(0xFF, 0xFF, 0xFF),
            text: RGBColor(0x1A, 0x1A, 0x1A),
            muted: RGBColor(0x55, 0x55, 0x55),
            grid: RGBColor(0xE6, 0xE6, 0xE6),
            frame: RGBColor(0x80, 0x80, 0x80),
            mu: BLACK,
            epsilon: VERMILLION,
            interval: VERMILLION,
            indeterminate: RGBColor(0x80, 0x80, 0x80),
            reference: RGBColor(0x6E, 0x6E, 0x6E),
            // Yellow is hard to see on white: last.
            series: [BLUE, ORANGE, BLUISH_GREEN, REDDISH_PURPLE, SKY_BLUE, BLACK, VERMILLION, YELLOW],
        }
    }

    pub fn dark() -> Self {
        use okabe_ito::*;
        Theme {
            name: "dark",
            background: RGBColor(0x15, 0x18, 0x1C),
            text: RGBColor(0xE8, 0xE8, 0xE8),
            muted: RGBColor(0xA8, 0xA8, 0xA8),
            grid: RGBColor(0x2C, 0x31, 0x38),
            frame: RGBColor(0x7A, 0x7F, 0x87),
            mu: RGBColor(0xF2, 0xF2, 0xF2),
            epsilon: VERMILLION,
            interval: VERMILLION,
            indeterminate: RGBColor(0xA0, 0xA0, 0xA0),
            reference: RGBColor(0xB0, 0xB0, 0xB0),
            // Blue is hard to see on near-black: sky blue first, blue late.
            series: [
                SKY_BLUE,
                ORANGE,
                BLUISH_GREEN,
                REDDISH_PURPLE,
                YELLOW,
                RGBColor(0xF2, 0xF2, 0xF2),
                VERMILLION,
                BLUE,
            ],
        }
    }

    /// Series colour `i`, cycling through the palette.
    pub fn series_colour(&self, i: usize) -> RGBColor {
        self.series[i % self.series.len()]
    }
}

/// "#D55E00": a colour as CSS and plotters' SVG backend write it.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// What a chart says in words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChartText {
    /// A sentence or two with the chart's numbers, for `aria-label`/`<figcaption>`.
    pub alt: String,
    /// Things the picture cannot show by itself, e.g. "ε = 0.99918 lies right of this range".
    pub notes: Vec<String>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The area leaves less than the minimum plot frame after titles, legend and labels: make the
    /// canvas larger (at least about 300 × 220 CSS px).
    #[error("the {width}×{height} px drawing area leaves only {plot_width}×{plot_height} px for the plot; make the chart larger")]
    TooSmall { width: u32, height: u32, plot_width: i32, plot_height: i32 },
    /// The backend refused a drawing operation (canvas context lost, …).
    #[error("the chart could not be drawn: {0}")]
    Backend(String),
}

/// plotters' SVG backend writes `font-size = size / 1.24`; the canvas uses `size` px.
const SVG_FONT_FACTOR: f64 = 1.24;

/// Renders to an SVG string of `width` × `height` CSS pixels.
fn to_svg(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>, layout::Sizes) -> Result<ChartText, ChartError>,
) -> Result<(String, ChartText), ChartError> {
    let mut out = String::new();
    let text = {
        let area = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        let text = draw(&area, layout::Sizes::new(1.0, SVG_FONT_FACTOR))?;
        area.present().map_err(|e| ChartError::Backend(e.to_string()))?;
        text
    };
    Ok((out, text))
}

/// The histogram as a standalone SVG document (for export), with its text.
pub fn histogram_svg(
    chart: &HistogramChart,
    theme: &Theme,
    width: u32,
    height: u32,
) -> Result<(String, ChartText), ChartError> {
    to_svg(width, height, |area, s| histogram::draw(area, chart, theme, s))
}

/// The layer chart as a standalone SVG document, with its text.
pub fn layers_svg(
    chart: &LayerChart,
    theme: &Theme,
    width: u32,
    height: u32,
) -> Result<(String, ChartText), ChartError> {
    to_svg(width, height, |area, s| layers::draw(area, chart, theme, s))
}

/// Capacity against ε as a standalone SVG document, with its text.
pub fn capacity_vs_epsilon_svg(
    d: u64,
    epsilon: f64,
    ci: Option<[f64; 2]>,
    theme: &Theme,
    width: u32,
    height: u32,
) -> Result<(String, ChartText), ChartError> {
    to_svg(width, height, |area, s| sensitivity::draw_vs_epsilon(area, d, epsilon, ci, theme, s))
}

/// Capacity against d as a standalone SVG document, with its text.
pub fn capacity_vs_dim_svg(
    d: u64,
    epsilon: f64,
    theme: &Theme,
    width: u32,
    height: u32,
) -> Result<(String, ChartText), ChartError> {
    to_svg(width, height, |area, s| sensitivity::draw_vs_dim(area, d, epsilon, theme, s))
}

/// Backend-generic entry points share this: `scale` → sizes for a canvas-like backend.
fn canvas_sizes(scale: f64) -> layout::Sizes {
    layout::Sizes::new(scale, 1.0)
}

/// Fills the background; every chart starts here.
fn fill_background<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, theme: &Theme) -> Result<(), ChartError> {
    area.fill(&theme.background).map_err(|e| ChartError::Backend(e.to_string()))
}
