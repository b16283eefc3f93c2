//! The histogram of pairwise cosines (paper Fig. 1/2): step outline, y = % of pairs, μ and ε marked,
//! full range [−1, 1] and a zoom on [−0.2, 0.2]. Drawn with plotters on a canvas.

use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;

use crate::report::{HistogramReport, Report};

/// Both views of the report's histogram.
#[component]
pub fn Histogram(
    /// The finished analysis whose histogram is drawn.
    report: Report,
) -> impl IntoView {
    let full_ref = NodeRef::<Canvas>::new();
    let zoom_ref = NodeRef::<Canvas>::new();
    let sample = if report.histogram.rows_in_histogram >= report.rows_used {
        format!("all {} rows ({} pairs)", report.histogram.rows_in_histogram, report.histogram.pairs_in_histogram)
    } else {
        format!(
            "{} rows in randomly chosen blocks of adjacent rows ({} pairs; pairs inside one block are left out, since vocabulary neighbours are often related)",
            report.histogram.rows_in_histogram, report.histogram.pairs_in_histogram
        )
    };
    let label = format!(
        "Pairwise cosines among {sample}. μ and ε (lines) are {}.",
        if report.exact { "exact over all pairs" } else { "the running estimate" }
    );
    let r = report.clone();
    Effect::new(move |_| {
        if let Some(c) = full_ref.get() {
            draw(&c, &r.histogram, r.mu, r.epsilon, "all cosines");
        }
        if let Some(c) = zoom_ref.get() {
            draw(&c, &r.histogram_zoom, r.mu, r.epsilon, "zoom [−0.2, 0.2]");
        }
    });
    view! {
        <figure class="histogram">
            <div class="plots">
                <canvas node_ref=full_ref width="520" height="300" data-testid="histogram"></canvas>
                <canvas node_ref=zoom_ref width="520" height="300" data-testid="histogram-zoom"></canvas>
            </div>
            <figcaption>{label}</figcaption>
        </figure>
    }
}

fn draw(canvas: &web_sys::HtmlCanvasElement, h: &HistogramReport, mu: f64, eps: f64, title: &str) {
    let Some(backend) = CanvasBackend::with_canvas_object(canvas.clone()) else { return };
    let _ = plot(backend, h, mu, eps, title);
}

fn plot(
    backend: CanvasBackend,
    h: &HistogramReport,
    mu: f64,
    eps: f64,
    title: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    let total = h.pairs_in_histogram.max(1) as f64;
    let percent: Vec<f64> = h.counts.iter().map(|&c| 100.0 * c as f64 / total).collect();
    let top = percent.iter().cloned().fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(44)
        .build_cartesian_2d(h.lo..h.hi, 0.0..top)?;
    chart.configure_mesh().x_desc("cosine").y_desc("% of pairs").light_line_style(WHITE).draw()?;
    // Step outline: each bin is a flat segment.
    let mut steps = Vec::with_capacity(percent.len() * 2 + 2);
    for (i, &p) in percent.iter().enumerate() {
        if let (Some(&a), Some(&b)) = (h.edges.get(i), h.edges.get(i + 1)) {
            steps.push((a, p));
            steps.push((b, p));
        }
    }
    chart.draw_series(LineSeries::new(steps, BLUE.stroke_width(1)))?;
    for (x, color, name) in [(mu, BLACK, "μ"), (eps, RED, "ε")] {
        if x >= h.lo && x <= h.hi {
            chart
                .draw_series(LineSeries::new(vec![(x, 0.0), (x, top)], color.stroke_width(1)))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw()?;
    root.present()?;
    Ok(())
}

/// Saves text as a file through a Blob URL (no network involved).
pub fn download_text(name: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    if let Ok(a) = document.create_element("a") {
        if let Ok(a) = a.dyn_into::<web_sys::HtmlAnchorElement>() {
            a.set_href(&url);
            a.set_download(name);
            a.click();
        }
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
