//! A chart on a `<canvas>`: drawn by [`crate::charts`] with plotters at the device's pixel ratio
//! (sharp on HiDPI), redrawn when the layout width or the colour scheme changes, with its numbers as
//! a text alternative and PNG/SVG exports.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;

use crate::charts::{self, ChartText, Counted, HistogramChart, HistogramSeries, Marker, Theme};
use crate::pass::stats::SampledHistogram;

/// Page-wide facts about the screen every chart redraws on: its colour scheme and its layout (the
/// device pixel ratio is read at each redraw).
#[derive(Clone, Copy)]
pub struct Screen {
    /// `prefers-color-scheme: dark`.
    pub dark: RwSignal<bool>,
    /// Bumped on every window resize.
    pub layout: RwSignal<u32>,
}

impl Screen {
    pub fn theme(&self) -> Theme {
        if self.dark.get() {
            Theme::dark()
        } else {
            Theme::light()
        }
    }
}

/// Everything a chart needs, owned, so the canvas and the SVG export draw the same thing.
#[derive(Clone, Debug, PartialEq)]
pub enum ChartSpec {
    /// Histograms of pairwise cosines (paper Fig. 1/2), one or several overlaid.
    Histogram {
        title: String,
        series: Vec<(String, SampledHistogram)>,
        markers: Vec<Marker>,
        /// The random-init reference curve (fraction of pairs per bin) for the same d.
        reference: Option<(String, Vec<f64>)>,
        /// Pairs of rows, or tokens (Fig. 9).
        counted: Counted,
    },
    /// log10 capacity against ε at the model's d, the four formulas (paper §2, §7).
    CapacityVsEpsilon { d: u64, epsilon: f64, ci: Option<[f64; 2]> },
    /// log10 capacity against d at the model's ε.
    CapacityVsDim { d: u64, epsilon: f64 },
    /// ε of a model's dictionaries against the layer (docs/method.md §10).
    Layers(charts::LayerChart),
}

/// Draws a spec on any plotters backend: the one dispatch shared by the canvas and the SVG export.
pub fn render<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    theme: &Theme,
    scale: f64,
) -> Result<ChartText, charts::ChartError> {
    match spec {
        ChartSpec::Histogram { title, series, markers, reference, counted } => {
            charts::draw_histogram(area, &histogram_chart(title, series, markers, reference, *counted), theme, scale)
        }
        ChartSpec::CapacityVsEpsilon { d, epsilon, ci } => {
            charts::draw_capacity_vs_epsilon(area, *d, *epsilon, *ci, theme, scale)
        }
        ChartSpec::CapacityVsDim { d, epsilon } => charts::draw_capacity_vs_dim(area, *d, *epsilon, theme, scale),
        ChartSpec::Layers(chart) => charts::draw_layers(area, chart, theme, scale),
    }
}

/// The SVG of a spec at a given size in CSS pixels (for export).
pub fn svg_of(spec: &ChartSpec, theme: &Theme, width: u32, height: u32) -> Result<String, charts::ChartError> {
    let svg = match spec {
        ChartSpec::Histogram { title, series, markers, reference, counted } => {
            let chart = histogram_chart(title, series, markers, reference, *counted);
            charts::histogram_svg(&chart, theme, width, height)
        }
        ChartSpec::CapacityVsEpsilon { d, epsilon, ci } => {
            charts::capacity_vs_epsilon_svg(*d, *epsilon, *ci, theme, width, height)
        }
        ChartSpec::CapacityVsDim { d, epsilon } => charts::capacity_vs_dim_svg(*d, *epsilon, theme, width, height),
        ChartSpec::Layers(chart) => charts::layers_svg(chart, theme, width, height),
    }?;
    Ok(svg.0)
}

fn histogram_chart<'a>(
    title: &str,
    series: &'a [(String, SampledHistogram)],
    markers: &[Marker],
    reference: &Option<(String, Vec<f64>)>,
    counted: Counted,
) -> HistogramChart<'a> {
    HistogramChart {
        title: title.to_string(),
        series: series.iter().map(|(label, hist)| HistogramSeries { label: label.clone(), hist }).collect(),
        markers: markers.to_vec(),
        reference: reference.clone(),
        counted,
    }
}

/// Markers for μ and ε (and ε's interval when the result is an estimate).
pub fn mu_epsilon_markers(mu: f64, epsilon: f64, ci: Option<[f64; 2]>) -> Vec<Marker> {
    let mut markers = vec![Marker::mu(mu), Marker::epsilon(epsilon)];
    if let Some([lo, hi]) = ci {
        markers.push(Marker::interval(lo, hi));
    }
    markers
}

/// A chart on a canvas, with its text alternative, notes and exports.
#[component]
pub fn ChartCanvas(
    /// What to draw; the chart redraws when it changes.
    #[prop(into)]
    spec: Signal<ChartSpec>,
    /// `data-testid` of the canvas.
    testid: &'static str,
    /// CSS class giving the canvas its aspect ratio (`chart-wide`, `chart-small`).
    #[prop(default = "chart-wide")]
    shape: &'static str,
    /// Base of the exported file names (without extension).
    #[prop(into)]
    file_stem: Signal<String>,
    /// Offer PNG/SVG downloads under the chart.
    #[prop(default = true)]
    exports: bool,
) -> impl IntoView {
    let screen = expect_context::<Screen>();
    let canvas_ref = NodeRef::<Canvas>::new();
    let text = RwSignal::new(ChartText::default());
    Effect::new(move |_| {
        let spec = spec.get();
        let theme = screen.theme();
        screen.layout.track();
        let Some(canvas) = canvas_ref.get() else { return };
        let ratio = web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()).max(1.0);
        let (css_w, css_h) = (canvas.client_width().max(1) as f64, canvas.client_height().max(1) as f64);
        canvas.set_width((css_w * ratio).round() as u32);
        canvas.set_height((css_h * ratio).round() as u32);
        let Some(backend) = CanvasBackend::with_canvas_object(canvas.clone()) else { return };
        let area = backend.into_drawing_area();
        match render(&area, &spec, &theme, ratio) {
            Ok(t) => text.set(t),
            Err(e) => text.set(ChartText { alt: format!("Chart not drawn: {e}"), notes: vec![e.to_string()] }),
        }
        let _ = area.present();
    });
    let download_png = move |_| {
        let Some(canvas) = canvas_ref.get_untracked() else { return };
        if let Ok(url) = canvas.to_data_url_with_type("image/png") {
            click_download(&format!("{}.png", file_stem.get_untracked()), &url);
        }
    };
    let download_svg = move |_| {
        let Some(canvas) = canvas_ref.get_untracked() else { return };
        let (w, h) = (canvas.client_width().max(320) as u32, canvas.client_height().max(200) as u32);
        if let Ok(svg) = svg_of(&spec.get_untracked(), &screen.theme(), w, h) {
            download_text(&format!("{}.svg", file_stem.get_untracked()), "image/svg+xml", &svg);
        }
    };
    view! {
        <figure class="chart">
            <canvas
                node_ref=canvas_ref
                class=shape
                data-testid=testid
                role="img"
                aria-label=move || text.with(|t| t.alt.clone())
            ></canvas>
            <figcaption>
                {move || text.with(|t| t.notes.iter().map(|n| view! { <span class="chart-note">{n.clone()}</span> }).collect_view())}
                <span class="sr-only">{move || text.with(|t| t.alt.clone())}</span>
                {exports.then(|| view! {
                    <span class="exports">
                        <button type="button" class="small" on:click=download_png>"PNG"</button>
                        <button type="button" class="small" on:click=download_svg>"SVG"</button>
                    </span>
                })}
            </figcaption>
        </figure>
    }
}

/// Starts a download of `href` (a `data:` or `blob:` URL) as `name`: nothing leaves the machine.
pub fn click_download(name: &str, href: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    if let Ok(a) = document.create_element("a") {
        if let Ok(a) = a.dyn_into::<web_sys::HtmlAnchorElement>() {
            a.set_href(href);
            a.set_download(name);
            a.click();
        }
    }
}

/// Saves text as a file through a Blob URL (no network involved).
pub fn download_text(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    click_download(name, &url);
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// The width in CSS pixels at which an SVG filling `wrapper` is drawn (at most `max`, at least
/// `min`), following window resizes. An SVG laid out in those units draws its 12 px labels at
/// 12 px; a fixed viewBox scaled down to a phone's width would shrink them (to about 6 px).
pub fn drawn_width(wrapper: NodeRef<leptos::html::Div>, max: f64, min: f64) -> RwSignal<f64> {
    let screen = expect_context::<Screen>();
    let width = RwSignal::new(max);
    Effect::new(move |_| {
        screen.layout.track();
        let Some(el) = wrapper.get() else { return };
        let w = f64::from(el.client_width());
        if w > 0.0 {
            let w = w.clamp(min, max).floor();
            if (w - width.get_untracked()).abs() >= 1.0 {
                width.set(w);
            }
        }
    });
    width
}
